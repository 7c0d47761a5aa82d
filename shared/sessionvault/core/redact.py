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
   `sessionvault.core.vault` on a Lambda cold start must not pay for it (or for `requests`);
   the first save of a process does (a few hundred ms).

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

import re
import string
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any

MARKER = "[REDACTED:{kind}]"
_MARKER_START = "[REDACTED:"
_ENV_REFERENCE = re.compile(r"\$\{?[A-Z_][A-Z0-9_]*\}?|%[A-Z_][A-Z0-9_]*%")
_MAX_ROUNDS = 10_000  # per line: each round removes at least one finding; only a backstop

_PEM_LABEL = r"(?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?"
_AWS_ACCESS_KEY = re.compile(r"\b(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])[A-Z0-9]{16}\b")

# kind -> pattern, applied in this order. Keep each kind's format realistic but strict:
# ordinary session text (paths, SHAs, UUIDs, URLs, identifiers) must pass untouched.
PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        # A whole block; cut short (no END line, e.g. truncated text): the header and all
        # that could be key material after it (up to the first character that cannot).
        "private_key",
        re.compile(
            rf"-----BEGIN {_PEM_LABEL}-----"
            rf"(?:[\s\S]*?-----END {_PEM_LABEL}-----|[A-Za-z0-9+/=\s:,.\\-]*)"
        ),
    ),
    ("private_key", re.compile(r"PuTTY-User-Key-File-\d+:[\s\S]*?(?:Private-MAC: *[0-9a-fA-F]+|$)")),
    ("jwt", re.compile(r"\beyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]*")),
    ("aws_access_key", _AWS_ACCESS_KEY),
    (
        "aws_secret_key",
        re.compile(
            r"(?i)aws_?secret_?(?:access_?)?key[\"']?\s*(?:=|:|=>)\s*[\"']?"
            r"(?P<secret>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+])"
        ),
    ),
    (
        "github_token",
        re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{50,255})\b"),
    ),
    ("anthropic_key", re.compile(r"\bsk-ant-[A-Za-z0-9_-]{20,}")),
    (
        # sk-..., sk-proj-..., sk-svcacct-...: 32+ characters with a digit and both cases, so
        # that a kebab-case slug after "sk-" is not taken for a key.
        "openai_key",
        re.compile(
            r"\bsk-(?=[A-Za-z0-9_-]{0,300}?[0-9])(?=[A-Za-z0-9_-]{0,300}?[A-Z])"
            r"(?=[A-Za-z0-9_-]{0,300}?[a-z])[A-Za-z0-9_-]{32,}"
        ),
    ),
    (
        "slack_webhook",
        re.compile(r"https://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9_/-]+"),
    ),
    ("slack_token", re.compile(r"\b(?:xox[abposre]|xapp)-[A-Za-z0-9-]{10,}")),
    ("stripe_key", re.compile(r"\b(?:(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{10,}|whsec_[A-Za-z0-9]{20,})\b")),
    ("google_api_key", re.compile(r"\bAIza[0-9A-Za-z_-]{35}(?![0-9A-Za-z_-])")),
    (
        "google_oauth_token",
        re.compile(r"\b(?:GOCSPX-[A-Za-z0-9_-]{20,}|ya29\.[0-9A-Za-z_-]{20,}|1//0[0-9A-Za-z_-]{30,})"),
    ),
    ("sessionvault_key", re.compile(r"\bsv_live_[A-Za-z0-9_-]{16,}")),
    (
        # scheme://user:password@host -- only the password goes. The user part has no "/",
        # so "https://host:443/@scope/pkg" is a plain URL.
        "url_password",
        re.compile(r"\b[A-Za-z][A-Za-z0-9+.-]{0,31}://[^\s/:@]*:(?P<secret>[^\s/@]+)@"),
    ),
    (
        "authorization_header",
        re.compile(
            r"(?i)\bauthorization[\"']?\s*[:=]\s*[\"']?(?:bearer|basic|token|apikey)\s+"
            r"(?P<secret>[A-Za-z0-9._~+/=-]{8,})"
        ),
    ),
    (
        "bearer_token",
        re.compile(r"(?i)\bbearer\s+(?P<secret>(?=[A-Za-z0-9._~+/-]{0,300}?\d)[A-Za-z0-9._~+/-]{20,}=*)"),
    ),
)

