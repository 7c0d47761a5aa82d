"""Cold start of the MCP function, measured in the Lambda layout (tests/lambda_runtime/harness.py).

What is timed is what Lambda reports as Init Duration: from starting the runtime process
(python3.12 -I -S -B, awslambdaric, only /var/task, /opt/python and the runtime on sys.path)
to its first /invocation/next, i.e. the handler imported and its init run: the two secrets read
from Secrets Manager (a moto server here), the pool opened on the embedded PostgreSQL, the app
built. Each sample is a fresh process; the variants are interleaved round by round, so a change
of load on the machine hits all of them alike. CPU time (all threads, from /proc) is printed
next to wall time: on a shared machine it moves far less with the load.

Variants: the layers as `sam build` makes them now (unchecked-hash bytecode), and the same
layers recompiled with timestamp or checked-hash bytecode, or with none, each zipped by SAM's
own make_zip (every entry dated 1980-01-01) and extracted the way unzip would. Then one run
under -X importtime (where init's time goes), the first requests of an on-demand environment
(init, first and warm save_session in each of a few fresh ones; what the first save imports,
after an initialize and a tools/list as a client sends them), and a SnapStart environment
(init + before-snapshot hook, the after-restore hook, the first requests after the restore).
COLDSTART_BASE=<git revision> adds that revision's package and handler to the on-demand rows,
interleaved: a before/after under one load (benchmarks/coldstart_base.py).

Needs what the tier needs (the SAM CLI: $SAM_CLI or .venv-sam/bin/sam; python3.12; moto[server];
pip access to PyPI once, for awslambdaric); without one it says which and skips."""

from __future__ import annotations

import os
import secrets
import shutil
import statistics
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from . import coldstart_base, coldstart_imports, coldstart_sdk
from .common import ROOT, section

MODES = ("unchecked-hash", "checked-hash", "timestamp", "none")
LABEL = {
    "unchecked-hash": "as built: unchecked-hash .pyc",
    "checked-hash": "checked-hash .pyc",
    "timestamp": "timestamp .pyc (stale after the zip)",
    "none": "no bytecode (as built before)",
}
COMMAND = ".venv/bin/python -m benchmarks.run --only coldstart"
FIRST_RUNS = 3  # fresh environments for the init / first save / warm save row
ROWS = ("init wall", "init CPU", "first save", "warm save")


@contextmanager
def _stack(h: Any, python: str) -> Iterator[dict[str, Any]]:
    """A moto server with the stack's key and secrets, and a database to point them at."""
    import boto3
    from moto.server import ThreadedMotoServer

    from sessionvault.local.host import embedded

    home = Path(tempfile.mkdtemp(prefix="sv-coldstart-"))
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        db = embedded.start(home / "db")
        host, port = server.get_host_and_port()
        endpoint = f"http://{host}:{port}"
        kw = {"endpoint_url": endpoint, "region_name": "us-east-1"}
        kw |= {"aws_access_key_id": "testing", "aws_secret_access_key": "testing"}
        kms, sm = boto3.client("kms", **kw), boto3.client("secretsmanager", **kw)
        values = {
            "SESSIONVAULT_KMS_KEY_ID": kms.create_key()["KeyMetadata"]["Arn"],
            "SESSIONVAULT_DATABASE_URL_SECRET": sm.create_secret(Name="db", SecretString=db.app_url)["ARN"],
            "SESSIONVAULT_AUDIT_SALT_SECRET": sm.create_secret(
                Name="salt", SecretString=secrets.token_urlsafe(32)
            )["ARN"],
            "SESSIONVAULT_EMBEDDINGS": "none",
            "SESSIONVAULT_RATE_PER_MINUTE": "100000",
            "SESSIONVAULT_RATE_PER_DAY": "1000000",
            "SESSIONVAULT_AUDIT_RETENTION_DAYS": "90",
            "POWERTOOLS_LOG_LEVEL": "INFO",
        }
        yield {"endpoint": endpoint, "values": values, "db": db, "home": home}
    finally:
        server.stop()
        with _quiet():
            embedded.stop(home / "db")
        shutil.rmtree(home, ignore_errors=True)


@contextmanager
def _quiet() -> Iterator[None]:
    try:
        yield
    except Exception as exc:  # a benchmark's cleanup never hides its figures
        print(f"   (cleanup: {type(exc).__name__}: {exc})")


