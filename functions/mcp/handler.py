"""MCP function: API Gateway HTTP API (payload v2) -> Mangum -> the SessionVault ASGI app.

Built once per container at cold start (a configuration problem stops it here, with one log
line per problem); Mangum's lifespan is off because the app has none to run."""

from mangum import Mangum

from sessionvault import settings
from sessionvault.runtime import open_runtime
from sessionvault.server.app import SessionVaultApp

handler = Mangum(SessionVaultApp(open_runtime(settings.from_lambda(), pool_size=1)), lifespan="off")
