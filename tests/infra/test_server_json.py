"""server.json, the MCP Registry listing (schema 2025-12-11), checked offline: against the
vendored schema (tests/fixtures/mcp-registry: its required fields, patterns and lengths) and
against the checks the registry makes beyond the schema when it publishes (restated from its
validators: the name's format, versions that are specific, remote URLs that are https and not
loopback, template variables that are all defined, the PyPI README's `mcp-name:` line). A
listing that fails any of these would be refused by `mcp-publisher publish`; here, before a tag.

And the listing says what is true of this project: the package's name and version, the
repository of pyproject.toml, a stdio entry that runs `sessionvault bridge`, a local entry that
runs `sessionvault dev` on the port the URL names, a remote entry whose host is the user's."""

from __future__ import annotations

import hashlib
import json
import re
import tomllib
from pathlib import Path
from typing import Any

import jsonschema
import pytest

import sessionvault
from sessionvault.cli import main as cli
from sessionvault.core.embedding.minilm import MODEL_PACKAGE

ROOT = Path(__file__).resolve().parents[2]
SCHEMA_FILE = ROOT / "tests" / "fixtures" / "mcp-registry" / "server.schema.2025-12-11.json"
SCHEMA_SHA256 = "578b5bb01866d060ff6a67734cf6b2f17a5da283a0877775c7913e4761a626e5"
SCHEMA_URL = "https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json"
LOOPBACK = ("localhost", "127.0.0.1")

# The registry's own patterns (internal/validators): reverse-DNS namespace / name, and the
# version shapes it refuses as ranges.
NAME = re.compile(r"^[a-zA-Z0-9](?:[a-zA-Z0-9.-]*[a-zA-Z0-9])?/[a-zA-Z0-9](?:[a-zA-Z0-9._-]*[a-zA-Z0-9])?$")
RANGE = re.compile(r"^\s*(?:[\^~<>=]|.*\s-\s|.*\|\|)|(?:^|\.)[xX*](?:\.|$)")
VARIABLE = re.compile(r"\{([^}]+)\}")


def listing() -> dict[str, Any]:
    data: dict[str, Any] = json.loads((ROOT / "server.json").read_text())
    return data


def project() -> dict[str, Any]:
    data: dict[str, Any] = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return data


def registry_problems(doc: dict[str, Any]) -> list[str]:
    """What the registry's semantic validation refuses (internal/validators/validators.go)."""
    problems = []
    if not NAME.match(doc.get("name", "")) or doc["name"].count("/") != 1:
        problems.append(f"name {doc.get('name')!r} is not namespace/name")
    versions = [doc.get("version", "")] + [p.get("version", "") for p in doc.get("packages", [])]
    problems += [f"version {v!r} is not one version" for v in versions if v == "latest" or RANGE.search(v)]
    repo = doc.get("repository")
    if repo and not re.match(r"^https?://(www\.)?github\.com/[\w.-]+/[\w.-]+/?$", repo["url"]):
        problems.append(f"repository {repo['url']} is not a GitHub repository URL")
    for package in doc.get("packages", []):
        if " " in package["identifier"]:
            problems.append(f"package identifier {package['identifier']!r} has a space")
        if package["registryType"] == "pypi" and package.get("registryBaseUrl", "https://pypi.org") != (
            "https://pypi.org"
        ):
            problems.append("a PyPI package must name https://pypi.org")
        known = {e["name"] for e in package.get("environmentVariables", [])}
        for arg in [*package.get("runtimeArguments", []), *package.get("packageArguments", [])]:
            known |= {arg[k] for k in ("name", "valueHint") if arg.get(k)}
            if arg["type"] == "named" and str(arg.get("value", "")).startswith(arg["name"]):
                problems.append(f"argument {arg['name']}'s value repeats its name")
        transport = package["transport"]
        if transport["type"] == "stdio" and transport.get("url"):
            problems.append("a stdio transport has no url")
        if transport["type"] not in ("stdio", "streamable-http", "sse"):
            problems.append(f"transport type {transport['type']} is not supported")
        elif transport["type"] != "stdio":
            problems += undefined(transport.get("url", ""), known) if transport.get("url") else ["no url"]
    for remote in doc.get("remotes", []):
        if remote["type"] not in ("streamable-http", "sse"):
            problems.append(f"remote type {remote['type']} is not served remotely")
        url = VARIABLE.sub("placeholder", remote["url"])
        host = re.match(r"^https://([^/:]+)", url)
        if not host or host.group(1) in LOOPBACK or host.group(1).endswith(".localhost"):
            problems.append(f"remote url {remote['url']} must be https and not loopback")
        problems += undefined(remote["url"], set(remote.get("variables", {})))
    return problems


def undefined(url: str, known: set[str]) -> list[str]:
    return [f"{url}: {{{v}}} is not defined" for v in VARIABLE.findall(url) if v not in known]


def validator() -> jsonschema.Draft7Validator:
    raw = SCHEMA_FILE.read_bytes()
    assert hashlib.sha256(raw).hexdigest() == SCHEMA_SHA256, "the vendored schema changed"
    schema = json.loads(raw)
    assert schema["$id"] == SCHEMA_URL
    return jsonschema.Draft7Validator(schema, format_checker=jsonschema.Draft7Validator.FORMAT_CHECKER)


