"""--url and --key, and the HTTP API they name, for every command that talks to a server's API
(`sessions`, `export`, `import`, `capture`), with `connect`'s precedence for what is not given."""

from __future__ import annotations

import argparse
import os

from sessionvault.local.config import SERVER_URL_HELP
from sessionvault.local.remote.transport import Api
from sessionvault.names import KEY_ENV


def connection_options() -> argparse.ArgumentParser:
    """--url, --key: the parent of every command here (and of `import`)."""
    p = argparse.ArgumentParser(add_help=False)
    p.add_argument(
        "--url",
        default=None,
        help=f"the server (its /mcp URL; default: {SERVER_URL_HELP})",
    )
    p.add_argument(
        "--key", default=None, help=f"API key (default: ${KEY_ENV}, else the deployed stack's saved key)"
    )
    return p


def api_for(url: str | None, key: str | None) -> Api:
    """The API that --url/--key name, with `connect`'s precedence for what is not given."""
    from sessionvault.local.host import target

    state = target.state_folder()
    url = url or target.default_url(os.environ, state)
    found = key or target.default_key(os.environ, state, url)[0]
    return Api.at(url, found)
