"""No secret stored: a session full of (fake) keys saved over real HTTP with the official MCP
client. The reply names each field and kind, a load returns the redacted text, and the secrets
are nowhere in the database (every table, read as the superuser owner), in what the embedding
provider was sent, in the logs or in the audit trail. With redaction off, the text is kept.

The keys are random, made per test in the providers' formats, and built by concatenation so the
repository's own scanners do not flag this file; none is a real credential."""

from __future__ import annotations

import secrets
import string
from collections.abc import Iterator
from dataclasses import dataclass

import psycopg
import pytest
from psycopg import sql

from sessionvault.core import apikeys
from sessionvault.runtime import Runtime, open_runtime

from ..conftest import ServerThread, hook_key, make_settings, make_user, mcp_client

pytestmark = pytest.mark.anyio

ALNUM = string.ascii_letters + string.digits


def rand(n: int, alphabet: str = ALNUM) -> str:
    # Mixed case and a digit, always: some formats require them.
    return "aZ7" + "".join(secrets.choice(alphabet) for _ in range(n - 3))


class RecordingEmbedder:
    """Keeps every text it is asked to embed: what would have gone to the provider."""

    model = "test:recording-384"

    def __init__(self) -> None:
        self.texts: list[str] = []

    def embed(self, text: str) -> list[float] | None:
        self.texts.append(text)
        return [1.0] + [0.0] * 383


@dataclass
class Served:
    rt: Runtime
    server: ServerThread
    embedder: RecordingEmbedder


def serve(pg: object, **overrides: object) -> Iterator[Served]:
    rt = open_runtime(make_settings(pg, **overrides))
    # runtime.py hands settings.redact_secrets to the Vault; set here too, so this test holds
    # whether or not that wiring is in place.
    rt.vault.redact = rt.settings.redact_secrets
    embedder = RecordingEmbedder()
    rt.vault.embedder = embedder
    try:
        with ServerThread(rt) as server:
            yield Served(rt, server, embedder)
    finally:
        rt.close()


@pytest.fixture(scope="module")
def redacting(pg) -> Iterator[Served]:
    yield from serve(pg)


@pytest.fixture(scope="module")
def keeping(pg) -> Iterator[Served]:
    yield from serve(pg, redact_secrets=False)


def fake_secrets() -> dict[str, str]:
    return {
        "aws": "AKIA" + rand(16, string.ascii_uppercase + string.digits).upper(),
        "github": "ghp_" + rand(36),
        "openai": "sk-" + "proj-" + rand(48),
        "stripe": "sk_" + "live_" + rand(24),
        "password": "pw" + rand(14),
        "sv": apikeys.generate(),
        "keyword": "kw-" + rand(13),
    }


def session(s: dict[str, str]) -> dict[str, object]:
    return {
        "name": "deploy-" + s["aws"],
        "summary": f"Rotated the leaked token {s['github']} and moved billing to the new key",
        "repo": f"https://ci:{s['password']}@github.com/acme/shop",
        "plan": ["revoke the old key", f"STRIPE_KEY={s['stripe']} goes to Secrets Manager"],
        "decisions": [
            {"decision": "keep the OpenAI client", "reason": f"the key {s['openai']} still works"},
            {"decision": "no static keys", "reason": "IAM roles everywhere"},
        ],
        "todos": ["rotate " + s["sv"]],
        "files": ["infra/secrets.tf", "src/billing/client.py"],
        "errors": [f'settings.py: db_password = "{s["keyword"]}" was committed'],
        "tried": ["git filter-repo on 3f786850e387550fdab836ed7e6dc881de23001b"],
        "client": "claude-code",
    }


async def call(url: str, key: str, tool: str, args: dict[str, object]) -> dict[str, object]:
    async with mcp_client(url, key) as client:
        result = await client.call_tool(tool, args)
    assert not result.is_error, result.content[0].text
    assert isinstance(result.structured_content, dict)
    return result.structured_content


