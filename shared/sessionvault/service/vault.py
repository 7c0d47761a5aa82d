"""What the tools do: save, load, search, list and delete sessions for one authenticated user.
Logic lives here; SQL lives in `db.sessions`; the tenant comes only from the Principal."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from sessionvault.core import crypto, framing
from sessionvault.core.apikeys import scope_hint
from sessionvault.core.budget import fit, pack
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
    RECORD_FIELDS,
    SAVE_CONTROLS,
    DeleteArgs,
    ListArgs,
    LoadArgs,
    SaveArgs,
    SearchArgs,
    embedding_text,
)
from sessionvault.core.records import preview as make_preview
from sessionvault.core.repos import canonical_repo
from sessionvault.db import deletes, saves, search, workspaces
from sessionvault.db import sessions as store
from sessionvault.db.pool import Database, Tenant
from sessionvault.errors import (
    DecryptionFailed,
    KeyReplaced,
    ProviderUnavailable,
    ScopeMissing,
    ValidationFailed,
)
from sessionvault.service import answers, claims, handoff, save_checks, sealing
from sessionvault.service.principal import Principal
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
    ):
        self.db = db
        self.keys = keys
        self.embedder = embedder
        self.history_keep = history_keep
        self.quota = quota
        self.redact = redact  # scrub secrets before anything is stored (settings.redact_secrets)
        self.handoff_ttl_days = handoff_ttl_days  # how long an offered handoff stays claimable
        self.spaces = Spaces(db)

    def _dek(self, space: Space) -> bytes:
        return self.keys.unwrap(space.id, space.wrapped)

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
        head = saves.Head(name, record["repo"], preview, record["client"], vector, self.embedder.model)

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
        if args.accept:
            if "write" not in who.scopes:  # a claim changes the handoff's state
                raise ScopeMissing(scope_hint("write", "load_session with accept=true", who.scopes))
            space, row, last = claims.claim(self.db, self.spaces, who, args)
            if row is None:
                return handoff.not_claimed(args, last)
        elif args.name:
            space = self.spaces.of(who, args.workspace)
            with self.spaces.entered(who, space, "read", "load_session") as at:
                row = store.get_by_name(self.db, at, args.name, args.version or None)
                if row is None:
                    kept = store.versions_of(self.db, at, args.name) if args.version else None
                    return answers.not_found(args, kept)
        else:
            space, row, _ = claims.latest(self.db, self.spaces, who, args)
        if row is None:
            return answers.not_found(args)
        space, record = self._opened(who, space, row)
        dek = self._dek(space)
        out: dict[str, Any] = {
            "notice": framing.RESULT_NOTICE,
            "found": True,
            "name": row["name"],
            "repo": canonical_repo(record["repo"]),  # as saved, in a version from before 0006
            "version": row["version"],
            "latest_version": row["head"],
            "saved_at": record["saved_at"],
            "client": record["client"],  # the authenticated copy, not the plaintext column
        }
        if space.name:
            out["workspace"] = space.name
        if is_automatic(row["name"]):
            out["automatic"] = True
        for anchor in ("branch", "commit"):  # absent from sessions saved before they existed
            if record.get(anchor):
                out[anchor] = record[anchor]
        offered = handoff.state_of(row)
        if offered is not None:
            out["handoff"] = offered
            if offered["state"] == "open":
                offered["hint"] = "offered, not claimed: load_session with repo and accept=true claims it"
        if args.mode == "brief":
            out["summary"] = record["summary"]
        else:
            out["versions"] = row["versions"]
            out.update({field: record[field] for field in RECORD_FIELDS})
            if args.mode == "full":
                with self.spaces.entered(who, space, "read", "load_session") as at:
                    out["related"] = self._related(at, dek, row)
        return fit(out, args.max_tokens, LOAD_PRIORITY, FRAME_CHARS) if args.max_tokens else out

    def _opened(self, who: Principal, space: Space, row: dict[str, Any]) -> tuple[Space, dict[str, Any]]:
        """The stored version `row` opened, and the space whose key opened it: when the key this
        instance remembers fails, the workspace's key as stored now, once (spaces.renew)."""
        try:
            return space, sealing.open_record(self._dek(space), space.id, row)
        except DecryptionFailed:
            fresh = self.spaces.renew(who, space)
            if fresh is None:
                raise
            return fresh, sealing.open_record(self._dek(fresh), fresh.id, row)

    def _related(self, at: Tenant, dek: bytes, row: dict[str, Any]) -> list[dict[str, Any]]:
        if row["embedding_model"] != self.embedder.model or not row["embedding_dims"]:
            return []
        hits = search.related(
            self.db, at, str(row["id"]), self.embedder.model, row["embedding_dims"], RELATED_LIMIT
        )
        return [answers.hit(sealing.open_record(dek, at.space, h), h) for h in answers.relevant(hits)]

    def search(self, who: Principal, args: SearchArgs) -> dict[str, Any]:
        query = args.query
        if self.redact:  # a query is not stored, but it does go to the embedding provider
            from sessionvault.core.redact import scrub_text

            query = scrub_text(query)[0]
        vector = self.embedder.embed(query)
        if vector is None:
            raise ProviderUnavailable(
                "semantic search is unavailable: no embedding provider answered;"
                " list_sessions and load_session still work"
            )
        space = self.spaces.of(who, args.workspace)
        with self.spaces.entered(who, space, "read", "search_sessions") as at:
            hits = search.nearest(
                self.db, at, vector, self.embedder.model, repo=args.repo, limit=args.max_results
            )
        found = []
        for h in answers.relevant(hits):  # the first hit settles which key opens them all
            space, record = self._opened(who, space, h)
            found.append(answers.hit(record, h, space.name))
        out = pack(found, args.max_tokens, FRAME_CHARS)
        if hits and not found:  # say why nothing came back: the words, not an empty vault
            out["hint"] = (
                f"no saved session is close in meaning (every score below {answers.MIN_SCORE});"
                " try other words, or list_sessions"
            )
        return out

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
