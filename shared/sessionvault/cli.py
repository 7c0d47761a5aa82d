"""The `sessionvault` command: run the server (embedded or against any DATABASE_URL), migrate,
and manage users and keys. With no DATABASE_URL every command uses the embedded database."""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from sessionvault.config import Settings, default_home
from sessionvault.errors import ConfigError

if TYPE_CHECKING:
    from sessionvault.runtime import Runtime

# Heavy modules (psycopg, mcp, torch) are imported inside the commands that use them: the
# session-start hook runs through this command on every client start and must stay fast.

DEFAULT_PORT = 8765
LOCAL_USER = "local"


@dataclass
class Target:
    settings: Settings  # the server's: database_url is the app role's
    owner_url: str = field(repr=False)  # migrations; URLs may hold passwords
    admin_url: str = field(repr=False)  # user, key and maintenance commands


def local_settings(home: Path, env: dict[str, str] | None = None) -> Target:
    """Settings for the embedded default: state folder, local key provider, local embeddings."""
    from sessionvault import embedded

    env = dict(os.environ if env is None else env)
    db = embedded.start(home)
    default_embeddings = "openai" if env.get("OPENAI_API_KEY") else "local"
    settings = Settings.from_env(
        env,
        database_url=db.app_url,
        key_provider="local",
        master_key="",
        master_key_file=_ensure_master_key(db.master_key_file),
        audit_salt=db.audit_salt,
        embeddings=env.get("SESSIONVAULT_EMBEDDINGS") or default_embeddings,
    )
    return Target(settings, db.owner_url, db.admin_url)


def _ensure_master_key(path: Path) -> Path:
    from sessionvault.keyprovider import load_or_create_master_key

    load_or_create_master_key(path)
    return path


def target() -> Target:
    if os.environ.get("DATABASE_URL"):
        url = os.environ["DATABASE_URL"]
        owner = os.environ.get("DATABASE_OWNER_URL", url)
        return Target(Settings.from_env(), owner, os.environ.get("DATABASE_ADMIN_URL", ""))
    return local_settings(default_home())


@contextmanager
def runtime_for(t: Target) -> Iterator[Runtime]:
    """A runtime on the admin role: every command that uses it manages users, keys or rows."""
    from sessionvault.runtime import open_runtime

    if not t.admin_url:
        raise ConfigError("user and key commands need DATABASE_ADMIN_URL (the sessionvault_admin role)")
    rt = open_runtime(replace(t.settings, database_url=t.admin_url), pool_size=2)
    try:
        yield rt
    finally:
        rt.close()


def serve(t: Target, host: str, port: int) -> None:
    import uvicorn

    from sessionvault.app import SessionVaultApp
    from sessionvault.runtime import open_runtime

    rt = open_runtime(t.settings)
    # Load a local model now, not inside the first save_session (it takes seconds).
    threading.Thread(target=rt.vault.embedder.embed, args=("warm up",), daemon=True).start()
    print(f"SessionVault serving MCP at http://{host}:{port}/mcp  (Ctrl-C to stop)", flush=True)
    try:
        uvicorn.run(SessionVaultApp(rt), host=host, port=port, log_level="warning")
    finally:
        rt.close()


def client_instructions(url: str, key: str | None) -> str:
    shown = key or "${SESSIONVAULT_API_KEY}"
    desktop = {"mcpServers": {"sessionvault": {"url": url, "headers": {"Authorization": f"Bearer {shown}"}}}}
    return "\n".join(
        [
            "Connect your AI clients:",
            "",
            "  Claude Code:",
            f"    claude mcp add --transport http sessionvault {url} \\",
            f'      --header "Authorization: Bearer {shown}"',
            "",
            "  Cursor (~/.cursor/mcp.json):",
            *("    " + line for line in json.dumps(desktop, indent=2).splitlines()),
            "",
            "  Other clients: sessionvault connect --help",
        ]
    )


