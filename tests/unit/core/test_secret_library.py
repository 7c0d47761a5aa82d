"""detect-secrets without `requests` (issue 29, item 4): the library's modules import it only to
verify a secret over the network, which scrubbing never does, and loading it (with urllib3 and
charset_normalizer) slowed a cold Lambda's first save. `secret_library` loads the library's
modules seeing a stand-in instead. Checked in a fresh interpreter: this test process may have
loaded the library, or `requests`, already."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest

# A GitLab token and an npm token: formats only the library's plugins know (pass 1 has neither).
GITLAB = "glpat-" + "Zx4Kq9Lm2Np7Rs5Tv8Wy"
NPM = "npm_" + "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5"

PROBE = """
import json, sys
from sessionvault.core.redact import scrub

record = {"name": "n", "summary": sys.argv[1], "plan": [sys.argv[2]]}
clean, found = scrub(record)
report = {
    "clean": clean,
    "kinds": sorted({r.kind for r in found}),
    "loaded": sorted(m for m in ("requests", "urllib3", "charset_normalizer", "idna", "certifi")
                     if m in sys.modules),
    "library": "detect_secrets.plugins.base" in sys.modules,
}
from detect_secrets.plugins import stripe
report["network"] = "the real requests"  # never called here: that would go to Stripe
if not hasattr(stripe.requests, "__file__"):
    try:
        stripe.requests.get("https://api.stripe.com/v1/charges")
    except RuntimeError as exc:
        report["network"] = str(exc)
import requests  # other code importing it afterwards gets the real package
report["real_requests"] = isinstance(requests.Session, type) and bool(getattr(requests, "__file__", ""))
print(json.dumps(report))
"""


@pytest.fixture(scope="module")
def fresh() -> dict[str, Any]:
    texts = [f'token = "{GITLAB}"', f"npm config set //registry/:_authToken {NPM}"]
    argv = [sys.executable, "-c", PROBE, *texts]
    out = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return dict(json.loads(out.stdout.splitlines()[-1]))


def test_a_scrub_in_a_fresh_interpreter_imports_neither_requests_nor_urllib3(fresh: dict[str, Any]) -> None:
    assert fresh["library"], "the library's plugins were not loaded at all"
    assert fresh["loaded"] == []


def test_the_library_still_finds_what_only_its_plugins_know(fresh: dict[str, Any]) -> None:
    assert {"gitlab_token", "npm_token"} <= set(fresh["kinds"])
    assert GITLAB not in json.dumps(fresh["clean"]) and NPM not in json.dumps(fresh["clean"])


def test_the_library_cannot_reach_the_network_from_the_scrubber(fresh: dict[str, Any]) -> None:
    assert "never verifies a secret over the network" in fresh["network"]


def test_code_that_imports_requests_afterwards_gets_the_real_package(fresh: dict[str, Any]) -> None:
    assert fresh["real_requests"] is True
