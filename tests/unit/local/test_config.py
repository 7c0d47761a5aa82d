"""The local configuration (sessionvault.local.config): config.toml in the state folder, under
the environment, under the command line; every value says where it came from, and a bad file
is one clear error naming the file, the key and what is expected."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sessionvault.errors import ConfigError
from sessionvault.local import config
from sessionvault.local.hook.capture import switch
from sessionvault.local.host import target
from sessionvault.settings import Settings


def write(state: Path, text: str) -> Path:
    state.mkdir(parents=True, exist_ok=True)
    path = state / config.FILE
    path.write_text(text)
    return path


def load(state: Path, **env: str) -> config.Config:
    return config.load({"SESSIONVAULT_HOME": str(state), **env})


def test_without_a_file_every_value_is_the_default(tmp_path: Path) -> None:
    cfg = load(tmp_path / "state")
    assert {name: (v.value, v.source) for name, v in cfg.values.items()} == {
        "port": (8765, "default"),
        "url": ("", "default"),
        "embeddings": ("local", "default"),
        "rate_per_minute": (60, "default"),
        "rate_per_day": (1000, "default"),
        "capture": (True, "default"),
    }
    assert cfg.url == "http://127.0.0.1:8765/mcp" and cfg.state_source == "$SESSIONVAULT_HOME"
    assert not (tmp_path / "state").exists()  # reading creates nothing


def test_the_file_sets_every_option(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        'port = 9001\nurl = "https://sv.example.com/mcp"\nembeddings = "none"\n'
        "rate_per_minute = 5\nrate_per_day = 50\ncapture = false\n",
    )
    cfg = load(tmp_path)
    assert {name: v.value for name, v in cfg.values.items()} == {
        "port": 9001,
        "url": "https://sv.example.com/mcp",
        "embeddings": "none",
        "rate_per_minute": 5,
        "rate_per_day": 50,
        "capture": False,
    }
    assert {v.source for v in cfg.values.values()} == {str(path)}
    assert cfg.url == "https://sv.example.com/mcp" and cfg.local_url == "http://127.0.0.1:9001/mcp"


def test_a_flag_beats_the_environment_which_beats_the_file_which_beats_the_default(tmp_path: Path) -> None:
    path = write(tmp_path, "port = 9001\nrate_per_day = 50\n")
    env = {"SESSIONVAULT_HOME": str(tmp_path), "SESSIONVAULT_PORT": "9002"}
    assert config.load(env, flags={"port": 9003}).values["port"] == config.Value(9003, "--port")
    assert config.load(env, flags={"port": None}).values["port"] == config.Value(9002, "$SESSIONVAULT_PORT")
    cfg = load(tmp_path)
    assert cfg.values["port"] == config.Value(9001, str(path))
    assert cfg.values["rate_per_minute"] == config.Value(60, "default")


def test_the_server_settings_read_the_effective_values(tmp_path: Path) -> None:
    write(tmp_path, 'embeddings = "none"\nrate_per_minute = 7\nrate_per_day = 70\n')
    env = load(tmp_path, SESSIONVAULT_RATE_PER_DAY="700").server_env()
    settings = Settings.from_env(env, check=False)
    assert (settings.embeddings, settings.rate_per_minute, settings.rate_per_day) == ("none", 7, 700)


def test_the_embeddings_default_follows_the_database_and_an_openai_key(tmp_path: Path) -> None:
    assert load(tmp_path).values["embeddings"].value == "local"
    with_key = load(tmp_path, OPENAI_API_KEY="sk-x").values["embeddings"]
    assert with_key == config.Value("openai", "default (OPENAI_API_KEY is set)") and not with_key.explicit
    external = load(tmp_path, DATABASE_URL="postgresql://db/sv", OPENAI_API_KEY="sk-x").values["embeddings"]
    assert external.value == "none" and not external.explicit


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('port = "9000"', 'port must be a port number (1-65535), not "9000"'),
        ("port = 70000", "port must be a port number (1-65535), not 70000"),
        ("port = true", "port must be a port number (1-65535), not true"),
        ("rate_per_minute = 0", "rate_per_minute must be a whole number above 0, not 0"),
        ("rate_per_day = 1.5", "rate_per_day must be a whole number above 0, not 1.5"),
        ('capture = "off"', 'capture must be true or false, not "off"'),
        ('embeddings = "torch"', 'embeddings must be "local", "openai" or "none", not "torch"'),
        ('url = "127.0.0.1:9000"', 'url must be an http(s) URL, e.g. "https://sv.example.com/mcp"'),
        ("[port]\nvalue = 1", "port must be a port number (1-65535), not a table"),
    ],
)
def test_a_wrong_type_names_the_file_the_key_and_what_is_expected(
    tmp_path: Path, text: str, expected: str
) -> None:
    path = write(tmp_path, text + "\n")
    with pytest.raises(ConfigError) as caught:
        load(tmp_path)
    assert str(caught.value).startswith(f"{path}: {expected}")


def test_an_unknown_key_is_named_with_the_known_ones(tmp_path: Path) -> None:
    path = write(tmp_path, "prot = 9000\n")
    with pytest.raises(ConfigError) as caught:
        load(tmp_path)
    assert str(caught.value) == (
        f"{path}: unknown key 'prot'; the keys are port, url, embeddings, rate_per_minute,"
        " rate_per_day, capture"
    )


def test_malformed_toml_is_named_with_its_line(tmp_path: Path) -> None:
    path = write(tmp_path, "port = 9000\nembeddings = local\n")
    with pytest.raises(ConfigError, match=r"is not valid TOML: .*line 2") as caught:
        load(tmp_path)
    assert str(caught.value).startswith(f"{path} is not valid TOML")


@pytest.mark.parametrize(
    ("var", "raw", "expected"),
    [
        ("SESSIONVAULT_PORT", "abc", "$SESSIONVAULT_PORT must be a port number (1-65535), not 'abc'"),
        (
            "SESSIONVAULT_RATE_PER_MINUTE",
            "-3",
            "$SESSIONVAULT_RATE_PER_MINUTE must be a whole number above 0",
        ),
        ("SESSIONVAULT_CAPTURE", "maybe", "$SESSIONVAULT_CAPTURE must be on or off, not 'maybe'"),
        ("SESSIONVAULT_EMBEDDINGS", "torch", '$SESSIONVAULT_EMBEDDINGS must be "local", "openai" or "none"'),
    ],
)
def test_a_bad_environment_value_names_the_variable(
    tmp_path: Path, var: str, raw: str, expected: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        load(tmp_path, **{var: raw})
    assert str(caught.value).startswith(expected)


def test_a_bad_flag_is_named(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"--port must be a port number \(1-65535\), not 0"):
        config.load({"SESSIONVAULT_HOME": str(tmp_path)}, flags={"port": 0})


def test_the_state_folder_is_the_environments_else_the_home_folders(tmp_path: Path) -> None:
    cfg = config.load({}, user_home=tmp_path)
    assert cfg.state == tmp_path / ".sessionvault" and cfg.state_source == "default"
    assert cfg.file == tmp_path / ".sessionvault" / "config.toml"


def test_a_missing_state_is_named_with_the_folder_and_why_that_one(tmp_path: Path) -> None:
    missing = load(tmp_path / "typo")
    assert config.no_state(missing) == (
        f"no SessionVault state in {tmp_path / 'typo'} (from $SESSIONVAULT_HOME): the folder does not"
        " exist. Set SESSIONVAULT_HOME to the folder your server uses, or start one there with"
        " `sessionvault dev`"
    )
    write(tmp_path / "only-config", "port = 9000\n")
    assert "holds no database (pgdata/)" in config.no_state(load(tmp_path / "only-config"))
    (tmp_path / "only-config" / "pgdata").mkdir()
    assert config.no_state(load(tmp_path / "only-config")) == ""
    default = config.no_state(config.load({}, user_home=tmp_path))
    assert "(the default; $SESSIONVAULT_HOME is not set)" in default


def test_connect_and_doctor_use_the_configured_url_else_the_deployment_else_the_local_port(
    tmp_path: Path,
) -> None:
    path = write(tmp_path, "port = 9001\n")
    local = target.server_url(load(tmp_path))
    assert local == config.Value("http://127.0.0.1:9001/mcp", f"the local server at the port ({path})")
    target.save_deployment(tmp_path, target.Deployment("https://x.example/mcp", "s", "eu-west-1"), None)
    deployed = target.server_url(load(tmp_path))
    assert deployed == config.Value("https://x.example/mcp", str(tmp_path / "deployment.json"))
    assert load(tmp_path).url == "http://127.0.0.1:9001/mcp"  # hooks and the bridge: never the deployment
    write(tmp_path, 'url = "https://mine.example/mcp"\n')
    assert target.server_url(load(tmp_path)).value == "https://mine.example/mcp"
    assert (
        target.default_url({"SESSIONVAULT_URL": "http://localhost:1/mcp"}, tmp_path)
        == "http://localhost:1/mcp"
    )


def test_capture_false_in_the_file_turns_checkpoints_off_unless_the_environment_says_on(
    tmp_path: Path,
) -> None:
    path = write(tmp_path, "capture = false\n")
    assert switch.disabled(load(tmp_path), "github.com/a/b") == f"capture = false in {path}"
    assert switch.disabled(load(tmp_path, SESSIONVAULT_CAPTURE="on"), "github.com/a/b") == ""
    assert switch.disabled(load(tmp_path, SESSIONVAULT_CAPTURE="off"), "r") == "SESSIONVAULT_CAPTURE=off"
    write(tmp_path, "capture = true\n")
    (tmp_path / switch.FILE).write_text(json.dumps({"off": ["github.com/a/b"]}))
    assert "turned off for github.com/a/b" in switch.disabled(load(tmp_path), "github.com/a/b")


def test_values_are_shown_as_the_file_spells_them() -> None:
    assert [config.shown(v) for v in (True, False, 9000, "local")] == ["true", "false", "9000", '"local"']
