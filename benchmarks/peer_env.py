"""The peer of issue 29 item 5, mcp-memory-service 12.4.0, in a virtualenv of its own and run
as its users run it (`memory server --streamable-http`, sqlite-vec), for benchmarks/peer.py.

The virtualenv is built once, outside the repository, and reused while its pins are unchanged:
nothing of the peer is committed and nothing of it enters the project's own .venv (its `mcp`
is 1.x, ours 2.x). It loads the same model as SessionVault's local embedder, from the same
files: the all-MiniLM-L6-v2 folder the `sessionvault-minilm` package installs in .venv,
given to sentence-transformers as a local path with the hub switched off, so nothing is
downloaded at run time."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PEER_HOME = Path(os.environ.get("BENCH_PEER_HOME", "/var/tmp/sessionvault-bench-peer"))
VENV = PEER_HOME / "venv"
# The peer's release, and sentence-transformers / transformers / tokenizers at the versions of
# our .venv, so the model runs through the same library code on both sides. torch 2.13.0 is the
# CPU wheel that lies on this machine's disk (find-links): a bare `torch` would fetch a
# multi-GB CUDA build.
PINS = (
    "mcp-memory-service==12.4.0",
    "torch==2.13.0",
    "sentence-transformers==6.2.0",
    "transformers==5.24.0",
    "tokenizers==0.23.3",
)
PEER_VERSION = "12.4.0"


def python() -> Path:
    return VENV / "bin" / "python"


def ensure_venv() -> None:
    """Build the peer's virtualenv unless one with these pins is there; print what was
    installed and how long it took when it had to be built."""
    stamp = VENV / "sessionvault-bench-pins.txt"
    base = interpreter()
    wanted = "\n".join((base, *PINS)) + "\n"
    if stamp.exists() and stamp.read_text() == wanted and python().exists():
        print(f"   peer virtualenv: {VENV} (cached; pins {', '.join(PINS)})")
        return
    print(f"   peer virtualenv: building {VENV} (first run, or the pins changed)")
    started = time.perf_counter()
    PEER_HOME.mkdir(parents=True, exist_ok=True)
    print(f"   peer interpreter: {base} (its sqlite3 loads extensions, as sqlite-vec needs)")
    subprocess.run([base, "-m", "venv", "--clear", str(VENV)], check=True)
    log = PEER_HOME / "pip-install.log"
    with log.open("w") as out:
        subprocess.run(
            [str(python()), "-m", "pip", "install", "--progress-bar", "off", *PINS],
            check=True,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    took = time.perf_counter() - started
    installed = subprocess.run(
        [str(python()), "-m", "pip", "list", "--format", "freeze"], capture_output=True, text=True
    ).stdout.split()
    size = sum(f.stat().st_size for f in VENV.rglob("*") if f.is_file() and not f.is_symlink())
    print(f"   peer virtualenv built in {took:.0f} s: {len(installed)} packages, {size / 2**30:.2f} GiB")
    print(f"   installed: {' '.join(installed)}")
    print(f"   (pip's output: {log})")
    stamp.write_text(wanted)


def interpreter() -> str:
    """A Python 3.11 whose sqlite3 can load extensions: sqlite-vec is one, and the pyenv build
    behind .venv was compiled without `--enable-loadable-sqlite-extensions` (the peer then
    answers every call with "SQLite extension loading not supported"). Debian's python3.11
    has it; so would the interpreter of most of the peer's users."""
    base = getattr(sys, "_base_executable", sys.executable)
    probe = "import sqlite3; sqlite3.connect(':memory:').enable_load_extension(True)"
    for candidate in (base, "/usr/bin/python3.11", "/usr/bin/python3"):
        if (
            Path(candidate).exists()
            and subprocess.run([candidate, "-c", probe], capture_output=True).returncode == 0
        ):
            return candidate
    raise RuntimeError("no Python here whose sqlite3 loads extensions (sqlite-vec needs one)")


def model_dir() -> Path:
    """The model folder SessionVault's local embedder reads (package sessionvault-minilm)."""
    from sessionvault_minilm import MODEL_DIR

    return Path(MODEL_DIR)


def environment(port: int, api_key: str, data: Path) -> dict[str, str]:
    """What a user of the peer sets: the sqlite-vec backend and its file, the model (a local
    folder), the Streamable HTTP transport's address and an API key (both servers then check a
    bearer key per request). Off: what would reach the network (the hub; mDNS announcements
    leave loopback) and its scheduled backups, which are not part of a call."""
    keep = ("PATH", "LANG", "LC_ALL", "TMPDIR", "SSL_CERT_FILE")
    env = {k: v for k, v in os.environ.items() if k in keep}
    env.update(
        HOME=str(data),  # its ~/.cache, ~/.local: a fresh one per run, nothing of the user's
        HF_HOME=str(data / "hf"),
        HF_HUB_OFFLINE="1",
        TRANSFORMERS_OFFLINE="1",
        MCP_MEMORY_STORAGE_BACKEND="sqlite_vec",
        MCP_MEMORY_SQLITE_PATH=str(data / "memory.db"),
        MCP_MEMORY_BASE_DIR=str(data / "base"),
        MCP_EMBEDDING_MODEL=str(model_dir()),
        MCP_MEMORY_USE_ONNX="0",  # its ONNX path fetches its own export of the model from the hub
        MCP_API_KEY=api_key,
        MCP_SSE_HOST="127.0.0.1",
        MCP_SSE_PORT=str(port),
        MCP_MDNS_ENABLED="false",
        MCP_BACKUP_ENABLED="false",
        TQDM_DISABLE="1",
    )
    return env


class PeerProcess:
    """`memory server --streamable-http` on `port`, its log in a temporary file."""

    def __init__(self, port: int, api_key: str, data: Path) -> None:
        data.mkdir(parents=True, exist_ok=True)
        self.url = f"http://127.0.0.1:{port}/mcp"
        self.log = tempfile.TemporaryFile()  # noqa: SIM115  (closed in stop)
        self.proc = subprocess.Popen(
            [str(VENV / "bin" / "memory"), "server", "--streamable-http"],
            cwd=data,
            env=environment(port, api_key, data),
            stdout=self.log,
            stderr=subprocess.STDOUT,
        )

    def output(self) -> str:
        self.log.seek(0)
        return self.log.read().decode("utf-8", "replace")

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()
