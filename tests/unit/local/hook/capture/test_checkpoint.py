"""A Transcript made into save_session arguments (capture/checkpoint.py)."""

from __future__ import annotations

import json
from pathlib import Path

from sessionvault.core.records import MAX_ITEMS, MAX_TEXT, SaveArgs, parse
from sessionvault.local.hook.capture import claude_code
from sessionvault.local.hook.capture.checkpoint import build
from sessionvault.local.hook.capture.transcript import Transcript


def transcript(**fields: object) -> Transcript:
    t = Transcript(client="codex", session_id="019a-b/../c")
    for name, value in fields.items():
        setattr(t, name, value)
    return t


def test_a_bare_request_with_no_reply_or_work_is_nothing_to_hand_over() -> None:
    t = transcript()
    t.asks.append("hi")
    assert build(t, repo="github.com/a/b", branch=None, commit=None) is None


def test_the_fields_follow_the_documented_mapping() -> None:
    t = transcript(last_message="done: see notes", compact_summary="earlier: set up the repo")
    t.asks.extend(["first ask", "latest ask"])
    t.set_todo("write plan", "completed")
    t.set_todo("check config", "in_progress")
    t.touch("notes/plan.md")
    t.failures.append("make test: error: 2 failed")
    args = build(t, repo="github.com/a/b", branch="main", commit="0123456789abcdef")
    assert args is not None
    assert args["name"] == "auto/codex/019a-b-..-c"  # the id made safe for a name
    assert args["summary"] == (
        "Asked: latest ask\n\nLast reply: done: see notes\n\nCompaction summary: earlier: set up the repo"
    )
    assert args["plan"] == ["[done] write plan", "[doing] check config"]
    assert args["todos"] == ["check config (in progress)"]
    assert (args["files"], args["errors"], args["tried"]) == (
        ["notes/plan.md"],
        ["make test: error: 2 failed"],
        ["asked: first ask"],
    )
    assert (args["branch"], args["commit"], args["client"]) == ("main", "0123456789abcdef", "codex")
    parse(SaveArgs, args)  # what the server takes


def test_everything_stays_within_the_records_caps() -> None:
    t = transcript(last_message="x" * (3 * MAX_TEXT))
    for i in range(MAX_ITEMS + 20):
        t.touch(f"f{i}")
    args = build(t, repo="r", branch=None, commit=None)
    assert args is not None and len(args["summary"]) <= MAX_TEXT
    parse(SaveArgs, args)


# What issue 27 found in a checkpoint: a failed `PGPASSWORD=... psql`, a reply that printed
# `.env`; nothing of either may be kept, and `<private>` spans are never captured.

PASSWORD = "Zq8Rt5" + "Lm2Np9Xw4K"
SECRET_KEY = "django-insecure-" + "8f3k2j1l0qpzm4x7"
STRIPE = "sk" + "_live_" + "Zx9Qw8Er7Ty6Ui5Op4As3Df2"
ENV_FILE = f"DB_PASSWORD={PASSWORD}\nSECRET_KEY={SECRET_KEY}\nSTRIPE_SECRET_KEY={STRIPE}\nDEBUG=false\n"


def claude_code_transcript(path: Path, cwd: Path, reply: str, ask: str = "deploy it") -> Path:
    def call(n: int, name: str, given: dict[str, str]) -> dict[str, object]:
        block = {"type": "tool_use", "id": f"t{n}", "name": name, "input": given}
        return {"type": "assistant", "cwd": str(cwd), "sessionId": "s1", "message": {"content": [block]}}

    def result(n: int, text: str, error: bool = False) -> dict[str, object]:
        block = {"type": "tool_result", "tool_use_id": f"t{n}", "is_error": error, "content": text}
        return {"type": "user", "message": {"content": [block]}}

    entries = [
        {"type": "user", "cwd": str(cwd), "sessionId": "s1", "message": {"content": ask}},
        call(1, "Read", {"file_path": str(cwd / ".env")}),
        result(1, ENV_FILE),
        call(2, "Bash", {"command": f"PGPASSWORD={PASSWORD} psql -h db.internal -U app -c 'select 1'"}),
        result(
            2, f"Exit code 2\npsql: error: FATAL:  password authentication failed (tried {PASSWORD})", True
        ),
        {"type": "assistant", "message": {"content": [{"type": "text", "text": reply}]}},
    ]
    path.write_text("".join(json.dumps(e) + "\n" for e in entries))
    return path


def test_a_failed_psql_and_a_printed_env_file_leave_no_secret_in_the_checkpoint(tmp_path: Path) -> None:
    reply = (
        "The password in your `.env` is rejected. Here is the file:\n```\n" + ENV_FILE + "```\n"
        f"and again unfenced:\nSTRIPE_SECRET_KEY={STRIPE}\nDB_PASSWORD={PASSWORD}"
    )
    ask = "deploy it <private>the vault passphrase is on the sticky note</private> please"
    path = claude_code_transcript(tmp_path / "s1.jsonl", tmp_path, reply, ask)
    args = build(claude_code.read(path), repo="github.com/a/b", branch=None, commit=None)
    assert args is not None
    stored = json.dumps(args)
    for secret in (PASSWORD, SECRET_KEY, STRIPE, "sticky note"):
        assert secret not in stored
    assert args["errors"] == [
        "PGPASSWORD=[REDACTED:secret_assignment] psql -h db.internal -U app -c 'select 1':"
        " psql: error: FATAL:  password authentication failed (tried [REDACTED:secret_assignment])"
    ]
    assert args["summary"].startswith("Asked: deploy it [private] please\n\nLast reply: The password in your")
    assert "```\n[withheld: private]\n```" in args["summary"]
    parse(SaveArgs, args)


def test_a_repos_own_private_patterns_hold_for_reads_and_failures(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / ".sessionvaultignore").write_text("secrets/*.json\n")
    t = Transcript(client="claude-code", session_id="s2", cwd=str(tmp_path))
    t.output_of("cat secrets/prod.json", '{"region": "eu-west-1-prod-cluster"}')
    t.last_message = 'It holds:\n{"region": "eu-west-1-prod-cluster"}'
    t.failures.append('jq .x secrets/prod.json: jq: error: {"region": "eu-west-1-prod-cluster"} is not valid')
    args = build(t, repo="r", branch=None, commit=None)
    assert args is not None and "eu-west-1-prod-cluster" not in json.dumps(args)
    assert args["errors"] == ["jq .x secrets/prod.json: output withheld: it names a private file"]


def test_a_secret_past_the_summarys_cap_is_scrubbed_before_the_cut(tmp_path: Path) -> None:
    token = "gh" + "p_Zx9Qw8Er7Ty6Ui5Op4As3Df2Gh1Jk0LzAbCd"
    t = transcript(last_message="x " * (MAX_TEXT // 2 - 12) + token + " and more")
    args = build(t, repo="r", branch=None, commit=None)
    assert args is not None and "Zx9Qw8" not in args["summary"] and len(args["summary"]) <= MAX_TEXT
