"""SnapStart for the MCP function (template parameter SnapStart=On|Off): invariants on the parsed
template, then SAM's own transform of it (the samtranslator inside the SAM CLI), which decides
what API Gateway invokes and when a new version, and so a new snapshot, is published.

SnapStart snapshots published versions only, so the MCP function is always served through its
alias; SnapStart itself is on for that function alone and only when the parameter says On.
"""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from .template_model import (
    FUNCTIONS,
    LAYERS,
    ROOT,
    RUNTIME,
    TEMPLATE,
    fn_props,
    load_template,
    ref,
    sam_command,
)

MCP = "McpFunction"
SNAPSTART_PYTHON = (3, 12)  # Lambda SnapStart for Python: python3.12 and later
LAMBDA_DESCRIPTION_MAX = 256
# Parameters the MCP function's configuration is built from that VersionDescription leaves out
# (unbounded lengths): changing only these does not publish a new version (docs/snapstart.md).
NOT_IN_VERSION_DESCRIPTION = {
    "OpenAiKeySecretName",
    "SubnetIds",
    "SecurityGroupIds",
    "PublicUrl",
}
# Function properties that are not part of a published version's configuration.
NOT_VERSION_CONFIG = {
    "ReservedConcurrentExecutions",  # function-wide
    "Events",
    "AutoPublishAlias",
    "AutoPublishAliasAllProperties",
    "VersionDescription",
    "VersionDeletionPolicy",
}


@pytest.fixture(scope="module")
def template() -> dict[str, Any]:
    return load_template()


def python_version(runtime: str) -> tuple[int, int]:
    major, minor = runtime.removeprefix("python").split(".")
    return int(major), int(minor)


