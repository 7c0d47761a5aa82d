"""The peer, side by side (issue 29 item 5): SessionVault and mcp-memory-service 12.4.0 with
the same corpus, over MCP Streamable HTTP, calls interleaved between the two servers.

    .venv/bin/python -m benchmarks.run --only peer

Each server runs as its users run it: `sessionvault serve` (benchmarks/serve.py) on an embedded
PostgreSQL of its own, and `memory server --streamable-http` with sqlite-vec in a virtualenv of
its own (benchmarks/peer_env.py, built once outside the repository). Both embed with
all-MiniLM-L6-v2 from the same files (the sessionvault-minilm package), each through its own
code (numpy here, sentence-transformers + torch there), and both check a bearer key per call.
The client speaks JSON-RPC with httpx over one kept-alive connection per server (initialize
first, as a client does); each call's body is the same size of work on both sides:

store   save_session of a session record / memory_store of the same record as text, tagged
        with its name (conversation_id = its name, so the peer's near-duplicate check, which
        would refuse sessions of similar wording, lets each one in);
fetch   load_session by name / the peer has no fetch by name or hash among its tools: its
        exact retrievals are memory_list filtered by the memory's own tag and memory_search
        in mode "exact" (a substring match); both are measured, the faster is the ratio's;
        a JSON-RPC ping to each server, in the same rotation, shows the floor under every call
        (client, HTTP, the MCP SDK: no tool, no database);
search  search_sessions / memory_search (semantic), limit 10, the same query on both;
then 8 clients fetching at once, cold start (process start to the first search answered,
the data in place, the server restarted) and memory (RSS of each server process)."""

from __future__ import annotations

import itertools
import os
import random
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .common import ROOT, RUN, p50, p95, section
from .peer_sides import (
    Mcp,
    SessionVaultProcess,
    Side,
    crowd,
    interleaved,
    rss_mib,
    sessionvault_database,
    tree_pss_mib,
)
from .seed import PLACES, THINGS, VERBS, WHY

CORPUS, FETCHES, SEARCHES, COLD_STARTS = 300, 100, 60, 3
CLIENTS, PER_CLIENT, ROUNDS = 8, 25, 2
TARGETS = {"fetch": 0.5, "store": 0.8, "search": 0.5, "throughput": 1.5, "cold": 0.2}


# --- the corpus and the two servers' calls -----------------------------------------------------


def corpus(n: int) -> list[dict[str, Any]]:
    """Session records worded like benchmarks/seed.py's, each name and summary its own."""
    rnd = random.Random(29)
    out = []
    for i in range(n):
        pick = rnd.choice
        verb, thing = pick(VERBS), pick(THINGS)
        out.append({
            "name": f"{verb.split()[0]}-{thing.replace(' ', '-').lower()}-{i}",
            "repo": f"github.com/bench/app{i % 7}",
            "summary": f"{verb} the {thing} in {pick(PLACES)} because {pick(WHY)}; pass {i}",
            "plan": [f"{pick(VERBS)} the {pick(THINGS)}" for _ in range(rnd.randint(3, 8))],
            "decisions": [{"decision": f"keep the {pick(THINGS)} in {pick(PLACES)}", "reason": pick(WHY)}
                          for _ in range(rnd.randint(0, 3))],
            "todos": [f"{pick(VERBS)} the {pick(THINGS)}" for _ in range(rnd.randint(1, 4))],
            "files": [f"src/{pick(THINGS).replace(' ', '_')}.py" for _ in range(rnd.randint(1, 5))],
            "errors": [f"TimeoutError in {pick(THINGS)}" for _ in range(rnd.randint(0, 2))],
            "client": pick(["claude-code", "cursor", "codex", "windsurf"]),
        })  # fmt: skip
    return out


def as_text(s: dict[str, Any]) -> str:
    """The same record as one memory's text: what a user of the peer would store."""
    lines = [f"Session {s['name']} in {s['repo']} (from {s['client']}): {s['summary']}"]
    decisions = [f"{d['decision']} ({d['reason']})" for d in s["decisions"]]
    for label, items in (("Plan", s["plan"]), ("Decisions", decisions), ("Next", s["todos"]),
                         ("Files", s["files"]), ("Errors", s["errors"])):  # fmt: skip
        if items:
            lines.append(f"{label}: " + "; ".join(items))
    return "\n".join(lines)


def queries(n: int) -> list[str]:
    combos = list(itertools.product(VERBS, THINGS, WHY))
    random.Random(5).shuffle(combos)  # every query its own text: no embedding cache helps
    return [f"{verb} the {thing} after {why}" for verb, thing, why in combos[:n]]


