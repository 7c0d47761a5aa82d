"""SessionVault: save a structured work session from one AI client, load it from another."""

# The one place the version is written: the build reads it (pyproject.toml's dynamic version)
# into the distribution's metadata, which `sessionvault --version` prints; the MCP server's
# serverInfo says it too. A literal, so the Lambda layer (a copy of the package without its
# metadata) knows it without importing importlib.metadata at cold start.
__version__ = "0.1.0"

# The distribution's name on the package index (`sessionvault` there is another project).
DISTRIBUTION = "sessionvault-mcp"