def cmd_dev(args: argparse.Namespace) -> int:
    from sessionvault import accounts

    home = default_home()
    t = local_settings(home)
    print(f"State folder: {home}  (database, master key, audit salt; delete it to start over)")
    print(f"Embeddings: {t.settings.embeddings}")
    url = f"http://{args.host}:{args.port}/mcp"
    with runtime_for(t) as rt:
        key = None
        try:
            user_id = accounts.resolve_user(rt.db, LOCAL_USER)
        except accounts.AccountError:
            user_id = accounts.create_user(rt.db, rt.keys.provider, LOCAL_USER)
            key, _ = accounts.create_key(rt.db, user_id, "make dev")
    if key:
        print("\nYour API key (shown once; store it, e.g. export SESSIONVAULT_API_KEY=...):")
        print(f"\n  {key}\n")
    else:
        print("\nUsing the existing local user; its key was shown on the first run.")
        print("Lost it? sessionvault key create --label laptop")
    print(client_instructions(url, key), "\n", flush=True)
    serve(t, args.host, args.port)
    return 0


def cmd_serve(args: argparse.Namespace) -> int:
    serve(target(), args.host, args.port)
    return 0


def cmd_migrate(args: argparse.Namespace) -> int:
    # Only a database URL is needed: migrations run as the owner and touch no keys.
    owner_url = os.environ.get("DATABASE_OWNER_URL") or os.environ.get("DATABASE_URL")
    if not owner_url:
        owner_url = local_settings(default_home()).owner_url  # the embedded path migrates on start
    from sessionvault.migrations import migrate

    applied = migrate(owner_url)
    print("applied: " + ", ".join(applied) if applied else "up to date")
    return 0


def cmd_user_create(args: argparse.Namespace) -> int:
    from sessionvault import accounts

    with runtime_for(target()) as rt:
        user_id = accounts.create_user(rt.db, rt.keys.provider, args.name)
    print(user_id)
    return 0


def cmd_user_disable(args: argparse.Namespace) -> int:
    from sessionvault import accounts

    with runtime_for(target()) as rt:
        accounts.disable_user(rt.db, accounts.resolve_user(rt.db, args.user))
    print("disabled")
    return 0


def cmd_user_delete(args: argparse.Namespace) -> int:
    from sessionvault import accounts

    with runtime_for(target()) as rt:
        accounts.delete_user(rt.db, accounts.resolve_user(rt.db, args.user))
    print("deleted, with all their sessions, keys and records")
    return 0


def cmd_key_create(args: argparse.Namespace) -> int:
    from sessionvault import accounts

    with runtime_for(target()) as rt:
        key, prefix = accounts.create_key(rt.db, accounts.resolve_user(rt.db, args.user), args.label)
    print(key)
    print(f"(shown once; listed later as {prefix}...)", file=sys.stderr)
    return 0


def cmd_key_list(args: argparse.Namespace) -> int:
    from sessionvault import accounts

    with runtime_for(target()) as rt:
        user_id = accounts.resolve_user(rt.db, args.user) if args.user else None
        rows = accounts.list_keys(rt.db, user_id)
    for r in rows:
        state = "revoked" if r["revoked_at"] else "active"
        used = r["last_used_at"].isoformat(timespec="minutes") if r["last_used_at"] else "never"
        print(f"{r['prefix']}...  {state:8} {r['user']:12} last used {used:17} {r['label']}")
    return 0


def cmd_key_revoke(args: argparse.Namespace) -> int:
    from sessionvault import accounts

    with runtime_for(target()) as rt:
        user_id = accounts.resolve_user(rt.db, args.user) if args.user else None
        count = accounts.revoke_key(rt.db, args.prefix, user_id)
    print(f"revoked {count} key(s)")
    return 0 if count else 1


def cmd_admin(args: argparse.Namespace) -> int:
    """The admin function's actions: against a deployed stack (--function-name) or locally."""
    event: dict[str, str] = {"action": args.action}
    for pair in args.params:
        name, sep, value = pair.partition("=")
        if not sep:
            raise ConfigError(f"arguments are name=value pairs, got {pair!r}")
        event[name] = value
    if args.function_name:
        import boto3

        response = boto3.client("lambda").invoke(
            FunctionName=args.function_name, Payload=json.dumps(event).encode()
        )
        result = json.loads(response["Payload"].read())
    else:
        from sessionvault import admin

        with runtime_for(target()) as rt:
            result = admin.dispatch(rt, event)
    print(json.dumps(result, indent=2, default=str))
    return 0 if result.get("ok") else 1


