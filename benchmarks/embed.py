"""The local embedding model: the numpy path (sessionvault.core.embedding.minilm, what `make dev` runs)
beside the torch path it replaced (sentence-transformers on PyTorch, CPU: no extra brings them;
`pip install torch==2.13.0 "sentence-transformers>=3.0"` into the venv to compare).

Both compute all-MiniLM-L6-v2 from the same files (the sessionvault-minilm package) on the same
corpus: CORPUS below, 32 texts a session's embedding text looks like (a name, a repo, a summary,
plans, errors, code), from 7 to 256 tokens (three are cut at 256). Each path runs in a process
of its own, as a server would (in one process, torch's OpenMP threads and numpy's OpenBLAS
threads spin against each other on 2 cores: the numpy path's single-text figure fell to a
tenth). Figures, each the median of ROUNDS rounds, the two workers taking turns round by round
(this machine is shared: turns spread the other load over both), half a second apart (so
the idle worker's thread pool has stopped spinning):
- single: one text per call, every text of the corpus in turn (what save and search do);
- batch of 32: the whole corpus in one call (what a re-embedding job can do);
- 256 tokens: one text cut at 256 tokens per call (a long session);
- first vector: a fresh interpreter's import + load + one embed (what a server's warm-up or a
  first search waits for), median of FRESH;
- peak RSS: the worker's VmHWM after all rounds (/proc: this process image only).
The vectors are compared too: the lowest cosine between the two paths on the corpus.

    .venv/bin/python -m benchmarks.run --only embed
    .venv/bin/python -m benchmarks.embed worker numpy    (one worker: JSON lines on stdin/stdout)"""

from __future__ import annotations

import importlib.util
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

from .common import ROOT, RUN, section

ROUNDS = 7
FRESH = 3

_SUMMARY = (
    "Checkpoint before compaction: the hook reads the transcript line by line, keeps the last"
    " reply before the summary, redacts secrets in every field, and sends one save_session call"
    " over loopback; when the server is down the record waits in the spool and is retried. "
)
CORPUS = [
    "fix the flaky payment webhook tests",
    "jwt-auth github.com/acme/api Added JWT login: access tokens expire after 15 minutes",
    "Postgres connections exhausted under load; added pgbouncer in transaction mode",
    "Rebuilt the dashboard layout with CSS grid; sidebar collapses on mobile",
    "CI tests fail at random because of a race in the fixture teardown",
    "Users upload avatars straight to S3 with presigned URLs, max 5 MB",
    "Translated the checkout flow into German and French with gettext catalogs",
    "how do users sign in and stay logged in",
    "too many database connections when traffic spikes",
    "page layout breaks on phones",
    "TypeError: 'NoneType' object is not subscriptable in vault.search at line 250",
    "def embed(self, text: str) -> list[float] | None: return self._load().encode(text)",
    "SELECT id, name FROM sessions WHERE user_id = $1 ORDER BY updated_at DESC LIMIT 20",
    "plan: 1. reproduce the deadlock 2. add a lock timeout 3. retry the migration in CI",
    "decisions: keep RLS on every table (reason: tenant isolation must not depend on the app)",
    "todos: rotate the master key, document the bridge, measure the cold start on Lambda",
    "tried: raising the pool size (no effect), pinning psycopg 3.2 (same error), a new index",
    "files: shared/sessionvault/service/vault.py, tests/integration/test_vault.py, Makefile",
    "Übergrößenträger café naïve façade — unicode in a summary, 日本語のテキスト, emoji 😀",
    "git rebase -i HEAD~3 && make test 2>&1 | tail -n 40",
    "The rate limiter counts per key and per minute; protocol messages have their own budget.",
    "Migrated the consent page to a server-rendered form; the OAuth flow keeps PKCE and state.",
    "Hook time on a 10 MB transcript stays under a second; memory is flat at 40 MiB.",
    "Search ranks the relevant session first for paraphrased queries across six topics.",
    "Handoff offered to another client: claim it with load_session(handoff=true) within a week.",
    "Deploy: sam build, sam deploy --guided; SnapStart on; the alias points at the new version.",
    "A second make dev on a busy port must fail before printing the quick start.",
    "Embedded PostgreSQL 18 with pgvector 0.8 in the state folder, on a Unix socket.",
    "redaction: AWS keys, GitHub tokens, JWTs and URL passwords are replaced before saving",
    _SUMMARY * 3,
    (_SUMMARY + "plan: " + "measure, change one thing, measure again; ") * 4,
    "errors: " + "psycopg.OperationalError: connection to server on socket failed; " * 20,
]
LONG = _SUMMARY * 6  # cut at 256 tokens

