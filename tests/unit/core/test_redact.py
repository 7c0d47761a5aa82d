"""Secret scrubbing: one realistic (fake) example per kind, ordinary session text left alone,
nested fields reported by path, and never a trace of the secret in what is kept.

Every fake key is built by concatenation, so the repository's own secret scanners do not flag
this file; none of them is a real credential."""

from __future__ import annotations

import base64
import json
import subprocess
import sys
import time

import pytest

from sessionvault.core import apikeys, oauth
from sessionvault.core.redact import Redaction, scrub, scrub_text
from sessionvault.core.secret_patterns import PATTERNS, marker


def b64url(data: dict[str, str]) -> str:
    return base64.urlsafe_b64encode(json.dumps(data).encode()).decode().rstrip("=")


MIXED = "Zx9Qw8Er7Ty6Ui5Op4As3Df2Gh1Jk0Lz"  # 32 mixed-case letters and digits, not sequential
PEM_BODY = "MIIEow" + "IBAAKCAQEAx7" + MIXED + "\n" + MIXED[::-1] + "Qm9ndXM=\n"
JWT = b64url({"alg": "HS256", "typ": "JWT"}) + "." + b64url({"sub": "fake-user-42"}) + "." + MIXED[:27]

# (kind, text around the secret, the secret itself)
EXAMPLES: list[tuple[str, str, str]] = [
    ("aws_access_key", "export AWS_ACCESS_KEY_ID={}", "AKIA" + "Z3XAMPLE" + "K3Y0NLY1"),
    ("aws_secret_key", "aws_secret_access_key = {}", "wJalrXUtnFEMI/K7MDENG" + "/bPxRfiCYEXAMPLEKEY"),
    ("github_token", "git clone with token {} failed", "ghp_" + MIXED + "AbCd"),
    ("github_token", "GH_TOKEN={}", "github_pat_" + "11ABCDEFG0" + "ab" * 10 + "_" + MIXED * 2),
    ("anthropic_key", "ANTHROPIC_API_KEY={} in .env", "sk-ant-" + "api03-" + MIXED + "-" + MIXED[:8]),
    ("openai_key", "OPENAI_API_KEY={}", "sk-" + "proj-" + MIXED + MIXED[::-1]),
    ("slack_token", "the bot uses {}", "xoxb-" + "1234567890-" + "9876543210123-" + MIXED[:24]),
    (
        "slack_webhook",
        "alerts go to {}",
        "https://hooks.slack.com" + "/services/T0" + "1ABCDEF/B0" + "2GHIJKL/" + MIXED[:24],
    ),
    ("stripe_key", "charged with {}", "sk_" + "live_" + MIXED[:24]),
    ("stripe_key", "webhook signed by {}", "whsec_" + MIXED),
    ("google_api_key", "maps key {}", "AIza" + "Sy" + MIXED + "A"),
    ("google_oauth_token", "access token {} expired", "ya29." + "a0" + MIXED + MIXED[:10]),
    ("jwt", "the cookie held {}", JWT),
    (
        "private_key",
        "deploy key:\n{}\nrotated it",
        "-----BEGIN " + "RSA PRIVATE KEY-----\n" + PEM_BODY + "-----END " + "RSA PRIVATE KEY-----",
    ),
    (
        "private_key",
        "pasted the service account key: {}",
        "-----BEGIN "
        + "PRIVATE KEY-----\\n"
        + MIXED
        + "\\n"
        + MIXED[::-1]
        + "\\n-----END "
        + "PRIVATE KEY-----",
    ),
    ("url_password", "DATABASE_URL=postgres://app:{}@db.internal:5432/app", "Tr0ub4dor" + "-and-3"),
    ("url_password", "redis at rediss://:{}@cache:6380/0", "n0t" + "Real" + "P4ss"),
    ("sessionvault_key", "my key is {}", apikeys.generate()),
    ("sessionvault_token", "the connector's token {}", oauth.new_access_token()),
    ("sessionvault_token", "refresh with {}", oauth.new_refresh_token()),
    (
        "authorization_header",
        "sent Authorization: Basic {}",
        base64.b64encode(b"admin:" + b"hunter2x").decode(),
    ),
    ("bearer_token", "curl -H 'Bearer {}' https://api.example.com", "tok" + MIXED + "9"),
    # detect-secrets' plugins
    ("secret_assignment", 'db_password = "{}" in settings.py', "n0t-a-real" + "-pass"),
    ("secret_assignment", 'config {{"api_key": "{}"}}', "short" + "key"),
    ("high_entropy_string", 'signing_material: "{}"', MIXED),
    ("gitlab_token", "CI used {}", "glpat-" + MIXED[:20]),
    ("npm_token", "//registry.npmjs.org/:_authToken={}", "npm_" + MIXED + "ab12"),
    ("sendgrid_key", "mail via {}", "SG." + MIXED[:22] + "." + MIXED + MIXED[:11]),
    ("twilio_key", "twilio {}", "SK" + "0123abcd" * 4),
]