def database_text(owner_url: str) -> str:
    """Every row of every table, as text, read as the owner (a superuser: RLS does not apply)."""
    with psycopg.connect(owner_url) as conn:
        tables = [
            r[0]
            for r in conn.execute(
                "SELECT table_name FROM information_schema.tables"
                " WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'"
            )
        ]
        assert {"sessions", "session_versions", "audit_events"} <= set(tables)
        parts = []
        for table in tables:
            query = sql.SQL("SELECT t::text FROM {} t").format(sql.Identifier(table))
            parts += [r[0] for r in conn.execute(query)]
    return "\n".join(parts)


def leaked(text: str, values: dict[str, str]) -> list[str]:
    return [kind for kind, value in values.items() if value in text]


async def test_secrets_are_redacted_before_anything_is_stored(redacting, pg, capsys):
    rt, url = redacting.rt, redacting.server.url
    user = make_user(rt)
    s = fake_secrets()
    redacting.embedder.texts.clear()

    saved = await call(url, user.key, "save_session", session(s))

    assert saved["name"] == "deploy-[REDACTED:aws_access_key]"
    assert saved["embedded"] is True
    assert saved["redacted"] == [
        {"field": "name", "kind": "aws_access_key"},
        {"field": "summary", "kind": "github_token"},
        {"field": "plan[1]", "kind": "stripe_key"},
        {"field": "decisions[0].reason", "kind": "openai_key"},
        {"field": "todos[0]", "kind": "sessionvault_key"},
        {"field": "errors[0]", "kind": "secret_assignment"},
    ]
    assert not leaked(str(saved), s)

    loaded = await call(url, user.key, "load_session", {"name": saved["name"]})
    assert loaded["summary"] == (
        "Rotated the leaked token [REDACTED:github_token] and moved billing to the new key"
    )
    # A remote's credentials are not even redacted: the one repo identity drops them.
    assert loaded["repo"] == "github.com/acme/shop"
    assert loaded["plan"] == [
        "revoke the old key",
        "STRIPE_KEY=[REDACTED:stripe_key] goes to Secrets Manager",
    ]
    assert loaded["decisions"][0]["reason"] == "the key [REDACTED:openai_key] still works"
    assert loaded["todos"] == ["rotate [REDACTED:sessionvault_key]"]
    assert loaded["errors"] == ['settings.py: db_password = "[REDACTED:secret_assignment]" was committed']
    # ordinary text untouched
    assert loaded["files"] == ["infra/secrets.tf", "src/billing/client.py"]
    assert loaded["tried"] == ["git filter-repo on 3f786850e387550fdab836ed7e6dc881de23001b"]
    assert not leaked(str(loaded), s)
    listed = await call(url, user.key, "list_sessions", {})
    assert listed["sessions"][0]["preview"].startswith("Rotated the leaked token [REDACTED:github_token]")

    # The database: the plaintext columns (name, repo, preview, client), the audit trail and
    # every other table.
    with psycopg.connect(pg.owner_url) as conn:
        head = conn.execute(
            "SELECT name, repo, preview, client FROM sessions WHERE user_id = %s", (user.id,)
        ).fetchone()
        audit = conn.execute("SELECT a::text FROM audit_events a WHERE user_id = %s", (user.id,)).fetchall()
    assert head[0] == "deploy-[REDACTED:aws_access_key]" and head[2] == ""  # the preview is sealed (0015)
    assert not leaked(" ".join(head), s)
    assert len(audit) >= 3 and any("save_session" in row[0] for row in audit)
    assert not leaked(" ".join(row[0] for row in audit), s)
    assert not leaked(database_text(pg.owner_url), s)

    # What the embedding provider was sent.
    assert len(redacting.embedder.texts) == 1
    sent = redacting.embedder.texts[0]
    assert "[REDACTED:github_token]" in sent and "IAM roles everywhere" in sent
    assert not leaked(sent, s)

    # The logs (the server thread's structured lines go to this test's stdout).
    logs = capsys.readouterr()
    assert "save_session" in logs.out
    assert not leaked(logs.out + logs.err, s)


