"""`sessionvault hook checkpoint` on long transcripts: the whole hook as a client runs it, the
transcript reader alone, and the hook process's peak memory.

Transcripts: each client's real fixture (tests/fixtures/transcripts/<client>-<version>/), its
entries repeated in order until the file is 10 MB (timing) or 50 MB (memory and the deadline);
a header line a client writes once (Codex's `session_meta`, Gemini CLI's metadata) is written
once. The hook runs as the client runs it: a fresh process, `python -m sessionvault.cli.main
hook checkpoint --client <c>`, the fixture's own hook input on stdin (its `transcript_path` and
`cwd` pointed at the temporary files and a git checkout), against a real server
(benchmarks/serve.py: uvicorn + the local embedding model) on its own embedded PostgreSQL in a
temporary folder, not the seeded one. Each run gets a fresh state folder (no throttle: every run
sends) and a new empty commit in the checkout (new content: every save adds a version, with its
embedding), and is checked: it must leave nothing in the spool (sent within DEADLINE_S).

Peak RSS is the hook process's own, from GNU time (`/usr/bin/time -f %M`, its child's wait4
rusage). Not this process's own wait4 of the hook: a child forked from a large parent reports
the parent's resident set at the fork (Linux counts the pre-exec memory), e.g. 207 MiB for a
41 MiB hook under a 200 MB parent; RUSAGE_CHILDREN is the largest child so far, the server's
included. Without /usr/bin/time, wait4's figure is shown as an upper bound, marked "<="."""

from __future__ import annotations

import base64
import cProfile
import io
import json
import os
import pstats
import shutil
import subprocess
import sys
import tempfile
import time
import tracemalloc
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .common import ROOT, RUN, p50, p95, section

MB = 1_000_000
FIXTURES = ROOT / "tests" / "fixtures" / "transcripts"
GNU_TIME = Path("/usr/bin/time")


@dataclass(frozen=True)
class Fixture:
    client: str
    transcript: Path
    hook_input: Path  # a JSON file, or JSON Lines (the first line is used)
    header: int  # leading lines the client writes once per file


CLIENTS = (
    Fixture(
        "claude-code",
        FIXTURES / "claude-code-2.1.332" / "session.jsonl",
        FIXTURES / "claude-code-2.1.332" / "hook-Stop.json",
        0,
    ),
    Fixture(
        "codex",
        FIXTURES / "codex-0.171.0" / "rollout.jsonl",
        FIXTURES / "codex-0.171.0" / "hook-Stop.json",
        1,
    ),
    Fixture(
        "gemini",
        FIXTURES / "gemini-0.61.0" / "home" / ".gemini" / "tmp" / "widget" / "chats"
        / "session-2026-12-01T20-02-017d627a.jsonl",
        FIXTURES / "gemini-0.61.0" / "hooks" / "AfterAgent.jsonl",
        1,
    ),
    Fixture(
        "qwen",
        FIXTURES / "qwen-0.24.4" / "home" / ".qwen" / "projects" / "-home-user-widget" / "chats"
        / "dcc9870b-98a4-424d-b2c6-246de47fef36.jsonl",
        FIXTURES / "qwen-0.24.4" / "hooks" / "Stop.jsonl",
        0,
    ),
)  # fmt: skip


def grow(fixture: Fixture, target: Path, size: int) -> int:
    """Write the fixture's entries, repeated, to `target` until it holds at least `size` bytes
    (whole lines only); returns the size written."""
    lines = fixture.transcript.read_bytes().splitlines(keepends=True)
    head, body = lines[: fixture.header], lines[fixture.header :]
    written = 0
    with target.open("wb") as out:
        for line in head:
            written += out.write(line)
        while written < size:
            for line in body:
                written += out.write(line)
                if written >= size:
                    break
    return written


def hook_input(fixture: Fixture, transcript: Path, cwd: Path) -> dict[str, Any]:
    text = fixture.hook_input.read_text()
    data = json.loads(text.splitlines()[0] if fixture.hook_input.suffix == ".jsonl" else text)
    return {**data, "transcript_path": str(transcript), "cwd": str(cwd)}


@dataclass
class Run:
    seconds: float
    max_rss: int  # bytes
    sent: bool
    exact_rss: bool = True  # False: wait4's figure, an upper bound (see the module's note)


