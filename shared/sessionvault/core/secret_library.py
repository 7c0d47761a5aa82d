"""Pass 2 of secret scrubbing (`redact`): detect-secrets, Yelp's maintained detector library,
through its plugin API, line by line (which plugins, and why some are left out: see the
`redact` module docstring). Imported on the first scrub only, and its modules see a stand-in
for `requests` (`_offline`): they import it (urllib3, charset_normalizer) only to verify a
secret over the network, which scrubbing never does, and it cost a cold Lambda's first save."""

from __future__ import annotations

import builtins
import importlib.machinery
import re
import string
import sys
import threading
import types
from collections.abc import Iterator, Sequence
from functools import cache
from typing import Any, NoReturn

from sessionvault.core.secret_context import looks_fake
from sessionvault.core.secret_patterns import AWS_ACCESS_KEY, MARKER_START, is_placeholder, marker

_MAX_ROUNDS = 10_000  # per line: each round removes at least one finding; only a backstop

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


def apply_library(text: str, kinds: list[str]) -> str:
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
        if not isinstance(value, str) or not value or MARKER_START in value or _filtered(plugin, value):
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
                if end > start and not is_placeholder(line[start:end]) and not looks_fake(line[start:end]):
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
    _offline()
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


class _Unreachable(types.ModuleType):
    """`requests` (and any name in it) as detect-secrets' modules see it here: a name resolves
    (annotations and `except` clauses name it), a call fails (only verification calls it)."""

    def __getattr__(self, name: str) -> _Unreachable:
        if name.startswith("__"):
            raise AttributeError(name)
        return _Unreachable(f"{self.__name__}.{name}")

    def __call__(self, *args: object, **kwargs: object) -> NoReturn:
        raise RuntimeError(f"{self.__name__}: the scrubber never verifies a secret over the network")


def _import(name: str, globals: Any = None, locals: Any = None, fromlist: Any = (), level: int = 0) -> Any:
    """detect-secrets' `__import__`: the stand-in for `requests` unless it is loaded already."""
    if level == 0 and name.partition(".")[0] == "requests" and "requests" not in sys.modules:
        return _Unreachable("requests")
    return builtins.__import__(name, globals, locals, fromlist, level)


class _OfflineLoader(importlib.machinery.SourceFileLoader):
    """Runs a detect-secrets module (from its bytecode, as usual) with builtins of its own whose
    `__import__` is `_import`: no other module's imports change."""

    def exec_module(self, module: types.ModuleType) -> None:
        module.__dict__["__builtins__"] = {**vars(builtins), "__import__": _import}
        super().exec_module(module)


class _OfflineFinder:
    """detect-secrets' modules, found as the path finder finds them, run by `_OfflineLoader`.
    It stays on sys.meta_path, so a library module imported later by a function is as well."""

    @staticmethod
    def find_spec(fullname: str, path: Sequence[str] | None = None, target: object = None) -> Any:
        if fullname.partition(".")[0] != "detect_secrets":
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is not None and type(spec.loader) is importlib.machinery.SourceFileLoader:
            spec.loader = _OfflineLoader(spec.loader.name, spec.loader.path)
        return spec


_installing = threading.Lock()


def _offline() -> None:
    """`_OfflineFinder` first on sys.meta_path, once. A library loaded before it (by a test, a
    tool that verifies) is used as it is."""
    with _installing:
        if not any(isinstance(finder, _OfflineFinder) for finder in sys.meta_path):
            sys.meta_path.insert(0, _OfflineFinder())


def _filtered(plugin: Any, value: str) -> bool:
    """detect-secrets' own heuristic filters, plus the entropy gate for high-entropy hits."""
    from detect_secrets.filters import heuristic

    if value.startswith(_NOT_KEYS) or (plugin.secret_type == "Secret Keyword" and looks_fake(value)):
        return True
    if (
        heuristic.is_templated_secret(value)
        or heuristic.is_sequential_string(value)
        or heuristic.is_potential_uuid(value)
        or heuristic.is_not_alphanumeric_string(value)
        or is_placeholder(value)
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


# Base64 that is not a key: subresource-integrity digests (package locks) and the start of an
# encoded image, font or document (PNG, JPEG, GIF, WebP, SVG, PDF, ICO, WOFF2).
_NOT_KEYS = (
    "sha1-", "sha256-", "sha384-", "sha512-", "iVBORw0KGgo", "/9j/", "R0lGOD", "UklGR", "PHN2Zy",
    "PD94bWwg", "JVBERi0", "AAABAA", "d09GMg",
)  # fmt: skip


def _library_kind(secret_type: str, value: str) -> str:
    if secret_type == "AWS Access Key" and AWS_ACCESS_KEY.fullmatch(value):
        return "aws_access_key"
    known = LIBRARY_KINDS.get(secret_type)
    if known:
        return known
    return re.sub(r"[^a-z0-9]+", "_", secret_type.lower()).strip("_") or "secret"


def _bare(value: str) -> re.Pattern[str]:
    """`value` as a whole token: not inside a longer run of letters and digits."""
    return re.compile(rf"(?<![A-Za-z0-9]){re.escape(value)}(?![A-Za-z0-9])")
