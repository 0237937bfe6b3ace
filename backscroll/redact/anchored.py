"""One regex that finds many literals in a single scan, each from its rarest character.

``re`` has no multi-literal search: an alternation of literals is tried at
every character that can start one of them, one alternative after another, and
with dozens of prefixes that is nearly every letter. Here each literal is
matched from its *anchor*, its rarest character in transcript text: the
pattern's alternatives all start with an anchor character, so ``re`` skips
every other character, and the literal's characters before the anchor are
checked by fixed-width look-behinds (one branch per character, as a trie).
Only where a whole literal (and what must follow it) holds does the match go on.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

#: Characters per thousand in transcript text (the bench corpus and the sample
#: transcripts, whichever is higher), to pick the character the scan stops at:
#: the rarer, the fewer places the pattern is tried.
_SHARE = {
    **dict(zip("abcdefghijklmnopqrstuvwxyz", (
        45, 11.4, 20.1, 27.8, 106, 20.9, 11.5, 43, 47.4, 1.1, 9.8, 25.7, 28.3,
        47.8, 44.1, 21.6, 1.1, 49.9, 50.1, 75.1, 24, 5, 14, 12.5, 12.5, 0.5,
    ), strict=True)),
    **dict(zip("ABCDEFGHIJKLMNOPQRSTUVWXYZ", (
        1.5, 0.9, 1.7, 1.3, 1.6, 0.8, 0.6, 0.7, 3, 0.5, 0.5, 1.7, 1.1,
        1.1, 1.1, 1.6, 0.3, 1.3, 2.3, 4.7, 2.2, 0.6, 0.7, 0.4, 0.7, 0.9,
    ), strict=True)),
    **dict(zip("0123456789", (8.5, 6, 5.5, 3.2, 3.7, 3.4, 3.2, 2.6, 3.3, 2.8), strict=True)),
    "_": 11.5, "-": 9.8, ".": 11.4, "/": 5.5, ":": 24.1, "=": 2, "~": 0.1,
}  # fmt: skip


def _cost(char: str) -> float:
    """How costly a stop at ``char`` is. Lower-case letters and digits count
    three times their share: they come in runs (words, hashes), where the
    pattern is tried at every one (measured: 94 MB/s against 54 without)."""
    share = _SHARE.get(char, 1.0)
    return 3 * share if char.islower() or char.isdigit() else share


@dataclass(frozen=True, slots=True)
class Literal:
    """``text``, then the pattern ``after``; the empty group ``tag`` marks it."""

    text: str
    after: str
    tag: str
    #: No letter, digit, '_' or '-' right before the literal.
    boundary: bool = True
    #: Tried after every other literal that could match at the same place.
    last: bool = False


class _Node:
    __slots__ = ("children", "last", "leaves")

    def __init__(self) -> None:
        self.children: dict[str, _Node] = {}
        self.leaves: list[str] = []
        self.last: list[str] = []


_ANY = r"[\s\S]"


def _behind(node: _Node, depth: int) -> str:
    """Alternatives for the characters before the anchor, nearest first, each
    checked by a fixed-width look-behind from just after the anchor."""
    branches = list(node.leaves)
    for char, child in sorted(node.children.items()):
        look = f"(?<={re.escape(char)}{_ANY}{{{depth + 1}}})"
        branches.append(look + _behind(child, depth + 1))
    branches += node.last
    return branches[0] if len(branches) == 1 else "(?:" + "|".join(branches) + ")"


def compile_anchored(
    literals: list[Literal], *, tokens: bool = False
) -> tuple[re.Pattern[str], dict[str, int]]:
    """The pattern, and for each tag how many characters of its literal come
    before the anchor (a match starts at the anchor; the literal that many
    characters earlier). ``lastgroup`` of a match is its tag when ``after``
    has no capturing group. ``tokens``: every literal and what follows it is a
    run of non-space characters."""
    roots: dict[str, _Node] = {}
    anchors: dict[str, int] = {}
    for literal in literals:
        text = literal.text
        at = min(range(len(text)), key=lambda i: (_cost(text[i]), i))
        anchors[literal.tag] = at
        node = roots.setdefault(text[at], _Node())
        for char in reversed(text[:at]):
            node = node.children.setdefault(char, _Node())
        rest = re.escape(text[at + 1 :])
        if literal.last:
            node.last.append(f"(?={rest})(?P<{literal.tag}>){literal.after}")
            continue
        boundary = f"(?<![A-Za-z0-9_-]{_ANY}{{{at + 1}}})" if literal.boundary else ""
        node.leaves.append(f"{boundary}{rest}(?P<{literal.tag}>){literal.after}")
    # re tries the alternatives in order at each anchor it stops at: the most
    # frequent anchors first, so that the common stops fail after few tests.
    order = sorted(roots, key=_cost, reverse=True)
    # For tokens, after a sentence's '.' or a list's '-' the test stops at the space.
    ahead = r"(?=\S)" if tokens else ""
    tops = [re.escape(char) + ahead + _behind(roots[char], 0) for char in order]
    return re.compile("|".join(tops)), anchors
