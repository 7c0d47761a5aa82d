"""The web view at `/` (server-rendered pages: `views`, `pages`, `session`, `diff`) and the
handoff view that MCP Apps hosts render inside the conversation (`app_view`). docs/web.md."""
