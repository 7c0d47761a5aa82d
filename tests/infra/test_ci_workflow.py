"""The pull-request workflow (.github/workflows/ci.yml) runs `.ci/run` itself, the same script CI
runs on a clean clone, on every pull request and push to main, with nothing installed for it
beforehand but Python (a missing install step must fail there too); pinned, read-only."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]


def workflow() -> dict[Any, Any]:
    loaded: dict[Any, Any] = yaml.safe_load((ROOT / ".github" / "workflows" / "ci.yml").read_text())
    return loaded


def test_every_pull_request_and_push_to_main_runs_the_ci_script() -> None:
    flow = workflow()
    on = flow[True]  # YAML 1.1 reads the key `on` as true
    assert "pull_request" in on and on["push"]["branches"] == ["main"]
    assert flow["permissions"] == {}
    (job,) = flow["jobs"].values()
    assert job["permissions"] == {"contents": "read"} and job["timeout-minutes"] <= 90
    runs = [step["run"].split("#")[0].strip() for step in job["steps"] if "run" in step]
    assert runs == [".ci/run"]
    uses = [step["uses"].split("@")[0] for step in job["steps"] if "uses" in step]
    assert uses == ["actions/checkout", "actions/setup-python"]  # nothing installed beside Python
    commands = [line for line in (ROOT / ".ci" / "run").read_text().splitlines() if line.startswith("make ")]
    assert commands == ["make test", "make clients-test"]
