"""What the tools do: save, load, search, list and delete sessions for one authenticated user
(load and search: service/reader.py). Logic lives here; SQL lives in `db/`; the tenant comes
only from the Principal."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from sessionvault.core import crypto, framing
from sessionvault.core.checkpoints import (
    AUTO_HISTORY,
    AUTO_KEEP,
    AUTO_MAX_AGE_DAYS,
    AUTO_MAX_TOTAL,
    is_automatic,
    sibling_prefix,
)
from sessionvault.core.cursor import decode_cursor, encode_cursor
from sessionvault.core.embedding.providers import Embedder
from sessionvault.core.keys import DekCache
from sessionvault.core.records import (
    MAX_NAME,
    MAX_REPO,
    SAVE_CONTROLS,
    DeleteArgs,
    ListArgs,
    LoadArgs,
    SaveArgs,
    SearchArgs,
    embedding_text,
)
from sessionvault.core.records import preview as make_preview
from sessionvault.db import deletes, saves, workspaces
from sessionvault.db import sessions as store
from sessionvault.db.pool import Database
from sessionvault.errors import (
    KeyReplaced,
    ValidationFailed,
)
from sessionvault.service import answers, handoff, save_checks, sealing, vector_index
from sessionvault.service.principal import Principal
from sessionvault.service.reader import Reader
from sessionvault.service.spaces import Space, Spaces

RELATED_LIMIT = 5
# What the tool's text block adds around a result that quotes saved notes (framing.frame_json):
# a budget (max_tokens) covers what the model receives, this included.
FRAME_CHARS = framing.overhead()
# What a budgeted load keeps first (load_session max_tokens): the most useful fields lead.
LOAD_PRIORITY = ("summary", "todos", "decisions", "plan", "errors", "files", "tried", "related")


class Vault:
    def __init__(
        self,
        db: Database,
        keys: DekCache,
        embedder: Embedder,
        history_keep: int = 20,
        quota: saves.Quota = saves.UNLIMITED,
        redact: bool = True,
        *,
        handoff_ttl_days: int = 7,
        workspace_limits: tuple[int, int] = (0, 0),
    ):
        self.db = db
        self.keys = keys
        self.history_keep = history_keep
        self.quota = quota
        self.handoff_ttl_days = handoff_ttl_days  # how long an offered handoff stays claimable
        self.spaces = Spaces(db, workspace_limits)
        self.reader = Reader(db, keys, embedder, self.spaces, redact)

    def _dek(self, space: Space) -> bytes:
        return self.reader.dek(space)

    @property
    def embedder(self) -> Embedder:
        """The embedding provider, one for saves and searches (the reader holds it)."""
        return self.reader.embedder

    @embedder.setter
    def embedder(self, embedder: Embedder) -> None:
        self.reader.embedder = embedder

    @property
    def redact(self) -> bool:
        """Scrub secrets before anything is stored or sent to a provider (settings.redact_secrets)."""
        return self.reader.redact

    @redact.setter
    def redact(self, redact: bool) -> None:
        self.reader.redact = redact

    def save(self, who: Principal, args: SaveArgs, *, checkpoint: bool = False) -> dict[str, Any]:
        """Save a version. `checkpoint`: the capture hooks' path (checkpoint_session), the only
        one that may use the auto/ names: a session is automatic because of how it was saved.
        A workspace whose key changed since this instance remembered it (the database refuses
        the save, having written nothing) is saved again once, under the key it holds now."""
        if is_automatic(args.name) != checkpoint:
            raise ValidationFailed(
                "invalid arguments: name: a checkpoint's name starts with auto/"
                if checkpoint
                else "invalid arguments: name: names starting with auto/ are kept for automatic"
                " checkpoints, which only the capture hooks save"
            )
        if checkpoint:
            save_checks.checkpoint_rules(who, args)
        space = self.spaces.of(who, args.workspace)
        try:
            return self._save(who, args, space, checkpoint)
        except KeyReplaced:
            fresh = self.spaces.renew(who, space)
            if fresh is None:
                raise
            return self._save(who, args, fresh, checkpoint)

    def _save(self, who: Principal, args: SaveArgs, space: Space, checkpoint: bool) -> dict[str, Any]:
        from sessionvault.core.redact import Redaction, scrub  # light; detect-secrets loads on use

        record = args.model_dump(mode="json", exclude=set(SAVE_CONTROLS))
        # Secrets out first: the preview, the embedding text, the plaintext columns (the name is
        # one, and part of the AAD) and the ciphertext all come from the scrubbed record.
        redactions: list[Redaction] = []
        if self.redact:
            record, redactions = scrub(record)
        # A marker can be longer than the secret it replaces: keep the looked-up columns within
        # the caps the tools accept, so the stored name can always be loaded and deleted.
        record["name"], record["repo"] = record["name"][:MAX_NAME], record["repo"][:MAX_REPO]
        record["client"] = record["client"][:MAX_REPO]
        name: str = record["name"]
        # Embed before the transaction: a slow provider must not hold row locks.
        vector = self.embedder.embed(embedding_text(record))
        dek = self._dek(space)
        preview = make_preview(record["summary"])
        model, indexed = self.embedder.model, sealing.terms_of(dek, space.id, record)
        head = saves.Head(name, record["repo"], preview, record["client"], None, model, indexed)

        fp = crypto.fingerprint(dek)
        digest = crypto.content_digest(dek, space.id, json.dumps(record, sort_keys=True).encode())
        offer = None
        if args.handoff or args.to_client or args.to_person:
            offer = self._offer(who, space, record["client"], args)
        keep, pruning = self.history_keep, None
        if checkpoint:
            keep, pruning = (
                min(keep, AUTO_HISTORY),
                saves.Checkpoint(sibling_prefix(name), AUTO_KEEP, AUTO_MAX_AGE_DAYS, AUTO_MAX_TOTAL),
            )
        # Sealed before the transaction, under the version's own id: the save is one flight.
        # Its saved_at is this server's clock (the head's updated_at, the database's).
        record["saved_at"] = store.iso(datetime.now(UTC))
        version = sealing.seal(dek, space.id, record, head)
        if vector is not None:  # sealed too, bound to this version (its seal_id) and the model
            sealed = vector_index.seal_vector(dek, space.id, version.seal_id, model, vector)
            head = replace(head, sealed_vector=sealed)
        policy = saves.Policy(keep, self.quota, fp, offer, digest, pruning)
        with self.spaces.entered(who, space, "write", "save_session") as at:
            row = saves.save(self.db, at, head, version, policy)
            if row is None:
                raise save_checks.refusal(self.db, at, fp, self.quota, checkpoint=checkpoint)
        out: dict[str, Any] = {
            "saved": True,
            "name": name,  # as stored: redacted too if it held a secret
            "version": row["version"],
            "saved_at": store.iso(row["updated_at"]) if row.get("unchanged") else record["saved_at"],
            "embedded": vector is not None,
            # field and kind of each secret removed, never its value; [] when none (or when off)
            "redacted": [r.as_dict() for r in redactions],
        }
        if row.get("unchanged"):
            out["unchanged"] = True  # the head already held this content: no version added
        if checkpoint:
            out["automatic"] = True
        if offer is not None:
            out["handoff"] = {
                "state": "open",
                "to_client": offer.to_client,
                "expires_in_days": offer.ttl_days,
            }
            if args.to_person:
                out["handoff"]["to_person"] = args.to_person
        if space.name:
            out["workspace"] = space.name
        return out

    def _offer(self, who: Principal, space: Space, client: str, args: SaveArgs) -> saves.Offer:
        """The offer a save makes; in a workspace, from this person, to one member if named."""
        if not space.name:
            return saves.Offer(client, args.to_client, self.handoff_ttl_days)
        to_user = None
        if args.to_person:
            with self.spaces.entered(who, space, "write", "save_session") as at:
                target = workspaces.offer_target(self.db, at, args.to_person)
            to_user = handoff.claimable_by(args.to_person, target)
        return saves.Offer(client, args.to_client, self.handoff_ttl_days, who.user_id, to_user)

    def load(self, who: Principal, args: LoadArgs) -> dict[str, Any]:
        return self.reader.load(who, args)

    def search(self, who: Principal, args: SearchArgs) -> dict[str, Any]:
        return self.reader.search(who, args)

    def list(self, who: Principal, args: ListArgs) -> dict[str, Any]:
        after = decode_cursor(args.cursor)
        space = self.spaces.of(who, args.workspace)
        mine: list[dict[str, Any]] | None = None
        with self.spaces.entered(who, space, "read", "list_sessions") as at:
            if space.name or after is not None:
                rows = store.page(self.db, at, args.repo, args.limit + 1, after)
            else:  # the first page of the personal space also names the caller's workspaces
                rows, mine = store.page_and_spaces(self.db, at, args.repo, args.limit + 1, after)
        shown = rows[: args.limit]
        dek = self._dek(space) if shown else b""
        sessions = [answers.listed(dek, space.id, r, space.name) for r in shown]
        if any(s.get("unverified") for s in sessions):  # maybe a re-key: the key as stored now
            fresh = self.spaces.renew(who, space)
            if fresh is not None:
                sessions = [answers.listed(self._dek(fresh), fresh.id, r, fresh.name) for r in shown]
        more = len(rows) > args.limit
        out: dict[str, Any] = {
            "sessions": sessions,
            "next_cursor": encode_cursor(shown[-1]["updated_at"], shown[-1]["id"]) if more else "",
        }
        if mine:  # a model learns the names it may pass as `workspace`, and what it may do there
            out["workspaces"] = [{"name": r["name"], "role": r["role"]} for r in mine]
        return out

    def delete(self, who: Principal, args: DeleteArgs) -> dict[str, Any]:
        space = self.spaces.of(who, args.workspace)
        with self.spaces.entered(who, space, "write", "delete_session") as at:
            removed = deletes.delete(self.db, at, args.name)
        if removed is None:
            return {"deleted": False, "found": False, "hint": "no session by that name"}
        return {"deleted": True, "name": args.name, "versions_deleted": removed}
