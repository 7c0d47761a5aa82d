"""How the vault's answers look: a listed head (its plaintext columns shown only when their MAC
holds), a search hit, and why a load found nothing."""

from __future__ import annotations

import hmac
from collections.abc import Mapping
from typing import Any

from sessionvault.core.checkpoints import is_automatic
from sessionvault.core.records import LoadArgs
from sessionvault.db import saves
from sessionvault.db import sessions as store
from sessionvault.service import handoff, sealing


def listed(dek: bytes, user_id: str, row: Mapping[str, Any], workspace: str = "") -> dict[str, Any]:
    """A listing entry from the head's columns, shown only if their MAC holds: a row changed in
    the database (or saved before MACs existed) lists with its client and preview withheld. The
    preview is opened from its sealed column (a few microseconds, no round trip), or read from
    the plaintext one a head saved before migration 0015 still has."""
    preview = sealing.preview_of(dek, user_id, row)
    # The MAC covers the repo as it was saved; rows from before one repo identity (0006) keep
    # that spelling apart from the canonical `repo` they are listed and found under.
    head = saves.Head(row["name"], row["saved_repo"], preview or "", row["client"], None, None)
    expected = sealing.head_mac(dek, user_id, row, head)
    trusted = (
        preview is not None
        and row["meta_mac"] is not None
        and hmac.compare_digest(bytes(row["meta_mac"]), expected)
    )
    entry = {
        "name": row["name"],
        "repo": row["repo"],
        "preview": head.preview if trusted else "",
        "version": row["version"],
        "client": row["client"] if trusted else "",
        "updated_at": store.iso(row["updated_at"]),
    }
    if workspace:  # the space of each entry (absent: the caller's personal space)
        entry["workspace"] = workspace
    if not trusted:
        entry["unverified"] = True  # load_session gives the authenticated record
    if is_automatic(row["name"]):
        entry["automatic"] = True
    offered = handoff.state_of(row)
    if offered is not None:
        entry["handoff"] = offered
    return entry


# The relevance floor (issue 36): a hit is returned when it scores at least MIN_SCORE and at
# least TOP_SHARE of the best hit's score. No fixed line separates related from unrelated with
# the local model: a sparse session its query matches scored 0.17, and an unrelated one beside a
# paraphrase's target up to 0.23 (while the targets scored 0.29-0.81); relative to the best hit
# they part (BENCHMARKS.md, "Relevance floor"). A query about nothing saved scores near 0.1.
MIN_SCORE = 0.1
TOP_SHARE = 0.5


def score(hit: Mapping[str, Any]) -> float:
    return round(1.0 - float(hit["distance"]), 4)


def relevant(hits: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The hits (best first) at or above the relevance floor."""
    floor = max(MIN_SCORE, TOP_SHARE * score(hits[0])) if hits else MIN_SCORE
    return [h for h in hits if score(h) >= floor]


# A keyword hit must name at least KEYWORD_COVER of the query (its score's share of what a
# session holding every query term would score, rarer terms weighing more) and score at least
# TOP_SHARE of the best keyword hit: a session that shares one common word with a sentence-long
# query does not come back, nor one that names a part of an identifier beside one naming all.
KEYWORD_COVER = 0.5


def keyword_relevant(hits: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The keyword hits (best first) at or above their floor."""
    floor = TOP_SHARE * float(hits[0]["keyword_score"]) if hits else 0.0
    return [
        h for h in hits if float(h["keyword_score"]) >= floor and float(h["keyword_cover"]) >= KEYWORD_COVER
    ]


# Reciprocal rank fusion (Cormack, Clarke and Buettcher, 2009): each list gives a hit
# 1 / (RRF_K + its rank); the usual constant, so that the first places of either list count
# alike and a hit both lists found comes first.
RRF_K = 60


Hits = list[dict[str, Any]]


def fused(by_meaning: Hits, by_keyword: Hits, limit: int) -> Hits:
    """One ranking of the hits by meaning and by keyword (each above its floor), best first,
    each saying why it matched: "meaning", "keyword" or "both"."""
    rows: dict[str, dict[str, Any]] = {}
    points: dict[str, float] = {}
    why: dict[str, list[str]] = {}
    for kind, hits in (("meaning", relevant(by_meaning)), ("keyword", keyword_relevant(by_keyword))):
        for rank, found in enumerate(hits, 1):
            key = str(found["id"])
            rows.setdefault(key, found)
            points[key] = points.get(key, 0.0) + 1.0 / (RRF_K + rank)
            why.setdefault(key, []).append(kind)
    best = sorted(points, key=lambda key: -points[key])[:limit]
    return [{**rows[key], "matched": "both" if len(why[key]) == 2 else why[key][0]} for key in best]


def hit(record: dict[str, Any], hit: Mapping[str, Any], workspace: str = "") -> dict[str, Any]:
    found: dict[str, Any] = {"name": hit["name"], "repo": hit["repo"]}
    if hit.get("distance") is not None:  # how close in meaning; absent without a vector
        found["score"] = score(hit)
    if "matched" in hit:
        found["matched"] = hit["matched"]
    found.update(version=hit["version"], saved_at=record["saved_at"], summary=record["summary"])
    if workspace:
        found["workspace"] = workspace
    return found


def not_found(args: LoadArgs, kept: list[int] | None = None) -> dict[str, Any]:
    """Why a load found nothing; `kept`: the versions the named session still has, if it exists."""
    if kept:
        shown = ", ".join(map(str, kept[:5])) + (", ..." if len(kept) > 5 else "")
        older = " (older versions are pruned)" if args.version < kept[-1] else ""
        hint = f"session {args.name!r} has no version {args.version}{older}; it keeps versions {shown}"
        return {"found": False, "versions": kept, "hint": hint}
    if args.name:
        what = f"no session named {args.name!r}"
        if args.version:
            what += f" at version {args.version}"
    else:
        what = f"no session for repo {args.repo!r}" if args.repo else "no sessions saved yet"
    return {"found": False, "hint": what + "; call list_sessions to see what is saved"}