FIRST_VECTOR = {
    "numpy": "from sessionvault.core.embedding.minilm import MiniLM\nMiniLM().embed(['warm up'])",
    "torch": (
        "import os\nos.environ['HF_HUB_OFFLINE'] = '1'\n"
        "from sentence_transformers import SentenceTransformer\n"
        "from sessionvault.core.embedding.minilm import model_dir\n"
        "SentenceTransformer(str(model_dir()), device='cpu').encode(['warm up'], normalize_embeddings=True)"
    ),
}


def embed_throughput() -> None:
    import numpy as np

    section(
        "Embeddings: all-MiniLM-L6-v2, numpy (what make dev runs) vs torch (sentence-transformers)",
        f"{RUN} --only embed",
        f"corpus: {len(CORPUS)} texts like a session's embedding text (3 cut at 256 tokens); each",
        f"  path in a worker process of its own; median of {ROUNDS} rounds, the workers taking turns;",
        f"  first vector: a fresh process's import + load + one embed (median of {FRESH}).",
    )
    workers = {"numpy": _Worker("numpy")}
    if importlib.util.find_spec("sentence_transformers") is not None:
        workers["torch"] = _Worker("torch")
    else:
        print("   torch path: sentence-transformers is not installed (installed by hand only): numpy only")
    try:
        info = {name: w.ask("info") for name, w in workers.items()}
        lengths = info["numpy"]["lengths"]
        print(
            f"   tokens per text: min {min(lengths)}, median {statistics.median(lengths):.0f},"
            f" max {max(lengths)}"
        )
        for name, about in info.items():
            print(f"   {name}: {about['threads']}")
        if "torch" in workers:
            a, b = (np.asarray(workers[n].ask("vectors")) for n in ("numpy", "torch"))
            lowest = float(np.min((a * b).sum(axis=1)))
            print(f"   same vectors: lowest cosine numpy vs torch on the corpus {lowest:.7f}")
        rounds: dict[str, list[dict[str, float]]] = {name: [] for name in workers}
        for _ in range(ROUNDS):
            for name, worker in workers.items():
                time.sleep(0.5)  # the other worker's pool threads stop spinning (OpenMP's block time)
                rounds[name].append(worker.ask("round"))
        rss = {name: w.ask("rss")["rss"] for name, w in workers.items()}
    finally:
        for worker in workers.values():
            worker.close()
    first = {name: _first_vector(FIRST_VECTOR[name]) for name in workers}

    print(
        f"   {'path':6} {'single, sentences/s':>20} {'batch of 32, sentences/s':>25}"
        f" {'256 tokens, ms':>15} {'first vector, s':>16} {'peak RSS':>10}"
    )
    median: dict[str, dict[str, float]] = {}
    for name, runs in rounds.items():
        median[name] = {k: statistics.median(r[k] for r in runs) for k in ("single", "batch", "long")}
        m = median[name]
        print(
            f"   {name:6} {m['single']:20.0f} {m['batch']:25.0f} {m['long'] * 1000:15.1f}"
            f" {first[name]:16.2f} {rss[name] / 1024:6.0f} MiB"
        )
    if "torch" in median:
        ratio = {k: median["numpy"][k] / median["torch"][k] for k in ("single", "batch")}
        print(f"   numpy / torch: {ratio['single']:.2f}x single, {ratio['batch']:.2f}x batch of 32")