def _variant(h: Any, built: Any, mode: str, sam: str, root: Path) -> Any:
    """The same build with its layers' bytecode recompiled in `mode` (none: no .pyc at all)."""
    if mode == "unchecked-hash":
        return built
    dest = root / f"build-{mode}"
    shutil.copytree(built.build_dir, dest, symlinks=True)
    for layer in built.layers_of("McpFunction"):
        python_dir = dest / built.resource(layer)["Properties"]["ContentUri"] / "python"
        for cache in list(python_dir.rglob("__pycache__")):
            shutil.rmtree(cache, ignore_errors=True)
        if mode != "none":
            subprocess.run(
                [
                    built.python,
                    "-m",
                    "compileall",
                    "-q",
                    "-j",
                    "0",
                    "--invalidation-mode",
                    mode,
                    str(python_dir),
                ],
                check=True,
                capture_output=True,
            )
    return h.package(sam, dest, built.python, built.runtime, root / f"lambda-{mode}")


def _env(h: Any, built: Any, stack: dict[str, Any]) -> dict[str, str]:
    env = h.function_env(built, "McpFunction", stack["values"])
    env["AWS_ENDPOINT_URL"] = stack["endpoint"]
    return env


def _ms(samples: list[float]) -> str:
    return f"{statistics.median(samples):6.0f} (min {min(samples):4.0f})"


def lambda_tools(h: Any) -> tuple[str, str, Any] | None:
    """The python3.12, the SAM CLI and the runtime (awslambdaric) the Lambda layout needs, or None
    (said why) where one is missing: moto's server too, which stands in for Secrets Manager and KMS."""
    try:
        python = h.find_python(h.runtime_of(h.load_template(h.TEMPLATE)))
        sam = h.find_sam()
        __import__("moto.server")
        return python, sam, h.install_runtime(python, ROOT / ".venv" / "lambda-runtime")
    except (h.Missing, ImportError) as exc:
        print(f"   skipped: {exc}")
        return None


def handler_imports(runs: int = 5) -> None:
    from tests.lambda_runtime import harness as h

    section(
        "Cold start: the MCP function's init in the Lambda layout (Init Duration)",
        COMMAND,
        f"median of {runs} fresh runtime processes per variant, interleaved; ms",
    )
    tools = lambda_tools(h)
    if tools is None:
        return
    python, sam, runtime = tools
    root = Path(tempfile.mkdtemp(prefix="sv-coldstart-build-"))
    try:
        started = time.monotonic()
        build_dir = h.sam_build(sam, python, root / "build")
        built = h.package(sam, build_dir, python, runtime, root / "lambda")
        variants = {mode: _variant(h, built, mode, sam, root) for mode in MODES}
        print(f"   (sam build, zip and extract of {len(MODES)} variants: {time.monotonic() - started:.0f} s)")
        with _stack(h, python) as stack:
            _init_table(h, variants, stack, runs)
            _importtime(h, built, stack)
            coldstart_imports.import_groups(built.layout("McpFunction"))
            _first_requests(h, built, stack, root)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _init_table(h: Any, variants: dict[str, Any], stack: dict[str, Any], runs: int) -> None:
    wall: dict[str, list[float]] = {m: [] for m in variants}
    cpu: dict[str, list[float]] = {m: [] for m in variants}
    layouts = {m: (b.layout("McpFunction"), _env(h, b, stack)) for m, b in variants.items()}
    load_before = os.getloadavg()[0]
    for _ in range(runs):
        for mode, (layout, env) in layouts.items():
            with h.Environment(layout, env) as environment:
                wall[mode].append(environment.wait_init())
                cpu[mode].append(environment.init_cpu_ms)
    print(f"   {'layers':<40} {'wall':>18} {'CPU':>18}")
    for mode in variants:
        print(f"   {LABEL[mode]:<40} {_ms(wall[mode]):>18} {_ms(cpu[mode]):>18}")
    print(
        f"   load average {load_before:.1f} before, {os.getloadavg()[0]:.1f} after; target (issue 21): 450 ms"
    )


def _importtime(h: Any, built: Any, stack: dict[str, Any]) -> None:
    with h.Environment(
        built.layout("McpFunction"), _env(h, built, stack), python_flags=("-X", "importtime")
    ) as env:
        env.wait_init()
        output = env.output()
    cost = h.importtime_by_package(output)
    modules = h.imported_modules(output)
    total = sum(cost.values())
    top = sorted(cost.items(), key=lambda kv: -kv[1])[:12]
    watched = ("boto3", "botocore", "s3transfer", "urllib3", "requests", "mcp.client", "mcp.server.apps")
    absent = [m for m in (*watched, "httpx2", "uvicorn", "click") if m not in modules]
    print(
        f"   -X importtime of that init (one run; it inflates): {len(modules)} modules,"
        f" {total / 1000:.0f} ms self"
    )
    print("     self time by package (ms): " + ", ".join(f"{n} {us / 1000:.0f}" for n, us in top))
    print(f"     not imported at init: {', '.join(absent)}")


