"""How rare a word is in this index, and when shared words mean a conversation.

Rarity is counted in sessions (how many other sessions hold the word), by the
store's search (``doc_freq``), and judged here: shared by the prompt hook, which
decides what to recall, and the search, which leaves common words out of the
hook's match (they would only crowd the rare ones out of the first hits).

Imports only the standard library: the hook must start fast.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, NamedTuple

#: A word in at most this many other sessions is rare: alone it says which earlier
#: conversation is meant (an identifier, a ticket number, an error code).
RARE_SESSIONS = 2
#: ...and in at most this share of them (in an index of a handful of sessions,
#: only a word of a single one is rare).
RARE_SHARE = 0.02
#: A word in more than this share of the sessions is common: it never counts.
COMMON_SHARE = 0.1
#: Distinctive (neither rare nor common) words recall together when a turn holding
#: all of them would be this unlikely by chance: the expected number of sessions
#: holding them all, were they unrelated, times the number of such sets the
#: prompt offers, at most this.
CHANCE = 1.0


def is_common(count: int, sessions: int) -> bool:
    """A word in more than COMMON_SHARE of the sessions (and more than RARE_SESSIONS)."""
    return count > max(RARE_SESSIONS, sessions * COMMON_SHARE)


class Rarity(NamedTuple):
    """How rare each prompt word is in this index, by the sessions holding it."""

    sessions: int
    counts: Mapping[str, int]

    @classmethod
    def of(cls, result: Mapping[str, Any]) -> Rarity | None:
        data = result.get("rarity")
        if not isinstance(data, Mapping) or not isinstance(data.get("terms"), Mapping):
            return None
        return cls(int(data.get("sessions") or 0), data["terms"])

    def rare(self, term: str) -> bool:
        n = self.counts.get(term, 0)
        return 0 < n <= max(1, min(RARE_SESSIONS, int(self.sessions * RARE_SHARE)))

    def common(self, term: str) -> bool:
        n = self.counts.get(term, 0)
        return n == 0 or is_common(n, self.sessions)

    def chance(self, found: set[str], offered: int) -> float:
        """Expected sessions holding every word of ``found`` by chance, times the
        number of sets of that size among the ``offered`` distinctive words."""
        total = max(self.sessions, 1)
        expected = float(total)
        for term in found:
            expected *= self.counts.get(term, total) / total
        return expected * math.comb(max(offered, len(found)), len(found))

    def weight(self, term: str) -> float:
        """Information in a shared word (for ordering hits): log of its rarity."""
        n = self.counts.get(term, 0)
        return math.log((self.sessions + 1) / n) if n else 0.0


def related(found: set[str], terms: list[str], rarity: Rarity) -> bool:
    """Whether a turn sharing the words ``found`` with the prompt is evidence that
    the prompt means its conversation.

    One rare shared word is enough; common words never count; distinctive words
    count together when a turn holding all of them is unlikely by chance. Rarity
    is measured in this index (a fixed bm25 score threshold would mean different
    things on different machines).
    """
    if any(rarity.rare(t) for t in found):
        return True
    distinctive = [t for t in found if not rarity.common(t)]
    offered = sum(1 for t in terms if not rarity.common(t))
    return len(distinctive) >= 2 and rarity.chance(set(distinctive), offered) <= CHANCE
