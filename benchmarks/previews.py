"""Sealed previews (migration 0015): what a listing pays to open them.

    .venv/bin/python -m benchmarks.previews [--sessions 200] [--runs 40]

Prints (1) microseconds to open one sealed 120-character preview (crypto.open_preview) and to
build one listing entry (service.answers.listed: MAC check, and the preview opened or read),
plaintext against sealed; (2) the p50 and p95 of listing `--sessions` heads through
Vault.list (pages of 100, the tool's cap: 200 heads = 2 pages = 2 flights) on an embedded
PostgreSQL of its own, for two users with the same sessions, one with every preview in
plaintext (as saved before 0015), one with every preview sealed, their listings interleaved;
(3) how long the `seal_previews` task takes to seal the first user's previews. Nothing is
downloaded; no embedding model is loaded."""

from __future__ import annotations

import argparse
import base64
import os
import shutil
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import psycopg
from psycopg.rows import dict_row

from .common import header, ms, p50, p95, section

PREVIEW = (
    "Half done: the token refresh path is wired and tested, the retry on 401 is not; "
    "next: backoff in the client, then the docs"
)[:120]


def per_preview(n: int = 20_000) -> None:
    from sessionvault.core import crypto

    key = os.urandom(32)
    aad = crypto.preview_aad(
        "6f1f4ac2-45a1-4ace-8995-8a64bf490f9f", "0b9e3c52-5d1e-4c4b-9d53-1b0e8f7a2c11", "plan"
    )
    sealed = crypto.seal_preview(key, PREVIEW, aad)
    best_open = _best(lambda: crypto.open_preview(key, sealed, aad), n)
    best_seal = _best(lambda: crypto.seal_preview(key, PREVIEW, aad), n)
    print(
        f"   open one sealed preview ({len(PREVIEW)} chars, {len(sealed)} bytes stored): {best_open:6.2f} us"
    )
    print(f"   seal one preview (the save path, once per save):            {best_seal:6.2f} us")


def _best(fn: Any, n: int, rounds: int = 5) -> float:
    """Best of `rounds` means over n calls, in microseconds (the least disturbed by other work)."""
    best = float("inf")
    for _ in range(rounds):
        started = time.perf_counter()
        for _ in range(n):
            fn()
        best = min(best, (time.perf_counter() - started) / n * 1e6)
    return best


