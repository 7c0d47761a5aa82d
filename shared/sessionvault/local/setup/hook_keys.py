"""Giving the hooks their own key (the `checkpoint` scope: local/hook/hook_key.py), as
`connect --hooks` and `sessionvault dev` do.

On this machine's own server (a loopback URL over the embedded default or DATABASE_URL) the key
is made directly in the database, for the person whose API key `connect` uses (else the local
user), and saved in the state folder's hooks.key. A remote server's keys are made by its admin:
then `connect` says the exact command, and `--hook-key` saves the key it printed."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit

from sessionvault.core import apikeys
from sessionvault.errors import AccountError, ConfigError
from sessionvault.local.hook import hook_key
from sessionvault.names import LOCAL_USER
from sessionvault.settings import is_loopback

LABEL = "hooks"


def ensure(state: Path, url: str, api_key: str, *, given: str = "") -> str:
    """Make sure the hooks have a key for `url`: `given` (saved as is), the one saved already, or
    one made here. What happened, as one line for the user."""
    if given:
        if not apikeys.looks_like_key(given.strip()):
            raise ConfigError("--hook-key takes an API key (sv_live_...) with the checkpoint scope")
        path = hook_key.save(state, url, given.strip())
        return f"the hooks' key is saved in {path} (0600)"
    if hook_key.saved(state, url):
        return f"the hooks use the key saved in {state / hook_key.FILE}"
    made = _make_locally(url, api_key)
    if made:
        path = hook_key.save(state, url, made)
        return f"made the hooks a key of their own (read, checkpoint), saved in {path} (0600)"
    scopes = ",".join(apikeys.HOOK_SCOPES)
    return (
        f"the checkpoint hooks need a key with the checkpoint scope for {url}: have the server's"
        f" admin run `sessionvault admin create_key user=<you> scopes={scopes} label={LABEL}`"
        " (with --function-name <the stack's admin function> for a deployed stack), then"
        " `sessionvault connect <client> --hooks --hook-key <that key>`; until then checkpoints"
        " wait in the spool"
    )


def _make_locally(url: str, api_key: str) -> str:
    """A hooks key made in this machine's database for the owner of `api_key` (else the local
    user); "" when `url` is not this machine's server or the database cannot make one."""
    if not is_loopback(urlsplit(url).hostname or ""):
        return ""
    import psycopg

    from sessionvault.db import identity
    from sessionvault.local import config
    from sessionvault.local.host import target
    from sessionvault.service import accounts

    cfg = config.load()
    if not (cfg.env.get("DATABASE_URL") or target.has_state(cfg.state)):
        return ""
    try:
        with target.admin_runtime(target.current(create=False, cfg=cfg)) as rt:
            owner = (
                identity.live_key_owner(rt.db, apikeys.digest(api_key))
                if apikeys.looks_like_key(api_key)
                else identity.resolve_user(rt.db, LOCAL_USER)
            )
            return accounts.create_key(rt.db, owner, LABEL, apikeys.HOOK_SCOPES)[0] if owner else ""
    except (AccountError, ConfigError, OSError, psycopg.Error):
        return ""
