"""`sessionvault deploy`: from AWS credentials and a database to a running stack, its first API
key saved on this machine, and the "connect your clients" block.

Every step is an ordinary command (`aws`, `sam`) run from the repository root, printed before
it runs; `--dry-run` runs only the look-ups that change nothing and prints the rest. No secret is
ever on a command line: the database owner's connection goes in as a secret's name, the admin
request is a 0600 file in a private temporary folder, and the key comes back in a file there
that is read once and deleted with the folder."""

from __future__ import annotations

import json
import os
import sys
import tempfile
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, TextIO

from sessionvault.errors import DeployFailed
from sessionvault.local.deploy.prerequisites import prerequisites
from sessionvault.local.deploy.runner import Shell
from sessionvault.local.host import target
from sessionvault.local.remote.rpc import require_safe_url
from sessionvault.names import KEY_ENV, LOCAL_USER

STACK = "sessionvault"
SAMCONFIG = "samconfig.toml"  # where `sam deploy --guided` saves its answers
# The template makes IAM roles without names, and uses no macro but the SAM transform (which a
# change set expands by itself): CAPABILITY_IAM is all it needs. tests/unit/local/deploy/test_stack.py
# derives the set from template.yaml, so a named role or a nested application is caught.
CAPABILITIES = ("CAPABILITY_IAM",)
KEY_SCOPES = "read,write,delete"  # the same scopes as `make dev`'s key
KEY_LABEL = "sessionvault deploy"
USER_EXISTS = "already exists"  # the end of the admin function's answer to a second create_user
NEEDED_OUTPUTS = ("McpUrl", "AdminFunctionName")

# flag -> template parameter; a flag not given is not passed (first deploy: the template's
# default; later: the stack's previous value)
PARAMETERS = {
    "owner_secret": "OwnerSecret",
    "pooled_host": "PooledHost",
    "subnets": "SubnetIds",
    "security_groups": "SecurityGroupIds",
    "embeddings": "Embeddings",
    "openai_key_secret": "OpenAiKeySecretName",
    "alarm_email": "AlarmEmail",
    "public_url": "PublicUrl",
}


@dataclass(frozen=True)
class Options:
    stack_name: str | None = None  # None: the saved config's, else "sessionvault"
    region: str | None = None  # None: the saved config's, else the AWS CLI's
    owner_secret: str | None = None
    pooled_host: str | None = None
    create_database: bool = False
    subnets: str | None = None
    security_groups: str | None = None
    embeddings: str | None = None
    openai_key_secret: str | None = None
    alarm_email: str | None = None
    public_url: str | None = None
    user: str = LOCAL_USER
    guided: bool = False
    new_key: bool = False
    dry_run: bool = False


# ---------------------------------------------------------------- parameters and commands


def overrides(o: Options) -> dict[str, str]:
    values = {param: getattr(o, attr) for attr, param in PARAMETERS.items()}
    if o.create_database:
        values["CreateDatabase"] = "true"
    return {k: str(v) for k, v in values.items() if v is not None}


def _quoted(value: str) -> str:
    """SAM's Key=Value syntax: an empty value, or one with spaces or quotes, goes in quotes."""
    if value and not any(c.isspace() or c in "\"'" for c in value):
        return value
    return '"' + value.replace('"', '\\"') + '"'


def validate(o: Options, *, first: bool) -> None:
    """Refuse a combination the stack would refuse, before anything runs."""
    if o.create_database and not (o.subnets and o.security_groups):
        raise DeployFailed(
            "--create-database needs --subnets and --security-groups (private subnets in two "
            "availability zones, and a security group that allows 5432 from itself)"
        )
    if o.create_database and o.owner_secret:
        raise DeployFailed("--create-database makes its own owner: leave out --owner-secret")
    if first and not (o.owner_secret or o.create_database):
        raise DeployFailed(
            "the first deploy needs --owner-secret NAME_OR_ARN (a Secrets Manager secret holding "
            "the database owner's URL), or --create-database with --subnets and --security-groups"
        )
    if first and o.embeddings == "openai" and not o.openai_key_secret:
        raise DeployFailed("--embeddings openai needs --openai-key-secret NAME (the OpenAI key's secret)")


