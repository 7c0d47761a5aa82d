"""The admin actions' one table: which parameters each action takes, checked before it runs
(no database here: a refused event never reaches an action)."""

import argparse

import pytest

from sessionvault.cli import accounts
from sessionvault.errors import AccountError
from sessionvault.jobs import admin


def refusal(event: dict) -> str:
    with pytest.raises(AccountError) as exc:
        admin.check_parameters(event)
    return str(exc.value)


def test_each_action_declares_the_parameters_it_reads():
    assert {name: action.params for name, action in admin.ACTIONS.items()} == {
        "create_user": ("name",),
        "list_users": (),
        "create_key": ("user_id", "label", "scopes"),
        "list_keys": ("user_id",),
        "revoke_key": ("prefix", "user_id"),
        "disable_user": ("user_id",),
        "enable_user": ("user_id",),
        "delete_user": ("user_id",),
        "rotate_proof_key": (),
        "rotate_keys": (),
        "rekey_users": ("user_id", "before", "workspace"),
        "create_workspace": ("workspace", "owner"),
        "add_member": ("workspace", "user_id", "role"),
        "set_member_role": ("workspace", "user_id", "role"),
        "remove_member": ("workspace", "user_id"),
        "list_members": ("workspace",),
        "list_workspaces": ("user_id",),
        "delete_workspace": ("workspace",),
    }


def test_known_parameters_and_the_user_alias_pass():
    admin.check_parameters({"action": "create_key", "user_id": "a", "label": "l", "scopes": "read"})
    admin.check_parameters({"action": "create_key", "user": "a"})
    admin.check_parameters({"action": "list_users"})
    admin.check_parameters({"action": "revoke_key", "prefix": "sv_live_abcd", "user": ""})


def test_an_unknown_parameter_is_named_with_the_accepted_ones():
    assert refusal({"action": "create_key", "user": "a", "scope": "read"}) == (
        "create_key: unknown parameter 'scope' (did you mean 'scopes'?); "
        "accepted: user_id (or user), label, scopes"
    )
    assert refusal({"action": "create_key", "user": "a", "colour": "x", "size": 1}) == (
        "create_key: unknown parameters 'colour', 'size'; accepted: user_id (or user), label, scopes"
    )
    assert refusal({"action": "rotate_keys", "key_id": "k"}) == (
        "rotate_keys: unknown parameter 'key_id'; it takes no parameters"
    )
    assert refusal({"action": "disable_user", "username": "a"}).startswith(
        "disable_user: unknown parameter 'username' (did you mean 'user'?)"
    )


def test_the_caller_text_in_a_refusal_is_bounded():
    message = refusal({"action": "list_users", "x" * 10_000: 1})
    assert len(message) < 200


def test_user_and_user_id_together_are_refused():
    assert "one of user_id, user" in refusal({"action": "delete_user", "user_id": "a", "user": "b"})


def test_the_cli_help_names_every_action():
    sub = argparse.ArgumentParser().add_subparsers()
    accounts.add_parsers(sub)
    helped = sub.choices["admin"].format_help()
    for name in admin.ACTIONS:
        assert name in helped