SV: dict[str, Callable[..., tuple[str, dict[str, Any]]]] = {
    "store": lambda s: ("save_session", s),
    "fetch": lambda name: ("load_session", {"name": name}),
    "search": lambda q: ("search_sessions", {"query": q, "max_results": 10}),
}
PEER: dict[str, Callable[..., tuple[str, dict[str, Any]]]] = {
    "store": lambda s: ("memory_store", _memory(s)),
    "fetch": lambda name: ("memory_list", {"tags": [f"name:{name}"]}),
    "exact": lambda name: ("memory_search", {"query": f"Session {name} in", "mode": "exact", "limit": 1}),
    "search": lambda q: ("memory_search", {"query": q, "limit": 10}),
}


def _memory(s: dict[str, Any]) -> dict[str, Any]:
    tags = [f"name:{s['name']}", s["repo"]]
    return {"content": as_text(s), "conversation_id": s["name"], "metadata": {"tags": tags, "type": "note"}}


@dataclass
class Figures:
    stored: dict[str, list[float]]
    fetched: dict[str, list[float]]
    searched: dict[str, list[float]]
    rates: dict[str, list[float]]
    cold: dict[str, list[float]]
    rss: dict[str, tuple[float, float]]  # (RSS, peak) of each server process, MiB
    postgres: float  # PSS of SessionVault's PostgreSQL, all its processes, MiB


def peer() -> None:
    from sessionvault.local.host import embedded

    from .peer_env import PEER_VERSION, PeerProcess, ensure_venv, model_dir
    from .workload import free_port

    section(
        f"The peer, side by side: SessionVault and mcp-memory-service {PEER_VERSION} (issue 29, item 5)",
        f"{RUN} --only peer",
        f"corpus: {CORPUS} session records (benchmarks/seed.py's words); one model, all-MiniLM-L6-v2, from",
        f"{os.path.relpath(model_dir(), ROOT)} (numpy here, sentence-transformers + torch in the peer);",
        "peer on sqlite-vec, SessionVault on an embedded PostgreSQL; both over MCP Streamable HTTP, one",
        "kept-alive connection per server, calls interleaved call by call, the order rotated each call.",
    )
    ensure_venv()
    data = Path(tempfile.mkdtemp(prefix="sv-bench-peer-data-"))
    try:
        with sessionvault_database() as (db, home, master, salt, key):
            peer_key = "bench-peer-" + os.urandom(16).hex()
            sv = Side(
                "SessionVault",
                SV,
                lambda: SessionVaultProcess(db.app_url, master, salt),
                key,
                '"embedded": true',
            )
            pr = Side(
                "peer",
                PEER,
                lambda: PeerProcess(free_port(), peer_key, data),
                peer_key,
                "stored successfully",
            )
            try:
                figures = _measure(sv, pr, lambda: embedded.postmaster_pid(home))
            finally:
                sv.stop()
                pr.stop()
    finally:
        shutil.rmtree(data, ignore_errors=True)
    _report(figures)


def _measure(sv: Side, pr: Side, postmaster: Callable[[], int | None]) -> Figures:
    both = (sv, pr)
    records, asked = corpus(CORPUS), queries(SEARCHES + COLD_STARTS + 1)
    first = {side.label: side.start(asked[-1]) for side in both}
    print(f"   first start, empty store (not a figure): SessionVault {first['SessionVault']:.2f} s,", end="")
    print(f" peer {first['peer']:.2f} s")
    stored = interleaved([("SessionVault", sv, "store"), ("peer", pr, "store")], records, skip=5)
    if "hash embeddings" in pr.handle.output():  # its fallback when no model loads: not the same work
        raise RuntimeError("the peer did not load the model: " + pr.handle.output()[-2000:])
    names = [r["name"] for r in records]
    probe, sizes = names[len(names) // 2], []
    for side, kind in ((sv, "fetch"), (pr, "fetch"), (pr, "exact")):
        reply = side.do(kind, probe)
        if probe not in reply:  # the call found the record, not nothing
            raise RuntimeError(f"{side.label} {kind} did not return {probe}: {reply[:300]}")
        sizes.append(f"{side.label} {side.calls[kind](probe)[0]} {len(reply):,} B")
    print(f"   one fetch's result (its JSON): {'; '.join(sizes)}")
    rnd = random.Random(7)
    fetched = interleaved(
        [
            ("SessionVault", sv, "fetch"),
            ("peer", pr, "fetch"),
            ("peer exact", pr, "exact"),
            ("SessionVault ping", sv, "ping"),
            ("peer ping", pr, "ping"),
        ],
        [rnd.choice(names) for _ in range(FETCHES + 3)],
    )
    searched = interleaved([("SessionVault", sv, "search"), ("peer", pr, "search")], asked[:SEARCHES])
    pools = {side.label: [Mcp(side.url, side.key).open() for _ in range(CLIENTS)] for side in both}
    rates: dict[str, list[float]] = {side.label: [] for side in both}
    for r in range(ROUNDS):
        for side in both if r % 2 == 0 else both[::-1]:
            rates[side.label].append(crowd(side, names, pools[side.label], PER_CLIENT))
    for pool in pools.values():
        for client in pool:
            client.close()
    rss = {side.label: rss_mib(side.pid) for side in both}
    pid = postmaster()
    postgres = tree_pss_mib(pid) if pid else 0.0
    cold: dict[str, list[float]] = {side.label: [] for side in both}
    for k in range(COLD_STARTS):
        for side in both if k % 2 == 0 else both[::-1]:
            side.stop()
            cold[side.label].append(side.start(asked[SEARCHES + k]))
    return Figures(stored, fetched, searched, rates, cold, rss, postgres)


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:8.1f} ms"


