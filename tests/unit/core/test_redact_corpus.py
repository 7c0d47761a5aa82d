"""The redaction corpus (tests/fixtures/secrets/corpus.py): secret-bearing texts in the shapes
transcripts hold and benign look-alikes. What benchmarks/redaction.py prints is held here:
recall at least 0.99, false positives at most 1 %, and no shape family left behind."""

from __future__ import annotations

from collections import Counter

import pytest

from sessionvault.core.redact import scrub_text
from tests.fixtures.secrets.corpus import Case, benign_cases, leaked, secret_cases

SECRET_CASES = secret_cases()
BENIGN_CASES = benign_cases()


def caught(case: Case) -> bool:
    scrubbed, _ = scrub_text(case.text)
    return not any(leaked(secret, scrubbed) for secret in case.secrets)


def test_the_corpus_is_large_enough_and_deterministic() -> None:
    assert len(SECRET_CASES) >= 300 and len(BENIGN_CASES) >= 300
    assert secret_cases() == SECRET_CASES and benign_cases() == BENIGN_CASES
    shapes = Counter(case.shape for case in SECRET_CASES)
    assert set(shapes) == {"command", "output", "config", "trace", "request", "chat"}


def test_recall_is_at_least_99_percent() -> None:
    missed = [case.text for case in SECRET_CASES if not caught(case)]
    assert 1 - len(missed) / len(SECRET_CASES) >= 0.99, missed


def test_false_positives_are_at_most_1_percent() -> None:
    changed = [case.text for case in BENIGN_CASES if scrub_text(case.text) != (case.text, [])]
    assert len(changed) / len(BENIGN_CASES) <= 0.01, changed


@pytest.mark.parametrize("shape", ["command", "output", "config", "trace", "request", "chat"])
def test_every_shape_keeps_its_recall(shape: str) -> None:
    cases = [case for case in SECRET_CASES if case.shape == shape]
    assert sum(caught(case) for case in cases) / len(cases) >= 0.97


def test_the_leak_check_can_fail() -> None:
    secret = "Zq8Rt5Lm2Np9Xw4K"
    assert leaked(secret, f"x {secret} y") and leaked(secret, f"x {secret[:10]}… y")
    assert not leaked(secret, "x [REDACTED:secret_assignment] y")