# detect-secrets' secret_type -> our kind; a type not listed gets a slug of its name.
LIBRARY_KINDS = {
    "AWS Access Key": "aws_secret_key",  # its access-key ids are caught in pass 1
    "GitHub Token": "github_token",
    "OpenAI Token": "openai_key",
    "Slack Token": "slack_token",
    "Stripe Access Key": "stripe_key",
    "JSON Web Token": "jwt",
    "Secret Keyword": "secret_assignment",
    "Base64 High Entropy String": "high_entropy_string",
    "NPM tokens": "npm_token",
    "PyPI Token": "pypi_token",
    "GitLab Token": "gitlab_token",
    "SendGrid API Key": "sendgrid_key",
    "Twilio API Key": "twilio_key",
    "Mailchimp Access Key": "mailchimp_key",
    "Discord Bot Token": "discord_token",
    "Telegram Bot Token": "telegram_token",
    "Azure Storage Account access key": "azure_storage_key",
    "Artifactory Credentials": "artifactory_token",
    "Square OAuth Secret": "square_oauth_secret",
}
# Plugins left out, and why: see the module docstring.
LIBRARY_SKIPPED = frozenset(
    {
        "HexHighEntropyString",
        "IPPublicDetector",
        "BasicAuthDetector",
        "PrivateKeyDetector",
        "OpenAIDetector",
    }
)
HIGH_ENTROPY_LIMIT = 4.5  # detect-secrets' default for base64
HIGH_ENTROPY_MIN_LENGTH = 20
BARE_MIN_LENGTH = 8  # shorter library findings are replaced where quoted only


@dataclass(frozen=True)
class Redaction:
    """What was removed and where: never the value."""

    field: str
    kind: str

    def as_dict(self) -> dict[str, str]:
        return {"field": self.field, "kind": self.kind}


def marker(kind: str) -> str:
    return MARKER.format(kind=kind)


def scrub(record: Mapping[str, Any]) -> tuple[dict[str, Any], list[Redaction]]:
    """A copy of `record` with every secret in every string (nested lists and dicts too)
    replaced by its marker, and what was redacted, field by field."""
    found: dict[Redaction, None] = {}  # ordered set
    out = {key: _walk(value, str(key), found) for key, value in record.items()}
    return out, list(found)


def scrub_text(text: str) -> tuple[str, list[str]]:
    """`text` without its secrets, and the kind of each one removed (in order, repeats kept)."""
    kinds: list[str] = []
    if not text:
        return text, kinds
    for kind, pattern in PATTERNS:
        text = _apply_pattern(text, kind, pattern, kinds)
    text = _apply_library(text, kinds)
    return text, kinds


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


def _apply_pattern(text: str, kind: str, pattern: re.Pattern[str], kinds: list[str]) -> str:
    def replace(match: re.Match[str]) -> str:
        group = "secret" if "secret" in pattern.groupindex else 0
        secret = match.group(group)
        if not secret or _is_placeholder(secret):
            return match.group(0)
        kinds.append(kind)
        start, end = match.span(group)
        whole = match.group(0)
        offset = match.start()
        return whole[: start - offset] + marker(kind) + whole[end - offset :]

    return pattern.sub(replace, text)


def _is_placeholder(secret: str) -> bool:
    """Not a secret but a stand-in for one: a marker, REDACTED, ***, ${VAR}, $VAR, {var}, <var>.
    (`$ecretP4ss` is not: only an environment-variable-like `$NAME` counts.)"""
    if secret.startswith(_MARKER_START) or secret.strip("[]<>*\"'").upper() == "REDACTED":
        return True
    if not set(secret) - set("*xX•.-_"):
        return True
    if _ENV_REFERENCE.fullmatch(secret):
        return True
    pairs = (("{", "}"), ("<", ">"), ("%", "%"))
    return len(secret) > 1 and any(secret[0] == a and secret[-1] == b for a, b in pairs)


