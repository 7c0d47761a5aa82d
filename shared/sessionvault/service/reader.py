"""The read path of the tools: load a session (by name, by repo, or claiming a handoff) and
search the saved ones, by meaning and by keyword, fused into one ranking."""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import Any

from sessionvault.core import framing, vectors
from sessionvault.core.apikeys import scope_hint
from sessionvault.core.budget import fit, pack
from sessionvault.core.checkpoints import is_automatic
from sessionvault.core.embedding.providers import Embedder, NoEmbedder
from sessionvault.core.keys import DekCache
from sessionvault.core.records import RECORD_FIELDS, LoadArgs, SearchArgs
from sessionvault.core.repos import canonical_repo
from sessionvault.db import search
from sessionvault.db import sessions as store
from sessionvault.db.pool import Database, Tenant
from sessionvault.errors import DecryptionFailed, ProviderUnavailable, ScopeMissing
from sessionvault.service import answers, claims, handoff, sealing, vector_index
from sessionvault.service.principal import Principal
from sessionvault.service.spaces import Space, Spaces

RELATED_LIMIT = 5
EMBED_THREADS = 8  # queries embedded at once (each waits on a model run or on the provider)
# What the tool's text block adds around a result that quotes saved notes (framing.frame_json):
# a budget (max_tokens) covers what the model receives, this included.
FRAME_CHARS = framing.overhead()
# What a budgeted load keeps first (load_session max_tokens): the most useful fields lead.
LOAD_PRIORITY = ("summary", "todos", "decisions", "plan", "errors", "files", "tried", "related")


