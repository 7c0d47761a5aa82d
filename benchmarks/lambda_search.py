"""Search in the Lambda layout at OpenAI's 1536 dimensions (issue 36, item 4):

    .venv/bin/python -m benchmarks.run --only lambdasearch      (BENCH_LAMBDA_SIZES=1000,10000)

The MCP function as `sam build` makes it, in the Lambda-runtime tier's layout (a clean CPython
3.12 with awslambdaric; benchmarks/coldstart.py says how), its secrets and KMS key in a moto
server, its database the embedded PostgreSQL, and `SESSIONVAULT_EMBEDDINGS=openai` pointed at an
OpenAI-compatible endpoint on this machine that answers 1536-dimension vectors (no model, no
network: a hash of the text seeds each vector). One user's space is seeded with N sessions whose
vectors are sealed as a save seals them (benchmarks/sealed_vectors.py's COPY) and compacted into
segments; then, in each of a few fresh execution environments: the init, the first
`search_sessions` (a cold container: the key unwrapped through KMS, numpy imported, every segment
fetched and opened), five more (warm), and the process's peak memory (VmHWM); and, under
SnapStart (the init and the before-snapshot hook, then a restored copy), the first search of a
restored container. Times in ms."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import shutil
import statistics
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import numpy as np

from .common import section

DIMS = 1536
MODEL = "openai:text-embedding-3-small"
RUNS = 3  # fresh environments per size
WARM = 5


class FakeEmbeddings:
    """POST /v1/embeddings answered as OpenAI answers it: a unit vector per input, seeded by the
    text's hash (float lists, or base64 little-endian float32 when asked)."""

    def __init__(self) -> None:
        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                asked = json.loads(self.rfile.read(int(self.headers.get("content-length", "0"))))
                texts = asked["input"] if isinstance(asked["input"], list) else [asked["input"]]
                data = []
                for i, text in enumerate(texts):
                    seed = int.from_bytes(hashlib.sha256(str(text).encode()).digest()[:8], "little")
                    v = np.random.default_rng(seed).standard_normal(DIMS).astype(np.float32)
                    v /= np.linalg.norm(v)
                    value: Any = (
                        base64.b64encode(v.astype("<f4").tobytes()).decode()
                        if asked.get("encoding_format") == "base64"
                        else v.tolist()
                    )
                    data.append({"object": "embedding", "index": i, "embedding": value})
                body = json.dumps(
                    {"object": "list", "data": data, "model": asked.get("model", ""), "usage": {}}
                ).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:
                return None

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def lambda_search() -> None:
    from tests.lambda_runtime import harness as h

    from . import coldstart

    sizes = [int(s) for s in os.environ.get("BENCH_LAMBDA_SIZES", "1000,10000").split(",")]
    section(
        "Search in the Lambda layout at 1536 dimensions (issue 36, item 4)",
        ".venv/bin/python -m benchmarks.run --only lambdasearch",
        f"{RUNS} fresh execution environments per space;",
        f"the first search_sessions (cold), then {WARM} (warm)",
    )
    tools = coldstart.lambda_tools(h)
    if tools is None:
        return
    python, sam, runtime = tools
    root = Path(tempfile.mkdtemp(prefix="sv-lambdasearch-"))
    embeddings = FakeEmbeddings()
    try:
        built = h.package(sam, h.sam_build(sam, python, root / "build"), python, runtime, root / "lambda")
        with coldstart._stack(h, python) as stack:
            layout = built.layout("McpFunction")
            for n in sizes:
                _measure(h, built, layout, stack, embeddings, n)
    finally:
        embeddings.close()
        shutil.rmtree(root, ignore_errors=True)


