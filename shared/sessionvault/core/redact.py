"""Secret scrubbing: keys, tokens and passwords are replaced by `[REDACTED:<kind>]` before a
record is previewed, embedded or encrypted, so none reaches the database, the embedding
provider, the logs or the audit trail.

Two passes over every string of the record:

1. `PATTERNS`, this module's table (kind -> compiled regex, most specific first): AWS, GitHub,
   Anthropic, OpenAI, Slack, Stripe and Google keys, JWTs, PEM/PuTTY private keys, passwords
   in URLs, Authorization headers and SessionVault's own `sv_live_` keys. A pattern with a
   `secret` group replaces only that group (`postgres://app:[REDACTED:url_password]@db/app`
   keeps the user and host); the others replace the whole match.
2. detect-secrets (Yelp's maintained detector library), through its plugin API, line by line:
   every known-token plugin it ships (GitLab, npm, PyPI, SendGrid, Twilio, ...), located with
   the plugin's own `denylist` regexes (its analyze_string yields a regex's groups, for some
   only a prefix such as `glpat`) and confirmed by its analyze_string; its keyword plugin
   (`password = "..."`, `api_key: '...'`, quotes required); and its base64 high-entropy plugin
   on quoted strings. Its heuristic filters apply (templates, sequences, UUIDs, no letters),
   plus ours (markers, `***`, `$ENV_VAR`). Left out, because they would mangle ordinary
   session text, cannot say where a secret ends, or only repeat pass 1 slowly: the hex
   high-entropy plugin (every quoted git SHA and sha256 digest scores above its limit), the
   public-IP plugin (an address is not a secret), the basic-auth plugin (it takes
   `https://host:443/@scope/pkg` for a password; pass 1 has a stricter URL pattern), the
   private-key plugin (it matches only the BEGIN line; pass 1 removes the whole block) and
   the OpenAI plugin (pass 1 covers its format; its regex is quadratic on runs of `sk-`). A
   high-entropy hit must also be 20+ characters with a digit, an upper and a lower case
   letter: long identifiers and file names in quotes are not random enough to be keys.
   The library is imported on the first scrub, never at module import: loading
   `sessionvault.service.vault` on a Lambda cold start must not pay for it; the first save of
   a process does (tens of ms in the Lambda layout: BENCHMARKS.md), without `requests`, which
   the library imports only to verify secrets over the network (`secret_library._offline`).

Cost: a few ms for an ordinary record; 1-2.5 s of CPU for the largest a request can carry
(about 1 MB of text). The keyword plugin's regexes are cubic in a long run of word characters
that repeats a keyword (`password` * 500 took 10 s for one 4000-character line), so it scans
the line with the middle of such runs masked (`_defused`); the worst crafted input found costs
under 0.1 s per 4000-character line.

Decisions:

- Every string field is scrubbed, `name`, `repo` and `client` included. They are the
  plaintext columns of the sessions table (the rest is encrypted), so a secret there would be
  the worst-kept one. The cost: a name holding a secret is stored, and must be loaded, under
  its redacted form; the save reply's `name` is the stored one and its `redacted` list names
  the `name` field, so the caller learns both. Two names that differ only in a secret of the
  same kind become one session (the second save is its next version) -- acceptable for what
  is a mistake in the first place, and better than failing a handoff.
- A redaction is reported as field and kind, never the value or any part of it: the field is
  a path into the record (`summary`, `plan[2]`, `decisions[0].reason`), one entry per field
  and kind however often that kind occurs there, in the order first found.
- A replacement can make a text longer than the input caps (a 4-character password becomes a
  30-character marker); the caps guard the input, the stored record is not re-validated.
- A secret found in one place is also replaced wherever else it occurs in the same string
  (as a whole token, when 8+ characters long), so a key repeated unquoted is not left behind.
- `save_session` replies with `redacted` always, as a list (empty when nothing was found or
  redaction is off): one shape for clients to read.
- Detection errs towards redacting: `secret_name = "prod/db"` loses its value (the keyword
  plugin's call), a long random quoted string is taken for a key. Paths, SHAs, UUIDs, URLs
  without a password and code identifiers are left alone (tests/unit/core/test_redact.py).
"""

from __future__ import annotations

import itertools
import unicodedata
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from sessionvault.core.secret_context import apply_context
from sessionvault.core.secret_patterns import PATTERNS, apply_pattern, marker


@dataclass(frozen=True)
class Redaction:
    """What was removed and where: never the value."""

    field: str
    kind: str

    def as_dict(self) -> dict[str, str]:
        return {"field": self.field, "kind": self.kind}


