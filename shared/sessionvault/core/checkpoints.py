"""Automatic checkpoints, as the server knows them: sessions that a client's end-of-work hook
saved from its own transcript (local/capture), not a model on purpose.

They are told apart by name (`auto/<client>/<client session id>`), so every surface (listings,
the session-start hook, people) can tell them from a deliberate handoff without a new column,
and so a resend of the same client session lands on the same name. Only a key with the
`checkpoint` scope saves one (the hooks' own key: core/apikeys.HOOK_SCOPES), personal and never
offered. They must never crowd out what people saved on purpose: they count toward a quota of
their own (AUTO_MAX_TOTAL live checkpoints; past it a new one is refused, never made room for by
deleting others), keep a short history, and only the newest AUTO_KEEP of one repo and client
survive a save (older ones of that slot are deleted in the same transaction, as are the user's
checkpoints older than AUTO_MAX_AGE_DAYS). No scheduled job is needed: only a checkpoint save
can make more of them."""

from __future__ import annotations

AUTO_PREFIX = "auto/"
AUTO_KEEP = 3  # newest checkpoints kept per repo and client
AUTO_MAX_TOTAL = 100  # live checkpoints per user across repos and clients: a quota of their own
AUTO_HISTORY = 3  # previous versions kept per checkpoint (deliberate sessions: settings.history_keep)
AUTO_MAX_AGE_DAYS = 30


def is_automatic(name: str) -> bool:
    return name.startswith(AUTO_PREFIX)


def checkpoint_name(client: str, session_id: str) -> str:
    """The stable name of one client session's checkpoint."""
    return f"{AUTO_PREFIX}{client}/{session_id}"


def sibling_prefix(name: str) -> str:
    """`auto/<client>/` of a checkpoint's name: what its siblings of the same client share."""
    client, slash, _ = name.removeprefix(AUTO_PREFIX).partition("/")
    return f"{AUTO_PREFIX}{client}/" if slash else name
