"""The web view at `/` (server-rendered pages: `views` routes a request through its form checks,
`admission` and a handler in `handlers/` to an HTML page in `pages/`; `session` is its cookie,
`diff` compares two versions) and the handoff view that MCP Apps hosts render inside the
conversation (`app_view`). docs/web.md."""