def test_server_json_is_valid_against_the_2025_12_11_schema() -> None:
    doc = listing()
    assert doc["$schema"] == SCHEMA_URL
    errors = [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in validator().iter_errors(doc)]
    assert errors == []
    assert registry_problems(doc) == []
    assert len(doc["description"]) <= 100  # the schema's limit, held here for the message


def test_the_schema_and_the_registry_rules_refuse_what_the_registry_refuses() -> None:
    """The checks can fail: each broken copy of the listing is refused, for its own reason."""
    check = validator()

    def refused(change: Any) -> list[str]:
        doc = listing()
        change(doc)
        return [e.message for e in check.iter_errors(doc)] + registry_problems(doc)

    assert refused(lambda d: d.pop("version"))  # a required field
    assert refused(lambda d: d.update(description="x" * 101))  # maxLength 100
    assert refused(lambda d: d.update(name="sessionvault"))  # no namespace
    assert refused(lambda d: d["packages"][0].update(version="latest"))
    assert refused(lambda d: d["packages"][0].update(version="^0.1.0"))
    assert refused(lambda d: d["remotes"][0].update(url="https://{tenant}/mcp"))  # undefined variable
    assert refused(lambda d: d["remotes"][0].update(url="http://{host}/mcp"))  # not https
    assert refused(lambda d: d["remotes"][0].update(url="https://127.0.0.1/mcp"))  # loopback
    assert refused(lambda d: d["packages"][1]["transport"].update(url="http://127.0.0.1:{port}/mcp"))
    assert refused(lambda d: d["packages"][0]["transport"].update(type="websocket"))


def test_the_listing_names_this_package_at_its_version() -> None:
    doc, meta = listing(), project()
    assert doc["version"] == sessionvault.__version__ == cli.version()
    for package in doc["packages"]:
        assert (package["registryType"], package["identifier"]) == ("pypi", meta["name"])
        assert package["version"] == sessionvault.__version__
    source = meta["urls"]["Source"]
    assert doc["repository"] == {"url": source, "source": "github"}
    owner = re.match(r"https://github\.com/([^/]+)/", source)
    assert owner and doc["name"].startswith(f"io.github.{owner.group(1)}/")  # GitHub-namespace auth


def test_the_readme_proves_the_package_is_ours() -> None:
    """The registry finds `mcp-name: <name>` in the PyPI description (the README), followed by a
    character that cannot continue a name."""
    readme = (ROOT / project()["readme"]).read_text()
    assert re.search(rf"mcp-name: {re.escape(listing()['name'])}(?![A-Za-z0-9._/-])", readme)


def test_the_stdio_entry_runs_the_bridge_and_the_local_entry_runs_dev() -> None:
    bridge, local = listing()["packages"]
    assert bridge["transport"] == {"type": "stdio"}
    assert [a["value"] for a in bridge["packageArguments"]] == ["bridge"]
    assert {e["name"] for e in bridge["environmentVariables"]} == {"SESSIONVAULT_API_KEY", "SESSIONVAULT_URL"}
    assert [e["isSecret"] for e in bridge["environmentVariables"] if e["name"] == "SESSIONVAULT_API_KEY"] == [
        True
    ]
    # `uvx sessionvault-mcp ...` runs the script of the package's own name.
    assert bridge["runtimeHint"] == local["runtimeHint"] == "uvx"
    assert project()["scripts"][project()["name"]] == project()["scripts"]["sessionvault"]

    assert [a["value"] for a in local["packageArguments"]] == ["dev"]
    (with_local,) = local["runtimeArguments"]
    assert (with_local["name"], with_local["value"]) == (
        "--with",
        f"sessionvault-mcp[local]=={sessionvault.__version__}",
    )
    assert MODEL_PACKAGE in project()["optional-dependencies"]["local"]  # what that extra brings
    assert local["transport"]["url"] == "http://127.0.0.1:{SESSIONVAULT_PORT}/mcp"
    (port,) = local["environmentVariables"]
    assert port["name"] == "SESSIONVAULT_PORT" and port["default"] == "8765"


def test_the_remote_entry_is_the_users_own_deployment() -> None:
    (remote,) = listing()["remotes"]
    assert remote["type"] == "streamable-http"
    assert remote["url"] == "https://{host}/mcp"  # the McpUrl output's path, on the user's host
    assert remote["variables"]["host"]["isRequired"] is True
    (auth,) = remote["headers"]
    assert auth["name"] == "Authorization" and auth["isSecret"] is True
    template = (ROOT / "template.yaml").read_text()
    assert '"https://${HttpApi}.execute-api.${AWS::Region}.amazonaws.com/mcp"' in template


@pytest.mark.parametrize("field", ["name", "description", "version"])
def test_each_required_field_is_required(field: str) -> None:
    doc = listing()
    doc.pop(field)
    assert any(f"'{field}' is a required property" in e.message for e in validator().iter_errors(doc))
