"""The search query language, and the FTS5 MATCH string (or LIKE terms) built from it.

What a user may type::

    word other        turns with both (all words; ``any`` makes it either)
    "a phrase"        the words in this order
    word*             any word starting so (``pars*``: parse, parser, parsing)
    -word, NOT word   leave out turns holding the word (or "-a phrase")
    a OR b            either (``AND`` between words is the default and may be written)

Every word reaches FTS5 as a quoted string (``"word"``, ``"word" *``), and the
operators are written here, so nothing a user types can make an FTS5 syntax
error. FTS5 syntax backscroll does not take (``NEAR(...)``, a column filter,
parentheses, ``^``) is searched as plain words; ``NEAR`` gets a one-line note
saying so. A query that cannot run (only words to leave out) gets a one-line
explanation instead of hits.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from backscroll.store.prefix import FUNCTION, stem_prefix

_TOKEN = re.compile(r'(-?)"([^"]*)"(\*?)|(\S+)')
_WORDISH = re.compile(r"\w")


@dataclass(frozen=True)
class Term:
    text: str
    prefix: bool = False
    #: A prefix's shorter stems held by the index (store/prefix.py); set when expanded.
    stems: tuple[str, ...] | None = None
    #: The word still being typed (search as you type): FTS5's stemmed prefix as it
    #: is, never expanded nor checked (fast, and it keeps the word's stem matches).
    loose: bool = False

    def fts(self) -> str:
        if self.prefix and self.stems is not None:
            # Candidates for a word starting with the prefix (checked in SQL after):
            # the prefix as FTS5 stems it (using -> us, copying -> copi, a whole
            # word cut short by many letters), the stems starting with all but its
            # last letter, and the shorter stems the index holds.
            alternatives = [_quoted(self.text) + " *", _quoted(stem_prefix(self.text)) + " *"]
            alternatives += [_quoted(stem) for stem in self.stems]
            return "(" + " OR ".join(dict.fromkeys(alternatives)) + ")"
        return _quoted(self.text) + (" *" if self.prefix else "")

    @property
    def checked(self) -> bool:
        """A prefix whose candidates are checked against the text (bs_word_prefix)."""
        return self.prefix and self.stems is not None


def _quoted(text: str) -> str:
    return '"' + text.replace('"', '""') + '"'


@dataclass
class Parsed:
    """Positive terms in AND-ed groups of OR-ed alternatives, and exclusions."""

    groups: list[list[Term]] = field(default_factory=list)
    exclude: list[Term] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def terms(self) -> list[str]:
        """The words to find, in order (for messages, highlighting and rarity)."""
        return [t.text for group in self.groups for t in group]

    @property
    def as_typed(self) -> str:
        """The words to find as the user typed them (``pars*`` keeps its star), for messages."""
        return " ".join(t.text + ("*" if t.prefix else "") for g in self.groups for t in g)

    def only_exclusions(self) -> bool:
        """Whether the query has words to leave out and none to find."""
        return not self.groups and bool(self.exclude)


def parse(query: str) -> Parsed:
    out = Parsed()
    query = query.replace("\x00", " ")  # FTS5 reads a string only up to a NUL
    pending_or = False
    negate = False
    for m in _TOKEN.finditer(query):
        dash, quoted, star, bare = m.groups()
        if bare is not None:
            if bare == "OR":
                pending_or = bool(out.groups)
                continue
            if bare == "AND":
                continue
            if bare == "NOT":
                negate = True
                continue
            if bare.startswith("NEAR(") and "NEAR" not in " ".join(out.notes):
                out.notes.append(
                    "NEAR(...) is not supported: its words were searched anywhere in a turn"
                )
            is_exclusion = bare.startswith("-") and not bare.startswith("--")
            text = bare[1:] if is_exclusion else bare
            prefix = text.endswith("*") and bool(_WORDISH.search(text))
            text = text.rstrip("*") if prefix else text
            text = text.removeprefix("NEAR(").strip("()^")
            term = Term(text, prefix)
            exclude = is_exclusion or negate
        else:
            term = Term(quoted.strip(), bool(star))
            exclude = bool(dash) or negate
        negate = False
        if not _WORDISH.search(term.text):
            continue
        if exclude:
            out.exclude.append(term)
            pending_or = False
        elif pending_or:
            out.groups[-1].append(term)
            pending_or = False
        else:
            out.groups.append([term])
    return out


def fts_match(parsed: Parsed, any_word: bool) -> str:
    """The FTS5 MATCH string: every term quoted, operators written here. A checked
    prefix to leave out is left to :func:`prefix_checks` (its candidates are more
    than the turns to leave out)."""
    groups = ["(" + " OR ".join(t.fts() for t in g) + ")" for g in parsed.groups]
    find = " OR ".join(groups) if any_word else " AND ".join(groups)
    exclude = [t for t in parsed.exclude if not t.checked]
    if not exclude:
        return find
    return f"({find}) NOT (" + " OR ".join(t.fts() for t in exclude) + ")"


def prefix_checks(parsed: Parsed, any_word: bool) -> tuple[str, list[str]]:
    """SQL on ``t`` (`` AND ...``) keeping, of a prefix's candidates, the turns
    with a word that starts with it. Every alternative that holds a checked prefix
    is checked: the prefix's own group (all words wanted), an ``OR`` group, or
    the whole query (any word): a prefix there by its text, another word by the
    full-text index. A prefix to leave out is checked by its text."""
    where: list[str] = []
    args: list[str] = []
    alternatives = [[t for g in parsed.groups for t in g]] if any_word else parsed.groups
    for terms in alternatives:
        if not any(t.checked for t in terms):
            continue
        either: list[str] = []
        for term in terms:
            if term.checked:
                either.append(f"{FUNCTION}(t.text, ?)")
                args.append(term.text)
            else:
                either.append("t.id IN (SELECT rowid FROM turns_fts WHERE turns_fts MATCH ?)")
                args.append(term.fts())
        where.append("(" + " OR ".join(either) + ")")
    for term in parsed.exclude:
        if term.checked:
            where.append(f"NOT {FUNCTION}(t.text, ?)")
            args.append(term.text)
    return "".join(" AND " + w for w in where), args


def with_stems(parsed: Parsed, stems: dict[str, tuple[str, ...]]) -> Parsed:
    """``parsed`` with each expandable prefix term's held shorter stems set."""

    def one(term: Term) -> Term:
        if term.prefix and not term.loose and term.text in stems:
            return Term(term.text, True, stems[term.text])
        return term

    return Parsed(
        [[one(t) for t in g] for g in parsed.groups],
        [one(t) for t in parsed.exclude],
        parsed.notes,
    )


def like_escape(text: str) -> str:
    return "%" + text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


def like_where(parsed: Parsed, any_word: bool) -> tuple[str, list[str]]:
    """The same query as LIKE terms on ``t.text`` (no FTS5: substrings, no stemming)."""
    like = "t.text LIKE ? ESCAPE '\\'"
    groups = ["(" + " OR ".join(like for _ in g) + ")" for g in parsed.groups]
    args = [like_escape(t.text) for g in parsed.groups for t in g]
    where = "(" + (" OR " if any_word else " AND ").join(groups) + ")"
    for t in parsed.exclude:
        where += " AND t.text NOT LIKE ? ESCAPE '\\'"
        args.append(like_escape(t.text))
    return where, args
