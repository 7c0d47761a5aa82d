"""/mcp: the endpoint (`endpoint`), the SDK's session manager (`host`), the call's state
(`call_state`), the tools, resources, prompts, input schemas and the MCP App's resource."""
