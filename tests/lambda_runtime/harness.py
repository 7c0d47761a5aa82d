"""The Lambda execution environment, rebuilt on this machine from the `sam build` output.

What AWS runs, and what this module reproduces:

- the function's code as /var/task (`task`), its layers extracted in order into one /opt, so
  /opt/python (`opt_python`) is the layers merged; both arrive as the zip files `sam deploy`
  uploads (SAM's own `make_zip`, which writes every entry with the 1980-01-01 timestamp) and are
  read-only: `-B` here, because this runs as root, where a read-only mode would not stop a write;
- the runtime: `awslambdaric` (the runtime interface client of AWS's base images) with
  `snapshot_restore_py`, pip-installed into a folder of their own (`runtime`, /var/runtime);
- a clean CPython of the function's Runtime started `-I -S -B`, with exactly those three folders
  and the standard library on sys.path (no site-packages, no PYTHONPATH, no user site), and the
  environment Lambda gives a function (AWS_LAMBDA_*, _HANDLER, credentials, the template's
  variables);
- a local Runtime API (`RuntimeApi`): /2018-06-01/runtime/invocation/next, .../response,
  .../error, /init/error, and for SnapStart /restore/next and /restore/error.

`init_ms` is what Lambda reports as Init Duration: from starting the runtime process to its first
/invocation/next (the handler module imported, its init code run)."""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import http.server
import json
import os
import queue
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import uuid
import zipfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import yaml

from ..support import lambda_events
from ..support.interpreters import find_interpreter
from ..support.lambda_events import body_json as body_json
from ..support.lambda_events import rpc as rpc

ROOT = Path(__file__).resolve().parents[2]
TEMPLATE = ROOT / "template.yaml"
UNZIPPED_LIMIT = 250 * 1024 * 1024  # function code + all its layers, unzipped (Lambda quota)
# The runtime interface client and the SnapStart hooks module of AWS's Python base images.
RUNTIME_PACKAGES = ("awslambdaric==4.2.2", "snapshot-restore-py==1.0.0", "simplejson==4.3.0")
# Amazon Linux 2023 (python3.12 and later runtimes) ships glibc 2.34.
RUNTIME_GLIBC = (2, 34)
FUNCTIONS = ("McpFunction", "AdminFunction", "MaintenanceFunction", "MigrateFunction")
REQUIRE_ENV = "SESSIONVAULT_REQUIRE_LAMBDA_RUNTIME"
FUNCTION_ARN = "arn:aws:lambda:us-east-1:123456789012:function:sv"


class Missing(Exception):
    """A prerequisite of the tier is absent on this machine (skip locally, fail in CI)."""


# ---------------------------------------------------------------- the template


class _CfnLoader(yaml.SafeLoader):
    """YAML with CloudFormation's short tags (!Ref, !Sub, ...) read as {"Ref": ...} and so on."""


def _cfn_tag(loader: yaml.SafeLoader, suffix: str, node: yaml.Node) -> Any:
    name = "Ref" if suffix == "Ref" else f"Fn::{suffix}"
    if isinstance(node, yaml.ScalarNode):
        value: Any = loader.construct_scalar(node)
        if suffix == "GetAtt":
            value = str(value).split(".", 1)
    elif isinstance(node, yaml.SequenceNode):
        value = loader.construct_sequence(node, deep=True)
    else:
        value = loader.construct_mapping(node, deep=True)  # type: ignore[arg-type]
    return {name: value}


_CfnLoader.add_multi_constructor("!", _cfn_tag)


def load_template(path: Path) -> dict[str, Any]:
    return dict(yaml.load(path.read_text(), Loader=_CfnLoader))  # a SafeLoader


def runtime_of(template: Mapping[str, Any]) -> str:
    """The functions' Runtime (Globals), e.g. "python3.12"."""
    return str(template["Globals"]["Function"]["Runtime"])


# ---------------------------------------------------------------- prerequisites


