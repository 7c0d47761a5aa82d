"""`sessionvault deploy` without AWS: its parameters checked against template.yaml, its dry run,
its refusals and its prerequisite checks, with fake `aws`/`sam`/`python3.12` on PATH."""

from __future__ import annotations

import io
import shlex
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from cfnlint.decode import cfn_yaml

from sessionvault.errors import DeployFailed
from sessionvault.local.deploy import stack as deploy

from ....support import fake_cloud

ROOT = Path(__file__).resolve().parents[4]
TEMPLATE = ROOT / "template.yaml"
EVERY_FLAG = deploy.Options(
    owner_secret="sessionvault/owner",
    pooled_host="ep-cool-name-pooler.eu-west-1.aws.neon.tech",
    subnets="subnet-a,subnet-b",
    security_groups="sg-1",
    embeddings="openai",
    openai_key_secret="sessionvault/openai",
    alarm_email="ops@example.com",
    public_url="https://vault.example.com",
)


@pytest.fixture(scope="module")
def template() -> dict[str, Any]:
    return dict(cfn_yaml.load(str(TEMPLATE)))


@pytest.fixture
def fakes(tmp_path: Path) -> tuple[Path, Path, dict[str, str]]:
    """(repository root, argv log, environment) with every tool faked."""
    log = fake_cloud.install(tmp_path / "bin")
    root = fake_cloud.repo_root(tmp_path / "repo", TEMPLATE)
    env = fake_cloud.env_with(
        tmp_path / "bin", log, FAKE_REGION="eu-west-1", SESSIONVAULT_HOME=str(tmp_path / "state")
    )
    return root, log, env


def deploy_line(text: str) -> list[str]:
    [line] = [ln for ln in text.splitlines() if ln.startswith("$ ") and " deploy " in ln]
    return shlex.split(line[2:])


def overrides_in(argv: list[str]) -> dict[str, str]:
    if "--parameter-overrides" not in argv:
        return {}
    pairs = argv[argv.index("--parameter-overrides") + 1 :]
    return dict(pair.split("=", 1) for pair in pairs)


def test_every_parameter_a_flag_can_set_is_a_parameter_of_the_template(template):
    every = deploy.overrides(EVERY_FLAG) | deploy.overrides(deploy.Options(create_database=True))
    assert set(every) <= set(template["Parameters"]), set(every) - set(template["Parameters"])
    assert set(deploy.PARAMETERS.values()) | {"CreateDatabase"} == set(every)


def rules_broken(template: dict[str, Any], given: dict[str, str]) -> list[str]:
    """The template's Rules evaluated on the given values (else the defaults): the assertion
    descriptions that would fail. Knows the functions Rules use here: Equals, Not, Contains."""
    params = template["Parameters"]

    def value(node: Any) -> Any:
        if isinstance(node, dict) and "Ref" in node:
            raw = given.get(node["Ref"], str(params[node["Ref"]].get("Default", "")))
            return raw.split(",") if params[node["Ref"]]["Type"] == "CommaDelimitedList" else raw
        return node

    def holds(node: dict[str, Any]) -> bool:
        ((fn, args),) = node.items()
        if fn == "Fn::Equals":
            return bool(value(args[0]) == value(args[1]))
        if fn == "Fn::Not":
            return not holds(args[0])
        if fn == "Fn::Contains":
            return value(args[1]) in value(args[0])
        raise AssertionError(f"teach this test {fn}")

    broken = []
    for rule in template.get("Rules", {}).values():
        if "RuleCondition" in rule and not holds(rule["RuleCondition"]):
            continue
        broken += [a["AssertDescription"] for a in rule["Assertions"] if not holds(a["Assert"])]
    return broken


@pytest.mark.parametrize(
    "options",
    [
        EVERY_FLAG,
        deploy.Options(owner_secret="sessionvault/owner"),
        deploy.Options(create_database=True, subnets="subnet-a,subnet-b", security_groups="sg-1"),
    ],
    ids=["every-flag", "neon", "create-database"],
)
def test_the_dry_run_passes_only_real_parameters_and_satisfies_every_rule_of_the_template(
    template, fakes, options
):
    root, _log, env = fakes
    out = io.StringIO()
    assert deploy.run(replace(options, dry_run=True), root=root, env=env, out=out) == 0
    given = overrides_in(deploy_line(out.getvalue()))
    params = template["Parameters"]
    assert set(given) <= set(params), set(given) - set(params)
    required = {name for name, spec in params.items() if "Default" not in spec}
    assert required <= set(given), f"required parameters not passed: {required - set(given)}"
    assert rules_broken(template, given) == []
    assert rules_broken(template, {}), "the template requires nothing: this test checks nothing"


def test_a_dry_run_prints_every_command_and_runs_only_look_ups(fakes):
    root, log, env = fakes
    out = io.StringIO()
    deploy.run(deploy.Options(owner_secret="sessionvault/owner", dry_run=True), root=root, env=env, out=out)
    text = out.getvalue()
    printed = [shlex.split(ln[2:]) for ln in text.splitlines() if ln.startswith("$ ")]
    assert [argv[1] for argv in printed] == ["build", "deploy", "cloudformation", "lambda", "lambda"]
    assert "--guided" in printed[1]  # no samconfig.toml yet: the first deploy is guided
    assert '"action": "create_user"' in text and '"action": "create_key"' in text
    ran = fake_cloud.calls(log)
    look_ups = (
        ["--version"],
        ["sts", "get-caller-identity", "--output", "json"],
        ["configure", "get", "region"],
    )
    assert all(c[1:] in look_ups for c in ran), ran
    assert not (root / "samconfig.toml").exists()
    assert not (Path(env["SESSIONVAULT_HOME"])).exists()  # nothing saved