IDS = [f"{kind}-{i}" for i, (kind, _, _) in enumerate(EXAMPLES)]


@pytest.mark.parametrize(("kind", "template", "secret"), EXAMPLES, ids=IDS)
def test_each_kind_is_replaced_by_its_marker(kind: str, template: str, secret: str) -> None:
    text = template.format(secret)
    clean, kinds = scrub_text(text)
    assert kinds == [kind], clean
    assert clean == template.format(marker(kind))


@pytest.mark.parametrize(("kind", "template", "secret"), EXAMPLES, ids=IDS)
def test_nothing_of_the_secret_is_kept(kind: str, template: str, secret: str) -> None:
    clean, _ = scrub_text(template.format(secret))
    # No 8-character run of the secret survives anywhere: not in the marker, not around it.
    runs = {secret[i : i + 8] for i in range(len(secret) - 7)}
    assert not [run for run in runs if run in clean and run not in template]


def test_a_marker_names_only_the_kind() -> None:
    kinds = {kind for kind, _ in PATTERNS} | {kind for kind, _, _ in EXAMPLES}
    for kind in kinds:
        assert marker(kind) == f"[REDACTED:{kind}]"
        assert kind.replace("_", "").isalpha() and kind.islower()


def test_the_url_keeps_its_user_host_and_path() -> None:
    password = "s3cret" + "Passw0rd"
    clean, _ = scrub_text(f"connect to postgres://app:{password}@db.internal:5432/app?sslmode=require")
    assert clean == "connect to postgres://app:[REDACTED:url_password]@db.internal:5432/app?sslmode=require"


def test_a_secret_repeated_unquoted_is_replaced_everywhere() -> None:
    value = "n0t-a-real" + "-pass"
    clean, kinds = scrub_text(f'password = "{value}"\nthen I typed {value} into psql')
    assert value not in clean and kinds == ["secret_assignment"]
    assert (
        clean
        == 'password = "[REDACTED:secret_assignment]"\nthen I typed [REDACTED:secret_assignment] into psql'
    )


def test_several_secrets_in_one_string_are_all_reported() -> None:
    aws = "AKIA" + "Z3XAMPLE" + "K3Y0NLY1"
    gh = "ghp_" + MIXED + "AbCd"
    text = f'tried {aws}, then {gh}; password = "{"x1y2" + "z3w4v5"}" and api_key = "{"q9" + "r8s7t6u5"}"'
    clean, kinds = scrub_text(text)
    assert kinds == ["aws_access_key", "github_token", "secret_assignment", "secret_assignment"]
    for secret in (aws, gh, "x1y2z3w4v5", "q9r8s7t6u5"):
        assert secret not in clean


def test_a_truncated_private_key_is_removed_to_the_end_of_its_base64() -> None:
    text = "key: -----BEGIN " + "OPENSSH PRIVATE KEY-----\n" + MIXED + "\n" + MIXED[::-1]
    clean, kinds = scrub_text(text)
    assert kinds == ["private_key"] and clean == "key: [REDACTED:private_key]"


PLACEHOLDERS = [
    "DATABASE_URL=postgres://app:${PGPASSWORD}@db/app",
    "postgres://app:$PGPASSWORD@db/app",
    "https://user:****@git.example.com/org/repo",
    'password = "REDACTED"',
    'password = "<your-password>"',
    'api_key = "{{ api_key }}"',
]


