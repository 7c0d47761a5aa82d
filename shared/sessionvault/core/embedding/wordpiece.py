"""BERT's uncased WordPiece tokenizer in plain Python, read from a `tokenizer.json`.

What the `tokenizers` library computes for all-MiniLM-L6-v2's tokenizer.json (BertNormalizer
with clean_text, handle_chinese_chars and lowercase, so accents stripped; BertPreTokenizer;
WordPiece with "##" and [UNK]; [CLS] ... [SEP]), token for token, without that library and the
huggingface-hub client it brings (~37 MB of the runtime install). The rules, in its order:

1. The special tokens ([CLS], [SEP], [MASK], ...) are cut out of the raw text first, longest
   first, and kept as they are.
2. Normalization, per character: NUL, U+FFFD and control/format/private-use characters are
   dropped (tab, newline and carriage return are whitespace); Unicode whitespace becomes a
   space; a CJK ideograph gets a space on each side; then NFD with the nonspacing marks
   removed; then lowercase, character by character (no final-sigma rule).
3. Words: split at spaces; every punctuation character (ASCII punctuation or Unicode P*) is a
   word of its own.
4. WordPiece: the longest vocabulary prefix, then "##" pieces; a word that cannot be covered,
   or is longer than max_input_chars_per_word, is one [UNK].

`tokenizers` classifies characters with older Unicode tables than Python's `unicodedata`
(CPython 3.11: Unicode 14): a mark, punctuation or format character assigned since is a plain
letter there. _LEGACY lists those code points with the class `tokenizers` gives them, so the
two agree on every code point (tests/integration/test_local_embedder.py checks all of them
against the library)."""

from __future__ import annotations

import json
import re
import unicodedata
from pathlib import Path

# Unicode White_Space, as `tokenizers` tests it (Rust's char::is_whitespace).
_WHITESPACE = frozenset(
    (0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x20, 0x85, 0xA0, 0x1680, *range(0x2000, 0x200B), 0x2028, 0x2029)
) | {0x202F, 0x205F, 0x3000}
# BERT's CJK ranges as `tokenizers` has them: its fifth range starts at 0x2B920, not 0x2B820.
_CJK = (
    (0x4E00, 0x9FFF),
    (0x3400, 0x4DBF),
    (0x20000, 0x2A6DF),
    (0x2A700, 0x2B73F),
    (0x2B740, 0x2B81F),
    (0x2B920, 0x2CEAF),
    (0xF900, 0xFAFF),
    (0x2F800, 0x2FA1F),
)
_CONTROL = frozenset(("Cc", "Cf", "Co", "Cs"))  # unassigned (Cn) characters are kept
_ASCII_PUNCT = frozenset(chr(c) for c in (*range(33, 48), *range(58, 65), *range(91, 97), *range(123, 127)))
# ASCII text: controls dropped (tab, newline, CR and the other whitespace become a space).
_ASCII_CLEAN = {c: None for c in (*range(0, 9), 0x0B, 0x0C, *range(0x0E, 0x20), 0x7F)} | {
    0x09: " ",
    0x0A: " ",
    0x0D: " ",
}
_ASCII_WORDS = re.compile(r"[!-/:-@\[-`{-~]|[^ !-/:-@\[-`{-~]+")

# Plain letters, punctuation, dropped, mark: what a character is to the normalizer and splitter.
LETTER, PUNCT, DROP, MARK = "letter", "punct", "drop", "mark"


