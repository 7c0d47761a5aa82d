"""The admin actions' table: each action a function registered under its name with the event
keys it reads (`action`), and the check that refuses any other key before it runs, so a
misspelt parameter (`scope` for `scopes`) is an error, never a silent default. The actions
themselves are `admin` (users and keys) and `workspace_admin` (workspaces and members)."""

from __future__ import annotations

import difflib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sessionvault.db import identity
from sessionvault.errors import AccountError
from sessionvault.runtime import Runtime

Event = dict[str, Any]
Run = Callable[[Runtime, Event], dict[str, Any]]

USER, USER_ALIAS = "user_id", "user"  # a user's id or name, under either key
SHOWN = 40  # at most this much of a caller's unknown key is echoed back


@dataclass(frozen=True)
class Action:
    run: Run
    params: tuple[str, ...]  # the event keys it reads, besides "action" (USER: also USER_ALIAS)

    def accepted(self) -> list[str]:
        return [f"{p} (or {USER_ALIAS})" if p == USER else p for p in self.params]


ACTIONS: dict[str, Action] = {}  # in the order they are listed to a caller


def action(*params: str) -> Callable[[Run], Run]:
    """Register the function as the action of its name, reading only `params`."""

    def register(fn: Run) -> Run:
        ACTIONS[fn.__name__] = Action(fn, params)
        return fn

    return register


def check_parameters(event: Event) -> None:
    """Refuse an event naming no known action, or with a key its action does not read: the
    refusal names the unknown key(s) and the accepted ones."""
    name = str(event.get("action", ""))
    if name not in ACTIONS:
        raise AccountError(unknown_action())
    known = ACTIONS[name]
    allowed = ["action", *known.params, *([USER_ALIAS] if USER in known.params else [])]
    unknown = [str(key)[:SHOWN] for key in event if key not in allowed]  # the caller's text: cut
    if unknown:
        named = ", ".join(repr(k) for k in unknown[:3]) + (", ..." if len(unknown) > 3 else "")
        close = difflib.get_close_matches(unknown[0], allowed[1:], n=1) if len(unknown) == 1 else []
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        accepted = f"accepted: {', '.join(known.accepted())}" if known.params else "it takes no parameters"
        plural = "s" if len(unknown) > 1 else ""
        raise AccountError(f"{name}: unknown parameter{plural} {named}{hint}; {accepted}")
    if event.get(USER) and event.get(USER_ALIAS) and str(event[USER]) != str(event[USER_ALIAS]):
        raise AccountError(f"give one of {USER}, {USER_ALIAS}: they name the same thing")


def unknown_action() -> str:
    return f"unknown action; one of: {', '.join(ACTIONS)}"


def named_user(event: Event) -> str:
    return str(event.get(USER) or event.get(USER_ALIAS) or "")


def user_of(rt: Runtime, event: Event) -> str:
    ref = named_user(event)
    if not ref:
        raise AccountError(f"this action needs {USER} (a user's id or name)")
    return identity.resolve_user(rt.db, ref)
