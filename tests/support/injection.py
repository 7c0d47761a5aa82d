"""A test-only hook for the injection tests (issue 34): attacker-chosen SQL run inside a real
request's serving-path transaction, as the serving role, after its tenant's proof is set. The
`hook` fixture (tests/attack/conftest.py) wraps `Database.in_tenant`; a test arms it with a
script, the next request's first transaction runs it, and its last statement's cursor waits in
`seen` for the test to read."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sessionvault.db import pool

Script = list[tuple[str, tuple[Any, ...]]]
ROWS = "SELECT count(*) AS n FROM sessions WHERE user_id = ANY(%s::uuid[])"
SET = "SELECT set_config('app.user_id', %s, true)"


class Hook:
    """Wraps every serving-path transaction: the attacker's statements first (while armed),
    then the request's own proof back, then the request's own work."""

    def __init__(self) -> None:
        self.script: Script = []
        self.seen: list[Any] = []

    def wrap(self, work: Callable[[pool.Connection], Any]) -> Callable[[pool.Connection], Any]:
        if not self.script:
            return work
        script, self.script = self.script, []

        def attacked(conn: pool.Connection) -> Any:
            conn.execute("SELECT set_config('sv.own', current_setting('app.user_id', true), true)")
            cursors = [conn.execute(sql, params) for sql, params in script]
            self.seen.append(cursors[-1])
            conn.execute("SELECT set_config('app.user_id', current_setting('sv.own'), true)")
            return work(conn)

        return attacked
