"""Pass 1 of secret scrubbing (`redact`): SessionVault's own table of secret formats, kind ->
compiled regex, most specific first, and how a match is replaced by its marker. A pattern with
a `secret` group replaces only that group (`postgres://app:[REDACTED:url_password]@db/app`
keeps the user and host); the others replace the whole match."""

from __future__ import annotations

import base64
import re

# A value after its key or flag, as the context patterns (secret_context, secret_commands) take
# it: quoted (any but a newline and the quote) or bare (to the next space or delimiter), up to
# 4,000 characters: a session token can be 1,200 (AWS_SESSION_TOKEN), and a cut one keeps its
# tail (the review of issue 35 found a 517-character tail kept at the old 500).
QUOTED = r"\\?(?P<q>[\"'`])(?P<quoted>[^\"'`\n\\]{1,4000})\\?(?P=q)"
BARE = r"(?P<bare>[^\s\"'`,;<>|\\]{1,4000})"
VALUE = rf"(?:{QUOTED}|{BARE})"
CMD_END = r"[^\n|;&]{0,300}?"  # the rest of one command, bounded

MARKER = "[REDACTED:{kind}]"
MARKER_START = "[REDACTED:"
_ENV_REFERENCE = re.compile(r"\$\{?[A-Z_][A-Z0-9_]*\}?|%[A-Z_][A-Z0-9_]*%")

_PEM_LABEL = r"(?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?"
# AWS's documentation example keys (an access key id ending in EXAMPLE) are not keys.
AWS_ACCESS_KEY = re.compile(r"\b(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])[A-Z0-9]{16}\b(?<!EXAMPLE)")