# --- pass 2: detect-secrets --------------------------------------------------------------


def _apply_library(text: str, kinds: list[str]) -> str:
    lines = text.splitlines(keepends=True)
    repeated: dict[str, str] = {}  # long secrets found -> marker, to catch their other copies
    for i, line in enumerate(lines):
        body = line.rstrip("\r\n")
        ending = line[len(body) :]
        # A round replaces everything the first plugin with a finding found, then the line is
        # scanned again (the keyword plugin reports one hit per regex and line).
        for _ in range(_MAX_ROUNDS):
            found = next(_library_findings(body), None)
            if not found:
                break
            merged = _merged(found)
            for start, end, kind in reversed(merged):
                mark = marker(kind)
                if end - start >= BARE_MIN_LENGTH:
                    repeated[body[start:end]] = mark
                body = body[:start] + mark + body[end:]
            kinds += [kind for _, _, kind in merged]
        lines[i] = body + ending
    text = "".join(lines)
    for value, mark in repeated.items():
        text = _bare(value).sub(mark, text)
    return text


Span = tuple[int, int]
Finding = tuple[int, int, str]  # start, end, kind


def _library_findings(line: str) -> Iterator[list[Finding]]:
    """For each plugin that finds anything in the line: where its secrets are, and their kind."""
    if not line.strip():
        return
    plugins, keywords = _plugins()
    for plugin in plugins:
        denylist = getattr(plugin, "denylist", None)
        if denylist is not None:
            found = list(_token_findings(plugin, denylist, line))
        elif plugin.secret_type == "Secret Keyword" and not keywords.search(line):
            continue  # its regexes are the slow ones; no keyword in the line, no finding
        else:
            found = list(_value_findings(plugin, line))
        if found:
            yield found


def _value_findings(plugin: Any, line: str) -> Iterator[Finding]:
    """A value-only plugin's hits (keyword, high-entropy), located in the line."""
    scanned = _defused(line) if plugin.secret_type == "Secret Keyword" else line
    for value in plugin.analyze_string(scanned):
        if not isinstance(value, str) or not value or _MARKER_START in value or _filtered(plugin, value):
            continue
        for start, end in _value_spans(scanned, value):  # `scanned` is as long as `line`
            yield start, end, _library_kind(plugin.secret_type, line[start:end])


_LONG_WORD = re.compile(r"\w{49,}")  # 2 * 24 + 1: longer than the two ends kept


def _defused(line: str) -> str:
    """`line` with the middle of each long run of word characters masked, length kept. The
    keyword plugin's regexes take time cubic in such a run when it repeats a keyword
    (`password` * 500: seconds per line); a real identifier keeps its ends (`..._db_password`),
    and a long quoted value is still found, then taken from `line` at the same place."""
    return _LONG_WORD.sub(lambda m: m[0][:24] + "~" * (len(m[0]) - 48) + m[0][-24:], line)


def _token_findings(plugin: Any, denylist: Any, line: str) -> Iterator[Finding]:
    """A known-token plugin's hits, located with its own regexes: its analyze_string yields
    only a regex's groups, which for some is the token's prefix (GitLab's `glpat`), not the
    token. The secret is each group of 16+ characters, or else the whole match; a match
    counts only if the plugin's analyze_string accepts it (the JWT plugin checks the parts)."""
    for regex in denylist:
        for match in regex.finditer(line):
            if not any(True for _ in plugin.analyze_string(match.group(0))):
                continue
            groups = [g for g in range(1, (regex.groups or 0) + 1) if len(match.group(g) or "") >= 16]
            for start, end in [match.span(g) for g in groups] or [_trimmed(line, *match.span(0))]:
                if end > start and not _is_placeholder(line[start:end]):
                    yield start, end, _library_kind(plugin.secret_type, line[start:end])


