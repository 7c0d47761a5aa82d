"""One rule for the names of people and workspaces (they share one namespace, and others see
them: `offered_by`, `to_person`, the members page). Applied at creation; a lookup takes what a
person typed in its canonical form (NFKC, trimmed) so that it finds what creation stored.

A name is NFKC-normalized and must then: be 1-64 characters; hold no control, format,
zero-width or other invisible character, and no space at either end; not mix scripts in a way
that makes it a look-alike (Unicode TR 39's confusable mixed-script check, from the
`confusable_homoglyphs` tables: `team` spelt with a Cyrillic e is refused, `日本チーム` is
fine); and
differ from every existing name by more than letter case (`Team` beside `team` is refused:
`key` is what uniqueness compares). Existing names that break the rule are reported by
`problem` (doctor, `admin list_users`), never changed behind anyone's back."""

from __future__ import annotations

import unicodedata

MAX_CHARS = 64
# Categories no visible name needs: controls, format characters (zero-width space and joiners,
# bidi controls, the BOM), surrogates, private use, unassigned; and separators other than the
# plain space.
_REFUSED_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})


def canonical(name: str) -> str:
    """The form a name is stored and looked up in: NFKC, without surrounding space."""
    return unicodedata.normalize("NFKC", name).strip()


def key(name: str) -> str:
    """What uniqueness compares: the canonical form, case-folded."""
    return canonical(name).casefold()


def problem(name: str) -> str:
    """Why `name` (as stored, or as asked for) breaks the rule; "" when it keeps it."""
    if name != name.strip():
        return "it starts or ends with a space"
    normal = unicodedata.normalize("NFKC", name)
    if not normal:
        return "it is empty"
    if len(normal) > MAX_CHARS:
        return f"it is longer than {MAX_CHARS} characters"
    for ch in normal:
        category = unicodedata.category(ch)
        if category in _REFUSED_CATEGORIES or (category == "Zs" and ch != " "):
            return f"it holds an invisible or control character (U+{ord(ch):04X})"
    if _mixed_look_alike(normal):
        return "it mixes scripts into a look-alike of another name (Unicode TR 39)"
    return ""


# Scripts that one writing system mixes by nature (TR 39's "highly restrictive" level): each
# set counts as one script. Common and inherited characters (digits, punctuation, combining
# marks) belong to every script.
_ONE_WRITING = (
    frozenset({"HAN", "HIRAGANA", "KATAKANA"}),
    frozenset({"HAN", "HANGUL"}),
    frozenset({"HAN", "BOPOMOFO"}),
)


def _mixed_look_alike(name: str) -> bool:
    """More than one script, beyond those one writing system mixes, and a character among them
    that looks like one of another script: the mixed-script confusable TR 39 warns of."""
    from confusable_homoglyphs import categories, confusables  # type: ignore[import-untyped]

    scripts = categories.unique_aliases(name) - {"COMMON", "INHERITED"}
    if len(scripts) <= 1 or any(scripts <= together for together in _ONE_WRITING):
        return False
    return bool(confusables.is_confusable(name))


def problems(names: list[str]) -> list[str]:
    """For each of `names` (existing ones, say), why it breaks the rule: its own problem, or
    that it differs from an earlier name of the list by letter case only; "" when it keeps it."""
    first: dict[str, str] = {}
    found = []
    for name in names:
        earlier = first.setdefault(key(name), name)
        found.append(
            problem(name) or (f"differs from {earlier!r} by letter case only" if earlier != name else "")
        )
    return found
