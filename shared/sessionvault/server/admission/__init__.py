"""Who a request comes from, before any tool runs: the edge guard (`guard`), the admission
statement and its memory (`admitter`), and the call whose admission rides on its own
transaction (`riding`), one flow for /mcp and the API."""
