"""The service layer: what the tools, the HTTP API and the web view do, over `db`: saves, loads,
search, handoffs, export and import, purge, and how a version is sealed. Imports `db` and `core`."""