class Bench:
    """The temporary checkout, home and state folders, and the server's address and key."""

    def __init__(self, work: Path, url: str, key: str) -> None:
        self.work = work
        self.url = url
        self.key = key
        self.project = work / "widget"
        self.home = work / "home"
        self.home.mkdir()
        self.runs = 0
        _git(self.project.parent, "init", "-q", "-b", "main", str(self.project))
        _git(self.project, "remote", "add", "origin", "git@github.com:bench/widget.git")
        (self.project / "README.md").write_text("widget\n")
        _git(self.project, "add", "-A")
        _git(self.project, "commit", "-q", "-m", "start")

    def hook(self, fixture: Fixture, transcript: Path) -> Run:
        """One hook process, as the client starts it; a new commit first (new content)."""
        self.runs += 1
        _git(self.project, "commit", "-q", "--allow-empty", "-m", f"run {self.runs}")
        state = self.work / "state" / f"{fixture.client}-{self.runs}"
        from sessionvault import names

        env = {k: v for k, v in os.environ.items() if not k.startswith("SESSIONVAULT_")}
        env.update(
            {
                names.URL_ENV: self.url,
                names.KEY_ENV: self.key,
                names.HOME_ENV: str(state),
                "HOME": str(self.home),
            }
        )
        stdin = json.dumps(hook_input(fixture, transcript, self.project)).encode()
        argv = [sys.executable, "-m", "sessionvault.cli.main", "hook", "checkpoint"]
        argv += ["--client", fixture.client]
        rss_file = self.work / "rss.txt"
        rss_file.unlink(missing_ok=True)
        if GNU_TIME.exists():
            argv = [str(GNU_TIME), "-f", "%M", "-o", str(rss_file), *argv]
        with tempfile.TemporaryFile() as output:
            started = time.perf_counter()
            proc = subprocess.Popen(
                argv, stdin=subprocess.PIPE, stdout=output, stderr=output, env=env, cwd=self.project
            )
            assert proc.stdin is not None
            proc.stdin.write(stdin)
            proc.stdin.close()
            _, status, usage = os.wait4(proc.pid, 0)
            seconds = time.perf_counter() - started
            proc.returncode = os.waitstatus_to_exitcode(status)
            output.seek(0)
            said = output.read().decode(errors="replace")
        if proc.returncode != 0 or said:
            raise RuntimeError(f"the hook exited {proc.returncode}: {said[-2000:]}")
        spool = state / "spool"
        sent = spool.is_dir() and not any(spool.glob("*.json")) and any(spool.glob("*.sent"))
        if rss_file.exists():  # KiB, as ru_maxrss on Linux
            return Run(seconds, int(rss_file.read_text().split()[-1]) * 1024, sent)
        return Run(seconds, usage.ru_maxrss * 1024, sent, exact_rss=False)


def _git(path: Path, *args: str) -> None:
    who = ["-c", "user.name=Bench", "-c", "user.email=bench@example.com", "-c", "commit.gpgsign=false"]
    subprocess.run(["git", "-C", str(path), *who, *args], check=True, capture_output=True)