def listing(sessions: int, runs: int) -> None:
    from sessionvault.core import records
    from sessionvault.core.keys import WrappedKey
    from sessionvault.db import sessions as store
    from sessionvault.db.pool import Database
    from sessionvault.jobs import maintenance
    from sessionvault.local.host import embedded
    from sessionvault.runtime import key_provider, open_runtime
    from sessionvault.service import accounts, answers, sealing
    from sessionvault.service.principal import Principal

    from .common import make_settings

    home = Path(tempfile.mkdtemp(prefix="sessionvault-bench-previews-"))
    try:
        db = embedded.start(home)
        key = base64.b64encode(os.urandom(32)).decode()
        settings = replace(make_settings(db.app_url, key, "bench-previews-salt-0123"), embeddings="none")
        admin = Database(db.admin_url, max_size=1)
        try:  # two users with the same sessions: one keeps plaintext previews, one sealed
            users = [accounts.create_user(admin, key_provider(settings), f"bench-{kind}") for kind in "ps"]
            with admin.identity() as conn:
                wrapped = {
                    u: WrappedKey.from_row(
                        conn.execute("SELECT dek_wrapped, key_id FROM users WHERE id = %s", (u,)).fetchone()
                    )
                    for u in users
                }
        finally:
            admin.close()
        rt = open_runtime(settings, pool_size=2)
        try:
            plain, sealed = (Principal(u, wrapped[u]) for u in users)
            for who in (plain, sealed):
                for i in range(sessions):
                    summary = f"{PREVIEW} ({i})" + " and more of the summary that the preview cuts" * 3
                    args = {"name": f"s-{i:04d}", "summary": summary}
                    rt.vault.save(who, records.parse(records.SaveArgs, args))
            _to_plaintext(
                db.owner_url, plain.user_id, rt.keys.unwrap(plain.user_id, plain.wrapped_dek), sealing
            )

            def list_all(who: Principal) -> int:
                shown, cursor = 0, ""
                while True:
                    args = {"limit": 100, "cursor": cursor}
                    page = rt.vault.list(who, records.parse(records.ListArgs, args))
                    shown += len(page["sessions"])
                    cursor = page["next_cursor"]
                    if not cursor:
                        return shown

            def entry_us(who: Principal) -> float:
                dek = rt.keys.unwrap(who.user_id, who.wrapped_dek)
                rows = store.page(rt.db, who.at(), "", 100, None)
                return _best(lambda: [answers.listed(dek, who.user_id, r) for r in rows], 50) / len(rows)

            rows = {who.user_id: store.page(rt.db, who.at(), "", 100, None) for who in (plain, sealed)}
            assert all(r["sealed_preview"] is None and r["preview"] for r in rows[plain.user_id])
            assert all(r["sealed_preview"] and r["preview"] == "" for r in rows[sealed.user_id])
            assert list_all(plain) == list_all(sealed) == sessions
            # Interleaved, so that whatever else the machine does falls on both alike.
            times: dict[str, list[float]] = {"plain": [], "sealed": []}
            for i in range(runs + 3):
                for label, who in (("plain", plain), ("sealed", sealed))[:: 1 if i % 2 else -1]:
                    started = time.perf_counter()
                    list_all(who)
                    if i >= 3:
                        times[label].append(time.perf_counter() - started)
            entries = {"plain": entry_us(plain), "sealed": entry_us(sealed)}
            job = open_runtime(replace(settings, database_url=db.maint_url), pool_size=1)
            try:  # as the maintenance function runs it: it seals the plaintext user's previews
                started = time.perf_counter()
                task = maintenance.seal_previews(job)
                task_s = time.perf_counter() - started
            finally:
                job.close()
            assert task["sealed"] == sessions
        finally:
            rt.close()
    finally:
        try:
            embedded.stop(home)
        finally:
            shutil.rmtree(home, ignore_errors=True)
    print("   one listing entry (answers.listed: MAC check + preview), best of 5 x 50 pages of 100:")
    print(f"     plaintext preview {entries['plain']:6.2f} us, sealed preview {entries['sealed']:6.2f} us")
    print(f"   list {sessions} heads (Vault.list, pages of 100), n={runs} each, interleaved:  p50 ms  p95 ms")
    for label, text in (
        ("plain", "plaintext previews (as saved before 0015)"),
        ("sealed", "sealed previews"),
    ):
        print(f"     {text:<58} {ms(p50(times[label]))} {ms(p95(times[label]))}")
    print(f"   seal_previews task (maintenance role): {sessions} previews sealed in {task_s * 1000:.0f} ms")


def _to_plaintext(owner_url: str, user_id: str, dek: bytes, sealing: Any) -> None:
    """Every head's preview back in plaintext, as a save before 0015 stored it (same MAC)."""
    with psycopg.connect(owner_url, row_factory=dict_row) as conn:
        heads = conn.execute(
            "SELECT id, name, version, seal_id, preview, sealed_preview FROM sessions WHERE user_id = %s",
            (user_id,),
        ).fetchall()
        for head in heads:
            text = sealing.preview_of(dek, user_id, head)
            conn.execute(
                "UPDATE sessions SET preview = %s, sealed_preview = NULL WHERE id = %s", (text, head["id"])
            )
    with psycopg.connect(owner_url, autocommit=True) as conn:
        conn.execute("VACUUM ANALYZE sessions")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sessions", type=int, default=200)
    parser.add_argument("--runs", type=int, default=40)
    args = parser.parse_args()
    header()
    section(
        "Sealed previews: opening them in a listing",
        f".venv/bin/python -m benchmarks.previews --sessions {args.sessions} --runs {args.runs}",
        "in this process; AES-256-GCM from `cryptography` (OpenSSL); the listing on an embedded",
        "PostgreSQL of its own, over a local socket (no network hop: a remote database adds its RTT",
        "per page to both columns alike).",
    )
    per_preview()
    listing(args.sessions, args.runs)


if __name__ == "__main__":
    main()
