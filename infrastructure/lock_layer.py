"""Regenerate infrastructure/layers/dependencies/requirements.txt, the Lambda dependency lock.

The dependencies layer holds exactly the runtime set of pyproject.toml ([project.dependencies]),
resolved for the Lambda target (CPython 3.11, manylinux2014 x86_64, binary wheels only) and
pinned, transitive dependencies included, so `sam build` is reproducible.

    python infrastructure/lock_layer.py            # resolve the newest versions pyproject allows
    python infrastructure/lock_layer.py --check    # exit 1 if the lock misses a runtime dependency

Needs pip (any recent one) and network access to PyPI; no AWS account, no Docker.
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
PLATFORMS = ("manylinux2014_x86_64", "manylinux_2_17_x86_64")
PY_VERSION = "3.11"
ABI = "cp311"

HEADER = """\
# Lambda dependency layer lock (DependenciesLayer in template.yaml). GENERATED: do not edit.
# Regenerate with: python infrastructure/lock_layer.py
# = pyproject.toml [project.dependencies], resolved for CPython {py} on manylinux2014 x86_64
# (binary wheels only; psycopg-binary and cryptography must be manylinux_2_17 wheels because
# the python{py} Lambda runtime is Amazon Linux 2, glibc 2.26).
"""


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
    lines = [HEADER.format(py=PY_VERSION)]
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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only check the lock covers pyproject")
    args = parser.parse_args()
    deps = runtime_dependencies()
    if args.check:
        wanted = {normalize(re.split(r"[\[=<>!~; ]", d, maxsplit=1)[0]) for d in deps}
        missing = sorted(wanted - locked_names(LOCK.read_text()))
        if missing:
            print(f"lock is missing: {', '.join(missing)}; run {Path(__file__).name}")
            return 1
        print("lock covers every runtime dependency")
        return 0
    LOCK.write_text(render(resolve(deps)))
    print(f"wrote {LOCK.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
