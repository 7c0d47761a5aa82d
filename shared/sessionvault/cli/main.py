"""The `sessionvault` command. The modules of this package parse arguments and call into the
rest; what a user reads in `--help` is written here and beside each command, for users."""

from __future__ import annotations

import argparse
import contextlib
import sys
import warnings
from collections.abc import Iterator

from sessionvault.errors import SessionVaultError


def parser() -> argparse.ArgumentParser:
    from sessionvault.cli import (
        accounts,
        backup,
        capture,
        clients,
        config,
        deploy,
        hook,
        link,
        server,
        sessions,
        workspaces,
    )

    p = argparse.ArgumentParser(prog="sessionvault", description=DESCRIPTION)
    p.add_argument("--version", action="version", version=f"sessionvault {version()}")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND", title="commands")
    server.add_parsers(sub)
    accounts.add_parsers(sub)
    clients.add_parsers(sub)
    hook.add_parsers(sub)
    capture.add_parsers(sub)
    backup.add_parsers(sub)
    sessions.add_parsers(sub)
    deploy.add_parsers(sub)
    config.add_parsers(sub)
    link.add_parsers(sub)
    workspaces.add_parsers(sub)
    described(p)
    return p


DESCRIPTION = (
    "SessionVault: save a working session from one AI coding client and load it in another. "
    "Run a server on this machine (dev), connect your clients to it (connect, doctor), and read "
    "your sessions from a terminal (sessions). Without DATABASE_URL every command uses the "
    "embedded database in the state folder ($SESSIONVAULT_HOME, default ~/.sessionvault). "
    "`sessionvault COMMAND --help` says more about each command."
)


def described(p: argparse.ArgumentParser) -> None:
    """A command's own `--help` page starts with what the list of commands says of it, unless it
    has a longer description of its own (argparse shows a subcommand's help only in its
    parent's list)."""
    for action in p._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {choice.dest: choice.help for choice in action._choices_actions}
            for name, child in action.choices.items():
                said = str(helps.get(name) or "")
                if not child.description and said:
                    child.description = said[:1].upper() + said[1:].rstrip(".") + "."
                described(child)


def version() -> str:
    """The installed distribution's version (its metadata, made from sessionvault.__version__
    at build time), else the package's own (a copy without metadata). Asked by the
    distribution's name: `sessionvault` on the index is another project's."""
    from importlib import metadata

    from sessionvault import DISTRIBUTION, __version__

    try:
        return metadata.version(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        return __version__


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv == ["--version"]:  # answered before any command's parser is built
        print(f"sessionvault {version()}")
        raise SystemExit(0)  # as argparse's --version does
    if argv[:1] == ["hook"]:  # the fast path: no parser of the heavy commands is even built
        from sessionvault.cli import hook

        return hook.main(argv[1:])
    args = parser().parse_args(argv)
    # platformdirs (under the embedded Postgres) warns on every start where no desktop session
    # set XDG_RUNTIME_DIR (containers, CI, ssh as root): noise the user can do nothing about.
    warnings.filterwarnings("ignore", message="XDG_RUNTIME_DIR is not set")
    # One-shot commands keep stdout for their answer (a key, a JSON reply).
    quiet = _quiet_logs() if args.command not in ("dev", "serve") else contextlib.nullcontext()
    try:
        with quiet:
            code: int = args.func(args)
        return code
    except SessionVaultError as exc:
        print(f"sessionvault: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


@contextlib.contextmanager
def _quiet_logs() -> Iterator[None]:
    """Log only problems, to stderr, while a one-shot command runs (its admin actions are
    still audited in the database)."""
    import logging

    from sessionvault import telemetry

    telemetry.logger()  # built on first use: build it now to adjust its handler
    logger = logging.getLogger("sessionvault")
    streams = [h for h in logger.handlers if isinstance(h, logging.StreamHandler)]
    level, previous = logger.level, [h.stream for h in streams]
    for handler in streams:
        handler.setStream(sys.stderr)
    logger.setLevel(logging.WARNING)
    try:
        yield
    finally:
        logger.setLevel(level)
        for handler, stream in zip(streams, previous, strict=True):
            handler.setStream(stream)


if __name__ == "__main__":
    sys.exit(main())