class Reader:
    def __init__(
        self, db: Database, keys: DekCache, embedder: Embedder, spaces: Spaces, redact: bool
    ) -> None:
        self.db = db
        self.keys = keys
        self.embedder = embedder
        self.spaces = spaces
        self.redact = redact
        self.segments = vector_index.SegmentCache()  # this process's opened vector segments
        # Where a search's query is embedded while its first flight runs (threads start on use:
        # nothing at a Lambda's init; one request at a time there, a few on a local server).
        self._embedding = ThreadPoolExecutor(max_workers=EMBED_THREADS, thread_name_prefix="embed")

    def dek(self, space: Space) -> bytes:
        return self.keys.unwrap(space.id, space.wrapped)

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
        dek = self.dek(space)
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
            return space, sealing.open_record(self.dek(space), space.id, row)
        except DecryptionFailed:
            fresh = self.spaces.renew(who, space)
            if fresh is None:
                raise
            return fresh, sealing.open_record(self.dek(fresh), fresh.id, row)

    def _related(self, at: Tenant, dek: bytes, row: dict[str, Any]) -> list[dict[str, Any]]:
        """The sessions closest in meaning to the loaded one's head (itself left out)."""
        model = self.embedder.model
        own = vector_index.open_vector(dek, at.space, model, row) if row["embedding_model"] == model else None
        if own is None:
            return []
        flight = self._find(at, search.Query([], model))
        hits, _ = self._by_meaning(at, dek, flight, own, RELATED_LIMIT, exclude=str(row["id"]))
        return [answers.hit(sealing.open_record(dek, at.space, h), h) for h in answers.relevant(hits)]

    def _find(self, at: Tenant, query: search.Query) -> search.Found:
        """One search flight, its vector part brought up to date from what this process holds:
        the segments it has opened and how far they went (a second flight only when they went
        further than the space's segments now do: after a re-key)."""
        if not query.model:
            return search.find(self.db, at, query)
        since = self.segments.since(at.space, query.model)
        ask = replace(query, cached=self.segments.ids(at.space, query.model), since=since)
        flight = search.find(self.db, at, ask)
        if vector_index.stale(flight, since):
            flight = search.find(self.db, at, replace(ask, since=None))
        self.segments.read(at.space, query.model, flight)
        return flight

    def _by_meaning(
        self,
        at: Tenant,
        dek: bytes,
        flight: search.Found,
        vector: Sequence[float] | vectors.Matrix,
        depth: int,
        *,
        exclude: str = "",
        repo: str = "",
    ) -> tuple[list[dict[str, Any]], vector_index.Scored]:
        """The heads closest to `vector`, best first, each with its cosine distance, and every
        head's score: the sealed vectors scored in memory, then the heads fetched (a second
        flight). A delta grown past its bound (vector_index.overgrown) is folded into new segments
        after the scoring, for the next search."""
        model = self.embedder.model
        scored = vector_index.score(
            self.segments, dek, at.space, model, flight, vector, repo=repo, exclude=exclude, depth=2 * depth
        )
        if vector_index.overgrown(flight):
            vector_index.compact(self.db, at, dek, model)
        best = [i for i, _ in scored.best]
        rows = {r["id"]: r for r in search.heads(self.db, at, best)} if best else {}
        hits = [{**rows[i], "distance": 1.0 - cosine} for i, cosine in scored.best if i in rows]
        return hits[:depth], scored

    def search(self, who: Principal, args: SearchArgs) -> dict[str, Any]:
        """By meaning and by keyword at once, fused into one ranking (answers.fused). Without an
        embedding provider, by keyword alone, and the answer says so."""
        space = self.spaces.of(who, args.workspace)
        depth = max(2 * args.max_results, 10)  # each list runs deeper than the answer, for the fusion
        space, ranked = self._ranked(who, space, args.query, args.repo, depth)
        found = []
        for h in answers.fused(
            ranked.by_meaning, ranked.by_keyword, args.max_results
        ):  # the first settles the key
            space, record = self._opened(who, space, h)
            found.append(answers.hit(record, h, space.name))
        out = pack(found, args.max_tokens, FRAME_CHARS)
        if not ranked.had_vector:
            out["notice"] = "no embedding provider answered: these hits match the query's words only"
        if (ranked.by_meaning or ranked.by_keyword) and not found:  # why nothing came back: the words
            out["hint"] = (
                f"no saved session names these words or is close in meaning (every score below"
                f" {answers.MIN_SCORE}); try other words, or list_sessions"
            )
        return out

    def _ranked(
        self, who: Principal, space: Space, query: str, repo: str, depth: int
    ) -> tuple[Space, Rankings]:
        """`rankings` in `space`, or, when the workspace's key this instance remembers opens
        nothing (a re-key since: its vectors do not open, its keyword tokens match nothing), in
        the workspace as stored now, once (spaces.renew)."""
        try:
            ranked = self.rankings(who, space, query, repo, depth)
        except DecryptionFailed:
            ranked = None
        if ranked is None or not (ranked.by_meaning or ranked.by_keyword):
            fresh = self.spaces.renew(who, space)
            if fresh is not None:
                return fresh, self.rankings(who, fresh, query, repo, depth)
            if ranked is None:
                raise DecryptionFailed()
        return space, ranked

    def rankings(self, who: Principal, space: Space, query: str, repo: str, depth: int) -> Rankings:
        """The two lists a search fuses, each `depth` deep with its heads' ciphertext: by meaning
        (cosine distance) and by keyword (each with its cosine distance when scored too)."""
        if self.redact:  # a query is not stored, but it does go to the embedding provider
            from sessionvault.core.redact import scrub_text

            query = scrub_text(query)[0]
        dek = self.dek(space)
        tokens = sealing.query_tokens(dek, space.id, query)
        model = "" if self.embedder.model == NoEmbedder.model else self.embedder.model
        if not model and not tokens:
            raise _unavailable()
        # The query's embedding (a model run here, an HTTP call on AWS) and the first flight
        # overlap: the flight needs the query's words, not its vector.
        embedding = self._embedding.submit(self.embedder.embed, query) if model else None
        with self.spaces.entered(who, space, "read", "search_sessions") as at:
            flight = self._find(at, search.Query(tokens, model, repo=repo, limit=depth))
            vector = embedding.result() if embedding else None
            by_meaning, scored = (
                self._by_meaning(at, dek, flight, vector, depth, repo=repo) if vector else ([], None)
            )
        if vector is None and not tokens:  # the provider failed, and no word is left to match
            raise _unavailable()
        by_keyword = [{**h, "distance": _distance(scored, h["id"])} for h in flight.by_keyword]
        return Rankings(by_meaning, by_keyword, vector is not None)


@dataclass(frozen=True)
class Rankings:
    by_meaning: list[dict[str, Any]]
    by_keyword: list[dict[str, Any]]
    had_vector: bool  # False: no embedding provider answered (keyword only)


def _unavailable() -> ProviderUnavailable:
    return ProviderUnavailable(
        "semantic search is unavailable: no embedding provider answered, and the query has"
        " no word to match; list_sessions and load_session still work"
    )


def _distance(scored: vector_index.Scored | None, session_id: str) -> float | None:
    """A keyword hit's cosine distance to the query, when its vector was scored."""
    cosine = scored.cosine(session_id) if scored is not None else None
    return None if cosine is None else 1.0 - cosine