# Cloud and SaaS tokens by their documented prefixes (each provider's API token docs), kind ->
# the token's regex; a token is never inside a longer run of token characters.
SAAS_TOKENS: tuple[tuple[str, str], ...] = (
    ("huggingface_token", r"(?:hf_|api_org_)[A-Za-z0-9]{30,}"),
    ("gitlab_token", r"gl(?:pat|dt|rt|ptt|cbt|imt|soat|ffct|oas|agent)-[A-Za-z0-9_-]{20,}"),
    ("npm_token", r"npm_[A-Za-z0-9]{36}"),
    ("pypi_token", r"pypi-AgE[A-Za-z0-9_-]{50,}"),
    ("docker_token", r"dckr_(?:pat|oat)_[A-Za-z0-9_-]{20,}"),
    ("digitalocean_token", r"do[opr]_v1_[a-f0-9]{64}"),
    ("shopify_token", r"shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}"),
    ("linear_key", r"lin_(?:api|oauth)_[A-Za-z0-9]{40}"),
    ("notion_token", r"(?:ntn_[A-Za-z0-9]{40,}|secret_[A-Za-z0-9]{43})"),
    ("mailgun_key", r"key-[0-9a-f]{32}"),
    ("groq_key", r"gsk_[A-Za-z0-9]{48,}"),
    ("replicate_token", r"r8_[A-Za-z0-9]{37}"),
    ("xai_key", r"xai-[A-Za-z0-9]{60,}"),
    ("perplexity_key", r"pplx-[A-Za-z0-9]{40,}"),
    ("openrouter_key", r"sk-or-v1-[a-f0-9]{64}"),
    ("openai_key", r"sk-[a-f0-9]{32}"),  # the OpenAI-compatible hex form (DeepSeek, ...)
    ("supabase_key", r"(?:sbp_[a-f0-9]{40}|sb_secret_[A-Za-z0-9_-]{20,})"),
    ("databricks_token", r"dapi[a-f0-9]{32}(?:-\d)?"),
    ("postman_key", r"PMAK-[a-f0-9]{24}-[a-f0-9]{34}"),
    ("age_secret_key", r"AGE-SECRET-KEY-1[0-9A-Z]{58}"),
    ("vault_token", r"hv[sbr]\.[A-Za-z0-9_-]{24,}"),
    ("terraform_token", r"[A-Za-z0-9]{14}\.atlasv1\.[A-Za-z0-9_-]{60,}"),
    ("grafana_token", r"(?:glsa_[A-Za-z0-9]{32}_[a-f0-9]{8}|glc_[A-Za-z0-9+/=]{32,})"),
    ("sentry_token", r"sntr[ysu]_[A-Za-z0-9+/=_-]{40,}"),
    ("tailscale_key", r"tskey-[a-z]+-[A-Za-z0-9]{6,}-[A-Za-z0-9]{16,}"),
    ("pulumi_token", r"pul-[a-f0-9]{40}"),
    ("doppler_token", r"dp\.(?:pt|st|sa|ct|scim|audit)\.[A-Za-z0-9]{40,}"),
    ("onepassword_token", r"ops_[A-Za-z0-9_-]{40,}"),
    ("atlassian_token", r"(?:ATATT3[A-Za-z0-9_=-]{60,}|ATBB[A-Za-z0-9_=.-]{28,})"),
    ("figma_token", r"figd_[A-Za-z0-9_-]{36,}"),
    ("netlify_token", r"nfp_[A-Za-z0-9]{36}"),
    ("newrelic_key", r"NR(?:AK|II|JS)-[A-Z0-9]{27}"),
    ("flyio_token", r"(?:fo1_[A-Za-z0-9_-]{40,}|fm[12]_[A-Za-z0-9+/=_-]{40,})"),
    ("mapbox_token", r"sk\.eyJ[A-Za-z0-9_-]{20,}\.[A-Za-z0-9_-]{20,}"),
    ("square_token", r"(?:sq0atp-[A-Za-z0-9_-]{22}|sq0csp-[A-Za-z0-9_-]{43}|EAAA[A-Za-z0-9_-]{60})"),
    ("azure_client_secret", r"[A-Za-z0-9_~.]{3}\dQ~[A-Za-z0-9_~.-]{31,34}"),
    ("heroku_key", r"HRKU-[A-Za-z0-9_-]{40,}"),
    ("planetscale_token", r"pscale_(?:tkn|pw|oauth)_[A-Za-z0-9_.-]{32,}"),
    ("resend_key", r"re_[A-Za-z0-9]{8}_[A-Za-z0-9]{24}"),
    ("langsmith_key", r"lsv2_(?:pt|sk)_[a-f0-9]{32}_[a-f0-9]{10}"),
    ("pinecone_key", r"pcsk_[A-Za-z0-9_]{50,}"),
    ("airtable_token", r"pat[A-Za-z0-9]{14}\.[a-f0-9]{64}"),
    ("dropbox_token", r"sl\.[A-Za-z0-9_-]{130,}"),
    ("contentful_token", r"CFPAT-[A-Za-z0-9_-]{43}"),
    ("buildkite_token", r"bkua_[a-f0-9]{40}"),
    ("circleci_token", r"CCIPAT_[A-Za-z0-9]{22}_[a-f0-9]{40}"),
    ("render_key", r"rnd_[A-Za-z0-9]{32}"),
    ("rubygems_key", r"rubygems_[a-f0-9]{48}"),
    ("nuget_key", r"oy2[a-z0-9]{43}"),
)
# Prefixes that only keys start with: a key cut short ("ghp_Zx9Qw8Er7Ty6…", text clipped by a
# client before it reached us) still loses what is left of it.
_CUT_PREFIXES = (
    r"gh[pousr]_|github_pat_|sk-ant-|sk-proj-|sk-svcacct-|sk-or-v1-|(?:sk|rk)_live_|hf_|glpat-"
    r"|npm_|pypi-AgE|dckr_pat_|xox[abposre]-|AKIA|ASIA|AIza|ya29\.|GOCSPX-|sv_live_|sv_[ar]t_|gsk_"
    r"|lin_api_|sbp_|hvs\.|dop_v1_|shpat_|eyJ"
)
# The start of a PEM private key, base64-encoded (kubeconfig's client-key-data, a Kubernetes
# Secret): the encoding of "-----BEGIN <label>PRIVATE KEY", cut to whole 4-character groups.
_B64_PEM = "|".join(
    re.escape(encoded[: len(encoded) // 4 * 4])
    for label in ("", "RSA ", "EC ", "DSA ", "OPENSSH ", "ENCRYPTED ")
    for encoded in [base64.b64encode(f"-----BEGIN {label}PRIVATE KEY".encode()).decode().rstrip("=")]
)

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
        "discord_webhook",
        re.compile(
            r"https://(?:ptb\.|canary\.)?discord(?:app)?\.com/api/webhooks/\d+/(?P<secret>[A-Za-z0-9_-]{20,})"
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
    *((kind, re.compile(rf"(?<![A-Za-z0-9_.-]){body}(?![A-Za-z0-9_-])")) for kind, body in SAAS_TOKENS),
    ("private_key", re.compile(rf"(?:{_B64_PEM})[A-Za-z0-9+/=]*")),  # a key file, base64 (kubeconfig)
    ("sessionvault_key", re.compile(r"\bsv_live_[A-Za-z0-9_-]{16,}")),
    ("sessionvault_token", re.compile(r"\bsv_(?:at|rt)_[A-Za-z0-9_-]{16,}")),  # OAuth (core/oauth.py)
    (
        # scheme://user:password@host -- only the password goes. The user part has no "/",
        # so "https://host:443/@scope/pkg" is a plain URL; it may hold "@" (Mailgun's SMTP user
        # is `postmaster@mg.example.com`), the password runs to the last "@" before the host.
        "url_password",
        re.compile(r"\b[A-Za-z][A-Za-z0-9+.-]{0,31}://[^\s/:]*:(?P<secret>[^\s/@]+)@"),
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
    (
        "cut_token",
        re.compile(
            rf"(?<![A-Za-z0-9_.-])(?:{_CUT_PREFIXES})(?=[A-Za-z0-9_-]{{0,300}}?\d)[A-Za-z0-9_-]{{6,}}(?<!EXAMPLE)(?=…|\.\.\.|\Z)"
        ),
    ),
)


# Stand-ins that documentation and local defaults use for a password (`postgres://user:password@`,
# `postgres:postgres`): not a secret anyone holds.
WELL_KNOWN = frozenset(
    [
        "password",
        "pass",
        "passwd",
        "pwd",
        "secret",
        "changeme",
        "test",
        "postgres",
        "root",
        "admin",
        "guest",
        "user",
    ]
)
_FILLER = re.compile(r"([xX*•0])\1{7,}")  # ghp_xxxxxxxx..., AKIA0000...: a fixture's fake key


def marker(kind: str) -> str:
    return MARKER.format(kind=kind)


def apply_pattern(text: str, kind: str, pattern: re.Pattern[str], kinds: list[str]) -> str:
    def replace(match: re.Match[str]) -> str:
        group = "secret" if "secret" in pattern.groupindex else 0
        secret = match.group(group)
        if not secret or (kind != "private_key" and is_placeholder(secret)):
            return match.group(0)
        kinds.append(kind)
        start, end = match.span(group)
        whole = match.group(0)
        offset = match.start()
        return whole[: start - offset] + marker(kind) + whole[end - offset :]

    return pattern.sub(replace, text)


# Keys that are public by design, made to sit in a web page: Stripe's publishable keys.
PUBLIC_BY_DESIGN = ("pk_live_", "pk_test_")


def is_placeholder(secret: str) -> bool:
    """Not a secret but a stand-in for one: a marker, REDACTED, ***, ${VAR}, $VAR, {var}, <var>;
    or a key public by design (PUBLIC_BY_DESIGN). (`$ecretP4ss` is not: only an
    environment-variable-like `$NAME` counts.)"""
    if secret.startswith(MARKER_START) or secret.strip("[]<>*\"'").upper() == "REDACTED":
        return True
    if secret.startswith(PUBLIC_BY_DESIGN):
        return True
    if not set(secret) - set("*xX•.-_"):
        return True
    if _ENV_REFERENCE.fullmatch(secret) or secret.lower() in WELL_KNOWN or _FILLER.search(secret):
        return True
    pairs = (("{", "}"), ("<", ">"), ("%", "%"))
    return len(secret) > 1 and any(secret[0] == a and secret[-1] == b for a, b in pairs)