def load_lock_module() -> Any:
    spec = importlib.util.spec_from_file_location("lock_layer", ROOT / "infrastructure" / "lock_layer.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# ---------------------------------------------------------------- the runtime


def test_every_function_runs_a_python_that_snapstart_supports(template):
    for name in FUNCTIONS:
        runtime = fn_props(template, name)["Runtime"]
        assert runtime == RUNTIME
        assert python_version(runtime) >= SNAPSTART_PYTHON, f"{name}: {runtime} cannot SnapStart"


def test_the_dependency_lock_is_resolved_for_the_functions_runtime(template):
    lock = load_lock_module()
    assert lock.RUNTIME == RUNTIME
    assert "cp" + RUNTIME.removeprefix("python").replace(".", "") == lock.ABI
    assert lock.locked_for(lock.LOCK.read_text()) == lock.PY_VERSION, "run infrastructure/lock_layer.py"
    for layer in LAYERS:
        assert template["Resources"][layer]["Properties"]["CompatibleRuntimes"] == [RUNTIME]
    assert template["Resources"]["DependenciesLayer"]["Metadata"]["BuildMethod"] == "makefile"


def test_lock_check_passes_and_refuses_a_lock_resolved_for_another_python(tmp_path, monkeypatch, capsys):
    lock = load_lock_module()
    monkeypatch.setattr(sys, "argv", ["lock_layer.py", "--check"])
    assert lock.main() == 0, capsys.readouterr().out
    stale = tmp_path / "requirements.txt"
    stale.write_text(lock.LOCK.read_text().replace(f"CPython {lock.PY_VERSION}", "CPython 3.11"))
    monkeypatch.setattr(lock, "LOCK", stale)
    assert lock.main() == 1
    assert "CPython 3.11" in capsys.readouterr().out


# ---------------------------------------------------------------- the parameter


def test_snapstart_is_a_parameter_off_by_default(template):
    param = template["Parameters"]["SnapStart"]
    assert param["Type"] == "String"
    assert sorted(param["AllowedValues"]) == ["Off", "On"]
    assert param["Default"] == "Off"
    assert template["Conditions"]["SnapStartOn"] == {"Fn::Equals": [{"Ref": "SnapStart"}, "On"]}
    groups = template["Metadata"]["AWS::CloudFormation::Interface"]["ParameterGroups"]
    assert any("SnapStart" in g["Parameters"] for g in groups)


def test_only_the_mcp_function_snapstarts_and_only_when_on(template):
    assert fn_props(template, MCP)["SnapStart"] == {
        "ApplyOn": {"Fn::If": ["SnapStartOn", "PublishedVersions", "None"]}
    }
    globals_ = template["Globals"]["Function"]
    for prop in ("SnapStart", "AutoPublishAlias", "ProvisionedConcurrencyConfig"):
        assert prop not in globals_
    for name in set(FUNCTIONS) - {MCP}:
        props = fn_props(template, name)
        assert "SnapStart" not in props and "AutoPublishAlias" not in props, name


def test_the_mcp_function_is_served_through_an_alias_republished_on_every_change(template):
    props = template["Resources"][MCP]["Properties"]
    assert isinstance(props["AutoPublishAlias"], str) and props["AutoPublishAlias"]
    # A change to any property, or to a layer (all the code is in layers), publishes a version:
    # without these, new code would reach $LATEST while the alias kept serving the old one.
    assert props["AutoPublishAliasAllProperties"] is True
    for layer in LAYERS:
        assert template["Resources"][layer]["Properties"]["PublishLambdaVersion"] is True
    assert props["VersionDeletionPolicy"] == "Delete"


def test_nothing_snapstart_cannot_run_with(template):
    props = fn_props(template, MCP)
    assert "ProvisionedConcurrencyConfig" not in props
    assert "FileSystemConfigs" not in props
    assert props.get("EphemeralStorage", {}).get("Size", 512) <= 512
    assert props.get("PackageType", "Zip") == "Zip"


def parameters_in(node: Any, template: dict[str, Any], *, via_conditions: bool = True) -> set[str]:
    """The template parameters a value is built from: Refs and ${Name} in Fn::Sub (not the
    names its own variable map defines), plus (via_conditions) those behind every condition
    it tests, whose values it reflects only as true or false."""
    params = set(template["Parameters"])
    found: set[str] = set()
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "Ref" and value in params:
                found.add(value)
            elif key == "Fn::Sub":
                text, local = (value, {}) if isinstance(value, str) else (value[0], value[1])
                found |= {v for v in re.findall(r"\$\{([\w:.]+)\}", text) if v in params and v not in local}
                found |= parameters_in(local, template, via_conditions=via_conditions)
            elif key == "Fn::If":
                if via_conditions:
                    found |= parameters_in(template["Conditions"][value[0]], template)
                found |= parameters_in(value[1:], template, via_conditions=via_conditions)
            elif key == "Condition" and isinstance(value, str):
                if via_conditions:
                    found |= parameters_in(template["Conditions"][value], template)
            else:
                found |= parameters_in(value, template, via_conditions=via_conditions)
    elif isinstance(node, list):
        for item in node:
            found |= parameters_in(item, template, via_conditions=via_conditions)
    return found


def test_a_changed_parameter_publishes_a_new_version(template):
    """SAM hashes a function's properties with parameter references, not their values, so a
    deploy that changes only a parameter would leave the alias on the old version (and its old
    snapshot). VersionDescription spells the values out: a change replaces the version."""
    props = fn_props(template, MCP)
    config = {k: v for k, v in props.items() if k not in NOT_VERSION_CONFIG}
    reaching = parameters_in(config, template)
    covered = parameters_in(props["VersionDescription"], template, via_conditions=False)
    assert "SnapStart" in covered
    assert reaching - covered == NOT_IN_VERSION_DESCRIPTION
    assert not covered - reaching, f"VersionDescription names what no setting uses: {covered - reaching}"
    doc = (ROOT / "docs" / "snapstart.md").read_text()
    for name in NOT_IN_VERSION_DESCRIPTION:
        assert name in doc, f"docs/snapstart.md must say that changing {name} alone publishes nothing"


def test_the_version_description_fits_in_256_characters(template):
    text, local = template["Resources"][MCP]["Properties"]["VersionDescription"]["Fn::Sub"]
    longest: dict[str, str] = {}
    for name, param in template["Parameters"].items():
        if "AllowedValues" in param:
            longest[name] = max((str(v) for v in param["AllowedValues"]), key=len)
        elif param["Type"] == "Number":
            longest[name] = "9" * 10
    for name, value in local.items():  # a condition's branches
        longest[name] = max((str(v) for v in value["Fn::If"][1:]), key=len)
    rendered = re.sub(r"\$\{([\w:.]+)\}", lambda m: longest[m.group(1)], text)
    assert len(rendered) <= LAMBDA_DESCRIPTION_MAX, rendered


# ---------------------------------------------------------------- SAM's transform (slow)


TRANSFORM = """
import json, sys
from samtranslator.translator.transform import transform
from samtranslator.yaml_helper import yaml_parse

class NoManagedPolicies:
    def load(self):
        return {}

request = json.load(sys.stdin)
template = yaml_parse(open(request["template"]).read())
for name, resource in template["Resources"].items():
    props = resource.get("Properties", {})
    for key in ("CodeUri", "ContentUri"):
        if key in props:  # what `sam package` does: a local folder becomes an S3 object
            props[key] = request["uris"].get(name, f"s3://bucket/{name}.zip")
print(json.dumps(transform(template, request["parameters"], NoManagedPolicies())))
"""


def sam_python() -> str | None:
    """The interpreter the SAM CLI runs on (samtranslator is installed there)."""
    cmd = sam_command()
    if cmd is None:
        return None
    if len(cmd) > 1:  # python -m samcli
        return cmd[0]
    try:
        first = Path(cmd[0]).read_bytes()[:200].split(b"\n", 1)[0]
    except OSError:
        return None
    if not first.startswith(b"#!"):
        return None  # a native installer's binary
    return first[2:].decode().strip().split()[0]


def transformed(parameters: dict[str, str], uris: dict[str, str] | None = None) -> dict[str, Any]:
    python = sam_python()
    if python is None:
        pytest.skip("no SAM CLI interpreter with samtranslator (set SAM_CLI)")
    request = {"template": str(TEMPLATE), "parameters": parameters, "uris": uris or {}}
    out = subprocess.run(
        [python, "-c", TRANSFORM],
        input=json.dumps(request),
        capture_output=True,
        text=True,
        timeout=120,
        env={"AWS_DEFAULT_REGION": "us-east-1", "PATH": "/usr/bin:/bin", "HOME": "/tmp"},
    )
    if out.returncode and "No module named 'samtranslator'" in out.stderr:
        pytest.skip("the SAM CLI's interpreter has no samtranslator")
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout)["Resources"]


