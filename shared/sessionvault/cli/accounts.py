"""`sessionvault user ...`, `key ...` and `admin ...`: thin front ends on the admin actions
(`jobs.admin`), run locally or, for `admin --function-name`, on a deployed stack's function."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from sessionvault.cli.terminal import table
from sessionvault.errors import AccountError, ConfigError
from sessionvault.names import LOCAL_USER

# Actions that only look: they never make a state folder (a typo in $SESSIONVAULT_HOME is
# named, not answered with the empty lists of a fresh database).
READ_ONLY = frozenset({"list_users", "list_keys", "list_members", "list_workspaces"})


def act(action: str, **params: Any) -> dict[str, Any]:
    """Run one admin action on this machine's target database; raise on refusal."""
    from sessionvault.jobs import admin
    from sessionvault.local.host import target

    with target.admin_runtime(target.current(create=action not in READ_ONLY)) as rt:
        result = admin.dispatch(rt, {"action": action, **params})
    if not result.get("ok"):
        raise AccountError(str(result.get("error", "refused")))
    return result


def cmd_user_create(args: argparse.Namespace) -> int:
    user_id = act("create_user", name=args.name)["user_id"]
    print(f"Created user {args.name} (id {user_id}).")
    print(f"Give them a key: sessionvault key create --user {args.name}")
    return 0


def cmd_user_list(args: argparse.Namespace) -> int:
    users = act("list_users")["users"]
    rows = [(r["name"], r["state"], r["id"], str(r["keys"]), r["created_at"][:16]) for r in users]
    print(table(["USER", "STATE", "ID", "KEYS", "CREATED"], rows))
    for r in users:  # names made before the naming rule (docs/teams.md): said, not changed
        if r.get("name_problem"):
            print(f"note: the name {r['name']!r} breaks the naming rule: {r['name_problem']}")
    return 0


def cmd_user_disable(args: argparse.Namespace) -> int:
    act("disable_user", user=args.user)
    print("disabled")
    return 0


def cmd_user_enable(args: argparse.Namespace) -> int:
    act("enable_user", user=args.user)
    print("enabled")
    return 0


def _user_named(ref: str) -> dict[str, Any]:
    """The user `ref` names (by id or name), as list_users shows them."""
    users: list[dict[str, Any]] = act("list_users")["users"]
    for user in users:
        if ref in (user["id"], user["name"]):
            return user
    raise AccountError(f"no user {ref!r}")


def cmd_user_delete(args: argparse.Namespace) -> int:
    """Irreversible, so confirmed: on a terminal by typing the user's name, else by --yes."""
    user = _user_named(args.user)
    if not args.yes:
        if not sys.stdin.isatty():
            raise ConfigError(
                f"not deleting user {user['name']!r} without confirmation: stdin is not a terminal;"
                " add --yes to delete them with all their sessions, keys and records"
            )
        print(
            f"This deletes user {user['name']!r} ({user['id']}) with all their sessions, keys and"
            " records; it cannot be undone.\nTo confirm, type the user's name: ",
            end="",
            file=sys.stderr,
            flush=True,
        )
        if sys.stdin.readline().strip() != user["name"]:
            print(f"not deleted: that is not {user['name']!r}", file=sys.stderr)
            return 1
    act("delete_user", user=user["id"])
    print("deleted, with all their sessions, keys and records")
    return 0


def cmd_key_create(args: argparse.Namespace) -> int:
    result = act("create_key", user=args.user, label=args.label, scopes=args.scope)
    print(result["key"])
    print(f"(shown once; listed later as {result['prefix']}...)", file=sys.stderr)
    return 0


def cmd_key_list(args: argparse.Namespace) -> int:
    rows = [
        (  # state: revoked, disabled (the user is) or active
            f"{r['prefix']}...",
            r["state"],
            r["user"],
            ",".join(r["scopes"]),
            r["last_used_at"][:16] if r["last_used_at"] else "never",
            r["label"],
        )
        for r in act("list_keys", user=args.user)["keys"]
    ]
    print(table(["KEY", "STATE", "USER", "SCOPES", "LAST USED", "LABEL"], rows))
    return 0


def cmd_key_revoke(args: argparse.Namespace) -> int:
    count = act("revoke_key", prefix=args.prefix, user=args.user)["revoked"]
    print(f"revoked {count} key(s)")
    return 0 if count else 1


