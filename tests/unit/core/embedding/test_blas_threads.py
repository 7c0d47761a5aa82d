"""The local embedder's BLAS threads are bounded whatever the environment says (issue 29,
item 2): the library's default oversubscribed the cores under concurrent saves."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from sessionvault.core.embedding import minilm

PROBE = """
import json
from threadpoolctl import threadpool_info
from sessionvault.core.embedding import minilm
before = [p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas"]
minilm.bound_blas_threads()
after = [p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas"]
print(json.dumps([before, after]))
"""


def test_the_bound_holds_over_the_environment() -> None:
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "2", "OMP_NUM_THREADS": "2"}
    out = subprocess.run(
        [sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, check=True
    ).stdout
    before, after = json.loads(out.splitlines()[-1])
    assert before == [2]  # the environment asked for 2 (the probe can see a wrong count)
    assert after == [minilm.BLAS_THREADS] == [1]
