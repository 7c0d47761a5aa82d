"""Automatic checkpoints, as the server knows them: sessions that a client's end-of-work hook
saved from its own transcript (local/capture), not a model on purpose.

They are told apart by name (`auto/<client>/<client session id>`), so every surface (listings,
the session-start hook, people) can tell them from a deliberate handoff without a new column,
and so a resend of the same client session lands on the same name. They must never crowd out
what people saved on purpose: they do not count toward the session quota, keep a short history,
and only the newest AUTO_KEEP of one repo and client survive a save (older ones are deleted in
the same transaction, as are the user's checkpoints older than AUTO_MAX_AGE_DAYS). No scheduled
job is needed: only a checkpoint save can make more of them."""

from __future__ import annotations

AUTO_PREFIX = "auto/"
AUTO_KEEP = 3  # newest checkpoints kept per repo and client
AUTO_MAX_TOTAL = 30  # checkpoints kept per user across repos and clients: a cap of their own
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