def sam_deploy_argv(
    sam: str, stack: str, region: str, values: Mapping[str, str], *, guided: bool, saved: Mapping[str, Any]
) -> list[str]:
    argv = [sam, "deploy", *(["--guided"] if guided else [])]
    argv += ["--stack-name", stack, "--region", region, "--capabilities", *CAPABILITIES]
    if "s3_bucket" not in saved:  # a config that names its own bucket cannot also --resolve-s3
        argv.append("--resolve-s3")
    argv.append("--no-fail-on-empty-changeset")
    if values:  # none given: the saved config's (or, on an update, the stack's previous values)
        argv += ["--parameter-overrides", *(f"{k}={_quoted(v)}" for k, v in values.items())]
    return argv


def saved_config(root: Path) -> dict[str, Any]:
    """The `deploy` section of samconfig.toml ({} when there is none)."""
    path = root / SAMCONFIG
    try:
        data = tomllib.loads(path.read_text())
    except FileNotFoundError:
        return {}
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise DeployFailed(f"{path} does not parse ({exc}): fix it, or move it away and run again") from None
    section = data.get("default", {}).get("deploy", {}).get("parameters", {})
    return section if isinstance(section, dict) else {}


# ---------------------------------------------------------------- the stack and the first key


def stack_outputs(shell: Shell, stack: str, region: str) -> dict[str, str]:
    argv = ["aws", "cloudformation", "describe-stacks", "--stack-name", stack, "--region", region]
    argv += ["--output", "json"]
    if shell.dry_run:
        shell.show(argv)
        return {name: f"<{name}>" for name in NEEDED_OUTPUTS}
    stacks = json.loads(shell.read(argv) or "{}").get("Stacks") or [{}]
    found = {o["OutputKey"]: o["OutputValue"] for o in stacks[0].get("Outputs", [])}
    missing = [name for name in NEEDED_OUTPUTS if name not in found]
    if missing:
        raise DeployFailed(f"stack {stack} has no output {', '.join(missing)}: is it a SessionVault stack?")
    require_safe_url(found["McpUrl"])  # the key will be sent there
    return found


