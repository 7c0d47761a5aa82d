"""Settings inside Lambda: plain values from the environment, secrets from Secrets Manager
through Powertools Parameters (cached per container). A cold start with any missing or
placeholder setting logs one structured line per problem and refuses to serve."""

from __future__ import annotations

import os
from collections.abc import Callable

from sessionvault import telemetry
from sessionvault.config import Settings
from sessionvault.errors import ConfigError

# Settings field -> the environment variable naming the secret that holds it.
SECRETS = {
    "database_url": "SESSIONVAULT_DATABASE_URL_SECRET",
    "audit_salt": "SESSIONVAULT_AUDIT_SALT_SECRET",
    "openai_api_key": "SESSIONVAULT_OPENAI_KEY_SECRET",
}
OPTIONAL = {"openai_api_key"}


def fetch_secret(name: str) -> str:
    from aws_lambda_powertools.utilities import parameters

    return str(parameters.get_secret(name, max_age=300)).strip()


def lambda_settings(
    env: dict[str, str] | None = None, fetch: Callable[[str], str] = fetch_secret
) -> Settings:
    env = dict(os.environ if env is None else env)
    values: dict[str, object] = {}
    problems: dict[str, str] = {}
    for field, var in SECRETS.items():
        name = env.get(var, "")
        if not name:
            if field not in OPTIONAL:
                problems[field] = f"{var} is not set"
            continue
        try:
            values[field] = fetch(name)
        except Exception as exc:  # the message could carry the secret's ARN: keep the type only
            problems[field] = f"{var}: the secret could not be read ({type(exc).__name__})"
    settings = Settings.from_env(env, check=False, **values)
    for field, problem in settings.problems().items():
        problems.setdefault(field, problem)  # one line per setting, naming what to fix
    if problems:
        for problem in problems.values():
            telemetry.logger().error("configuration problem", extra={"problem": problem})
        raise ConfigError(f"refusing to serve: {len(problems)} configuration problem(s), see the log")
    return settings


def audit_retention_days(env: dict[str, str] | None = None) -> int:
    raw = (os.environ if env is None else env).get("SESSIONVAULT_AUDIT_RETENTION_DAYS", "90")
    days = int(raw)
    if days < 1:
        raise ConfigError("SESSIONVAULT_AUDIT_RETENTION_DAYS must be at least 1")
    return days
