"""The words a session can be found by (issue 36): identifiers, error codes, paths and ticket ids
as well as plain words, normalised so that a query finds what a session names however it was
spelled. Pure: the keyed tokens they become are `core.crypto.term_tokens`.

A term is kept whole (lower-cased: `parse_invoice_rounding`, `src/billing/invoice.py`,
`err_conn_refused`, `jira-1234`) and split into its parts at `_`, `/`, `.`, `-`, `:`, `#` and
case changes (`parseInvoiceRounding` -> `parse`, `invoice`, `rounding`), so both the exact name
and its words match. Very common English words and one-letter parts are not terms: they would
match nearly every session and say nothing."""

from __future__ import annotations

import re
from collections import Counter

# A run of characters a name, path, code or ticket is made of; a trailing `.`, `:` or `-` is
# sentence punctuation, not part of it.
_RUN = re.compile(r"[\w./:#-]+")
_SPLIT = re.compile(r"[_/.:#-]+")
_CASE = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")
_TRIM = "./:#-_"
MAX_TERM = 64  # longer runs (hashes, blobs) are not what anyone searches by
_STOP_WORDS = (
    "a about after all also an and any are as at be because been before but by can could did do "
    "does done for from had has have he her here his how if in into is it its just more most no "
    "not now of on once only or other our out over she should so some such than that the their "
    "them then there these they this those to too under up us very was we were what when where "
    "which while who why will with would you your"
)
STOP = frozenset(_STOP_WORDS.split())


def _words(run: str) -> list[str]:
    """The parts of one run: split at separators, then at case changes (a camelCase piece is
    kept whole as well); a piece that is not ASCII is not split by case."""
    words: list[str] = []
    for piece in _SPLIT.split(run):
        cased = _CASE.findall(piece) if piece.isascii() else [piece]
        words += cased
        if len(cased) > 1:
            words.append(piece)
    return [w.lower() for w in words]


def _kept(term: str) -> bool:
    return len(term) > 1 and term not in STOP


def terms(text: str) -> Counter[str]:
    """Each term of `text` and how often it occurs."""
    found: Counter[str] = Counter()
    for match in _RUN.finditer(text):
        run = match.group().strip(_TRIM)
        if len(run) > MAX_TERM:
            continue
        whole = run.lower()
        found.update(t for t in [whole, *(w for w in _words(run) if w != whole)] if _kept(t))
    return found