def evaluate(node: Any, template: dict[str, Any], parameters: dict[str, str]) -> Any:
    """Enough of CloudFormation's condition language to resolve this template's Fn::If."""
    if isinstance(node, list):
        return [evaluate(n, template, parameters) for n in node]
    if not isinstance(node, dict) or len(node) != 1:
        return node
    ((key, value),) = node.items()
    if key == "Ref":
        param = template["Parameters"][value]
        raw = parameters.get(value, str(param.get("Default", "")))
        return raw.split(",") if param["Type"] == "CommaDelimitedList" else raw
    if key == "Condition":
        return evaluate(template["Conditions"][value], template, parameters)
    if key == "Fn::If":
        chosen = value[1] if evaluate({"Condition": value[0]}, template, parameters) else value[2]
        return evaluate(chosen, template, parameters)
    args = evaluate(value, template, parameters)
    if key == "Fn::Equals":
        return args[0] == args[1]
    if key == "Fn::Not":
        return not args[0]
    if key == "Fn::And":
        return all(args)
    if key == "Fn::Or":
        return any(args)
    if key == "Fn::Join":
        items = [i for part in args[1] for i in (part if isinstance(part, list) else [part])]
        return args[0].join(items)
    raise AssertionError(f"not evaluated here: {key}")


def of_type(resources: dict[str, Any], kind: str) -> dict[str, Any]:
    return {k: v for k, v in resources.items() if v["Type"] == kind}


