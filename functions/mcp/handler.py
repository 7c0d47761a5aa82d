"""MCP function: API Gateway HTTP API (payload v2) -> Mangum -> the SessionVault ASGI app.

Built once per execution environment at init (a configuration problem stops it here, with one
log line per problem); Mangum's lifespan is off because the app has none to run. Init imports
no boto3: the secrets are read with one signed HTTPS request each (aws_secrets.fetch_secret) and
the KMS client is made on the first request that needs it (docs/snapstart.md, "Cold start").

With SnapStart (template parameter SnapStart=On) Lambda runs this init once per published
version, snapshots it, and resumes every new environment from that one snapshot. No database
connection may be in it: the hooks below close the pool before the snapshot (and load the KMS
client's code, not a client, so the first request after a restore does not import boto3) and
give each restored copy a fresh pool (docs/snapstart.md); the embedding provider's code and numpy
are loaded into the snapshot too. Without SnapStart they never run.

uvicorn ships in the dependencies layer (the MCP SDK depends on it) but never runs here, and
sse-starlette, which the SDK's Streamable HTTP module imports, hooks uvicorn's exit handler
whenever it can import it: uvicorn and click cost init ~25 ms of CPU for nothing. In Lambda's
runtime (its Runtime API address is set; a test importing this file has none) it cannot."""

import os
import sys

if os.environ.get("AWS_LAMBDA_RUNTIME_API"):
    sys.modules.setdefault("uvicorn", None)  # an import of it fails: before the imports below

from mangum import Mangum

from sessionvault import aws_secrets
from sessionvault.runtime import open_runtime
from sessionvault.server.app import SessionVaultApp

try:  # part of the Lambda Python runtimes (3.12+); absent on a laptop and in the tests
    import snapshot_restore_py
except ImportError:
    snapshot_restore_py = None

RUNTIME = open_runtime(aws_secrets.from_lambda(), pool_size=1)
handler = Mangum(SessionVaultApp(RUNTIME), lifespan="off")


def before_snapshot() -> None:
    RUNTIME.db.close()
    # Code a restored container's first calls would import, loaded into the snapshot (no client,
    # no credential): the KMS client's, the embedding provider's (OpenAI's SDK), and numpy, which
    # a search's scoring of the sealed vectors imports.
    for part in (RUNTIME.keys.provider, RUNTIME.vault.embedder):
        prime = getattr(part, "prime", None)
        if prime is not None:
            prime()
    import numpy  # noqa: F401


if snapshot_restore_py is not None:
    snapshot_restore_py.register_before_snapshot(before_snapshot)
    snapshot_restore_py.register_after_restore(RUNTIME.db.reopen)