def _first_requests(h: Any, built: Any, stack: dict[str, Any], root: Path) -> None:
    from sessionvault.core.keys import KmsKeyProvider
    from sessionvault.db.pool import Database
    from sessionvault.service import accounts

    owner = Database(stack["db"].admin_url, max_size=1)
    endpoint = stack["endpoint"]
    os.environ.setdefault("AWS_ACCESS_KEY_ID", "testing")
    os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "testing")
    import boto3

    kms = boto3.client("kms", endpoint_url=endpoint, region_name="us-east-1")
    provider = KmsKeyProvider(stack["values"]["SESSIONVAULT_KMS_KEY_ID"], client=kms)
    user = accounts.create_user(owner, provider, f"bench-{secrets.token_hex(4)}")
    key, _ = accounts.create_key(owner, user, "bench", ("read", "write"))
    owner.close()
    init = h.rpc(
        "initialize",
        {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "b", "version": "1"}},
    )
    calls = [
        ("initialize", init),
        ("tools/list", h.rpc("tools/list")),
        (
            "save_session",
            h.rpc("tools/call", {"name": "save_session", "arguments": {"name": "b", "summary": "s"}}),
        ),
        ("load_session", h.rpc("tools/call", {"name": "load_session", "arguments": {"name": "b"}})),
    ]

    def timed(env: Any) -> dict[str, float]:
        took = {}
        for name, body in calls:
            t = time.monotonic()
            answer = env.invoke(h.http_event(body, key=key))
            took[name] = (time.monotonic() - t) * 1000
            assert answer["statusCode"] == 200, answer
        return took

    def serve(env: Any) -> str:
        return ", ".join(f"{name} {ms:.0f}" for name, ms in timed(env).items())

    layout, env_vars = built.layout("McpFunction"), _env(h, built, stack)
    _first_save_imports(h, layout, env_vars, calls, key)
    sdk = coldstart_sdk.sdk_layout(layout, root)  # the same code on boto3's clients
    layouts = {"stdlib client": layout, sdk[0]: sdk[1]}
    base = coldstart_base.base_layout(layout, built.python, root)  # COLDSTART_BASE: a before/after
    if base is not None:
        layouts[base[0]] = base[1]
    runs = 2 * FIRST_RUNS
    table: dict[str, dict[str, list[float]]] = {label: {row: [] for row in ROWS} for label in layouts}
    for _ in range(runs):  # fresh environments: each first save is a cold one's; interleaved
        for label, each in layouts.items():
            with h.Environment(each, env_vars) as env:
                rows = table[label]
                rows["init wall"].append(env.wait_init())
                rows["init CPU"].append(env.init_cpu_ms)
                rows["first save"].append(timed(env)["save_session"])
                rows["warm save"].append(statistics.median(timed(env)["save_session"] for _ in range(3)))
    for label, rows in table.items():
        ratio = statistics.median(rows["first save"]) / statistics.median(rows["warm save"])
        print(
            f"   on demand{f' ({label})' if label else ''}, median of {runs} fresh environments (ms): "
            + ", ".join(f"{name} {_ms(samples).strip()}" for name, samples in rows.items())
            + f"; first/warm save {ratio:.1f}x (target <= 2x)"
        )
    with h.Environment(layout, env_vars) as env:
        init_ms = env.wait_init()
        print(f"   on demand: init {init_ms:.0f}, then (ms) {serve(env)}")
    snap_vars = {**env_vars, "AWS_LAMBDA_INITIALIZATION_TYPE": "snap-start"}
    with h.Environment(layout, snap_vars) as env:
        snapshot_ms = env.wait_snapshot()
        restore_ms = env.restore()
        print(
            f"   SnapStart: init + before-snapshot hook {snapshot_ms:.0f} (at publish time), after-restore"
            f" hook {restore_ms:.0f}, then (ms) {serve(env)}"
        )
    print("   (the first save_session unwraps the user's data key: one signed request to KMS)")


def _first_save_imports(h: Any, layout: Any, env_vars: dict[str, str], calls: list[Any], key: str) -> None:
    """What the first save_session imports, after the calls before it (one run, -X importtime):
    what makes it slower than a warm one, besides its first KMS call and first statements."""
    output = ""
    with h.Environment(layout, env_vars, python_flags=("-X", "importtime")) as env:
        env.wait_init()
        for name, body in calls:
            before = len(env.output())
            env.invoke(h.http_event(body, key=key))
            if name == "save_session":
                output = env.output()[before:]
                break
    cost = h.importtime_by_package(output)
    top = sorted(cost.items(), key=lambda kv: -kv[1])[:8]
    print(
        f"   the first save_session's imports (-X importtime, one run): {len(h.imported_modules(output))}"
        f" modules, {sum(cost.values()) / 1000:.0f} ms self: "
        + ", ".join(f"{n} {us / 1000:.0f}" for n, us in top)
    )
