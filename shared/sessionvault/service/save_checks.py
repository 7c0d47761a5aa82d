"""What a save must be before it is written, and why the database refused one that wrote
nothing: the rules every path that saves a checkpoint applies (the hooks' tool, an import), and
the refusal a caller reads when the data key was replaced meanwhile or a quota is full."""

from __future__ import annotations

from sessionvault.core.apikeys import scope_hint
from sessionvault.core.checkpoints import (
    AUTO_KEEP,
    AUTO_MAX_AGE_DAYS,
    AUTO_MAX_TOTAL,
    checkpoint_name,
    sibling_prefix,
)
from sessionvault.core.records import SaveArgs
from sessionvault.db import saves
from sessionvault.db.pool import Database, Tenant
from sessionvault.errors import KeyReplaced, QuotaExceeded, ScopeMissing, ValidationFailed, VaultError
from sessionvault.service.principal import Principal


def checkpoint_rules(who: Principal, args: SaveArgs) -> None:
    """What an automatic checkpoint must be, on every path that saves one (the hooks' tool, an
    import): saved with the hooks' own scope, personal and never offered, and named for the
    client that saves it, so that its pruning (only its own repo and client) touches nothing of
    another client's (issue 35: a model-facing key pruned every checkpoint)."""
    if "checkpoint" not in who.scopes:
        raise ScopeMissing(scope_hint("checkpoint", "an automatic checkpoint (auto/ name)", who.scopes))
    if args.workspace or args.to_person or args.to_client or args.handoff:
        raise ValidationFailed(
            "invalid arguments: a checkpoint is personal and never offered: no workspace, to_person,"
            " to_client or handoff (save_session shares and offers work)"
        )
    if not args.client or sibling_prefix(args.name) != checkpoint_name(args.client, ""):
        raise ValidationFailed(
            "invalid arguments: name: a checkpoint's name is auto/<client>/<client session id>,"
            " with the client it gives as client"
        )


def refusal(
    db: Database, at: Tenant, fp: bytes, quota: saves.Quota, *, checkpoint: bool = False
) -> VaultError:
    """Why a save wrote nothing: the data key was replaced meanwhile, or a quota is full."""
    used = saves.usage(db, at) or {"sessions": 0, "bytes": 0, "dek_fp": None}
    if used["dek_fp"] is not None and bytes(used["dek_fp"]) != fp:
        return KeyReplaced()
    if checkpoint and used["bytes"] < quota.bytes:
        return QuotaExceeded(
            f"checkpoint quota reached: at most {AUTO_MAX_TOTAL} automatic checkpoints are kept"
            f" ({AUTO_KEEP} per repo and client), and a new one never deletes another's; they"
            f" expire after {AUTO_MAX_AGE_DAYS} days, or delete some with delete_session"
        )
    return QuotaExceeded(
        f"storage quota reached: {used['sessions']} of {quota.sessions} sessions,"
        f" {used['bytes'] // 1024} KiB of {quota.bytes // 1024} KiB (history included);"
        " free space with delete_session or delete_all_sessions, then save again"
    )