class WordPiece:
    """encode(text) -> token ids, with [CLS] and [SEP], at most max_length of them."""

    def __init__(self, path: Path, max_length: int):
        spec = json.loads(path.read_text())
        model = spec["model"]
        if model.get("type") != "WordPiece":
            raise ValueError(f"{path}: not a WordPiece tokenizer")
        self.vocab: dict[str, int] = model["vocab"]
        self.unk = self.vocab[model["unk_token"]]
        self.prefix: str = model["continuing_subword_prefix"]
        self.max_chars = int(model["max_input_chars_per_word"])
        self.cls, self.sep = self.vocab["[CLS]"], self.vocab["[SEP]"]
        self.max_length = max_length
        self.longest = max(len(k.removeprefix(self.prefix)) for k in self.vocab)
        added = sorted((t["content"] for t in spec.get("added_tokens", [])), key=len, reverse=True)
        self.added = {t["content"]: int(t["id"]) for t in spec.get("added_tokens", [])}
        self._split_added = re.compile("(" + "|".join(map(re.escape, added)) + ")") if added else None
        self._words: dict[str, list[int]] = {}
        self._chars: dict[str, str] = {}

    def encode(self, text: str) -> list[int]:
        room = self.max_length - 2
        ids: list[int] = []
        parts = self._split_added.split(text) if self._split_added else [text]
        for i, part in enumerate(parts):
            if i % 2:  # a special token, as written
                ids.append(self.added[part])
            else:
                for word in self.words(part):
                    ids.extend(self.word_ids(word))
                    if len(ids) >= room:
                        break
            if len(ids) >= room:
                break
        return [self.cls, *ids[:room], self.sep]

    def normalize(self, text: str) -> str:
        if text.isascii():
            return text.translate(_ASCII_CLEAN).lower()
        cleaned = "".join([self._char(c) for c in text])
        stripped = "".join([c for c in unicodedata.normalize("NFD", cleaned) if _class(c) != MARK])
        return stripped.replace("\u03a3", "\u03c3").lower()  # per character: no final sigma

    def words(self, text: str) -> list[str]:
        normalized = self.normalize(text)
        if normalized.isascii():
            return _ASCII_WORDS.findall(normalized)
        out: list[str] = []
        for chunk in normalized.split(" "):
            start = 0
            for end, c in enumerate(chunk):
                if _class(c) == PUNCT:
                    if start < end:
                        out.append(chunk[start:end])
                    out.append(c)
                    start = end + 1
            if start < len(chunk):
                out.append(chunk[start:])
        return out

    def word_ids(self, word: str) -> list[int]:
        cached = self._words.get(word)
        if cached is not None:
            return cached
        ids = self._wordpiece(word)
        if len(self._words) > 50_000:  # a long-running server meets many words: stay bounded
            self._words.clear()
        self._words[word] = ids
        return ids

    def _wordpiece(self, word: str) -> list[int]:
        if len(word) > self.max_chars:
            return [self.unk]
        ids: list[int] = []
        start = 0
        while start < len(word):
            for end in range(min(len(word), start + self.longest), start, -1):
                piece = word[start:end] if start == 0 else self.prefix + word[start:end]
                found = self.vocab.get(piece)
                if found is not None:
                    ids.append(found)
                    start = end
                    break
            else:
                return [self.unk]
        return ids

    def _char(self, c: str) -> str:
        out = self._chars.get(c)
        if out is None:
            o = ord(c)
            kind = _class(c)
            if o in (0, 0xFFFD) or kind == DROP:
                out = ""
            elif o in _WHITESPACE:
                out = " "
            elif any(lo <= o <= hi for lo, hi in _CJK):
                out = f" {c} "
            else:
                out = c
            if len(self._chars) > 20_000:  # texts choose their characters: stay bounded
                self._chars.clear()
            self._chars[c] = out
        return out


def _class(c: str) -> str:
    """What `tokenizers` takes the character for (its own Unicode tables: see _LEGACY)."""
    legacy = _LEGACY.get(ord(c))
    if legacy is not None:
        return legacy
    if c in _ASCII_PUNCT:
        return PUNCT
    category = unicodedata.category(c)
    if category in _CONTROL and c not in "\t\n\r":
        return DROP
    if category == "Mn":
        return MARK
    if category[0] == "P":
        return PUNCT
    return LETTER


def _legacy(table: str) -> dict[int, str]:
    kinds = {"L": LETTER, "P": PUNCT, "D": DROP, "M": MARK}
    out: dict[int, str] = {}
    for entry in table.split():
        kind, span = entry[0], entry[1:]
        lo, _, hi = span.partition("-")
        for code in range(int(lo, 16), int(hi or lo, 16) + 1):
            out[code] = kinds[kind]
    return out


# Code points whose class in `tokenizers` 0.23 differs from CPython 3.11-3.13's unicodedata:
# L = a plain letter there (unassigned in its tables), P = punctuation, D = dropped, M = mark.
# Generated by comparing every code point with the library (see the module docstring).
_LEGACY = _legacy("""
L61D L7FD L890-891 L898-89F L8CA-8E2 L9FD-9FE LA76 LAFA-AFF LB55 LC04 LC3C LC77 LC84 LD00
LD3B-D3C LD81 LEBA LECE P166D D1734 L180F L1885-1886 L1ABF-1ACE L1B7D-1B7E L1DF6-1DFB L2E43-2E4F
L2E52-2E5D LA82C LA8C5 LA8FF LA9BD L10D24-10D27 L10EAB-10EAD L10EFD-10EFF L10F46-10F50
L10F55-10F59 L10F82-10F89 L11070 L11073-11074 L110C2 L110CD P111C9 L111CF L1123E L11241 L1133B
L11438-1143F L11442-11444 L11446 L1144B-1144F L1145A-1145B L1145D-1145E L11660-1166C L116B9
L1182F-11837 L11839-1183B L1193B-1193C L1193E L11943-11946 L119D4-119D7 L119DA-119DB L119E0
L119E2 L11A01-11A0A L11A33-11A38 L11A3B-11A47 L11A51-11A56 L11A59-11A5B L11A8A-11A96
L11A98-11A9C L11A9E-11AA2 L11B00-11B09 L11C30-11C36 L11C38-11C3D L11C3F L11C41-11C45
L11C70-11C71 L11C92-11CA7 L11CAA-11CB0 L11CB2-11CB3 L11CB5-11CB6 L11D31-11D36 L11D3A
L11D3C-11D3D L11D3F-11D45 L11D47 L11D90-11D91 L11D95 L11D97 L11EF3-11EF4 L11EF7-11EF8
L11F00-11F01 L11F36-11F3A L11F40 L11F42-11F4F L11FFF L12FF1-12FF2 L13430-13440 L13447-13455
L16E97-16E9A L16F4F L16FE2 L16FE4 L1CF00-1CF2D L1CF30-1CF46 L1E000-1E006 L1E008-1E018
L1E01B-1E021 L1E023-1E024 L1E026-1E02A L1E08F L1E130-1E136 L1E2AE L1E2EC-1E2EF L1E4EC-1E4EF
L1E944-1E94A L1E95E-1E95F
""")
