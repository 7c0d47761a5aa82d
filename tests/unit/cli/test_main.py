"""The `sessionvault` command as a user meets it. A command imports only what it uses:
`--version`, `--help` and `sessions list` answer without the MCP SDK, pydantic, psycopg or numpy
(each costs a fraction of a second to import, and every command paid for all of them), checked by
what a fresh interpreter has in sys.modules after the command ran, not by a clock. And every
command and option has a help line written for users."""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from sessionvault.cli import main

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


# --------------------------------------------------------------------------- --help

# What a module's docstring says for its maintainers, not for someone typing --help.
DEVELOPER_NOTES = re.compile(
    r"this package|this module|parses arguments|calls into|\.py\b|\bsessionvault\.[a-z_]+\."
    r"|`[a-z_]+\.[a-z_]+`|TODO|FIXME",
    re.IGNORECASE,
)


def commands(
    p: argparse.ArgumentParser, path: str = "sessionvault"
) -> Iterator[tuple[str, argparse.ArgumentParser, str]]:
    """Every parser under `p` with its command line and what its parent's list says of it."""
    for action in p._actions:
        if isinstance(action, argparse._SubParsersAction):
            listed = {choice.dest: choice.help or "" for choice in action._choices_actions}
            for name, child in action.choices.items():
                yield f"{path} {name}", child, listed.get(name, "")
                yield from commands(child, f"{path} {name}")


def test_every_command_and_option_has_help_written_for_users() -> None:
    root = main.parser()
    found = [("sessionvault", root, root.description or "")]
    found += list(commands(root))
    assert len(found) > 40  # the walk reaches the nested commands (user create, key revoke, ...)
    missing, notes = [], []
    for line, p, listed in found:
        if not listed.strip() and line != "sessionvault":
            missing.append(f"{line}: nothing in its parent's list")
        if not (p.description or "").strip():
            missing.append(f"{line}: no description on its own --help page")
        for action in p._actions:
            if isinstance(action, argparse._SubParsersAction):
                continue
            name = "/".join(action.option_strings) or action.dest
            if not (action.help or "").strip():
                missing.append(f"{line} {name}: no help")
            if DEVELOPER_NOTES.search(action.help or ""):
                notes.append(f"{line} {name}: {action.help}")
        for text in (listed, p.description or "", p.epilog or ""):
            if DEVELOPER_NOTES.search(text):
                notes.append(f"{line}: {DEVELOPER_NOTES.search(text)!r} in {text[:80]!r}")
    assert missing == []
    assert notes == []


def test_a_nested_command_says_what_it_does_on_its_own_help_page(capsys: pytest.CaptureFixture[str]) -> None:
    for argv in (["key", "create", "--help"], ["user", "create", "--help"], ["migrate", "--help"]):
        with pytest.raises(SystemExit):
            main.parser().parse_args(argv)
        page = capsys.readouterr().out
        assert page.split("\n\n")[1].strip(), page  # usage, then the description
    with pytest.raises(SystemExit):
        main.parser().parse_args(["dev", "--help"])
    assert "the address to listen on" in capsys.readouterr().out


def test_hook_help_on_its_fast_path_says_what_the_hooks_are(capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 37 item 7: `sessionvault hook --help` (answered before the full parser is built)
    had no description."""
    from sessionvault.cli import hook

    with pytest.raises(SystemExit):
        hook.main(["--help"])
    page = capsys.readouterr().out
    assert page.split("\n\n")[1].strip().startswith("Commands that AI clients run as hooks"), page