@pytest.mark.slow
@pytest.mark.timeout(300)
@pytest.mark.parametrize("snapstart", ["On", "Off"])
def test_sam_wires_the_api_to_the_alias_and_snapstart_to_the_parameter(template, snapstart):
    params = {"SnapStart": snapstart}
    out = transformed(params)
    aliases = of_type(out, "AWS::Lambda::Alias")
    versions = of_type(out, "AWS::Lambda::Version")
    assert len(aliases) == len(versions) == 1, "only the MCP function has an alias"
    ((alias_id, alias),) = aliases.items()
    ((version_id, version),) = versions.items()
    assert ref(alias["Properties"]["FunctionName"]) == MCP
    assert alias["Properties"]["FunctionVersion"] == {"Fn::GetAtt": [version_id, "Version"]}
    assert ref(version["Properties"]["FunctionName"]) == MCP
    assert version["DeletionPolicy"] == "Delete"
    # API Gateway invokes the alias on every route, and may invoke nothing else.
    paths = out["HttpApi"]["Properties"]["Body"]["paths"]
    uris = [op["x-amazon-apigateway-integration"]["uri"] for ops in paths.values() for op in ops.values()]
    routes = len(template["Resources"][MCP]["Properties"]["Events"])
    assert len(uris) == routes
    assert all(f"${{{alias_id}}}/invocations" in json.dumps(uri) for uri in uris), uris
    permissions = of_type(out, "AWS::Lambda::Permission")
    from_api = [p for p in permissions.values() if p["Properties"]["Principal"] == "apigateway.amazonaws.com"]
    assert len(from_api) == routes and all(ref(p["Properties"]["FunctionName"]) == alias_id for p in from_api)
    # SnapStart applies to the MCP function's published versions exactly when the parameter is On.
    functions = of_type(out, "AWS::Lambda::Function")
    apply_on = evaluate(functions[MCP]["Properties"]["SnapStart"]["ApplyOn"], template, params)
    assert apply_on == ("PublishedVersions" if snapstart == "On" else "None")
    for name in set(FUNCTIONS) - {MCP}:
        assert "SnapStart" not in functions[name]["Properties"]
    described = version["Properties"]["Description"]["Fn::Sub"]
    assert f"SnapStart={snapstart}" in evaluate_sub(described, template, params)


def evaluate_sub(sub: list[Any], template: dict[str, Any], parameters: dict[str, str]) -> str:
    text, local = sub
    values = {k: evaluate(v, template, parameters) for k, v in local.items()}
    return re.sub(
        r"\$\{([\w:.]+)\}",
        lambda m: str(
            values[m.group(1)]
            if m.group(1) in values
            else evaluate({"Ref": m.group(1)}, template, parameters)
        ),
        text,
    )


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_new_code_a_new_layer_or_a_new_setting_publishes_a_new_version(template):
    def version_of(params: dict[str, str], uris: dict[str, str] | None = None) -> tuple[str, str]:
        ((version_id, version),) = of_type(transformed(params, uris), "AWS::Lambda::Version").items()
        return version_id, evaluate_sub(version["Properties"]["Description"]["Fn::Sub"], template, params)

    base_id, base_description = version_of({})
    # A new handler (CodeUri) or new layer content (ContentUri): a new Version resource.
    assert version_of({}, {MCP: "s3://bucket/mcp-2.zip"})[0] != base_id
    for layer in LAYERS:
        assert version_of({}, {layer: f"s3://bucket/{layer}-2.zip"})[0] != base_id, layer
    # A parameter alone leaves SAM's hash as it was; the description changes, which replaces
    # the version (Description is create-only on AWS::Lambda::Version).
    for change in (
        {"SnapStart": "On"},
        {"RatePerMinute": "5"},
        {"LogLevel": "DEBUG"},
        {"SubnetIds": "subnet-1", "SecurityGroupIds": "sg-1"},
    ):
        version_id, description = version_of(change)
        assert version_id == base_id and description != base_description, change
