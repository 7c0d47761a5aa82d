"""Small shared pieces: percentiles, printing, settings, the run's header."""

from __future__ import annotations

import dataclasses
import datetime
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RUN = ".venv/bin/python -m benchmarks.run"  # how to run one section: RUN --only <section>


def p50(samples: list[float]) -> float:
    return statistics.median(samples)


def p95(samples: list[float]) -> float:
    ordered = sorted(samples)
    return ordered[max(0, round(len(ordered) * 0.95) - 1)]


def ms(seconds: float) -> str:
    return f"{seconds * 1000:7.2f}"


def timed(fn: Callable[[int], Any], n: int, *, warmup: int = 2, between: Callable[[], Any] | None = None):
    """Run fn(i) `warmup` times untimed, then n times; the list of wall-clock durations."""
    for i in range(warmup):
        fn(-1 - i)
    samples = []
    for i in range(n):
        if between is not None:
            between()
        started = time.perf_counter()
        fn(i)
        samples.append(time.perf_counter() - started)
    return samples


def section(title: str, command: str, *notes: str) -> None:
    print(f"\n== {title}")
    print(f"   command: {command}")
    for note in notes:
        print(f"   {note}")


def make_settings(database_url: str, master_key: str, audit_salt: str, **overrides: object):
    """Settings through the public constructor; overrides for fields this version lacks are
    dropped (the serving path changes while these benchmarks are kept)."""
    from sessionvault.settings import Settings

    known = {f.name for f in dataclasses.fields(Settings)}
    values: dict[str, object] = {
        "database_url": database_url,
        "master_key": master_key,
        "audit_salt": audit_salt,
        "embeddings": "local",
        "rate_per_minute": 1_000_000,
        "rate_per_day": 100_000_000,
        "protocol_rate_per_minute": 1_000_000,
    }
    values.update(overrides)
    return Settings.from_env({}, **{k: v for k, v in values.items() if k in known})


def header() -> None:
    cpu = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        head = subprocess.run(
            ["git", "-C", str(ROOT), "log", "-1", "--format=%h %s"], capture_output=True, text=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(ROOT), "status", "--porcelain", "--", "shared"], capture_output=True, text=True
        ).stdout.strip()
    except OSError:
        head, dirty = "?", ""
    now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    print(f"SessionVault benchmarks, {now}")
    print(f"  python {sys.version.split()[0]} ({platform.platform()}), {os.cpu_count()} cores {cpu}")
    print(f"  load average at start: {load()} (other work on the machine skews every figure)")
    print(f"  code: {head[:90]}{'  (+ uncommitted changes under shared/)' if dirty else ''}")
    print(f"  command: make bench  (= {RUN}; one section: {RUN} --only <name>)")


def load() -> str:
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "?"