def admin_event(action: str, params: list[str]) -> dict[str, Any]:
    """The admin function's event from `ACTION name=value ...`, or from one JSON object as the
    function takes it (`'{"action": "list_keys", "user": "alice"}'`). Which names each action
    accepts is checked by the action itself, the same way for every front end."""
    if action.lstrip().startswith("{"):
        if params:
            raise ConfigError("give the event as one JSON object or as ACTION name=value ..., not both")
        try:
            parsed = json.loads(action)
        except ValueError as exc:
            raise ConfigError(f"the event is not valid JSON: {exc}") from None
        if not isinstance(parsed, dict) or not isinstance(parsed.get("action"), str):
            raise ConfigError('the JSON event is one object naming its action: {"action": "list_keys", ...}')
        return {str(k): v for k, v in parsed.items()}
    event: dict[str, Any] = {"action": action}
    for pair in params:
        name, sep, value = pair.partition("=")
        if not sep or not name:
            raise ConfigError(f"arguments are name=value pairs, got {pair!r}")
        if name == "action":
            raise ConfigError(f"the action is the first argument ({action!r}); drop {pair!r}")
        if name in event:
            raise ConfigError(f"{name} is given twice")
        event[name] = value
    return event


def cmd_admin(args: argparse.Namespace) -> int:
    """The admin function's actions: against a deployed stack (--function-name) or locally."""
    event = admin_event(args.action, args.params)
    if args.function_name:
        import boto3  # type: ignore[import-untyped]

        response = boto3.client("lambda").invoke(
            FunctionName=args.function_name, Payload=json.dumps(event).encode()
        )
        result = json.loads(response["Payload"].read())
    else:
        from sessionvault.jobs import admin
        from sessionvault.local.host import target

        with target.admin_runtime(target.current(create=event["action"] not in READ_ONLY)) as rt:
            result = admin.dispatch(rt, event)
    print(json.dumps(result, indent=2, default=str))
    return 0 if result.get("ok") else 1


def add_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    sp = sub.add_parser("admin", help="admin actions, locally or on a deployed stack")
    sp.add_argument(
        "action",
        help="create_user, list_users, create_key, list_keys, revoke_key, disable_user, enable_user,"
        " delete_user, rotate_keys, rotate_proof_key, rekey_users, create_workspace, add_member,"
        " set_member_role,"
        " remove_member, list_members, list_workspaces, delete_workspace; or the whole event as one"
        " JSON object,"
        ' e.g. \'{"action": "list_keys", "user": "alice"}\'',
    )
    sp.add_argument(
        "params",
        nargs="*",
        help="name=value arguments, e.g. name=alice label=laptop; a name the action does not take is refused",
    )
    sp.add_argument("--function-name", default="", help="the stack's admin function (AWS)")
    sp.set_defaults(func=cmd_admin)

    user = sub.add_parser("user", help="manage users").add_subparsers(dest="action", required=True)
    sp = user.add_parser("create", help="make a user (with its own data key); prints its id")
    sp.add_argument("name", help="the user's name, unique (e.g. alice)")
    sp.set_defaults(func=cmd_user_create)
    sp = user.add_parser("list", help="every user: state, id, unrevoked keys")
    sp.set_defaults(func=cmd_user_list)
    for name, fn, what in (
        ("disable", cmd_user_disable, "refuse all of the user's keys and tokens until enabled"),
        ("enable", cmd_user_enable, "accept the user's unrevoked keys again"),
        ("delete", cmd_user_delete, "delete the user with all their sessions, keys and records"),
    ):
        sp = user.add_parser(name, help=what)
        sp.add_argument("user", help="name or id")
        sp.set_defaults(func=fn)
        if name == "delete":
            sp.add_argument(
                "--yes",
                action="store_true",
                help="do not ask to type the user's name (needed when stdin is not a terminal)",
            )

    key = sub.add_parser("key", help="manage API keys").add_subparsers(dest="action", required=True)
    sp = key.add_parser(
        "create",
        help="make an API key for a user; prints the key once (store it: it cannot be shown again)",
    )
    sp.add_argument("--user", default=LOCAL_USER, help=f"name or id (default: {LOCAL_USER})")
    sp.add_argument("--label", default="", help="a note to recognise the key by in `key list`, e.g. laptop")
    sp.add_argument(
        "--scope",
        default="read,write",
        help="what the key may do, comma-separated: read, write, delete (default: read,write)",
    )
    sp.set_defaults(func=cmd_key_create)
    sp = key.add_parser(
        "list", help="every key: its first characters, state, user, scopes, when last used, label"
    )
    sp.add_argument("--user", default="", help="only this user's keys (name or id; default: every user's)")
    sp.set_defaults(func=cmd_key_list)
    sp = key.add_parser("revoke", help="refuse a key from now on (at once, also on a running server)")
    sp.add_argument("prefix", help="the key, or its first 12 characters, e.g. sv_live_a1b2")
    sp.add_argument("--user", default="", help="only this user's keys (name or id)")
    sp.set_defaults(func=cmd_key_revoke)
