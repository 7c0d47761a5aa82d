"""The sign bits a large space's search shortlists its rows by (core/vectors.signs, apart)."""

from __future__ import annotations

import numpy as np

from sessionvault.core import vectors


def test_a_row_is_zero_bits_from_itself_and_every_bit_from_its_opposite():
    rng = np.random.default_rng(1)
    rows = rng.standard_normal((5, 384)).astype(np.float32)
    words = vectors.signs(rows)
    assert words.shape == (6, 5)  # word-major: 64 dimensions a word
    assert list(vectors.apart(words, vectors.signs(rows[2]))) == [
        int(np.sum((rows[i] > 0) != (rows[2] > 0))) for i in range(5)
    ]
    assert vectors.apart(words, vectors.signs(-rows[3]))[3] == 384


def test_dimensions_that_fill_no_whole_word_are_padded_alike_in_rows_and_query():
    rows = np.array([[1.0] * 70, [-1.0] * 70], dtype=np.float32)
    assert list(vectors.apart(vectors.signs(rows), vectors.signs(rows[0]))) == [0, 70]
