"""The words a session can be found by: an identifier, path, error code or ticket whole and in
its parts, so that the exact name and its words both match; common words and one letter never."""

from __future__ import annotations

import pytest

from sessionvault.core import crypto
from sessionvault.core.terms import MAX_TERM, terms


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("parse_invoice_rounding", {"parse_invoice_rounding", "parse", "invoice", "rounding"}),
        ("parseInvoiceRounding", {"parseinvoicerounding", "parse", "invoice", "rounding"}),
        ("HTTPServerError", {"httpservererror", "http", "server", "error"}),
        ("src/billing/invoice.py", {"src/billing/invoice.py", "src", "billing", "invoice", "py"}),
        ("ERR_CONN_REFUSED", {"err_conn_refused", "err", "conn", "refused"}),
        ("JIRA-4821", {"jira-4821", "jira", "4821"}),
        ("see #482.", {"see", "482"}),
        ("E1234", {"e1234", "1234"}),
        ("the café is open", {"café", "open"}),
    ],
)
def test_a_name_is_a_term_whole_and_in_its_parts(text, expected):
    assert set(terms(text)) == expected


def test_a_term_is_counted_each_time_it_occurs_and_sentence_punctuation_is_not_part_of_it():
    counted = terms("Retry the upload. The upload: retried; upload-retry.")
    assert counted["upload"] == 3 and counted["upload-retry"] == 1 and "upload." not in counted


def test_common_words_one_letter_parts_and_blobs_are_not_terms():
    assert terms("it is a the of and x") == {}
    assert terms("a" + "0" * MAX_TERM) == {}  # a hash or a blob: nobody searches by it


def test_tokens_are_keyed_per_space_and_say_nothing_without_the_key():
    dek = bytes(range(32))
    one, two = crypto.term_key(dek, "space-1"), crypto.term_key(dek, "space-2")
    assert crypto.term_token(one, "invoice") == crypto.term_token(one, "invoice")
    assert crypto.term_token(one, "invoice") != crypto.term_token(two, "invoice")
    assert crypto.term_token(one, "invoice") != crypto.term_token(
        crypto.term_key(bytes(32), "space-1"), "invoice"
    )
    assert len(crypto.term_token(one, "invoice")) == 16