def required() -> bool:
    """In CI (or when asked), a missing prerequisite fails the tier instead of skipping it."""
    return bool(os.environ.get("CI")) or os.environ.get(REQUIRE_ENV) == "1"


def find_python(runtime: str) -> str:
    """A working interpreter of `runtime` (python3.12): on PATH, else a pyenv install (a pyenv
    shim of a version not selected is on PATH but exits 127)."""
    found = find_interpreter(runtime)
    if found:
        return found
    pyenv_root = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv"))
    raise Missing(
        f"no working {runtime} (on PATH or under {pyenv_root}/versions): the Lambda Runtime in"
        " template.yaml, which sam build and this tier run"
    )


def find_sam() -> str:
    sam = os.environ.get("SAM_CLI") or shutil.which("sam") or ""
    default = ROOT / ".venv-sam" / "bin" / "sam"
    if not sam and default.exists():
        sam = str(default)
    if not sam or not os.access(sam, os.X_OK):
        raise Missing("the SAM CLI is missing: set SAM_CLI (make test does) or put sam on PATH")
    return sam


def find_tool(name: str) -> str:
    found = shutil.which(name)
    if not found:
        raise Missing(f"{name} is missing (Debian package binutils): it reads the glibc symbols of every .so")
    return found


# ---------------------------------------------------------------- build and package


