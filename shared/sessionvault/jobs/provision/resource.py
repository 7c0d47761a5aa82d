"""The Database custom resource (template.yaml, Custom::SessionVaultDatabase): on every deploy
that brings new code (a new shared-code layer version), inside the account, as the database
owner: apply pending migrations, give the three login roles their passwords from the stack's
role secrets, and write the connection URLs the functions read.

Create and Update do the same idempotent work: an Update with nothing pending applies nothing
and leaves the URL secrets' versions as they were (a value is written only when it changed).
Delete touches nothing: the database and its data outlive the stack.

The event is not trusted: anyone allowed to invoke the function can send one. Only an event
shaped like CloudFormation's, whose ResponseURL is CloudFormation's own response bucket in this
region, is acted on or answered; anything else is refused with no network call and no secret
read. What to connect to, which secrets to read and write, and how to verify the server come
from the function's own environment (template.yaml), never from the event: the Database
resource's properties carry the same values only so that changing one makes CloudFormation send
an Update, and an event whose properties differ from the environment is refused before any
secret is read (a rollback, whose previous properties differ, changes nothing and succeeds).
The owner connection verifies the server's certificate (verify-full: the system CAs, or the
DatabaseCaBundle file) and authenticates with SCRAM-SHA-256 only (require_auth), so the owner's
password never goes to a host that cannot prove itself, nor in clear.

CloudFormation waits for an answer (an HTTPS PUT to the event's ResponseURL), so every accepted
event is answered, failures included, with a reason meant for the stack events: it names what
failed and never holds a password or a URL with credentials (every secret read is scrubbed from
it). Only this function may read the owner secret; nothing in the serving path connects as the
owner.

This module is the event's handling from start to answer; its parts are the event's checks
(`cfn_event`), the answer (`cfn_response`), the function's configuration (`provision_config`),
the secrets and their scrubbing (`provision_secrets`), the owner connection
(`owner_connection`) and the database work (`provision_database`).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from sessionvault.errors import ProvisionFailed
from sessionvault.jobs.provision.cfn_event import event_problem, region_of
from sessionvault.jobs.provision.cfn_response import respond
from sessionvault.jobs.provision.config import REQUIRED_SETTINGS, Config
from sessionvault.jobs.provision.database import provision
from sessionvault.jobs.provision.owner_connection import connection_security, one_line
from sessionvault.jobs.provision.secrets import Scrubber, SecretsClient

PHYSICAL_ID = "sessionvault-database"  # stable: a new id would make CloudFormation delete the old


def create_or_update(
    event: dict[str, Any],
    env: Mapping[str, str],
    base_dir: Path,
    remaining_ms: Callable[[], int],
    secrets: Callable[[], SecretsClient],
    scrub: Scrubber,
) -> tuple[str, dict[str, Any]]:
    """The reason and the data of a successful Create or Update; ProvisionFailed otherwise."""
    config = Config.from_env(env)
    props = event.get("ResourceProperties") or {}
    for key in REQUIRED_SETTINGS:
        if not str(props.get(key) or "").strip():
            raise ProvisionFailed(f"the Database resource is missing its {key} property")
    differing = config.differing(props)
    if differing:
        old = event.get("OldResourceProperties")
        if event["RequestType"] == "Update" and isinstance(old, dict) and not config.differing(old):
            return (
                "a rollback to the previous properties while the function has the newer "
                "configuration: nothing changed (the next deploy applies its own)"
            ), {}
        raise ProvisionFailed(
            f"refused: the event's {', '.join(differing)} differ from the migrate function's own "
            "configuration (template.yaml sets both; the function uses only its own)"
        )
    security = connection_security(config, base_dir)
    applied = provision(config, security, secrets(), scrub, remaining_ms())
    return f"database ready: {applied} migration(s) applied", {"Applied": applied}


def handle(
    event: Any,
    remaining_ms: Callable[[], int],
    secrets: Callable[[], SecretsClient],
    log: Any,
    *,
    environ: Mapping[str, str] | None = None,
    base_dir: Path | None = None,
) -> dict[str, Any]:
    """One custom-resource event. An event that is not CloudFormation's is refused, unanswered
    (its ResponseURL may be anyone's). Every other is answered whatever happens (even a client
    that cannot be made). Returns what was sent, minus the URL, for the function's log and
    return value. `base_dir`: the function's code, where a relative DatabaseCaBundle is."""
    env = os.environ if environ is None else environ
    problem = event_problem(event, region_of(env))
    request_type = str(event.get("RequestType", "")) if isinstance(event, dict) else ""
    if problem is not None:
        refused = {"request_type": request_type[:40], "status": "REFUSED", "reason": problem}
        log.error(
            "database resource: refused an event that is not CloudFormation's; no answer sent", extra=refused
        )
        return refused
    physical_id = str(event.get("PhysicalResourceId") or PHYSICAL_ID)
    scrub = Scrubber()
    status, data = "SUCCESS", dict[str, Any]()
    try:
        if request_type == "Delete":
            reason = "nothing dropped: the database and its data outlive the stack"
        else:
            reason, data = create_or_update(event, env, base_dir or Path.cwd(), remaining_ms, secrets, scrub)
    except ProvisionFailed as exc:
        status, reason = "FAILED", str(exc)
    except Exception as exc:  # an answer must go back whatever broke
        status, reason = "FAILED", f"unexpected {type(exc).__name__}: {one_line(exc)}"
    reason = scrub(reason)
    outcome = {"request_type": request_type, "status": status, "reason": reason, **data}
    if not respond(event, status, reason, physical_id, data):
        log.error("database resource: the answer to CloudFormation could not be sent", extra=outcome)
    elif status == "FAILED":
        log.error("database resource", extra=outcome)
    else:
        log.info("database resource", extra=outcome)
    return outcome
