"""Secret scrubbing on the redaction corpus (tests/fixtures/secrets/corpus.py): how many of its
secret-bearing texts lose every secret (recall), how many of its benign look-alikes are changed
at all (false positives), by shape and family, and what scrubbing one text costs.

The corpus is generated (seeded, no network) each run: commands, their output, config files a
model printed, stack traces, requests and chat that hold secrets; commit hashes, UUIDs,
checksums, base64 images, fixtures' fake keys, long identifiers, errors and prose that do not.
A secret-bearing text counts as caught when none of its secrets survives (`corpus.leaked`: the
whole secret, or any random-looking run of 8 of its characters). tests/unit/core/
test_redact_corpus.py holds recall >= 0.99 and false positives <= 1 %; this prints the figures.

    .venv/bin/python -m benchmarks.run --only redaction
    .venv/bin/python -m benchmarks.redaction"""

from __future__ import annotations

import statistics
import time
from collections import Counter

from .common import RUN, section


def redaction_figures() -> dict[str, float]:
    from sessionvault.core.redact import scrub_text
    from tests.fixtures.secrets.corpus import benign_cases, leaked, secret_cases

    section(
        "Secret scrubbing on the redaction corpus (issue 27, item 4)",
        f"{RUN} --only redaction",
        "corpus: tests/fixtures/secrets/corpus.py (generated, seeded); scrubber: core/redact.py",
    )
    scrub_text("warm up: the first scrub imports detect-secrets")
    secrets, benign = secret_cases(), benign_cases()
    times: list[float] = []
    missed: Counter[str] = Counter()
    for case in secrets:
        started = time.perf_counter()
        scrubbed, _ = scrub_text(case.text)
        times.append(time.perf_counter() - started)
        if any(leaked(secret, scrubbed) for secret in case.secrets):
            missed[case.shape] += 1
            print(f"   missed ({case.shape}): {case.text[:60]!r}...")  # a generated fake: safe to show
    changed: Counter[str] = Counter()
    for case in benign:
        started = time.perf_counter()
        scrubbed, kinds = scrub_text(case.text)
        times.append(time.perf_counter() - started)
        if scrubbed != case.text or kinds:
            changed[case.shape] += 1
            print(f"   false positive ({case.shape}): {case.text[:60]!r} -> {kinds}")
    recall = 1 - sum(missed.values()) / len(secrets)
    false_positives = sum(changed.values()) / len(benign)
    print(f"   secret-bearing texts: {len(secrets)}   recall: {recall:.4f} ({sum(missed.values())} missed)")
    print(
        f"   benign look-alikes:   {len(benign)}   false positives: {false_positives:.2%}"
        f" ({sum(changed.values())} changed)"
    )
    tables = (("recall by shape", secrets, missed), ("false positives by kind", benign, changed))
    for label, cases, bad in tables:
        total = Counter(case.shape for case in cases)
        shown = ", ".join(f"{shape} {total[shape] - bad[shape]}/{total[shape]}" for shape in sorted(total))
        print(f"   {label} (kept right / all): {shown}")
    times.sort()
    print(
        f"   time per text: median {statistics.median(times) * 1000:.2f} ms,"
        f" p95 {times[int(len(times) * 0.95)] * 1000:.2f} ms, max {times[-1] * 1000:.2f} ms;"
        f" all {len(times)} texts {sum(times):.2f} s"
    )
    fourth = fourth_review_figures()
    return {"recall": recall, "false_positives": false_positives, **fourth}


def fourth_review_figures() -> dict[str, float]:
    """The part written after the fourth review (tests/fixtures/secrets/review4.py), on its own:
    the families it found kept, and their look-alikes."""
    from sessionvault.core.redact import scrub_text
    from tests.fixtures.secrets.review4 import LOOK_ALIKES, SECRETS, kept

    missed = [shape for shape, text, secret in SECRETS if kept(secret, scrub_text(text)[0])]
    changed = [shape for shape, text in LOOK_ALIKES if scrub_text(text) != (text, [])]
    recall = 1 - len(missed) / len(SECRETS)
    false_positives = len(changed) / len(LOOK_ALIKES)
    print(
        f"   fourth review's part: {len(SECRETS)} secret-bearing, recall {recall:.4f}"
        f" (missed: {missed or 'none'})"
    )
    print(
        f"   fourth review's part: {len(LOOK_ALIKES)} look-alikes, false positives {false_positives:.2%}"
        f" (changed: {changed or 'none'})"
    )
    return {"review4_recall": recall, "review4_false_positives": false_positives}


if __name__ == "__main__":
    redaction_figures()
