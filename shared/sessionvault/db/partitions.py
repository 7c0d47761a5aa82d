"""The time partitions of the tables that grow with traffic (migration 0017, docs/scaling.md):
audit_events, workspace_access and rate_counters by UTC day, auth_failures by UTC month, each
with a DEFAULT partition that catches any row no ranged partition takes.

Pruning drops partitions instead of deleting rows. `prune` makes the partitions ahead of
time, detaches each one whose whole range is past the retention and deletes the default
partition's expired rows; `drop_detached` then drops the detached tables in a transaction of
its own, so the files go without a lock on the table the serving path writes. Both run as
the tables' owner through SECURITY DEFINER functions (the maintenance roles own nothing):
those touch only these four tables, read no row and refuse a retention shorter than the
windows that read them."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from psycopg import errors

from sessionvault.db.pool import Database

AUDIT_TABLES = ("audit_events", "workspace_access", "auth_failures")  # kept the audit retention
RATE_TABLE = "rate_counters"
AHEAD = timedelta(days=7)  # partitions made this far ahead: a week of failed runs costs nothing

_PRUNE = "SELECT * FROM sessionvault_partitions_prune(%s, %s, %s)"
_DROP = "SELECT sessionvault_partitions_drop() AS dropped"


@dataclass(frozen=True)
class Pruned:
    created: int  # partitions made ahead
    detached: int  # partitions past the retention, detached (dropped by drop_detached)
    detached_rows: int  # their rows, as the catalog last estimated them (no count is run)
    deleted: int  # expired rows deleted one by one from the default partition
    busy: int  # partitions whose lock was not granted within a second: the next run takes them


def prune(db: Database, table: str, keep: timedelta, ahead: timedelta = AHEAD) -> Pruned:
    """One table's upkeep: partitions through now + `ahead`, none older than now - `keep`.
    Another run at it already (its lock not granted within the function's second): nothing
    done, counted busy; that run does the work."""
    try:
        with db.identity() as conn:
            row = conn.execute(_PRUNE, (table, keep, ahead)).fetchone()
    except errors.LockNotAvailable:
        return Pruned(created=0, detached=0, detached_rows=0, deleted=0, busy=1)
    assert row is not None  # the function returns one row or raises
    return Pruned(**row)


def drop_detached(db: Database) -> int:
    """Drop every partition a prune detached; the number dropped (0 while another run drops)."""
    try:
        with db.identity() as conn:
            row = conn.execute(_DROP).fetchone()
    except errors.LockNotAvailable:
        return 0
    return int(row["dropped"]) if row else 0