class _Worker:
    """One path in a process of its own, asked by JSON lines."""

    def __init__(self, path: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "benchmarks.embed", "worker", path],
            cwd=ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )

    def ask(self, what: str) -> Any:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(what + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"embedding worker exited ({self.proc.wait()})")
        return json.loads(line)

    def close(self) -> None:
        if self.proc.stdin:
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def _worker(path: str) -> None:
    embed = _load(path)
    embed(CORPUS)  # warm-up: first-call allocations, lazy inits
    embed([CORPUS[0]])
    for line in sys.stdin:
        what = line.strip()
        if what == "info":
            from sessionvault.core.embedding.minilm import MiniLM

            lengths = [len(ids) for ids in MiniLM().tokenize(CORPUS)] if path == "numpy" else []
            answer: Any = {"lengths": lengths, "threads": _threads(path)}
        elif what == "vectors":
            answer = [[float(x) for x in row] for row in embed(CORPUS)]
        elif what == "round":
            answer = _round(embed)
        elif what == "rss":
            answer = {"rss": _vm_hwm()}
        else:
            answer = {"error": what}
        print(json.dumps(answer), flush=True)


def _load(path: str) -> Callable[[list[str]], Any]:
    if path == "numpy":
        from sessionvault.core.embedding.minilm import MiniLM

        return MiniLM().embed
    os.environ["HF_HUB_OFFLINE"] = "1"
    from sentence_transformers import SentenceTransformer

    from sessionvault.core.embedding.minilm import model_dir

    model = SentenceTransformer(str(model_dir()), device="cpu")
    return lambda texts: model.encode(texts, batch_size=32, normalize_embeddings=True)


def _round(embed: Callable[[list[str]], Any]) -> dict[str, float]:
    started = time.perf_counter()
    for text in CORPUS:
        embed([text])
    single = len(CORPUS) / (time.perf_counter() - started)
    started = time.perf_counter()
    embed(CORPUS)
    batch = len(CORPUS) / (time.perf_counter() - started)
    started = time.perf_counter()
    for _ in range(4):
        embed([LONG])
    return {"single": single, "batch": batch, "long": (time.perf_counter() - started) / 4}


def _first_vector(code: str) -> float:
    """Median seconds of a fresh interpreter importing, loading and embedding once."""
    runs = []
    for _ in range(FRESH):
        timed = f"import time\nt = time.perf_counter()\n{code}\nprint(time.perf_counter() - t)"
        out = subprocess.run(
            [sys.executable, "-c", timed], capture_output=True, text=True, timeout=300, cwd=ROOT, check=True
        )
        runs.append(float(out.stdout.strip().splitlines()[-1]))
    return statistics.median(runs)


def _vm_hwm() -> int:
    """This process image's peak resident set, KiB (VmHWM: not the parent's, unlike ru_maxrss)."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return 0


def _threads(path: str) -> str:
    if path == "torch":
        import torch

        return f"torch {torch.__version__}, {torch.get_num_threads()} threads"
    tuned = {k: v for k, v in os.environ.items() if k in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")}
    return _blas() + (f"; set here: {tuned}" if tuned else "")


def _blas() -> str:
    import numpy as np

    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return f"numpy {np.__version__} (threadpoolctl not installed to name its BLAS)"
    parts = [
        f"numpy {np.__version__}, {i.get('internal_api')} {i.get('version')} ({i.get('architecture')}),"
        f" {i.get('num_threads')} threads"
        for i in threadpool_info()
        if i.get("user_api") == "blas"
    ]
    return ", ".join(parts) or "no BLAS found"


if __name__ == "__main__":
    if sys.argv[1:2] == ["worker"]:
        _worker(sys.argv[2])
    else:
        sys.exit(f"usage: {RUN} --only embed")