def sam_build(sam: str, python: str, build_dir: Path, template: Path = TEMPLATE) -> Path:
    """`sam build` into build_dir (no container: the local python3.12 runs the builds)."""
    env = {**os.environ, "SAM_CLI_TELEMETRY": "0"}
    env["PATH"] = os.pathsep.join([str(Path(python).parent), env.get("PATH", "")])
    env.setdefault("AWS_DEFAULT_REGION", "us-east-1")
    env.setdefault("AWS_REGION", env["AWS_DEFAULT_REGION"])
    out = subprocess.run(
        [sam, "build", "--template-file", str(template), "--build-dir", str(build_dir)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    if out.returncode != 0:
        raise RuntimeError(f"sam build failed:\n{out.stdout[-4000:]}\n{out.stderr[-4000:]}")
    return build_dir


def sam_zip(sam: str, source: Path, zip_base: Path) -> Path:
    """source zipped by SAM's own packaging function (what `sam deploy` uploads)."""
    sam_python = Path(sam).resolve().parent / "python"
    code = (
        "import sys\nfrom samcli.lib.package.utils import make_zip\n"
        "print(make_zip(sys.argv[1], sys.argv[2]))\n"
    )
    out = subprocess.run(
        [str(sam_python), "-c", code, str(zip_base), str(source)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    if out.returncode != 0:
        raise RuntimeError(f"SAM's make_zip failed: {out.stderr[-2000:]}")
    return Path(out.stdout.strip())


def extract(archive: Path, dest: Path) -> None:
    """Like unzip: each file with its mode and the timestamp its zip entry carries."""
    with zipfile.ZipFile(archive) as zf:
        for info in zf.infolist():
            target = dest / info.filename
            if info.is_dir():
                target.mkdir(parents=True, exist_ok=True)
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            with zf.open(info) as src, target.open("wb") as out:
                shutil.copyfileobj(src, out)
            mode = (info.external_attr >> 16) & 0o7777
            if mode:
                target.chmod(mode)
            stamp = time.mktime((*info.date_time, 0, 0, -1))
            os.utime(target, (stamp, stamp))


@dataclasses.dataclass(frozen=True)
class Built:
    """One `sam build` output, packaged and extracted as Lambda would see it."""

    build_dir: Path
    template: dict[str, Any]  # the built template
    root: Path  # where the per-function filesystems live
    python: str  # the runtime's interpreter
    runtime: Path  # /var/runtime: awslambdaric + snapshot_restore_py
    zips: dict[str, Path]  # resource -> the zip SAM would upload

    def resource(self, name: str) -> dict[str, Any]:
        return dict(self.template["Resources"][name])

    def layers_of(self, function: str) -> list[str]:
        props = self.resource(function)["Properties"]
        layers = props.get("Layers") or self.template["Globals"]["Function"].get("Layers", [])
        return [layer["Ref"] for layer in layers]

    def layout(self, function: str) -> Layout:
        """The function's /var/task and /opt (its layers extracted in order into one folder,
        as Lambda does), from the zips. Functions with the same layers share one /opt."""
        task = self.root / "task" / function
        layers = self.layers_of(function)
        opt = self.root / "opt" / "+".join(layers)
        if not task.exists():
            extract(self.zips[function], task)
        if not opt.exists():
            staging = opt.with_name(opt.name + ".partial")
            shutil.rmtree(staging, ignore_errors=True)
            for layer in layers:
                extract(self.zips[layer], staging)
            staging.rename(opt)
        return Layout(function, task, opt / "python", self.runtime, self.python)

    def unzipped_bytes(self, resource: str) -> int:
        with zipfile.ZipFile(self.zips[resource]) as zf:
            return sum(i.file_size for i in zf.infolist())


def package(sam: str, build_dir: Path, python: str, runtime: Path, root: Path) -> Built:
    template = load_template(build_dir / "template.yaml")
    zips: dict[str, Path] = {}
    (root / "zips").mkdir(parents=True, exist_ok=True)
    for name, resource in template["Resources"].items():
        props = resource.get("Properties", {})
        uri = props.get("CodeUri") or props.get("ContentUri")
        if resource["Type"] in ("AWS::Serverless::Function", "AWS::Serverless::LayerVersion") and uri:
            zips[name] = sam_zip(sam, build_dir / uri, root / "zips" / name)
    return Built(build_dir, template, root, python, runtime, zips)


def pip_install(python: str) -> list[str]:
    return [python, "-m", "pip", "install", "--disable-pip-version-check", "--quiet", "--no-input",
            "--only-binary=:all:"]  # fmt: skip


def install_runtime(python: str, cache: Path) -> Path:
    """awslambdaric and snapshot_restore_py in a folder of their own (pip --target), with their
    bytecode, as in the base images' /var/runtime. Cached by interpreter version and pins."""
    version = subprocess.run(
        [python, "-c", "import sys; print(sys.version.split()[0])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    key = hashlib.sha256(" ".join((version, *RUNTIME_PACKAGES)).encode()).hexdigest()[:12]
    dest = cache / f"runtime-{version}-{key}"
    if (dest / ".complete").exists():
        return dest
    cache.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix="runtime-", dir=cache))
    out = subprocess.run(
        [*pip_install(python), "--target", str(staging), *RUNTIME_PACKAGES],
        capture_output=True,
        text=True,
        timeout=600,
    )
    if out.returncode != 0:
        shutil.rmtree(staging, ignore_errors=True)
        raise Missing(f"pip could not install {' '.join(RUNTIME_PACKAGES)}: {out.stderr.strip()[-1500:]}")
    subprocess.run([python, "-m", "compileall", "-q", str(staging)], check=True, capture_output=True)
    (staging / ".complete").write_text(" ".join(RUNTIME_PACKAGES) + "\n")
    shutil.rmtree(dest, ignore_errors=True)
    staging.rename(dest)
    return dest


# ---------------------------------------------------------------- what the artifacts need


def glibc_needs(paths: list[Path], objdump: str) -> dict[Path, tuple[int, int]]:
    """For every ELF shared object under paths: the newest GLIBC_x.y symbol version it needs."""
    found: dict[Path, tuple[int, int]] = {}
    for base in paths:
        for so in sorted(base.rglob("*.so*")):
            if not so.is_file() or so.read_bytes()[:4] != b"\x7fELF":
                continue
            out = subprocess.run([objdump, "-T", str(so)], capture_output=True, text=True, check=True)
            versions = [(int(a), int(b)) for a, b in re.findall(r"GLIBC_(\d+)\.(\d+)", out.stdout)]
            found[so] = max(versions, default=(0, 0))
    return found


def shared_objects_report(built: Built, objdump: str) -> tuple[str, tuple[int, int], list[str]]:
    """The report the tier prints (sizes against the 250 MB limit, the newest glibc symbol),
    the newest glibc version needed, and the objects that need one newer than the runtime's."""
    lines = ["unzipped size of each function with its layers (Lambda's limit: 250 MB):"]
    for function in FUNCTIONS:
        parts = [function, *built.layers_of(function)]
        total = sum(built.unzipped_bytes(p) for p in parts)
        zipped = sum(built.zips[p].stat().st_size for p in parts)
        lines.append(
            f"  {function:<20} {total / 1e6:7.1f} MB unzipped ({total / UNZIPPED_LIMIT:5.1%} of 250 MB),"
            f" {zipped / 1e6:6.1f} MB zipped"
        )
    for layer in sorted({layer for f in FUNCTIONS for layer in built.layers_of(f)}):
        lines.append(f"  layer {layer:<22} {built.unzipped_bytes(layer) / 1e6:7.1f} MB unzipped")
    layout = built.layout("McpFunction")
    needs = glibc_needs([layout.opt_python, layout.task], objdump)
    newest = max(needs.values(), default=(0, 0))
    worst = sorted(needs.items(), key=lambda kv: kv[1], reverse=True)[:3]
    lines.append(
        f"shared objects in the layers: {len(needs)};"
        f" newest glibc symbol needed: GLIBC_{newest[0]}.{newest[1]}"
        f" (runtime: GLIBC_{RUNTIME_GLIBC[0]}.{RUNTIME_GLIBC[1]}, Amazon Linux 2023)"
    )
    lines += [f"  GLIBC_{v[0]}.{v[1]}  {so.relative_to(layout.opt_python)}" for so, v in worst]
    too_new = [str(so.relative_to(layout.opt_python)) for so, v in needs.items() if v > RUNTIME_GLIBC]
    return "\n".join(lines), newest, too_new


# ---------------------------------------------------------------- the Runtime API


def cpu_ms(pid: int) -> float:
    """CPU time a process has used so far, all its threads (Linux schedstat, nanoseconds)."""
    total = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        with contextlib.suppress(OSError, ValueError, IndexError):
            total += int((task / "schedstat").read_text().split()[0])
    return total / 1e6


@dataclasses.dataclass
class Invocation:
    request_id: str
    event: bytes
    done: threading.Event = dataclasses.field(default_factory=threading.Event)
    result: bytes = b""
    error: bytes = b""
    error_type: str = ""


class _QuietServer(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        if not isinstance(sys.exc_info()[1], ConnectionError):  # a runtime process ended mid-call
            super().handle_error(request, client_address)


class RuntimeApi:
    """The Lambda Runtime API for one execution environment, on a loopback port."""

    def __init__(self) -> None:
        self.pending: queue.Queue[Invocation] = queue.Queue()
        self.invocations: dict[str, Invocation] = {}
        self.next_calls: list[float] = []  # time.monotonic() of every /invocation/next
        self.pid = 0  # the runtime process, once started
        self.init_cpu_ms: float | None = None  # its CPU time at its first /invocation/next
        self.init_error: tuple[str, bytes] | None = None
        self.restore_error: tuple[str, bytes] | None = None
        self.snapshot_at: float | None = None  # the runtime asked for /restore/next
        self.restored = threading.Event()  # set: /restore/next answers (the restore)
        self.restore_answered_at: float | None = None
        self.changed = threading.Condition()
        self.closing = False
        api = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def _body(self) -> bytes:
                return self.rfile.read(int(self.headers.get("Content-Length") or 0))

            def _answer(
                self, status: int, body: bytes = b"", headers: Mapping[str, str] | None = None
            ) -> None:
                self.send_response(status)
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self) -> None:
                if self.path == "/2018-06-01/runtime/invocation/next":
                    now = time.monotonic()
                    if not api.next_calls and api.pid:
                        api.init_cpu_ms = cpu_ms(api.pid)
                    api._note(lambda: api.next_calls.append(now))
                    while True:
                        try:
                            inv = api.pending.get(timeout=0.5)
                            break
                        except queue.Empty:
                            if api.closing:
                                self._answer(500)
                                return
                    deadline = int((time.time() + 300) * 1000)
                    self._answer(
                        200,
                        inv.event,
                        {
                            "Content-Type": "application/json",
                            "Lambda-Runtime-Aws-Request-Id": inv.request_id,
                            "Lambda-Runtime-Deadline-Ms": str(deadline),
                            "Lambda-Runtime-Invoked-Function-Arn": FUNCTION_ARN,
                            "Lambda-Runtime-Trace-Id": f"Root=1-{uuid.uuid4().hex[:8]}-{inv.request_id[:8]}",
                        },
                    )
                elif self.path == "/2018-06-01/runtime/restore/next":
                    api._note(lambda: setattr(api, "snapshot_at", time.monotonic()))
                    while not api.restored.wait(0.5):
                        if api.closing:
                            self._answer(500)
                            return
                    api.restore_answered_at = time.monotonic()
                    self._answer(200)
                else:
                    self._answer(404)

            def do_POST(self) -> None:
                body = self._body()
                error_type = self.headers.get("Lambda-Runtime-Function-Error-Type", "")
                found = re.fullmatch(r"/2018-06-01/runtime/invocation/([^/]+)/(response|error)", self.path)
                if found and found[1] in api.invocations:
                    inv = api.invocations[found[1]]
                    if found[2] == "response":
                        inv.result = body
                    else:
                        inv.error, inv.error_type = body, error_type
                    self._answer(202, b'{"status":"OK"}')
                    api._note(inv.done.set)
                elif self.path == "/2018-06-01/runtime/init/error":
                    api._note(lambda: setattr(api, "init_error", (error_type, body)))
                    self._answer(202, b'{"status":"OK"}')
                elif self.path == "/2018-06-01/runtime/restore/error":
                    api._note(lambda: setattr(api, "restore_error", (error_type, body)))
                    self._answer(202, b'{"status":"OK"}')
                else:
                    self._answer(404)

        self.server = _QuietServer(("127.0.0.1", 0), Handler)
        self.address = f"127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def _note(self, change: Any) -> None:
        with self.changed:
            change()
            self.changed.notify_all()

    def enqueue(self, event: Any) -> Invocation:
        raw = event if isinstance(event, bytes) else json.dumps(event).encode()
        inv = Invocation(str(uuid.uuid4()), raw)
        self.invocations[inv.request_id] = inv
        self.pending.put(inv)
        return inv

    def close(self) -> None:
        self.closing = True
        self.restored.set()
        self.server.shutdown()
        self.server.server_close()


# ---------------------------------------------------------------- one execution environment


BOOTSTRAP = '''\
"""/var/runtime/bootstrap for this tier: sys.path is the function, its layers, the runtime."""
import sys

task, opt_python, runtime, handler = sys.argv[1:5]
sys.path[:0] = [task, opt_python, runtime]
sys.argv = ["awslambdaric", handler]
from awslambdaric.__main__ import main

main(sys.argv)
'''


@dataclasses.dataclass(frozen=True)
class Layout:
    function: str
    task: Path  # /var/task
    opt_python: Path  # /opt/python: the layers, merged
    runtime: Path  # /var/runtime
    python: str

    def base_env(self) -> dict[str, str]:
        """What Lambda sets for every function (minus the API address and the handler)."""
        return {
            "PATH": os.pathsep.join([str(Path(self.python).parent), "/usr/local/bin", "/usr/bin", "/bin"]),
            "LANG": "en_US.UTF-8",
            "TZ": ":UTC",
            "HOME": tempfile.gettempdir(),
            "LAMBDA_TASK_ROOT": str(self.task),
            "LAMBDA_RUNTIME_DIR": str(self.runtime),
            "AWS_EXECUTION_ENV": "AWS_Lambda_" + Path(self.python).name,
            "AWS_LAMBDA_FUNCTION_NAME": f"sv-{self.function}",
            "AWS_LAMBDA_FUNCTION_VERSION": "1",
            "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "512",
            "AWS_LAMBDA_LOG_GROUP_NAME": f"/aws/lambda/sv-{self.function}",
            "AWS_LAMBDA_LOG_STREAM_NAME": "2026/11/30/[1]0123456789abcdef",
            "AWS_LAMBDA_INITIALIZATION_TYPE": "on-demand",
            "AWS_REGION": "us-east-1",
            "AWS_DEFAULT_REGION": "us-east-1",
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
            "AWS_SESSION_TOKEN": "testing",
        }


class Environment:
    """One execution environment: a runtime process on its own Runtime API."""

    def __init__(
        self,
        layout: Layout,
        env: Mapping[str, str],
        *,
        handler: str = "handler.handler",
        python_flags: tuple[str, ...] = (),
        drop: tuple[str, ...] = (),
        log: Path | None = None,
    ) -> None:
        """drop: variables of Lambda's own environment to leave out (SnapStart: the
        credential variables)."""
        self.layout = layout
        self.api = RuntimeApi()
        self.log_path = log or Path(tempfile.mkstemp(prefix=f"{layout.function}-", suffix=".log")[1])
        self._own_log = log is None  # a log made here is read into memory and removed at close
        self._closed_output: str | None = None
        bootstrap = layout.runtime.parent / f"bootstrap-{os.getpid()}-{id(self)}.py"
        bootstrap.write_text(BOOTSTRAP)
        self._bootstrap = bootstrap
        full_env = {
            **layout.base_env(),
            **env,
            "AWS_LAMBDA_RUNTIME_API": self.api.address,
            "_HANDLER": handler,
        }
        for name in drop:
            full_env.pop(name, None)
        self._log = self.log_path.open("wb")
        cmd = [layout.python, "-I", "-S", "-B", *python_flags, str(bootstrap)]
        cmd += [str(layout.task), str(layout.opt_python), str(layout.runtime), handler]
        self.started = time.monotonic()
        self.process = subprocess.Popen(
            cmd, cwd=layout.task, env=full_env, stdout=self._log, stderr=subprocess.STDOUT
        )
        self.api.pid = self.process.pid
        self._closed = False

    def output(self) -> str:
        """What the runtime process printed (its log), during its life or after `close`."""
        if self._closed_output is not None:
            return self._closed_output
        self._log.flush()
        return self.log_path.read_text(errors="replace")

    def _wait(self, ready: Any, timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        with self.api.changed:
            while not ready():
                if self.api.init_error is not None:
                    raise InitFailed(self.api.init_error, self.output())
                if self.process.poll() is not None:
                    raise InitFailed(("exited", str(self.process.returncode).encode()), self.output())
                if time.monotonic() > deadline:
                    raise TimeoutError(f"{what}: no answer in {timeout:.0f} s\n{self.output()[-3000:]}")
                self.api.changed.wait(0.2)

    def wait_init(self, timeout: float = 60) -> float:
        """Init Duration, in ms: the process started until its first /invocation/next."""
        self._wait(lambda: bool(self.api.next_calls), timeout, "init")
        return (self.api.next_calls[0] - self.started) * 1000

    @property
    def init_cpu_ms(self) -> float:
        """The CPU time init used (all threads), read at its first /invocation/next."""
        assert self.api.init_cpu_ms is not None, "init has not finished"
        return self.api.init_cpu_ms

    def wait_snapshot(self, timeout: float = 60) -> float:
        """SnapStart: init ran and the before-snapshot hooks returned (/restore/next); ms."""
        self._wait(lambda: self.api.snapshot_at is not None, timeout, "snapshot")
        assert self.api.snapshot_at is not None
        return (self.api.snapshot_at - self.started) * 1000

    def restore(self, timeout: float = 30) -> float:
        """Answer /restore/next; ms until the after-restore hooks returned (its next /next)."""
        self.api.restored.set()
        self._wait(lambda: bool(self.api.next_calls), timeout, "restore")
        assert self.api.restore_answered_at is not None
        if self.api.restore_error is not None:
            raise InitFailed(self.api.restore_error, self.output())
        return (self.api.next_calls[0] - self.api.restore_answered_at) * 1000

    def invoke(self, event: Any, timeout: float = 60) -> Any:
        inv = self.api.enqueue(event)
        self._wait(inv.done.is_set, timeout, "invoke")
        if inv.error:
            raise InvokeFailed(inv.error_type, json.loads(inv.error), self.output())
        return json.loads(inv.result)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)
        self.api.close()
        self._log.close()
        self._bootstrap.unlink(missing_ok=True)
        if self._own_log:
            self._closed_output = self.log_path.read_text(errors="replace")
            self.log_path.unlink(missing_ok=True)

    def __enter__(self) -> Environment:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class InitFailed(Exception):
    def __init__(self, error: tuple[str, bytes], output: str) -> None:
        super().__init__(f"init failed ({error[0]}): {error[1][:2000]!r}\n{output[-3000:]}")
        self.error, self.output = error, output


class InvokeFailed(Exception):
    def __init__(self, error_type: str, error: Any, output: str) -> None:
        super().__init__(f"the invocation failed ({error_type}): {error}\n{output[-3000:]}")
        self.error_type, self.error, self.output = error_type, error, output


# ---------------------------------------------------------------- the template's environment


def function_env(built: Built, function: str, values: Mapping[str, str]) -> dict[str, str]:
    """The function's environment variables as the template sets them (Globals, then the
    function's own), with each value that is not a plain string taken from `values` by name
    (a parameter's or a resource's logical id); variables the template leaves out are absent."""
    merged: dict[str, Any] = {}
    globals_ = built.template["Globals"]["Function"].get("Environment", {}).get("Variables", {})
    own = built.resource(function)["Properties"].get("Environment", {}).get("Variables", {})
    merged.update(globals_)
    merged.update(own)
    env: dict[str, str] = {}
    for name, value in merged.items():
        if isinstance(value, str | int | float):
            env[name] = str(value)
        elif name in values:
            env[name] = values[name]
    return env


# ---------------------------------------------------------------- API Gateway events


def http_event(
    body: str, *, key: str | None = None, path: str = "/mcp", method: str = "POST"
) -> dict[str, Any]:
    """An API Gateway HTTP API (payload format 2.0) event, as AWS sends it, from a client that
    speaks MCP 2025-06-18. Built in this process: the Runtime API hands it to the runtime as JSON."""
    return lambda_events.http_event(
        body, key=key, path=path, method=method, mcp_protocol_version="2025-06-18"
    )


# ---------------------------------------------------------------- import time


def importtime_by_package(output: str) -> dict[str, int]:
    """`-X importtime` self time (us) summed per top-level package."""
    cost: dict[str, int] = {}
    for line in output.splitlines():
        found = re.match(r"import time:\s+(\d+) \|\s+\d+ \| *(\S+)", line)
        if found:
            name = found.group(2).split(".")[0]
            cost[name] = cost.get(name, 0) + int(found.group(1))
    return cost


def imported_modules(output: str) -> set[str]:
    return {m.group(1) for m in re.finditer(r"import time:\s+\d+ \|\s+\d+ \| *(\S+)", output)}


@contextlib.contextmanager
def environment(layout: Layout, env: Mapping[str, str], **kwargs: Any) -> Iterator[Environment]:
    with Environment(layout, env, **kwargs) as e:
        yield e


if __name__ == "__main__":  # pragma: no cover - a quick look: python -m tests.lambda_runtime.harness
    sys.exit("use benchmarks/coldstart.py or pytest tests/lambda_runtime")
