"""Which ridden transactions wait for their WAL flush (db/admission.py `Ride`): one that needs the
read scope alone writes only the admission's rows and commits as a lone admission does, without
waiting (issue 29, item 3: the wait was most of a load's time over HTTP beyond the load's own);
one that may write the tool's data (write, delete, a claim) keeps the database's setting. Read in
the transaction itself, after the opening, where the tool's statements run."""

from __future__ import annotations

from typing import Any

import pytest

from sessionvault.runtime import Runtime
from sessionvault.server.admission import admitter as auth
from sessionvault.telemetry import RequestLog

from ..conftest import User

BASE = "http://127.0.0.1:8000"


def setting_inside_ride(rt: Runtime, user: User, scope: str) -> str:
    """synchronous_commit as the tool's statements of a ridden call needing `scope` see it."""
    admitter = auth.Admitter(rt)
    authorization = f"Bearer {user.key}"
    admitter.admit(authorization, "tool", RequestLog(request_id="t", ip="127.0.0.1"), BASE)
    log = RequestLog(request_id="t", ip="127.0.0.1")
    call = admitter.ride(authorization, scope, log, BASE)
    assert call is not None  # admitted just now: this call rides
    seen: dict[str, Any] = {}

    def work(conn: Any) -> None:
        seen["cursor"] = conn.execute("SELECT current_setting('synchronous_commit') AS value")

    rt.db.in_tenant(call.principal.at(), work, idempotent=True)  # the call's Principal carries its ride
    assert admitter.settle(call, log, BASE)  # admitted, counted and audited as ever
    assert log.admitted and log.audit_id is not None
    return str(seen["cursor"].fetchone()["value"])


def test_a_read_call_does_not_wait_for_the_flush(runtime: Runtime, user: User) -> None:
    assert setting_inside_ride(runtime, user, "read") == "off"


@pytest.mark.parametrize("scope", ["write", "delete", "read,write"])
def test_a_call_that_may_write_keeps_the_setting(runtime: Runtime, user: User, scope: str) -> None:
    assert setting_inside_ride(runtime, user, scope) == "on"
