"""Talking to a server from the laptop: the HTTP API client, the MCP caller, the stdio bridge."""
