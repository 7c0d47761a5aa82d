"""`sessionvault workspace create|add|role|remove|members|list|rekey|delete`: workspaces people share
(docs/teams.md), as thin front ends on the admin actions (`jobs.workspace_admin`), run against
this machine's target database (the embedded one, or DATABASE_URL)."""

from __future__ import annotations

import argparse

from sessionvault.cli.accounts import act
from sessionvault.cli.terminal import confirm, table, when
from sessionvault.names import LOCAL_USER

ROLES = ("owner", "member", "reader")


def cmd_create(args: argparse.Namespace) -> int:
    done = act("create_workspace", workspace=args.name, owner=args.owner)
    print(f"Created workspace {done['workspace']} with owner {args.owner}: its sessions are sealed under")
    print("a data key of its own. Add people with: sessionvault workspace add " + args.name + " USER")
    return 0


def cmd_add(args: argparse.Namespace) -> int:
    done = act("add_member", workspace=args.name, user=args.user, role=args.role)
    was = f" (was {done['was']})" if done.get("was") else ""
    print(f"{args.user} is {done['role']} of {args.name}{was}")
    return 0


def cmd_role(args: argparse.Namespace) -> int:
    done = act("set_member_role", workspace=args.name, user=args.user, role=args.role)
    print(f"{args.user} is {done['role']} of {args.name} (was {done['was']})")
    return 0


def cmd_remove(args: argparse.Namespace) -> int:
    act("remove_member", workspace=args.name, user=args.user)
    print(f"{args.user} is no longer a member of {args.name}: their next call into it finds nothing")
    return 0


def cmd_members(args: argparse.Namespace) -> int:
    rows = act("list_members", workspace=args.name)["members"]
    print(table(["USER", "ROLE", "ADDED"], [(r["name"], r["role"], when(r["added_at"])) for r in rows]))
    return 0


def cmd_list(args: argparse.Namespace) -> int:
    params = {"user": args.user} if args.user else {}
    rows = act("list_workspaces", **params)["workspaces"]
    if not rows:
        print("no workspaces" + (f" of {args.user}" if args.user else ""))
        return 0
    headers = ["WORKSPACE", "MEMBERS", "CREATED"] + (["ROLE"] if args.user else [])
    print(
        table(
            headers,
            [
                (r["name"], str(r["members"]), when(r["created_at"]), *([r["role"]] if args.user else []))
                for r in rows
            ],
        )
    )
    return 0


def cmd_delete(args: argparse.Namespace) -> int:
    if not confirm(f"workspace {args.name} and every session in it", args.name, args.yes):
        return 1
    act("delete_workspace", workspace=args.name)
    print(f"Deleted workspace {args.name}: its data key first, so nothing of it can be read again")
    return 0


def cmd_rekey(args: argparse.Namespace) -> int:
    done = act("rekey_users", workspace=args.name)
    print(
        f"Re-keyed workspace {args.name}: a fresh data key, {done['reencrypted_versions']} version(s)"
        " re-sealed under it; members' next calls use it"
    )
    return 0


def add_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    sp = sub.add_parser("workspace", help="workspaces several people share (docs/teams.md)")
    ws = sp.add_subparsers(dest="workspace_command", required=True, metavar="ACTION")
    p = ws.add_parser("create", help="create a workspace with its first owner")
    p.add_argument("name", help="the workspace's name (unique; people and workspaces share names)")
    p.add_argument("--owner", default=LOCAL_USER, help=f"its first owner (default: {LOCAL_USER})")
    p.set_defaults(func=cmd_create)
    p = ws.add_parser("add", help="add a user to a workspace")
    p.add_argument("name", help="the workspace")
    p.add_argument("user", help="the user's name or id")
    p.add_argument("--role", choices=ROLES, default="member", help="owner, member (default) or reader")
    p.set_defaults(func=cmd_add)
    p = ws.add_parser("role", help="change a member's role")
    p.add_argument("name", help="the workspace")
    p.add_argument("user", help="the member's name or id")
    p.add_argument("role", choices=ROLES, help="owner, member or reader")
    p.set_defaults(func=cmd_role)
    p = ws.add_parser("remove", help="take a member out (effective on their next call)")
    p.add_argument("name", help="the workspace")
    p.add_argument("user", help="the member's name or id")
    p.set_defaults(func=cmd_remove)
    p = ws.add_parser("members", help="who belongs to a workspace, with their roles")
    p.add_argument("name", help="the workspace")
    p.set_defaults(func=cmd_members)
    p = ws.add_parser("list", help="every workspace, or those of one user")
    p.add_argument("--user", default="", help="only the workspaces this user belongs to, with their role")
    p.set_defaults(func=cmd_list)
    p = ws.add_parser("rekey", help="give a workspace a fresh data key (after removing a member)")
    p.add_argument("name", help="the workspace (name or id)")
    p.set_defaults(func=cmd_rekey)
    p = ws.add_parser("delete", help="delete a workspace and everything in it (its key first)")
    p.add_argument("name", help="the workspace")
    p.add_argument("--yes", action="store_true", help="do not ask to type the name")
    p.set_defaults(func=cmd_delete)