def scrub(record: Mapping[str, Any]) -> tuple[dict[str, Any], list[Redaction]]:
    """A copy of `record` with every secret in every string (nested lists and dicts too)
    replaced by its marker, and what was redacted, field by field. A key split across two
    neighbouring strings (one field's end, the next one's start) is caught too."""
    found: dict[Redaction, None] = {}  # ordered set
    out = {key: _walk(value, str(key), found) for key, value in record.items()}
    _join_seams(out, found)
    return out, list(found)


def scrub_text(text: str) -> tuple[str, list[str]]:
    """`text` without its secrets, and the kind of each one removed (in order, repeats kept).

    A secret hidden from the patterns by invisible or look-alike characters (a zero-width space
    inside a key, fullwidth or Cyrillic letters in its prefix) is caught in the text's visible
    form (NFKC, format characters dropped, look-alikes mapped); when that form holds more
    secrets, it is the form stored, redacted."""
    raw, kinds = _scrub_plain(text)
    visible = visible_form(text)
    if visible == text:
        return raw, kinds
    seen, seen_kinds = _scrub_plain(visible)
    return (seen, seen_kinds) if len(seen_kinds) > len(kinds) else (raw, kinds)


def _scrub_plain(text: str) -> tuple[str, list[str]]:
    kinds: list[str] = []
    if not text:
        return text, kinds
    for kind, pattern in PATTERNS:
        text = apply_pattern(text, kind, pattern, kinds)
    text = apply_context(text, kinds)
    from sessionvault.core.secret_library import apply_library  # detect-secrets: on first use

    text = apply_library(text, kinds)
    return text, kinds


# Letters that look Latin in most fonts (Cyrillic, Greek), for the prefixes keys start with.
_LOOK_ALIKES = str.maketrans(
    "АВЕЅІЈКМНОРСТХУаеіјорсхуѕΑΒΕΖΗΙΚΜΝΟΡΤΥΧοντ",
    "ABESIJKMHOPCTXYaeijopcxysABEZHIKMNOPTYXovt",
)


def visible_form(text: str) -> str:
    """`text` as a reader sees it: NFKC (fullwidth letters are `AKIA`), without format
    characters (zero-width spaces and joiners, bidi controls), look-alike letters as Latin."""
    folded = unicodedata.normalize("NFKC", text)
    return "".join(ch for ch in folded if unicodedata.category(ch) != "Cf").translate(_LOOK_ALIKES)


_SEAM = 80  # characters either side of a boundary between two strings


def _join_seams(record: dict[str, Any], found: dict[Redaction, None]) -> None:
    """Redact a key split across neighbouring strings: each boundary's two sides are scanned
    joined; a secret across it takes both parts (to the end of the first, from the start of
    the second)."""
    spots = list(_strings(record, ""))
    for (a_holder, a_key, a_where), (b_holder, b_key, b_where) in itertools.pairwise(spots):
        tail, head = a_holder[a_key][-_SEAM:], b_holder[b_key][:_SEAM]
        for kind, pattern in PATTERNS:
            match = next((m for m in pattern.finditer(tail + head) if m.start() < len(tail) < m.end()), None)
            if match is None:
                continue
            cut_a = len(a_holder[a_key]) - len(tail) + match.start()
            a_holder[a_key] = a_holder[a_key][:cut_a] + marker(kind)
            b_holder[b_key] = marker(kind) + b_holder[b_key][match.end() - len(tail) :]
            found.setdefault(Redaction(a_where, kind))
            found.setdefault(Redaction(b_where, kind))
            break


def _strings(value: Any, where: str) -> Iterator[tuple[Any, Any, str]]:
    """(holder, key, field path) of every string in `value`, in order, so each can be replaced."""
    if isinstance(value, dict):
        children = [(key, f"{where}.{key}" if where else str(key)) for key in value]
    elif isinstance(value, list):
        children = [(i, f"{where}[{i}]") for i in range(len(value))]
    else:
        return
    for key, path in children:
        if isinstance(value[key], str):
            yield value, key, path
        else:
            yield from _strings(value[key], path)


def _walk(value: Any, where: str, found: dict[Redaction, None]) -> Any:
    if isinstance(value, str):
        clean, kinds = scrub_text(value)
        for kind in kinds:
            found.setdefault(Redaction(where, kind))
        return clean
    if isinstance(value, Mapping):
        return {key: _walk(item, f"{where}.{key}", found) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_walk(item, f"{where}[{i}]", found) for i, item in enumerate(value)]
    return value
