"""How many BLAS threads the local embedder should use: 1, 2 and the library's default, idle and
beside one busy process (issue 29, item 2).

Each setting runs in a process of its own (a worker: `python -m benchmarks.blas worker N`, N = 0
for the default): the model loaded, then CLIENTS threads embedding a save's text back to back
(as concurrent save_session calls do in the server's worker threads) for SECONDS, idle, then
with a pure-Python busy loop running beside it in another process (one program wanting one
core, as a build or a test run does). The worker sets the count through threadpoolctl, as the
server does (core/embedding/minilm.py), never through the environment: the environment of a
server is whatever its user has.

    .venv/bin/python -m benchmarks.run --only blas"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time

from .common import ROOT, RUN, ms, p50, p95, section
from .embed import CORPUS

CLIENTS = 4
SECONDS = 6.0
SETTINGS = (1, 2, 0)  # 0: the BLAS library's own default (one thread a core)
BUSY = "while True: pass"


def blas_threads() -> None:
    section(
        "BLAS threads of the local embedder: 1, 2 and the default, idle and beside a busy process",
        f"{RUN} --only blas",
        f"{CLIENTS} threads embedding one text each call (the corpus of benchmarks/embed.py in turn),",
        f"back to back for {SECONDS:g} s, in a process per setting; busy: one `{BUSY}` process beside it.",
    )
    print(f"   {'threads':>8} {'load':>5} {'embeds/s':>9} {'p50':>9} {'p95':>9}")
    for setting in SETTINGS:
        for busy in (False, True):
            figures = _run(setting, busy)
            label = "default" if setting == 0 else str(setting)
            print(
                f"   {label:>8} {'busy' if busy else 'idle':>5} {figures['rate']:9.1f}"
                f" {ms(figures['p50'])} ms {ms(figures['p95'])} ms"
                + (f"  (library default: {figures['threads']} threads)" if setting == 0 else "")
            )


def _run(setting: int, busy: bool) -> dict[str, float]:
    hog = subprocess.Popen([sys.executable, "-c", BUSY]) if busy else None
    try:
        out = subprocess.run(
            [sys.executable, "-m", "benchmarks.blas", "worker", str(setting)],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    finally:
        if hog is not None:
            hog.kill()
            hog.wait()
    return dict(json.loads(out.splitlines()[-1]))


def _worker(setting: int) -> None:
    from threadpoolctl import threadpool_info, threadpool_limits

    from sessionvault.core.embedding.minilm import MiniLM

    default = max((p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas"), default=0)
    model = MiniLM()  # bounds the threads itself (BLAS_THREADS): set after it, for this setting
    threadpool_limits(limits=setting or default, user_api="blas")
    for text in CORPUS:
        model.embed([text])
    samples: list[float] = []
    lock = threading.Lock()
    stop_at = time.perf_counter() + SECONDS

    def client(offset: int) -> None:
        i = offset
        while time.perf_counter() < stop_at:
            started = time.perf_counter()
            model.embed([CORPUS[i % len(CORPUS)]])
            took = time.perf_counter() - started
            with lock:
                samples.append(took)
            i += 1

    threads = [threading.Thread(target=client, args=(k * 7,)) for k in range(CLIENTS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    print(
        json.dumps(
            {"rate": len(samples) / SECONDS, "p50": p50(samples), "p95": p95(samples), "threads": default}
        )
    )


if __name__ == "__main__":
    if sys.argv[1:2] == ["worker"]:
        _worker(int(sys.argv[2]))