def test_the_stack_is_deployed_with_the_capabilities_the_template_needs_and_no_more(template):
    resources = template["Resources"].values()
    named = ("RoleName", "UserName", "GroupName", "ManagedPolicyName", "InstanceProfileName")
    iam = [r for r in resources if r["Type"].startswith("AWS::IAM::")]
    needs = set()
    if any(any(k in r.get("Properties", {}) for k in named) for r in iam):
        needs.add("CAPABILITY_NAMED_IAM")
    elif iam or any(r["Type"] == "AWS::Serverless::Function" for r in resources):
        needs.add("CAPABILITY_IAM")
    transforms = template.get("Transform", [])
    transforms = [transforms] if isinstance(transforms, str) else transforms
    if any(r["Type"] == "AWS::Serverless::Application" for r in resources) or set(transforms) - {
        "AWS::Serverless-2016-10-31"
    }:
        needs.add("CAPABILITY_AUTO_EXPAND")
    assert set(deploy.CAPABILITIES) == needs


def test_values_sam_would_misread_are_quoted_and_others_are_not():
    argv = deploy.sam_deploy_argv(
        "sam", "s", "r", {"PooledHost": "", "AlarmEmail": "a@b.c", "X": 'a "b"'}, guided=False, saved={}
    )
    assert argv[argv.index("--parameter-overrides") + 1 :] == [
        'PooledHost=""',
        "AlarmEmail=a@b.c",
        'X="a \\"b\\""',
    ]


def test_a_saved_config_with_its_own_bucket_is_not_given_resolve_s3():
    assert "--resolve-s3" in deploy.sam_deploy_argv("sam", "s", "r", {}, guided=False, saved={})
    argv = deploy.sam_deploy_argv("sam", "s", "r", {}, guided=False, saved={"s3_bucket": "mine"})
    assert "--resolve-s3" not in argv and "--parameter-overrides" not in argv


@pytest.mark.parametrize(
    ("options", "says"),
    [
        (deploy.Options(), "--owner-secret"),
        (deploy.Options(create_database=True, subnets="subnet-a"), "--security-groups"),
        (
            deploy.Options(create_database=True, subnets="a", security_groups="b", owner_secret="x"),
            "leave out",
        ),
        (deploy.Options(owner_secret="x", embeddings="openai"), "--openai-key-secret"),
    ],
)
def test_a_first_deploy_the_stack_would_refuse_stops_before_anything_runs(fakes, options, says):
    root, log, env = fakes
    with pytest.raises(DeployFailed, match=says):
        deploy.run(options, root=root, env=env, out=io.StringIO())
    assert fake_cloud.calls(log) == []


def test_missing_prerequisites_are_each_listed_with_the_command_that_fixes_them(tmp_path):
    empty = tmp_path / "bin"
    empty.mkdir()
    env = {"PATH": str(empty), "PYENV_ROOT": str(tmp_path / "none"), "HOME": str(tmp_path)}
    out = io.StringIO()
    with pytest.raises(DeployFailed, match="prerequisites missing"):
        deploy.run(deploy.Options(owner_secret="x"), root=tmp_path, env=env, out=out)
    text = out.getvalue()
    for problem in (
        f"{tmp_path} is not the SessionVault repository root",
        "the AWS CLI is not installed",
        "the SAM CLI is not installed",
        "python3.12 does not run here",
    ):
        assert f"✗ {problem}" in text, problem
    assert text.count("✗") == text.count("fix:") >= 4
    assert "make .venv-sam/.installed-stamp" in text
    # from an installed tool, away from any checkout: both routes, the clone's address named
    assert "git clone https://github.com/sessionvault/sessionvault" in text
    assert "Serverless Application Repository" in text and "docs/deploy.md" in text


def test_a_pyenv_python_is_used_when_the_one_on_path_does_not_run(tmp_path, fakes):
    root, _log, env = fakes
    (tmp_path / "bin" / "python3.12").unlink()
    found = tmp_path / "pyenv" / "versions" / "3.12.9" / "bin" / "python3.12"
    found.parent.mkdir(parents=True)
    found.write_text("#!/bin/sh\necho Python 3.12.9\n")
    found.chmod(0o755)
    out = io.StringIO()
    deploy.run(
        deploy.Options(owner_secret="x", dry_run=True),
        root=root,
        env={**env, "PYENV_ROOT": str(tmp_path / "pyenv")},
        out=out,
    )
    assert f"python3.12 from pyenv: {found}" in out.getvalue()


def test_the_outputs_deploy_reads_are_outputs_of_the_template(template):
    assert set(deploy.NEEDED_OUTPUTS) <= set(template["Outputs"])


def test_the_parameters_table_of_deploy_md_names_every_template_parameter_and_no_other(template):
    text = (ROOT / "docs" / "deploy.md").read_text()
    table = text[text.index("## Parameters") : text.index("## Users and keys")]
    named = {
        name.strip("` ")
        for row in table.splitlines()
        if row.startswith("| `")
        for name in row.split("|")[1].split("/")
    }
    assert named == set(template["Parameters"])
