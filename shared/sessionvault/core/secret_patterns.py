"""Pass 1 of secret scrubbing (`redact`): SessionVault's own table of secret formats, kind ->
compiled regex, most specific first, and how a match is replaced by its marker. A pattern with
a `secret` group replaces only that group (`postgres://app:[REDACTED:url_password]@db/app`
keeps the user and host); the others replace the whole match."""

from __future__ import annotations

import re

MARKER = "[REDACTED:{kind}]"
MARKER_START = "[REDACTED:"
_ENV_REFERENCE = re.compile(r"\$\{?[A-Z_][A-Z0-9_]*\}?|%[A-Z_][A-Z0-9_]*%")

_PEM_LABEL = r"(?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?"
AWS_ACCESS_KEY = re.compile(r"\b(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])[A-Z0-9]{16}\b")

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
    ("aws_access_key", AWS_ACCESS_KEY),
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
    ("sessionvault_token", re.compile(r"\bsv_(?:at|rt)_[A-Za-z0-9_-]{16,}")),  # OAuth (core/oauth.py)
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


def marker(kind: str) -> str:
    return MARKER.format(kind=kind)


def apply_pattern(text: str, kind: str, pattern: re.Pattern[str], kinds: list[str]) -> str:
    def replace(match: re.Match[str]) -> str:
        group = "secret" if "secret" in pattern.groupindex else 0
        secret = match.group(group)
        if not secret or is_placeholder(secret):
            return match.group(0)
        kinds.append(kind)
        start, end = match.span(group)
        whole = match.group(0)
        offset = match.start()
        return whole[: start - offset] + marker(kind) + whole[end - offset :]

    return pattern.sub(replace, text)


def is_placeholder(secret: str) -> bool:
    """Not a secret but a stand-in for one: a marker, REDACTED, ***, ${VAR}, $VAR, {var}, <var>.
    (`$ecretP4ss` is not: only an environment-variable-like `$NAME` counts.)"""
    if secret.startswith(MARKER_START) or secret.strip("[]<>*\"'").upper() == "REDACTED":
        return True
    if not set(secret) - set("*xX•.-_"):
        return True
    if _ENV_REFERENCE.fullmatch(secret):
        return True
    pairs = (("{", "}"), ("<", ">"), ("%", "%"))
    return len(secret) > 1 and any(secret[0] == a and secret[-1] == b for a, b in pairs)