def hook_times(runs: int = 15, big_runs: int = 3) -> None:
    from sessionvault.local.hook.capture.hook import DEADLINE_S

    section(
        "Hook: `sessionvault hook checkpoint` on long transcripts",
        f"{RUN} --only hook",
        "hook: a fresh process per run (interpreter start, imports, read, build, redact, spool, one",
        "  save_session over loopback to benchmarks/serve.py with the local model), its stdin the",
        "  fixture's own hook input; every run must send (nothing left in the spool).",
        "transcripts: each fixture's entries repeated to 10 MB / 50 MB; read: reader.read(path) in",
        f"  this process. n={runs} at 10 MB after 1 warm-up, {big_runs} at 50 MB, 3 on the fixture itself;",
        f"  DEADLINE_S = {DEADLINE_S} s.",
    )
    from sessionvault.db.pool import Database
    from sessionvault.local.host import embedded
    from sessionvault.runtime import key_provider
    from sessionvault.service import accounts

    from .common import make_settings
    from .workload import ServerProcess

    db_home = Path(tempfile.mkdtemp(prefix="sessionvault-bench-hook-db-"))
    work = Path(tempfile.mkdtemp(prefix="sessionvault-bench-hook-"))
    try:
        db = embedded.start(db_home)
        master_key = base64.b64encode(os.urandom(32)).decode()
        salt = "bench-hook-salt-0123456789abcdef"
        admin = Database(db.admin_url, max_size=1)
        try:
            settings = make_settings(db.app_url, master_key, salt)
            user = accounts.create_user(admin, key_provider(settings), "bench-hook")
            key = accounts.create_key(admin, user, "bench-hook")[0]
        finally:
            admin.close()
        with ServerProcess(db.app_url, master_key, salt) as server:
            bench = Bench(work, server.url, key)
            rows = {fixture.client: _client(bench, fixture, runs, big_runs) for fixture in CLIENTS}
        _report(rows, DEADLINE_S)
        _profile(work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
        try:
            embedded.stop(db_home)
        finally:
            shutil.rmtree(db_home, ignore_errors=True)


@dataclass
class Size:
    """One client's transcript at one size: the hook runs, and reader.read alone."""

    label: str
    size: int
    hooks: list[Run]
    reads: list[float]
    traced: int | None = None  # tracemalloc's peak over one read, bytes


def _client(bench: Bench, fixture: Fixture, runs: int, big_runs: int) -> list[Size]:
    from sessionvault.local.hook.capture.clients import READERS

    reader = READERS[fixture.client]
    folder = bench.work / fixture.client
    folder.mkdir()
    small, ten, fifty = folder / "fixture.jsonl", folder / "10mb.jsonl", folder / "50mb.jsonl"
    shutil.copyfile(fixture.transcript, small)
    grow(fixture, ten, 10 * MB)
    grow(fixture, fifty, 50 * MB)
    bench.hook(fixture, ten)  # warm-up: the page cache, the server's first save for this client
    rows = []
    for label, path, n in (("fixture", small, 3), ("10 MB", ten, runs), ("50 MB", fifty, big_runs)):
        hooks = [bench.hook(fixture, path) for _ in range(n)]
        reads = _read_times(reader, path, 5 if path != fifty else 3)
        rows.append(Size(label, path.stat().st_size, hooks, reads))
    tracemalloc.start()
    reader.read(fifty)
    rows[-1].traced = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    fifty.unlink()  # 50 MB each: one on disk at a time
    return rows


def _read_times(reader: Any, path: Path, n: int) -> list[float]:
    samples = []
    for _ in range(n):
        started = time.perf_counter()
        reader.read(path)
        samples.append(time.perf_counter() - started)
    return samples


def _report(rows: dict[str, list[Size]], deadline: float) -> None:
    print(
        f"   {'client':12} {'transcript':>10} {'n':>3}  {'hook p50':>8} {'p95':>6} {'max':>6} {'sent':>5}"
        f"  {'hook RSS':>8}  {'read p50':>8}  {'read peak (tracemalloc)':>23}"
    )
    for client, sizes in rows.items():
        for r in sizes:
            t = [x.seconds for x in r.hooks]
            sent = f"{sum(x.sent for x in r.hooks)}/{len(r.hooks)}"
            rss = max(x.max_rss for x in r.hooks) / 2**20
            bound = "" if all(x.exact_rss for x in r.hooks) else "<="
            traced = f"{r.traced / 2**20:.1f} MiB" if r.traced is not None else "-"
            print(
                f"   {client:12} {_size(r.size):>10} {len(t):3d}  {p50(t):7.2f}s {p95(t):5.2f}s"
                f" {max(t):5.2f}s {sent:>5} {bound:>2}{rss:4.1f} MiB"
                f"  {p50(r.reads) * 1000:6.0f}ms  {traced:>23}"
            )
    every = [x for sizes in rows.values() for r in sizes for x in r.hooks]
    print(
        f"   hook RSS: the hook process's peak resident set (/usr/bin/time -f %M), the largest of its runs."
        f" {sum(x.sent for x in every)}/{len(every)} runs sent;"
        f" slowest {max(x.seconds for x in every):.2f} s of the {deadline} s deadline,"
        f" {sum(x.seconds > deadline / 2 for x in every)} over half of it."
    )


def _size(n: int) -> str:
    return f"{n / 1000:.0f} kB" if n < MB else f"{n / MB:.1f} MB"


def _profile(work: Path, top: int = 6) -> None:
    """Where a hook's own work goes on 10 MB (in this process: read, build, git, redact), by
    self time under cProfile (which inflates small calls)."""
    from sessionvault.local.hook.capture.clients import READERS
    from sessionvault.local.hook.capture.hook import checkpoint_args

    print("   in-process checkpoint_args (read + build + git + redact) on 10 MB, cProfile, one run each:")
    for fixture in CLIENTS:
        path = work / fixture.client / "10mb.jsonl"
        checkpoint_args(READERS[fixture.client], path, work / "widget")  # imports, detect-secrets
        profile = cProfile.Profile()
        started = time.perf_counter()
        profile.runcall(checkpoint_args, READERS[fixture.client], path, work / "widget")
        took = time.perf_counter() - started
        stats = pstats.Stats(profile, stream=io.StringIO())
        entries: dict[Any, Any] = stats.stats  # type: ignore[attr-defined]
        ranked = sorted(entries.items(), key=lambda kv: -kv[1][2])[:top]
        print(f"     {fixture.client:12} {took:5.2f} s under cProfile; ms self:")
        for func, row in ranked:
            print(f"       {row[2] * 1000:5.0f}  {_where(func)}")


def _where(func: tuple[str, int, str]) -> str:
    file, line, name = func
    if file == "~":
        return name.strip("<>").replace("built-in method ", "")
    short = file.split("site-packages/")[-1].split("shared/")[-1].split("/lib/python3.11/")[-1]
    return f"{short.removeprefix('sessionvault/')}:{line}({name})"
