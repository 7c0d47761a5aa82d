"""`sessionvault doctor` on hooks: is each client's session-start hook installed and does its
command run, are the end-of-work hooks there, and are checkpoints waiting to be sent."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from sessionvault.local.hook.capture.spool import Spool
from sessionvault.local.setup import hooks
from sessionvault.local.setup.checks import Check, check_command, shown

HOOK_PROBE = ["hook", "session-start", "--help"]  # quick: no network, exits 0


def check_hooks(configured: set[str], *, home: Path, cwd: Path) -> list[Check]:
    """Hooks are optional: a configured client without one gets a tip, not a failure."""
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


def check_spool(state: Path) -> list[Check]:
    """Checkpoints saved on this machine but not yet on the server (it was unreachable)."""
    waiting = len(list(Spool(state).entries()))
    if not waiting:
        return []
    return [
        Check(None, f"{waiting} automatic checkpoint(s) waiting in {state / 'spool'}: sent by the next hook")
    ]
