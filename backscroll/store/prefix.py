"""Prefix terms (``pars*``) against a full-text index of word stems.

The index holds Porter stems, and FTS5 stems a prefix before matching it, so
``pars*`` became ``par*`` (parallel, part) and ``optimiz*`` found nothing (every
word starting so is indexed as ``optim``). A prefix is matched in two steps:

1. Candidates, a superset of the turns holding a word that starts with it: the
   prefix as FTS5 stems it (a whole word: ``using`` → ``us``, ``copying`` →
   ``copi``), the stems that begin with all but its last letter (Porter may
   change the last letter it keeps: ``busy`` → ``busi``), and the shorter stems
   the index holds that the prefix itself begins with (``optim`` for
   ``optimiz``; from MIN_STEM letters, at most MAX_STRIP short), looked up in
   the index's vocabulary (:func:`held_stems`).
2. Each alternative that holds the prefix (its own group, an ``OR`` group, the
   whole query under "any word") is checked on the turn's text for a word that
   really starts with it (:func:`word_prefix`, an SQL function on every
   connection of the index; match.prefix_checks), and so is a prefix to leave out.

The word still being typed in the viewer is not matched so (match.Term.loose):
FTS5's own prefix of its stem is a fast hint that follows the keystrokes.
"""

from __future__ import annotations

import re
import sqlite3
import unicodedata
from collections.abc import Generator
from functools import lru_cache
from typing import Any

#: The SQL function that checks a candidate turn: ``bs_word_prefix(text, prefix)``.
FUNCTION = "bs_word_prefix"
#: The index's vocabulary (its stems), made on the connection when first needed.
VOCAB = (
    "CREATE VIRTUAL TABLE IF NOT EXISTS temp.turns_vocab USING fts5vocab(main, 'turns_fts', 'row')"
)
#: A shorter stem is a candidate from this many letters (two-letter stems such as
#: "in" are in nearly every turn), and at most MAX_STRIP letters shorter than
#: the prefix (Porter strips "alization" to leave "gener" of "generaliz").
MIN_STEM = 3
MAX_STRIP = 5


def fold(text: str) -> str:
    """Lower case without diacritics, as the index's tokenizer (unicode61) folds."""
    lowered = text.lower()
    if lowered.isascii():
        return lowered
    decomposed = unicodedata.normalize("NFKD", lowered)
    return "".join(c for c in decomposed if not unicodedata.combining(c))


def expandable(prefix: str) -> bool:
    """A single word (letters and digits): what the index holds as one token."""
    return bool(prefix) and prefix.isalnum()


@lru_cache(maxsize=256)
def _folded(prefix: str) -> str:
    return fold(prefix)


def word_prefix(text: object, prefix: object) -> int:
    """1 when ``text`` holds a word starting with ``prefix`` (both folded), else 0.

    Called by SQLite for each candidate turn, so it finds the prefix with
    ``str.find`` and looks at the character before each place: a word starts
    where a letter or digit follows anything else ("_" and "-" split words in
    the index: parse_config holds "config")."""
    if not isinstance(text, str) or not isinstance(prefix, str) or not prefix:
        return 0
    word = _folded(prefix)
    low = text.lower() if text.isascii() else fold(text)
    at = low.find(word)
    while at >= 0:
        if at == 0 or not low[at - 1].isalnum():
            return 1
        at = low.find(word, at + 1)
    return 0


def register(conn: sqlite3.Connection) -> None:
    conn.create_function(FUNCTION, 2, word_prefix, deterministic=True)


async def register_async(conn: Any) -> None:
    """:func:`register` on an aiosqlite connection."""
    await conn.create_function(FUNCTION, 2, word_prefix, deterministic=True)


def shorter_stems(prefix: str, common: frozenset[str] = frozenset()) -> list[str]:
    """The stems to look up for ``prefix``: its own beginnings from MIN_STEM letters
    (and at most MAX_STRIP short of it) up to all but its last two (the longer
    ones are in the candidates' prefix); ``common`` words are never candidates."""
    folded = fold(prefix)
    low = max(MIN_STEM, len(folded) - MAX_STRIP)
    return [folded[:k] for k in range(low, len(folded) - 1) if folded[:k] not in common]


def stem_prefix(prefix: str) -> str:
    """What the candidates' prefix query starts from: all but the last letter of a
    prefix of four letters or more (Porter may change the last letter it keeps)."""
    folded = fold(prefix)
    return folded[:-1] if len(folded) >= 4 else folded


def held_stems(
    prefixes: list[str], common: frozenset[str] = frozenset()
) -> Generator[tuple[str, tuple[Any, ...]], list[Any], dict[str, tuple[str, ...]]]:
    """Per prefix, the shorter stems (:func:`shorter_stems`) the index holds."""
    wanted = sorted({s for p in prefixes if expandable(p) for s in shorter_stems(p, common)})
    found: set[str] = set()
    if wanted:
        yield (VOCAB, ())
        marks = ",".join("?" * len(wanted))
        rows = yield (f"SELECT term FROM temp.turns_vocab WHERE term IN ({marks})", tuple(wanted))
        found = {str(r[0]) for r in rows}
    return {p: tuple(s for s in shorter_stems(p, common) if s in found) for p in prefixes}


def unmark(marked: str, prefixes: list[str]) -> str:
    """``marked`` (highlight() output, marks ``\x02``...``\x03``) without the marks
    on words that start with none of ``prefixes``."""
    folded = [_folded(p) for p in prefixes]

    def keep(m: re.Match[str]) -> str:
        word = m.group(1)
        low = word.lower() if word.isascii() else fold(word)
        return m.group(0) if any(low.startswith(p) for p in folded) else word

    return _MARKED.sub(keep, marked)


_MARKED = re.compile("\x02([^\x03]*)\x03")