@pytest.mark.parametrize("text", PLACEHOLDERS)
def test_placeholders_are_not_secrets(text: str) -> None:
    assert scrub_text(text) == (text, [])


def test_a_password_that_starts_with_a_dollar_is_still_a_password() -> None:
    clean, kinds = scrub_text("postgres://app:$" + "ecretP4ss@db/app")
    assert clean == "postgres://app:[REDACTED:url_password]@db/app" and kinds == ["url_password"]


@pytest.mark.parametrize("unit", ["password", "secret_", "ghp_", "sk-", "://", "a.", 'password = "'])
def test_crafted_input_is_scrubbed_in_bounded_time(unit: str) -> None:
    # The keyword plugin alone takes about 10 s on "password" * 500; one save carries 200 such.
    text = (unit * 4000)[:4000]
    started = time.perf_counter()
    scrub_text(text)
    assert time.perf_counter() - started < 2.0


BENIGN = [
    "Fixed shared/sessionvault/service/vault.py:42, see commit 3f786850e387550fdab836ed7e6dc881de23001b",
    'commit = "3f786850e387550fdab836ed7e6dc881de23001b"',
    'sha256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"',
    'session "0b8e4c1a-6f2d-4e3b-9a7c-2d1f5e8b9c0a" failed; request=9f1c2e4a-0d3b-4c5e-8f7a-6b2d1e0c9a8b',
    "See https://github.com/org/app/pull/12 and https://docs.python.org/3/library/re.html#re.sub",
    "https://registry.npmjs.org:443/@types/node and http://localhost:8080/path?q=1&user=me#frag",
    "git@github.com:org/repo.git and ssh://git@github.com:22/org/repo.git",
    "postgres://app@db.internal:5432/app (no password: IAM auth)",
    "KeyError: 'password' in settings.py line 30",
    'def get_password(user): return vault.read("db/password")',
    'password = os.environ["DB_PASSWORD"]',
    'const password = "${DB_PASSWORD}"',
    "api_key = settings.openai_api_key",
    "Reset the password: use the forgot-password flow, then rotate secrets",
    "Set SESSIONVAULT_REDACT_SECRETS=off to disable; OPENAI_API_KEY is read from the environment",
    'The test "test_save_reports_redactions_by_field_and_kind" passes',
    'class "SessionVaultAppIntegrationTestCaseWithRedaction" in tests/integration',
    "we use scikit-learn; the sk-learn-compatible-estimators-wrapper-v2 module is ours",
    "Bearer authentication is required; see the Authorization header docs",
    "image ghcr.io/org/app@sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    "arn:aws:secretsmanager:eu-west-1:123456789012:secret:prod/db-AbCdEf",
    "aws s3 cp s3://bucket/key . --region eu-west-1 --profile dev",
    'import "github.com/aws/aws-sdk-go-v2/service/secretsmanager"',
    "10.0.0.1 and 8.8.8.8 were the DNS servers",
    "useEffect(() => fetchUser(userId), [userId]); const AKIAHandler = makeHandler();",
    "ERROR 2026-12-01T02:48:08Z worker-7 task_queue.py:88 TimeoutError after 30s",
    "ran `pytest tests/unit -q -k 'not slow'` -> 412 passed, 3 skipped in 9.81s",
    "renamed get_secret_key() to load_signing_key(); password_hash uses argon2id",
    'password = "[REDACTED:secret_assignment]"',
    "",
    "ünïcödé text, emoji 🎉, and tabs\there",
]


@pytest.mark.parametrize("text", BENIGN)
def test_ordinary_session_text_is_left_alone(text: str) -> None:
    assert scrub_text(text) == (text, [])


