"""Fake `aws`, `sam`, `python3.12` executables for `sessionvault deploy` tests: each appends its
argv to one log (so the order of steps across tools is visible) and answers like the real one.

`aws lambda invoke` runs the REAL admin action (jobs.admin.dispatch) against the test database
when FAKE_ADMIN_URL and FAKE_MASTER_KEY are set, so the key it answers is a real key."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

COMMON = r"""
import json, os, sys
argv = sys.argv[1:]
with open(os.environ["FAKE_LOG"], "a") as log:
    log.write(json.dumps([os.path.basename(sys.argv[0]), *argv]) + "\n")
"""

AWS = r"""
def invoke(argv):
    payload_file = argv[argv.index("--payload") + 1].removeprefix("fileb://")
    event = json.loads(open(payload_file).read())
    if os.environ.get("FAKE_ADMIN_URL"):
        from sessionvault.jobs import admin
        from sessionvault.runtime import open_runtime
        from sessionvault.settings import Settings

        settings = Settings.from_env(
            {}, database_url=os.environ["FAKE_ADMIN_URL"], master_key=os.environ["FAKE_MASTER_KEY"],
            audit_salt="test-salt-0123456789abcdef", embeddings="none",
        )
        stdout, sys.stdout = sys.stdout, sys.stderr  # the function's log lines are not the CLI's answer
        rt = open_runtime(settings, pool_size=1)
        try:
            answer = admin.dispatch(rt, event, "fake-request-id")
        finally:
            rt.close()
            sys.stdout = stdout
    elif os.environ.get("FAKE_FUNCTION_ERROR"):
        answer = {"errorType": "Exception", "errorMessage": "boom"}
    else:
        answer = {"ok": True, "user_id": "u-1", "key": os.environ.get("FAKE_KEY", "sv_live_fake")}
    with open(argv[-1], "w") as out:
        json.dump(answer, out)
    meta = {"StatusCode": 200, "ExecutedVersion": "$LATEST"}
    if os.environ.get("FAKE_FUNCTION_ERROR"):
        meta["FunctionError"] = "Unhandled"
    print(json.dumps(meta))

if argv[:2] == ["sts", "get-caller-identity"]:
    print(json.dumps({"Account": "123456789012", "Arn": "arn:aws:iam::123456789012:user/deployer"}))
elif argv[:3] == ["configure", "get", "region"]:
    if not os.environ.get("FAKE_REGION"):
        sys.exit(1)
    print(os.environ["FAKE_REGION"])
elif argv[:2] == ["cloudformation", "describe-stacks"]:
    outputs = {"McpUrl": os.environ["FAKE_MCP_URL"], "AdminFunctionName": "sessionvault-admin",
               "HealthUrl": os.environ["FAKE_MCP_URL"].removesuffix("/mcp") + "/health"}
    print(json.dumps({"Stacks": [{"StackName": argv[argv.index("--stack-name") + 1],
        "Outputs": [{"OutputKey": k, "OutputValue": v} for k, v in outputs.items()]}]}))
elif argv[:2] == ["lambda", "invoke"]:
    invoke(argv)
else:
    print(f"fake aws: unexpected {argv}", file=sys.stderr)
    sys.exit(252)
"""

SAM = r"""
if argv == ["--version"]:
    print("SAM CLI, version 1.170.0")
elif argv[:1] == ["build"]:
    print("Build Succeeded")
elif argv[:1] == ["deploy"]:
    if os.environ.get("FAKE_SAM_FAIL"):
        for n in range(30):
            print(f"progress line {n}", file=sys.stderr)
        print("Error: Failed to create changeset for the stack: sessionvault", file=sys.stderr)
        sys.exit(1)
    if "--guided" in argv:  # what the real guided deploy saves
        stack = argv[argv.index("--stack-name") + 1]
        region = argv[argv.index("--region") + 1]
        with open("samconfig.toml", "w") as f:
            f.write("version = 0.1\n[default.deploy.parameters]\n")
            f.write(f'stack_name = "{stack}"\nresolve_s3 = true\nregion = "{region}"\n')
            f.write('capabilities = "CAPABILITY_IAM"\nconfirm_changeset = true\n')
    print("Successfully created/updated stack")
else:
    sys.exit(2)
"""

PYTHON = r"""
print("Python 3.12.1")
"""


def install(folder: Path, *, tools: tuple[str, ...] = ("aws", "sam", "python3.12")) -> Path:
    """Write the fakes into `folder`; returns the argv log they append to."""
    folder.mkdir(parents=True, exist_ok=True)
    bodies = {"aws": AWS, "sam": SAM, "python3.12": PYTHON}
    for name in tools:
        path = folder / name
        path.write_text(f"#!{sys.executable}\n{COMMON}\n{bodies[name]}")
        path.chmod(0o755)
    return folder / "argv.log"


def calls(log: Path) -> list[list[str]]:
    if not log.exists():
        return []
    return [json.loads(line) for line in log.read_text().splitlines()]


def repo_root(folder: Path, template: Path) -> Path:
    """A folder that looks like the repository root to `sessionvault deploy`."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "template.yaml").write_text(template.read_text())
    (folder / "functions").mkdir(exist_ok=True)
    return folder


def env_with(fakes: Path, log: Path, **extra: str) -> dict[str, str]:
    """The environment for a deploy: the fakes first on PATH, no AWS settings of the developer."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "SESSIONVAULT_"))}
    env["PATH"] = os.pathsep.join([str(fakes), os.environ.get("PATH", "")])
    env["FAKE_LOG"] = str(log)
    env["PYENV_ROOT"] = str(fakes / "no-pyenv")
    env.update(extra)
    return env