def invoke_admin(
    shell: Shell, function: str, region: str, payload: dict[str, str], tmp: Path
) -> dict[str, Any]:
    """One admin action through `aws lambda invoke`: the request in a 0600 file, the answer
    (which may hold a key) read from a file in the same private folder and deleted at once."""
    request, response = tmp / "request.json", tmp / "response.json"
    argv = ["aws", "lambda", "invoke", "--function-name", function, "--region", region]
    argv += ["--payload", f"fileb://{request}", "--output", "json", str(response)]
    note = f"  ({request.name}: {json.dumps(payload)})"
    if shell.dry_run:
        shell.show(argv)
        print(note, file=shell.out)
        return {}
    fd = os.open(request, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        json.dump(payload, f)
    try:
        stdout = shell.read(argv)  # prints the command, then runs it
        print(note, file=shell.out)
        answer: dict[str, Any] = json.loads(response.read_bytes() or b"{}")
    finally:
        response.unlink(missing_ok=True)
    if json.loads(stdout or "{}").get("FunctionError"):
        raise DeployFailed(
            f"the admin function failed ({answer.get('errorType', 'error')}: "
            f"{answer.get('errorMessage', '')}); its log: aws logs tail /aws/lambda/{function} --since 10m"
        )
    return answer


def first_key(shell: Shell, function: str, region: str, user: str) -> str | None:
    """Create the user unless it exists, then a key for it (None in a dry run)."""
    with tempfile.TemporaryDirectory(prefix="sessionvault-deploy-") as folder:  # mode 0700
        tmp = Path(folder)
        made = invoke_admin(shell, function, region, {"action": "create_user", "name": user}, tmp)
        if made and not made.get("ok") and not str(made.get("error", "")).endswith(USER_EXISTS):
            raise DeployFailed(f"creating the user {user!r} failed: {made.get('error')}")
        ask = {"action": "create_key", "user": user, "label": KEY_LABEL, "scopes": KEY_SCOPES}
        answer = invoke_admin(shell, function, region, ask, tmp)
    if shell.dry_run:
        return None
    if not answer.get("ok") or not answer.get("key"):
        raise DeployFailed(
            f"creating a key for {user!r} failed: {answer.get('error', 'no key in the answer')}"
        )
    return str(answer["key"])


def _keeps_key(o: Options, state: Path, url: str) -> bool:
    """A re-deploy of the same stack keeps the key saved for it: no new key on every update."""
    saved = target.saved_deployment(state)
    fresh = o.new_key or saved is None or saved.url != url or saved.user != o.user
    return not fresh and bool(target.deployed_key(state))


# ---------------------------------------------------------------- the whole flow


def run(
    o: Options, *, root: Path | None = None, env: Mapping[str, str] | None = None, out: TextIO | None = None
) -> int:
    root = (root or Path.cwd()).resolve()
    shell = Shell(root, dict(os.environ if env is None else env), out or sys.stdout, o.dry_run)
    state = target.state_folder(shell.env)
    first = not (root / SAMCONFIG).exists()
    validate(o, first=first)
    if o.dry_run:
        print("Dry run: look-ups run, nothing is changed; the commands are printed.\n", file=shell.out)
    saved = saved_config(root)
    tools = prerequisites(o.region, saved, shell)
    shell.env = tools.env
    stack = o.stack_name or saved.get("stack_name") or STACK
    guided = o.guided or first
    shell.step([tools.sam, "build"])
    shell.step(sam_deploy_argv(tools.sam, stack, tools.region, overrides(o), guided=guided, saved=saved))
    if guided and not o.dry_run:  # the prompts may have changed the stack name or region
        answered = saved_config(root)
        stack, region = answered.get("stack_name") or stack, answered.get("region") or tools.region
    else:
        region = tools.region
    outputs = stack_outputs(shell, stack, region)
    url, function = outputs["McpUrl"], outputs["AdminFunctionName"]
    kept = not o.dry_run and _keeps_key(o, state, url)
    key = None if kept else first_key(shell, function, region, o.user)
    deployment = target.Deployment(url, stack, region, function, o.user)
    if o.dry_run:
        print(
            f"\nwould save {state / target.DEPLOYMENT_FILE} and {target.DEPLOYMENT_KEY_FILE} (0600)",
            file=shell.out,
        )
        return 0
    target.save_deployment(state, deployment, key)
    report(shell.out, deployment, state, kept=kept)
    return 0


def report(out: TextIO, d: target.Deployment, state: Path, *, kept: bool) -> None:
    from sessionvault.local.setup.registry import quickstart

    key_file = state / target.DEPLOYMENT_KEY_FILE
    said = "kept the API key saved" if kept else "a new API key (not shown here) is saved"
    lines = [
        f"\nSessionVault is deployed: {d.url}  (stack {d.stack}, {d.region})",
        f"User {d.user!r}: {said} in {key_file} (mode 0600){'; a new one: --new-key' if kept else ''}.",
        "`sessionvault connect <client>` and `sessionvault doctor` now default to this URL and key.",
        "",
        "Clients that read the key from the environment need it exported where they start:",
        f'  export {KEY_ENV}="$(cat {key_file})"',
        "",
        quickstart(d.url, None),
        "",
        "Next: sessionvault connect claude-code --apply && sessionvault doctor",
    ]
    print("\n".join(lines), file=out, flush=True)


def options(**given: Any) -> Options:
    """Options from the CLI's namespace (unknown names are ignored)."""
    return replace(Options(), **{k: v for k, v in given.items() if k in Options.__dataclass_fields__})