def test_a_record_is_scrubbed_field_by_field_nested_included() -> None:
    aws = "AKIA" + "Z3XAMPLE" + "K3Y0NLY1"
    gh = "ghp_" + MIXED + "AbCd"
    record = {
        "name": "deploy " + aws,
        "summary": f"Rotated {aws} and {gh}; {aws} again",
        "repo": "github.com/acme/app",
        "plan": ["step one", f"revoke {gh}"],
        "decisions": [
            {"decision": "keep IAM roles", "reason": "no static keys"},
            {"decision": "rotate", "reason": f"{aws} leaked in CI logs"},
        ],
        "todos": [],
        "files": ["infra/keys.tf"],
        "errors": [],
        "tried": [],
        "client": "claude-code",
    }
    before = json.dumps(record)
    clean, redactions = scrub(record)
    assert json.dumps(record) == before  # the input is not modified
    assert redactions == [
        Redaction("name", "aws_access_key"),
        Redaction("summary", "aws_access_key"),  # once per field and kind, however many times
        Redaction("summary", "github_token"),
        Redaction("plan[1]", "github_token"),
        Redaction("decisions[1].reason", "aws_access_key"),
    ]
    assert clean["name"] == "deploy [REDACTED:aws_access_key]"
    assert clean["decisions"][1] == {
        "decision": "rotate",
        "reason": "[REDACTED:aws_access_key] leaked in CI logs",
    }
    assert clean["decisions"][0] == record["decisions"][0]
    assert clean["files"] == ["infra/keys.tf"] and clean["client"] == "claude-code"
    assert aws not in json.dumps(clean) and gh not in json.dumps(clean)
    assert redactions[0].as_dict() == {"field": "name", "kind": "aws_access_key"}


def test_a_clean_record_comes_back_equal_with_no_redactions() -> None:
    record = {
        "name": "n",
        "summary": "all good",
        "plan": ["a"],
        "decisions": [{"decision": "d", "reason": "r"}],
    }
    assert scrub(record) == (record, [])


def test_importing_the_vault_does_not_load_detect_secrets() -> None:
    # A fresh interpreter: this test process has loaded the library already.
    code = (
        "import sys\n"
        "import sessionvault.service.vault, sessionvault.core.redact\n"
        "assert 'detect_secrets' not in sys.modules, 'detect_secrets imported at module level'\n"
        "from sessionvault.core.redact import scrub_text\n"
        "scrub_text('x')\n"
        "assert 'detect_secrets' in sys.modules\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr


# --- Hidden from the patterns: invisible characters, look-alikes, a key split between fields --

HIDDEN_AWS = "AKIA" + "Z3XAMPLE" + "K3Y0NLY1"


@pytest.mark.parametrize(
    "disguised",
    [
        pytest.param("AKIA\u200bZ3XAMPLE" + "K3Y0NLY1", id="zero-width space inside"),
        pytest.param("AK\u2060IAZ3XAMPLE" + "K3Y0NLY1", id="word joiner inside"),
        pytest.param("\uff21\uff2b\uff29\uff21Z3XAMPLE" + "K3Y0NLY1", id="fullwidth prefix"),
        pytest.param("\u0410KI\u0410Z3XAMPLE" + "K3Y0NLY1", id="Cyrillic A in the prefix"),
        pytest.param("AKIA\u202eZ3XAMPLE" + "K3Y0NLY1", id="bidi override inside"),
    ],
)
def test_a_key_disguised_by_invisible_or_look_alike_characters_is_still_redacted(disguised: str) -> None:
    clean, kinds = scrub_text(f"deploy with {disguised} today")
    assert kinds == ["aws_access_key"] and clean == f"deploy with {marker('aws_access_key')} today"


def test_ordinary_text_with_joiners_and_fullwidth_letters_is_kept_as_written() -> None:
    text = "family \U0001f468\u200d\U0001f469\u200d\U0001f467 and \uff21\uff22\uff23 are not keys"
    assert scrub_text(text) == (text, [])


def test_a_key_split_across_two_neighbouring_fields_is_redacted_in_both() -> None:
    record = {"summary": "the key starts AKIA" + "Z3XA", "plan": ["MPLEK3Y0NLY1 and ends here", "next"]}
    clean, found = scrub(record)
    assert "Z3XA" not in json.dumps(clean) and "MPLEK3Y0NLY1" not in json.dumps(clean)
    assert clean["summary"] == "the key starts " + marker("aws_access_key")
    assert clean["plan"] == [marker("aws_access_key") + " and ends here", "next"]
    assert found == [Redaction("summary", "aws_access_key"), Redaction("plan[0]", "aws_access_key")]
