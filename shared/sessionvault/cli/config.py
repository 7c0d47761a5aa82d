"""`sessionvault config show`: every local option's effective value and where it came from (a
flag, an environment variable, config.toml, the default). Read-only: it creates nothing."""

from __future__ import annotations

import argparse
import sys

from sessionvault.local import config
from sessionvault.local.host import target


def lines(cfg: config.Config) -> list[str]:
    """What `config show` prints: the state folder, the file, then one option a line (the URL
    as `connect` and `doctor` resolve it: a saved deployment's comes before the local one)."""
    state_from = "$SESSIONVAULT_HOME" if cfg.state_source != config.DEFAULT else "the default"
    present = (
        "" if cfg.file.exists() else " (no such file: every value below is a default or from the environment)"
    )
    out = [f"state folder: {cfg.state}  ({state_from})", f"config file:  {cfg.file}{present}"]
    width = max(len(name) for name in config.OPTIONS)
    shown = {**cfg.values, "url": target.server_url(cfg)}
    running = config.serving_port(cfg.state)
    for name, value in shown.items():
        source = value.source
        if name == "port" and running is not None and running != value.value:
            source += f"; the server running now serves on {running}"
        out.append(f"{name:<{width}}  {config.shown(value.value):<28} {source}")
    return out


def _run_show(args: argparse.Namespace) -> int:
    cfg = config.load()
    print("\n".join(lines(cfg)))
    missing = config.no_state(cfg)
    if missing and not cfg.state.exists():
        print(f"sessionvault: {missing}", file=sys.stderr)
        return 1
    return 0


def add_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "config",
        help="the local configuration (config.toml in the state folder)",
        description="The local configuration: config.toml in the state folder, read by every command. "
        "Each value comes from the command-line flag, else its environment variable, else the file, "
        "else the default. See docs/config.md.",
    )
    actions = p.add_subparsers(dest="action", required=True)
    show = actions.add_parser("show", help="each effective value and where it came from")
    show.set_defaults(func=_run_show)
