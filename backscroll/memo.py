"""The prose in a reader's saved memo (``files.state``).

A reader's memo mostly holds what it needs to read on from its saved position:
session ids, the working directory, line numbers, fingerprints. Some readers
also keep prose there: a title candidate, the first prompt, a document to diff
the next version against. Only that prose is redacted, and it is what goes when
its session is forgotten or kept out; the ids and paths stay as the reader wrote
them, so the next read still finds its session and project (a redacted or lost
working directory would put the next turns in another project, past an
exclusion).

Prose is every string at or below a key in :data:`PROSE_KEYS`, wherever that key
sits in the memo. tests/readers/test_contract.py checks, for every reader, that
each copy of a turn's text or a title in its memo sits under one of them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

#: Keys readers keep prose under: titles (``titles``: one per session), the
#: first prompt, and VS Code Copilot Chat's request and response texts.
PROSE_KEYS = frozenset(
    {
        "title", "titles", "customTitle", "computedTitle", "first_user", "prompt", "summary",
        "text", "value", "message",
        "run",  # an unfinished message of Kimi CLI and Grok: [key, role, text, ...]
    }
)  # fmt: skip


def map_prose(state: Any, fn: Callable[[str], str | None], *, inside: bool = False) -> Any:
    """``state`` with ``fn`` applied to every string under a prose key."""
    if isinstance(state, str):
        return fn(state) if inside and state else state
    if isinstance(state, dict):
        return {k: map_prose(v, fn, inside=inside or k in PROSE_KEYS) for k, v in state.items()}
    if isinstance(state, list | tuple):
        return [map_prose(v, fn, inside=inside) for v in state]
    return state


def without_prose(state: Any) -> Any:
    """``state`` with every prose string removed (None in its place), and the
    rank of a removed title back at 0, so that a later prompt titles the session."""
    out = map_prose(state, lambda _: None)
    if isinstance(out, dict) and "rank" in out and out.get("title") is None:
        out["rank"] = 0
    return out