def _measure(
    h: Any, built: Any, layout: Any, stack: dict[str, Any], embeddings: FakeEmbeddings, n: int
) -> None:
    import boto3

    from sessionvault.core.keys import KmsKeyProvider, WrappedKey
    from sessionvault.db.pool import Database, Tenant
    from sessionvault.service import accounts, vector_index

    from . import coldstart
    from .sealed_vectors import _seed

    endpoint, region = stack["endpoint"], "us-east-1"
    kw = {"endpoint_url": endpoint, "region_name": region}
    kw |= {"aws_access_key_id": "testing", "aws_secret_access_key": "testing"}
    provider = KmsKeyProvider(stack["values"]["SESSIONVAULT_KMS_KEY_ID"], client=boto3.client("kms", **kw))
    secret = boto3.client("secretsmanager", **kw).create_secret(
        Name=f"openai-{os.urandom(4).hex()}", SecretString="sk-" + "x" * 40
    )["ARN"]
    owner = Database(stack["db"].admin_url, max_size=2)
    user = accounts.create_user(owner, provider, f"bench-lambda-{os.urandom(4).hex()}")
    key, _ = accounts.create_key(owner, user, "bench", ("read", "write"))
    with owner.identity() as conn:
        row = conn.execute("SELECT dek_wrapped, key_id FROM users WHERE id = %s", (user,)).fetchone()
    dek = provider.unwrap(user, WrappedKey.from_row(row))
    started = time.perf_counter()
    _seed(stack["db"].owner_url, {user: dek}, {user: n}, np.random.default_rng(n), dims=DIMS, model=MODEL)
    vector_index.compact(owner, Tenant(user), dek, MODEL)
    owner.close()
    print(f"   {n:,} sessions seeded and compacted in {time.perf_counter() - started:.0f} s")
    env = {**coldstart._env(h, built, stack)}
    env.update(
        SESSIONVAULT_EMBEDDINGS="openai",
        OPENAI_BASE_URL=embeddings.url,
        SESSIONVAULT_OPENAI_KEY_SECRET=secret,
        AWS_LAMBDA_FUNCTION_MEMORY_SIZE="1024",
    )
    search = h.rpc(
        "tools/call", {"name": "search_sessions", "arguments": {"query": "widget config", "max_results": 10}}
    )
    rows: dict[str, list[float]] = {"init": [], "cold": [], "warm": [], "peak": []}
    for _ in range(RUNS):
        with h.Environment(layout, env) as environment:
            rows["init"].append(environment.wait_init())
            for i in range(1 + WARM):
                t = time.monotonic()
                answer = environment.invoke(h.http_event(search, key=key))
                took = (time.monotonic() - t) * 1000
                assert answer["statusCode"] == 200 and '"isError":false' in answer["body"].replace(" ", ""), (
                    answer
                )
                rows["cold" if i == 0 else "warm"].append(took)
            status = Path(f"/proc/{environment.process.pid}/status").read_text()
            peak_kb = next(int(line.split()[1]) for line in status.splitlines() if line.startswith("VmHWM:"))
            rows["peak"].append(peak_kb / 1024)
    print(
        f"   {n:>7,} sessions: init {statistics.median(rows['init']):.0f}, first search (cold)"
        f" {statistics.median(rows['cold']):.0f} (max {max(rows['cold']):.0f}), warm search"
        f" {statistics.median(rows['warm']):.0f} (max {max(rows['warm']):.0f}); peak memory"
        f" {statistics.median(rows['peak']):.0f} MB (of a 1,024 MB function)"
    )
    snap = {**env, "AWS_LAMBDA_INITIALIZATION_TYPE": "snap-start"}
    restored: list[float] = []
    for _ in range(RUNS):  # SnapStart: init and the before-snapshot hook, then a restored copy's first search
        with h.Environment(layout, snap) as environment:
            environment.wait_snapshot()
            environment.restore()
            t = time.monotonic()
            answer = environment.invoke(h.http_event(search, key=key))
            restored.append((time.monotonic() - t) * 1000)
            assert answer["statusCode"] == 200, answer
    print(
        f"   {n:>7,} sessions, SnapStart: a restored container's first search"
        f" {statistics.median(restored):.0f} (max {max(restored):.0f})"
    )
