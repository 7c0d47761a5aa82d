"""Regenerate infrastructure/layers/dependencies/requirements.txt, the Lambda dependency lock.

The dependencies layer holds exactly the runtime set of pyproject.toml ([project.dependencies]),
resolved for the Lambda target (RUNTIME below: CPython 3.12 on Amazon Linux 2023, x86_64,
binary wheels only) and pinned, transitive dependencies included, so `sam build` is
reproducible. RUNTIME must be the functions' runtime in template.yaml (tests/infra checks it).

    python infrastructure/lock_layer.py            # resolve the newest versions pyproject allows
    python infrastructure/lock_layer.py --check    # exit 1 if the lock misses a runtime dependency
                                                   # or was resolved for another Python

Needs pip (any recent one) and network access to PyPI (the resolution, not --check); no AWS
account, no Docker, and any local Python: pip resolves for the target, not for itself.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LOCK = ROOT / "infrastructure" / "layers" / "dependencies" / "requirements.txt"
RUNTIME = "python3.12"  # template.yaml: Globals.Function.Runtime and the layers' runtime
PY_VERSION = RUNTIME.removeprefix("python")
ABI = "cp" + PY_VERSION.replace(".", "")
# python3.12 and later run on Amazon Linux 2023 (glibc 2.34): wheels tagged up to manylinux_2_34
# load there. The same tags `sam build`'s pip workflow downloads for that runtime.
PLATFORMS = (
    "manylinux2014_x86_64",
    "manylinux_2_17_x86_64",
    "manylinux_2_28_x86_64",
    "manylinux_2_34_x86_64",
)

HEADER = """\
# Lambda dependency layer lock (DependenciesLayer in template.yaml). GENERATED: do not edit.
# Regenerate with: python infrastructure/lock_layer.py
# = pyproject.toml [project.dependencies], resolved for CPython {py} on manylinux x86_64
# (binary wheels only; psycopg-binary, cryptography, pydantic-core and the other compiled
# wheels must load on the {runtime} Lambda runtime: Amazon Linux 2023, glibc 2.34).
"""
TARGET_LINE = re.compile(r"^# = .*resolved for CPython (\d+\.\d+)", flags=re.M)


def runtime_dependencies() -> list[str]:
    data = tomllib.loads((ROOT / "pyproject.toml").read_text())
    return list(data["project"]["dependencies"])


def normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def resolve(requirements: list[str]) -> list[tuple[str, str, bool]]:
    with tempfile.TemporaryDirectory() as tmp:
        req_in = Path(tmp) / "in.txt"
        req_in.write_text("\n".join(requirements) + "\n")
        report = Path(tmp) / "report.json"
        cmd = [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--dry-run",
            "--quiet",
            "--ignore-installed",
            "--only-binary=:all:",
            "--implementation",
            "cp",
            "--abi",
            ABI,
            "--python-version",
            PY_VERSION,
            "--target",
            str(Path(tmp) / "target"),
            "--report",
            str(report),
            "-r",
            str(req_in),
        ]
        for platform in PLATFORMS:
            cmd += ["--platform", platform]
        subprocess.run(cmd, check=True)
        installs = json.loads(report.read_text())["install"]
    rows = [
        (normalize(i["metadata"]["name"]), i["metadata"]["version"], bool(i.get("requested")))
        for i in installs
    ]
    return sorted(rows)


def render(rows: list[tuple[str, str, bool]]) -> str:
    lines = [HEADER.format(py=PY_VERSION, runtime=RUNTIME)]
    lines.append("# direct (pyproject runtime dependencies)")
    lines += [f"{name}=={version}" for name, version, direct in rows if direct]
    lines.append("# transitive")
    lines += [f"{name}=={version}" for name, version, direct in rows if not direct]
    return "\n".join(lines) + "\n"


def locked_names(text: str) -> set[str]:
    names = set()
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            names.add(normalize(re.split(r"[\[=<>!~; ]", line, maxsplit=1)[0]))
    return names


def locked_for(text: str) -> str | None:
    """The Python version the lock says it was resolved for (its header), if it says."""
    m = TARGET_LINE.search(text)
    return m.group(1) if m else None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--check", action="store_true", help="only check the lock covers pyproject, for the target Python"
    )
    args = parser.parse_args()
    deps = runtime_dependencies()
    if args.check:
        text = LOCK.read_text()
        target = locked_for(text)
        if target != PY_VERSION:
            print(f"lock resolved for CPython {target}, target {PY_VERSION}; run {Path(__file__).name}")
            return 1
        wanted = {normalize(re.split(r"[\[=<>!~; ]", d, maxsplit=1)[0]) for d in deps}
        missing = sorted(wanted - locked_names(text))
        if missing:
            print(f"lock is missing: {', '.join(missing)}; run {Path(__file__).name}")
            return 1
        print(f"lock covers every runtime dependency, resolved for CPython {PY_VERSION}")
        return 0
    LOCK.write_text(render(resolve(deps)))
    print(f"wrote {LOCK.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
