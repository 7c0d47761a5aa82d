"""`sessionvault user ...`, `key ...` and `admin ...`: thin front ends on the admin actions
(`jobs.admin`), run locally or, for `admin --function-name`, on a deployed stack's function."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from sessionvault.errors import AccountError, ConfigError
from sessionvault.names import LOCAL_USER


def act(action: str, **params: Any) -> dict[str, Any]:
    """Run one admin action on this machine's target database; raise on refusal."""
    from sessionvault.jobs import admin
    from sessionvault.local import target

    with target.admin_runtime(target.current()) as rt:
        result = admin.dispatch(rt, {"action": action, **params})
    if not result.get("ok"):
        raise AccountError(str(result.get("error", "refused")))
    return result


def cmd_user_create(args: argparse.Namespace) -> int:
    print(act("create_user", name=args.name)["user_id"])
    return 0


def cmd_user_disable(args: argparse.Namespace) -> int:
    act("disable_user", user=args.user)
    print("disabled")
    return 0


def cmd_user_delete(args: argparse.Namespace) -> int:
    act("delete_user", user=args.user)
    print("deleted, with all their sessions, keys and records")
    return 0


def cmd_key_create(args: argparse.Namespace) -> int:
    result = act("create_key", user=args.user, label=args.label, scopes=args.scope)
    print(result["key"])
    print(f"(shown once; listed later as {result['prefix']}...)", file=sys.stderr)
    return 0


def cmd_key_list(args: argparse.Namespace) -> int:
    for r in act("list_keys", user=args.user)["keys"]:
        state = "revoked" if r["revoked_at"] else "active"
        used = r["last_used_at"][:16] if r["last_used_at"] else "never"
        scopes = ",".join(r["scopes"])
        print(f"{r['prefix']}...  {state:8} {r['user']:12} {scopes:17} last used {used:17} {r['label']}")
    return 0


def cmd_key_revoke(args: argparse.Namespace) -> int:
    count = act("revoke_key", prefix=args.prefix, user=args.user)["revoked"]
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
        import boto3  # type: ignore[import-untyped]

        response = boto3.client("lambda").invoke(
            FunctionName=args.function_name, Payload=json.dumps(event).encode()
        )
        result = json.loads(response["Payload"].read())
    else:
        from sessionvault.jobs import admin
        from sessionvault.local import target

        with target.admin_runtime(target.current()) as rt:
            result = admin.dispatch(rt, event)
    print(json.dumps(result, indent=2, default=str))
    return 0 if result.get("ok") else 1


def add_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    sp = sub.add_parser("admin", help="admin actions, locally or on a deployed stack")
    sp.add_argument("action", help="create_user, create_key, list_keys, revoke_key, disable_user, ...")
    sp.add_argument("params", nargs="*", help="name=value arguments, e.g. name=alice label=laptop")
    sp.add_argument("--function-name", default="", help="the stack's admin function (AWS)")
    sp.set_defaults(func=cmd_admin)

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
    sp.add_argument("--user", default=LOCAL_USER, help=f"name or id (default: {LOCAL_USER})")
    sp.add_argument("--label", default="")
    sp.add_argument(
        "--scope",
        default="read,write",
        help="what the key may do, comma-separated: read, write, delete (default: read,write)",
    )
    sp.set_defaults(func=cmd_key_create)
    sp = key.add_parser("list")
    sp.add_argument("--user", default="")
    sp.set_defaults(func=cmd_key_list)
    sp = key.add_parser("revoke")
    sp.add_argument("prefix", help="the key, or its first 12 characters, e.g. sv_live_a1b2")
    sp.add_argument("--user", default="", help="only this user's keys (name or id)")
    sp.set_defaults(func=cmd_key_revoke)