def _trimmed(line: str, start: int, end: int) -> Span:
    """A whole match without the delimiters some plugins match around a token."""
    while start < end and line[start] in _DELIMITERS:
        start += 1
    while end > start and line[end - 1] in _DELIMITERS:
        end -= 1
    return start, end


_DELIMITERS = frozenset(" \t=:\"'`")


def _merged(found: list[Finding]) -> list[Finding]:
    """Sorted, overlaps joined (the first one's kind kept)."""
    out: list[Finding] = []
    for start, end, kind in sorted(found):
        if out and start < out[-1][1]:
            out[-1] = (out[-1][0], max(end, out[-1][1]), out[-1][2])
        else:
            out.append((start, end, kind))
    return out


def _value_spans(line: str, value: str) -> list[Span]:
    """Where a value-only finding (keyword, high-entropy) sits in its line: quoted, as those
    plugins find them; also as a whole token when long enough not to hit ordinary words; and
    anywhere, if neither form is there."""
    escaped = re.escape(value)
    spans = [m.span(2) for m in re.finditer(rf"([\"'`])({escaped})\1", line)]
    if len(value) >= BARE_MIN_LENGTH or not spans:
        spans += [m.span() for m in _bare(value).finditer(line)]
    if not spans:
        spans = [m.span() for m in re.finditer(escaped, line)]
    return sorted(set(spans))


@cache
def _plugins() -> tuple[tuple[Any, ...], re.Pattern[str]]:
    """One instance of each plugin we use, known-token ones first, then the keyword and the
    high-entropy plugins; and the keyword plugin's own keywords, to skip lines without one.
    Imported here, on the first scrub, not before."""
    from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class
    from detect_secrets.plugins.high_entropy_strings import Base64HighEntropyString
    from detect_secrets.plugins.keyword import DENYLIST, KeywordDetector

    chosen: list[Any] = []
    classes: list[type[Any]] = list(get_mapping_from_secret_type_to_class().values())
    for cls in classes:
        if cls.__name__ in LIBRARY_SKIPPED:
            continue
        chosen.append(cls(limit=HIGH_ENTROPY_LIMIT) if cls is Base64HighEntropyString else cls())
    last: dict[type[Any], int] = {KeywordDetector: 1, Base64HighEntropyString: 2}
    chosen.sort(key=lambda p: (last.get(type(p), 0), type(p).__name__))  # a stable order
    return tuple(chosen), re.compile("|".join(DENYLIST), re.IGNORECASE)


def _filtered(plugin: Any, value: str) -> bool:
    """detect-secrets' own heuristic filters, plus the entropy gate for high-entropy hits."""
    from detect_secrets.filters import heuristic

    if (
        heuristic.is_templated_secret(value)
        or heuristic.is_sequential_string(value)
        or heuristic.is_potential_uuid(value)
        or heuristic.is_not_alphanumeric_string(value)
        or _is_placeholder(value)
    ):
        return True
    if hasattr(plugin, "calculate_shannon_entropy"):
        return not (
            len(value) >= HIGH_ENTROPY_MIN_LENGTH
            and any(c in string.digits for c in value)
            and any(c in string.ascii_uppercase for c in value)
            and any(c in string.ascii_lowercase for c in value)
            and plugin.calculate_shannon_entropy(value) > plugin.entropy_limit
        )
    return False


def _library_kind(secret_type: str, value: str) -> str:
    if secret_type == "AWS Access Key" and _AWS_ACCESS_KEY.fullmatch(value):
        return "aws_access_key"
    known = LIBRARY_KINDS.get(secret_type)
    if known:
        return known
    return re.sub(r"[^a-z0-9]+", "_", secret_type.lower()).strip("_") or "secret"


def _bare(value: str) -> re.Pattern[str]:
    """`value` as a whole token: not inside a longer run of letters and digits."""
    return re.compile(rf"(?<![A-Za-z0-9]){re.escape(value)}(?![A-Za-z0-9])")
