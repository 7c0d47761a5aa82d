"""The hooks' own key (local/hook/hook_key.py): which key a hook sends to which server."""

from __future__ import annotations

import stat
from pathlib import Path

from sessionvault import names
from sessionvault.local.hook import hook_key

LOCAL, OTHER = "http://127.0.0.1:8765/mcp", "https://sv.example.com/mcp"


def test_the_hooks_key_for_a_server_wins_over_the_models_key(tmp_path: Path) -> None:
    hook_key.save(tmp_path, LOCAL, "sv_live_hooks")
    env = {names.KEY_ENV: "sv_live_model"}
    assert hook_key.for_hooks(env, tmp_path, LOCAL) == "sv_live_hooks"
    assert (
        hook_key.for_hooks({**env, names.HOOK_KEY_ENV: " sv_live_given "}, tmp_path, LOCAL) == "sv_live_given"
    )


def test_a_key_saved_for_one_server_is_never_sent_to_another(tmp_path: Path) -> None:
    hook_key.save(tmp_path, LOCAL, "sv_live_local")
    assert hook_key.for_hooks({names.KEY_ENV: "sv_live_model"}, tmp_path, OTHER) == "sv_live_model"
    assert hook_key.for_hooks({}, tmp_path, OTHER) == ""


def test_saving_keeps_other_servers_keys_and_the_file_is_private(tmp_path: Path) -> None:
    hook_key.save(tmp_path, LOCAL, "sv_live_a")
    path = hook_key.save(tmp_path, OTHER, "sv_live_b")
    assert (hook_key.saved(tmp_path, LOCAL), hook_key.saved(tmp_path, OTHER)) == ("sv_live_a", "sv_live_b")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_a_broken_file_reads_as_no_key(tmp_path: Path) -> None:
    (tmp_path / hook_key.FILE).write_text("{not json")
    assert hook_key.saved(tmp_path, LOCAL) == ""
    hook_key.save(tmp_path, LOCAL, "sv_live_new")  # and is replaced by the next save
    assert hook_key.saved(tmp_path, LOCAL) == "sv_live_new"