def _report(f: Figures) -> None:
    print("   per call, p50 and p95 (n):")
    pings = {who[:-5]: f.fetched.pop(who) for who in list(f.fetched) if who.endswith(" ping")}
    for label, samples in (
        ("store", f.stored),
        ("exact fetch", f.fetched),
        ("ping (no tool)", pings),
        ("semantic search", f.searched),
    ):
        cells = [f"{who} {_ms(p50(s))} {_ms(p95(s))} ({len(s)})" for who, s in samples.items()]
        print(f"   {label:16} " + "   ".join(cells))
    rounds = "  ".join(f"{who} {', '.join(f'{r:.0f}' for r in rs)} req/s" for who, rs in f.rates.items())
    print(f"   fetch, {CLIENTS} clients x {PER_CLIENT} calls each, {ROUNDS} rounds alternating: {rounds}")
    starts = "  ".join(f"{who} {', '.join(f'{s:.2f}' for s in ss)} s" for who, ss in f.cold.items())
    print(f"   cold start to first search, the data in place, restarts alternating: {starts}")
    (ours, our_peak), (theirs, their_peak) = f.rss["SessionVault"], f.rss["peer"]
    print(
        f"   memory after the load, RSS (peak): SessionVault server {ours:.0f} ({our_peak:.0f}) MiB, and its"
    )
    print(
        f"   PostgreSQL {f.postgres:.0f} MiB (PSS of its processes); peer {theirs:.0f} ({their_peak:.0f}) MiB"
    )

    peer_fetch = min(p50(f.fetched["peer"]), p50(f.fetched["peer exact"]))
    sv_rate, peer_rate = (sum(f.rates[who]) / ROUNDS for who in ("SessionVault", "peer"))
    print(f"\n   {'SessionVault / peer':28} {'SessionVault':>12} {'peer':>12} {'ratio':>8}  {'target':>8}")
    _row("exact fetch p50", p50(f.fetched["SessionVault"]), peer_fetch, _ms, "fetch")
    _row("store p50", p50(f.stored["SessionVault"]), p50(f.stored["peer"]), _ms, "store")
    _row("semantic search p50", p50(f.searched["SessionVault"]), p50(f.searched["peer"]), _ms, "search")
    _row(f"fetch, {CLIENTS} clients", sv_rate, peer_rate, lambda v: f"{v:6.0f} req/s", "throughput")
    _row("cold start to first search", p50(f.cold["SessionVault"]), p50(f.cold["peer"]), _s, "cold")
    _row("memory, server process", ours, theirs, _mib, "")
    _row("memory, + its PostgreSQL", ours + f.postgres, theirs, _mib, "")


def _s(seconds: float) -> str:
    return f"{seconds:8.2f} s"


def _mib(value: float) -> str:
    return f"{value:7.0f} MiB"


def _row(label: str, ours: float, theirs: float, shown: Callable[[float], str], target: str) -> None:
    ratio, bound = ours / theirs, TARGETS.get(target)
    if bound is None:
        verdict, wanted = "", ""
    elif target == "throughput":  # more is better
        verdict, wanted = ("met" if ratio >= bound else "MISSED"), f">= {bound}x"
    else:
        verdict, wanted = ("met" if ratio <= bound else "MISSED"), f"<= {bound}x"
    print(f"   {label:28} {shown(ours):>12} {shown(theirs):>12} {ratio:7.2f}x  {wanted:>8}  {verdict}")
