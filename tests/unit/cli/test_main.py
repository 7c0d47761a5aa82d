"""A command imports only what it uses: `--version`, `--help` and `sessions list` answer without
the MCP SDK, pydantic, psycopg or numpy (each costs a fraction of a second to import, and every
command paid for all of them). Checked by what a fresh interpreter has in sys.modules after the
command ran, not by a clock."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ..local.remote.fake_api import Canned, Fake

HEAVY = ("mcp", "mcp_types", "pydantic", "psycopg", "numpy", "tomlkit", "starlette", "uvicorn", "httpx2")

# Runs `sessionvault ARGS...` in this interpreter, then prints which heavy modules were imported.
PROBE = f"""
import contextlib, io, json, sys
from sessionvault.cli.main import main
out = io.StringIO()
with contextlib.redirect_stdout(out):
    try:
        code = main(sys.argv[1:])
    except SystemExit as exc:
        code = exc.code
heavy = sorted(n for n in {HEAVY!r} if n in sys.modules)
print(json.dumps({{"code": code, "out": out.getvalue(), "heavy": heavy}}))
"""


def probe(args: list[str], home: Path) -> dict[str, object]:
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("SESSIONVAULT_")},
        "HOME": str(home),
        "SESSIONVAULT_HOME": str(home / ".sessionvault"),
        "SESSIONVAULT_API_KEY": "sv_live_test",
    }
    env.pop("DATABASE_URL", None)
    command = [sys.executable, "-c", PROBE, *args]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    answer: dict[str, object] = json.loads(done.stdout.splitlines()[-1])
    return answer


@pytest.mark.parametrize("args", [["--version"], ["--help"], ["sessions", "list", "--help"]])
def test_version_and_help_import_no_heavy_module(args: list[str], tmp_path: Path) -> None:
    answer = probe(args, tmp_path)
    assert answer["code"] == 0 and answer["out"]
    assert answer["heavy"] == []


def test_sessions_list_imports_no_heavy_module(tmp_path: Path) -> None:
    fake = Fake()
    try:
        listing = {
            "sessions": [
                {
                    "name": "feature-x",
                    "repo": "github.com/acme/app",
                    "preview": "half done",
                    "version": 2,
                    "client": "claude-code",
                    "updated_at": "2025-01-02T10:11:12+00:00",
                }
            ],
            "next_cursor": None,
        }
        fake.reply(Canned(body=json.dumps(listing).encode()))
        answer = probe(["sessions", "list", "--url", fake.url], tmp_path)
    finally:
        fake.httpd.shutdown()
        fake.httpd.server_close()
    assert answer["code"] == 0 and "feature-x" in str(answer["out"])  # it really ran, and asked
    assert [s.path for s in fake.seen] == ["/api/v1/sessions"]
    assert answer["heavy"] == []
