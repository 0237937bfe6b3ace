"""Document frequency for the prompt hook's searches (``doc_freq``): in how many
sessions each word occurs, counted through FTS5 (stems, identifier phrases), and
the query without the words common in this index.

Query generators like those in :mod:`backscroll.store.queries`.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

from backscroll.protocol import SearchParams
from backscroll.rarity import is_common
from backscroll.store import match
from backscroll.store.queries import Row

#: Matching turns read per word to count its sessions: past this many, a word is
#: common whatever the count says (and counting stays cheap for common words).
RARITY_CAP = 500


def rarity(
    p: SearchParams, terms: list[str], fts: bool
) -> Generator[tuple[str, tuple[Any, ...]], list[Row], dict[str, Any]]:
    """How many sessions hold the index, and how many of them hold each term.

    Sessions, not turns: an identifier discussed over ten turns of one
    conversation is as rare as one said once. Counted through FTS5 itself, so a
    word is counted in its stemmed form and an identifier like ``parse_config``
    as the phrase it indexes as. The caller's own session is left out of both.
    """
    skip, skip_args = ("", ()) if not p.exclude_session else (
        " AND s.session_id != ?", (p.exclude_session,))  # fmt: skip
    total = yield (f"SELECT count(*) FROM sessions s WHERE 1{skip}", skip_args)
    counts: dict[str, int] = {}
    for term in terms:
        one = match.Parsed(groups=[[match.Term(term)]])
        if fts:
            inner = (
                "SELECT t.session FROM turns_fts JOIN turns t ON t.id = turns_fts.rowid"
                f" JOIN sessions s ON s.id = t.session WHERE turns_fts MATCH ?{skip}"
            )
            args: tuple[Any, ...] = (match.fts_match(one, False), *skip_args)
        else:
            like, like_args = match.like_where(one, False)
            inner = (
                "SELECT t.session FROM turns t JOIN sessions s ON s.id = t.session"
                f" WHERE {like}{skip}"
            )
            args = (*like_args, *skip_args)
        rows = yield (
            f"SELECT count(DISTINCT session) FROM ({inner} LIMIT {RARITY_CAP})",
            args,
        )
        counts[term] = int(rows[0][0])
    return {"sessions": int(total[0][0]), "terms": counts, "cap": RARITY_CAP}


def without_common(parsed: match.Parsed, found: dict[str, Any]) -> match.Parsed:
    """The query without the words common in this index (``doc_freq``: the prompt
    hook's search, where they would only crowd rare words out of the first hits)."""
    counts, sessions = found["terms"], found["sessions"]
    groups = [
        kept
        for group in parsed.groups
        if (kept := [t for t in group if not is_common(counts.get(t.text, 0), sessions)])
    ]
    return match.Parsed(groups=groups, exclude=parsed.exclude, notes=parsed.notes)
