"""The OAuth 2.1 authorization server in front of /mcp: its endpoints, the provider the SDK
calls, Client ID Metadata Documents (`cimd`) and the consent page."""