async def test_a_clean_session_reports_an_empty_list_and_is_stored_as_sent(redacting):
    user = make_user(redacting.rt)
    args = {"name": "plain", "summary": "Nothing secret: see https://github.com/acme/shop/pull/7"}
    saved = await call(redacting.server.url, user.key, "save_session", args)
    assert saved["redacted"] == [] and saved["name"] == "plain"
    loaded = await call(redacting.server.url, user.key, "load_session", {"name": "plain"})
    assert loaded["summary"] == args["summary"]


async def test_with_redaction_off_the_text_is_kept(keeping):
    assert keeping.rt.settings.redact_secrets is False
    user = make_user(keeping.rt)
    s = fake_secrets()
    saved = await call(keeping.server.url, user.key, "save_session", session(s))
    assert saved["redacted"] == [] and saved["name"] == "deploy-" + s["aws"]
    loaded = await call(keeping.server.url, user.key, "load_session", {"name": "deploy-" + s["aws"]})
    assert loaded["summary"] == session(s)["summary"]
    assert loaded["decisions"][0]["reason"] == f"the key {s['openai']} still works"
    assert s["github"] in keeping.embedder.texts[-1]


def transcript_secrets() -> dict[str, str]:
    return {
        "pgpassword": "pg" + rand(14),
        "mysql": "my" + rand(14),
        "curl": "cu" + rand(14),
        "db_password": "db" + rand(14),
        "secret_key": "sk" + rand(30),
        "hf": "hf_" + rand(34, string.ascii_letters),
        "npm": "np" + rand(30),
        "access_token": "at" + rand(30),
        "cookie": "co" + rand(30),
        "cut_github": "ghp_" + rand(18),  # what a client that clipped first kept of a key
    }


def checkpoint(s: dict[str, str]) -> dict[str, object]:
    """An automatic checkpoint as a client that did not scrub it would send it (issue 27)."""
    return {
        "name": "auto/claude-code/6f1f4ac2-45a1-4ace-8995-8a64bf490f9f",
        # the cut key ends where the 120-character preview does
        "summary": "Asked: fix the deploy, token " + "x" * 66 + " " + s["cut_github"] + "…\n\n"
        f"Last reply: your .env has\nDB_PASSWORD={s['db_password']}\nSECRET_KEY={s['secret_key']}\n"
        f"HF_TOKEN={s['hf']}",
        "repo": "github.com/acme/shop",
        "errors": [
            f"PGPASSWORD={s['pgpassword']} psql -h db -U app: FATAL: password authentication failed",
            f"mysql -u root -p{s['mysql']} shop: ERROR 1045 (28000): Access denied",
            f"curl -u admin:{s['curl']} https://ci.internal/api: 401",
            f"curl 'https://api.example.com/v1?access_token={s['access_token']}&page=2': 403",
            f"curl -H 'Cookie: sessionid={s['cookie']}' https://app.internal: 500",
        ],
        "tried": [f"asked: npm config set //registry.npmjs.org/:_authToken={s['npm']}"],
        "client": "claude-code",
    }


async def test_a_checkpoint_holding_what_transcripts_hold_is_scrubbed_on_the_server(redacting, pg):
    user = make_user(redacting.rt)
    s = transcript_secrets()
    redacting.embedder.texts.clear()
    saved = await call(redacting.server.url, hook_key(user), "checkpoint_session", checkpoint(s))
    kinds = {r["kind"] for r in saved["redacted"]}
    assert {"secret_assignment", "secret_flag", "url_password", "cookie", "cut_token"} <= kinds
    assert "huggingface_token" in kinds
    loaded = await call(redacting.server.url, user.key, "load_session", {"name": saved["name"]})
    assert loaded["errors"][0] == (
        "PGPASSWORD=[REDACTED:secret_assignment] psql -h db -U app: FATAL: password authentication failed"
    )
    assert not leaked(str(loaded), s)
    listed = await call(redacting.server.url, user.key, "list_sessions", {})
    preview = listed["sessions"][0]["preview"]  # sealed in the database (0015): as a listing opens it
    assert "[REDACTED" in preview and not leaked(preview, s)
    assert not leaked(database_text(pg.owner_url), s)
    assert not leaked(" ".join(redacting.embedder.texts), s)