def cmd_rotate_master_key(args: argparse.Namespace) -> int:
    """Local mode: re-wrap every DEK under a new master key, then retire the old one."""
    from datetime import UTC, datetime

    from sessionvault import rotation
    from sessionvault.keyprovider import LocalKeyProvider, load_or_create_master_key

    home = default_home()
    t = local_settings(home)
    current, upcoming = home / "master.key", home / "master.key.next"
    old = LocalKeyProvider(load_or_create_master_key(current))
    new = LocalKeyProvider(load_or_create_master_key(upcoming))  # kept across a resumed run
    sources = {old.key_id: old, new.key_id: new}
    with runtime_for(t) as rt:
        result = rotation.rewrap_all(rt.db, new, lambda key_id: sources[key_id])
    print(json.dumps(result))
    if result["remaining"]:
        print("some keys could not be re-wrapped; the old master key stays in place", file=sys.stderr)
        return 1
    stamp = datetime.now(UTC).strftime("%Y%m%d%H%M%S")
    current.rename(home / f"master.key.retired-{stamp}")
    upcoming.rename(current)
    print(f"new master key in place; the old one is kept as master.key.retired-{stamp} (delete it)")
    return 0


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="sessionvault", description=__doc__)
    sub = p.add_subparsers(dest="command", required=True)

    for name, fn, help_ in (
        ("dev", cmd_dev, "embedded Postgres + local keys + local user, then serve"),
        ("serve", cmd_serve, "serve against DATABASE_URL (or the embedded database)"),
    ):
        sp = sub.add_parser(name, help=help_)
        sp.add_argument("--host", default="127.0.0.1")
        sp.add_argument("--port", type=int, default=int(os.environ.get("SESSIONVAULT_PORT", DEFAULT_PORT)))
        sp.set_defaults(func=fn)
    sub.add_parser("migrate", help="apply pending migrations").set_defaults(func=cmd_migrate)
    sub.add_parser(
        "rotate-master-key", help="local mode: re-wrap every data key under a new master key"
    ).set_defaults(func=cmd_rotate_master_key)

    sp = sub.add_parser("admin", help="admin actions, locally or on a deployed stack")
    sp.add_argument("action", help="create_user, create_key, list_keys, revoke_key, disable_user, ...")
    sp.add_argument("params", nargs="*", help="name=value arguments, e.g. name=alice label=laptop")
    sp.add_argument("--function-name", default="", help="the stack's admin function (AWS)")
    sp.set_defaults(func=cmd_admin)

    from sessionvault import bridge, clients, doctor, hooks

    clients.add_connect_parser(sub)
    bridge.add_bridge_parser(sub)
    hooks.add_hook_parser(sub)
    doctor.add_doctor_parser(sub)

    user = sub.add_parser("user", help="manage users").add_subparsers(dest="action", required=True)
    sp = user.add_parser("create")
    sp.add_argument("name")
    sp.set_defaults(func=cmd_user_create)
    for name, fn in (("disable", cmd_user_disable), ("delete", cmd_user_delete)):
        sp = user.add_parser(name)
        sp.add_argument("user", help="name or id")
        sp.set_defaults(func=fn)

    key = sub.add_parser("key", help="manage API keys").add_subparsers(dest="action", required=True)
    sp = key.add_parser("create")
    sp.add_argument("--user", default=LOCAL_USER, help="name or id (default: local)")
    sp.add_argument("--label", default="")
    sp.set_defaults(func=cmd_key_create)
    sp = key.add_parser("list")
    sp.add_argument("--user", default="")
    sp.set_defaults(func=cmd_key_list)
    sp = key.add_parser("revoke")
    sp.add_argument("prefix", help="the key, or its first 12 characters, e.g. sv_live_a1b2")
    sp.add_argument("--user", default="", help="only this user's keys (name or id)")
    sp.set_defaults(func=cmd_key_revoke)
    return p


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["hook"]:  # the fast path: no parser of the heavy commands is even built
        from sessionvault import hooks

        return hooks.main(argv[1:])
    from sessionvault.accounts import AccountError

    args = parser().parse_args(argv)
    try:
        return args.func(args)
    except (ConfigError, AccountError) as exc:
        print(f"sessionvault: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
