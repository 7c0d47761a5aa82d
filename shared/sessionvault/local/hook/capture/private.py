"""What a capture never takes: `<private>...</private>` spans, and the contents of private files.

- `<private>...</private>`: the convention users of memory tools already write around what must
  not be remembered. A span is removed from every text a checkpoint takes (requests, replies,
  summaries, tasks, commands), an unclosed one to the end of its text.
- Private files: DEFAULT_PRIVATE (environment files, keys, credentials files, kubeconfigs), plus
  the patterns of the repo's own `.sessionvaultignore` (REPO_FILE: one glob a line, `#` comments;
  found in the session's folder or the nearest folder above it, up to the checkout's root). A
  repo's file can only add patterns: the defaults always hold. A private file's path may be
  kept (an edit of `.env` is worth knowing), never what it holds: the output of a tool call that
  read it (its lines are then withheld wherever else they appear: a reply that repeats them),
  a code block that a reply introduces with its name, the error line of a command naming it.
Patterns: a pattern without `/` matches a file's name (`*.pem`, `.env*`), one with `/` the end
of its path (`.kube/config`, `secrets/*.json`)."""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Callable
from functools import cache
from pathlib import Path

DEFAULT_PRIVATE = (
    ".env*",  # .env, .env.local, .env.production, .envrc
    "*.pem",
    "*.key",
    "id_rsa*",  # SSH keys (`id_*` by name: a bare `id_*` would take `id_token` for one)
    "id_dsa*",
    "id_ecdsa*",
    "id_ed25519*",
    ".npmrc",
    ".netrc",
    ".pgpass",
    "kubeconfig",
    "*.kubeconfig",
    ".kube/config",
)
REPO_FILE = ".sessionvaultignore"
MAX_PATTERNS = 200  # of a repo's file; more are ignored
MAX_FILE = 64_000  # bytes of a repo's file read
WITHHELD = "[withheld: private]"
MAX_WITHHELD = 5_000  # lines of private files remembered while reading a transcript
MIN_WITHHELD = 8  # shorter lines ("}", "[auth]") are too common to withhold wherever they appear

_SPAN = re.compile(r"(?is)<private>.*?(?:</private>|\Z)")
_TOKEN = re.compile(r"[^\s'\"`<>|;&()=,]+")
_FENCE = re.compile(r"^\s*(```+|~~~+)(.*)$")


def without_spans(text: str) -> str:
    """`text` without its `<private>` spans (an unclosed one runs to the end)."""
    return _SPAN.sub("[private]", text) if "<private" in text.lower() else text


@cache
def patterns_for(cwd: str) -> tuple[str, ...]:
    """DEFAULT_PRIVATE and the patterns of the repo's REPO_FILE, for a session run in `cwd`."""
    return DEFAULT_PRIVATE + tuple(_repo_patterns(Path(cwd))) if cwd else DEFAULT_PRIVATE


def _repo_patterns(cwd: Path) -> list[str]:
    for folder in (cwd, *cwd.parents):
        try:
            with (folder / REPO_FILE).open("rb") as handle:
                text = handle.read(MAX_FILE).decode("utf-8", "replace")
        except OSError:
            if (folder / ".git").exists():
                return []  # the checkout's root, and no file
            continue
        lines = (line.strip() for line in text.splitlines())
        return [line.removeprefix("/") for line in lines if line and not line.startswith("#")][:MAX_PATTERNS]
    return []


@cache
def matcher(patterns: tuple[str, ...]) -> Callable[[str], bool]:
    """Whether a path (as a command or a tool names it) is private under `patterns`."""
    names = [p for p in patterns if "/" not in p]
    tails = [p.rstrip("/") for p in patterns if "/" in p]

    def private(path: str) -> bool:
        path = path.strip("'\"`()").rstrip(":,.").replace("\\", "/")
        if not path or "://" in path:
            return False
        name = path.rsplit("/", 1)[-1]
        if any(fnmatch.fnmatchcase(name, p) for p in names):
            return True
        return any(fnmatch.fnmatchcase(path, p) or fnmatch.fnmatchcase(path, "*/" + p) for p in tails)

    return private


def names_private(text: str, private: Callable[[str], bool]) -> str:
    """The first private path `text` names ("" when none): a command's argument, a file's name."""
    return next((t for t in _TOKEN.findall(text) if private(t)), "")


def lines_of(output: str) -> set[str]:
    """The lines of a private file's contents worth withholding elsewhere."""
    return {line.strip() for line in output.splitlines() if len(line.strip()) >= MIN_WITHHELD}


def withhold(text: str, withheld: set[str], private: Callable[[str], bool]) -> str:
    """`text` without the lines of private files it repeats (`withheld`) and without the body of
    every code block it introduces with a private file's name (in the fence's info string or the
    line before it: "Here is your `.env`:")."""
    out: list[str] = []
    fence, hidden = "", False
    for line in text.splitlines():
        opened = _FENCE.match(line)
        if fence:
            if opened and opened.group(1).startswith(fence) and not opened.group(2).strip():
                fence = ""
                out.append(line)
            elif not hidden:
                out.append(WITHHELD if line.strip() in withheld else line)
            elif out[-1] != WITHHELD:
                out.append(WITHHELD)
            continue
        if opened:
            before = next((o for o in reversed(out) if o.strip()), "")
            fence, hidden = opened.group(1), bool(names_private(opened.group(2) + " " + before, private))
            out.append(line)
            continue
        out.append(WITHHELD if line.strip() in withheld else line)
    return "\n".join(out)
