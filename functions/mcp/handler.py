"""MCP function: API Gateway HTTP API (payload v2) -> Mangum -> the SessionVault ASGI app.

Built once per container at cold start (a configuration problem stops it here, with one log
line per problem); Mangum's lifespan is off because the app has none to run."""

from mangum import Mangum

from sessionvault.app import SessionVaultApp
from sessionvault.cloud import lambda_settings
from sessionvault.runtime import open_runtime

handler = Mangum(SessionVaultApp(open_runtime(lambda_settings(), pool_size=1)), lifespan="off")
