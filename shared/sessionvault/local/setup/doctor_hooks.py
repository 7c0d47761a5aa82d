"""`sessionvault doctor` on hooks: is each client's session-start hook installed and does its
command run, are the end-of-work hooks there, did they fire lately and when was the last
checkpoint saved (capture.fired), is the client's hook support unverified, and are checkpoints
waiting to be sent."""

from __future__ import annotations

import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from sessionvault.local.hook.capture import fired
from sessionvault.local.hook.capture.spool import Spool
from sessionvault.local.setup import hooks
from sessionvault.local.setup.checks import Check, check_command, shown

HOOK_PROBE = ["hook", "session-start", "--help"]  # quick: no network, exits 0
RECENT_S = 7 * 86_400  # a hook that ran within this long "fired recently"


def check_hooks(configured: set[str], *, home: Path, cwd: Path, state: Path | None = None) -> list[Check]:
    """Hooks are optional: a configured client without one gets a tip, not a failure."""
    ran = fired.read(state) if state is not None else {}
    out = []
    for name, spec in hooks.HOOK_CLIENTS.items():
        where = shown(spec.path(home, cwd), home)
        installed = hooks.installed_commands(name, home=home, cwd=cwd)
        if installed:
            trust = " (trust it once with /hooks in Codex)" if name == "codex" else ""
            out.append(Check(True, f"{spec.title}: session-start hook installed in {where}{trust}"))
            fix = f"sessionvault connect {name} --hooks"
            for line in installed:
                out.extend(
                    check_command(hooks.hook_argv(line), HOOK_PROBE, f"{spec.title}: the hook command", fix)
                )
            out.extend(_checkpoint_hooks(name, spec.title, spec.end_events, home=home, cwd=cwd))
            if state is not None:
                out.append(fired_check(spec.title, ran.get(name, {}), bool(spec.end_events)))
            if spec.unverified:
                out.append(Check(None, f"{spec.title}: hooks unverified here: {spec.unverified}"))
        elif name in configured:
            out.append(
                Check(
                    None,
                    f"{spec.title}: no session-start hook, so the last session is not loaded "
                    f"automatically (sessionvault connect {name} --apply --hooks)",
                )
            )
    return out


def _checkpoint_hooks(
    name: str, title: str, events: Mapping[str, object], *, home: Path, cwd: Path
) -> list[Check]:
    """Whether the end-of-work hooks that save automatic checkpoints are there (a tip if not)."""
    if not events:
        return []
    have = hooks.checkpoint_events(name, home=home, cwd=cwd)
    if set(have) == set(events):
        return [Check(True, f"{title}: automatic checkpoints on {', '.join(have)}")]
    return [
        Check(None, f"{title}: no automatic checkpoints when work ends (sessionvault connect {name} --hooks)")
    ]


def fired_check(title: str, ran: Mapping[str, Any], ends: bool, now: float | None = None) -> Check:
    """Whether `title`'s hooks ran here lately, and when its last checkpoint was saved: a hook
    that never fires is a tip with what to try, not a failure (the client may not have run)."""
    now = time.time() if now is None else now
    start, end, saved = (_when(ran.get(k)) for k in ("session-start", "checkpoint", "saved"))
    if start is None and end is None:
        return Check(
            None,
            f"{title}: its hooks have not run here yet; start {title} once in a repo, and if this "
            "stays, run the hook command above by hand to see what it says",
        )
    parts = [f"session-start hook last ran {_ago(start, now)}"]
    if ends:
        outcome = str(ran.get("outcome") or "")[:120]
        parts.append(f"checkpoint hook {_ago(end, now)}" + (f" ({outcome})" if outcome and end else ""))
        parts.append(f"last checkpoint saved {_ago(saved, now)}")
    latest = max(t for t in (start, end) if t is not None)
    return Check(True if now - latest < RECENT_S else None, f"{title}: " + "; ".join(parts))


def _when(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _ago(when: float | None, now: float) -> str:
    if when is None:
        return "never"
    seconds = max(0, int(now - when))
    for size, unit in ((86_400, "day"), (3_600, "hour"), (60, "minute")):
        if seconds >= size:
            count = seconds // size
            return f"{count} {unit}{'s' if count != 1 else ''} ago"
    return "just now"


def check_spool(state: Path) -> list[Check]:
    """Checkpoints saved on this machine but not yet on the server (it was unreachable)."""
    waiting = len(list(Spool(state).entries()))
    if not waiting:
        return []
    return [
        Check(None, f"{waiting} automatic checkpoint(s) waiting in {state / 'spool'}: sent by the next hook")
    ]
