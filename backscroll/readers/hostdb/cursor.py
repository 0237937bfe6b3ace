"""SQL for Cursor's ``state.vscdb`` key/value stores (VS Code storage), opened read-only.

The global database is large (hundreds of MB) and shared with all editor state,
so it is only ever read by key range on the ``key`` index: the ``composerData:``
rows for fingerprints (their ``lastUpdatedAt``, size and status are extracted in
SQL, no row body crosses into Python), then the composer rows and
``bubbleId:<composer>:`` ranges of the chats that changed. Each statement is its
own short read transaction.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass

from backscroll.readers.hostdb import table_names

COMPOSER_PREFIX = "composerData:"
BUBBLE_PREFIX = "bubbleId:"
_CHUNK = 400


@dataclass(frozen=True, slots=True)
class ComposerPrint:
    composer_id: str
    last_updated: str | None
    size: int
    status: str | None
    #: JSON array text of the composer's sub-agent composer ids, or None.
    subagents: str | None


def tables(conn: sqlite3.Connection) -> set[str]:
    return table_names(conn)


def _upper(prefix: str) -> str:
    """Exclusive upper bound of a key-prefix range (``abc:`` -> ``abc;``)."""
    return prefix[:-1] + chr(ord(prefix[-1]) + 1)


def composer_prints(conn: sqlite3.Connection) -> list[ComposerPrint]:
    """The change fingerprint of every ``composerData:`` row."""
    body = "CAST(value AS TEXT)"
    rows = conn.execute(
        f"SELECT substr(key, {len(COMPOSER_PREFIX) + 1}), length(value), "
        f"CASE WHEN json_valid({body}) THEN json_extract({body}, '$.lastUpdatedAt') END, "
        f"CASE WHEN json_valid({body}) THEN json_extract({body}, '$.status') END, "
        f"CASE WHEN json_valid({body}) THEN json_extract({body}, '$.subagentComposerIds') END "
        "FROM cursorDiskKV WHERE key >= ? AND key < ? AND value IS NOT NULL",
        (COMPOSER_PREFIX, _upper(COMPOSER_PREFIX)),
    ).fetchall()
    return [
        ComposerPrint(
            str(r[0]),
            None if r[2] is None else str(r[2]),
            int(r[1] or 0),
            r[3] if isinstance(r[3], str) else None,
            r[4] if isinstance(r[4], str) else None,
        )
        for r in rows
    ]


def composer_values(conn: sqlite3.Connection, ids: Iterable[str]) -> dict[str, bytes | str]:
    """``composerData`` bodies of the given composers (those that still exist)."""
    wanted = [COMPOSER_PREFIX + i for i in ids]
    out: dict[str, bytes | str] = {}
    for start in range(0, len(wanted), _CHUNK):
        chunk = wanted[start : start + _CHUNK]
        marks = ", ".join("?" for _ in chunk)
        for key, value in conn.execute(
            f"SELECT key, value FROM cursorDiskKV WHERE key IN ({marks}) AND value IS NOT NULL",
            chunk,
        ).fetchall():
            out[str(key)[len(COMPOSER_PREFIX) :]] = value
    return out


def bubble_values(conn: sqlite3.Connection, composer_id: str) -> dict[str, bytes | str]:
    """Every ``bubbleId:<composer>:<bubble>`` body of one composer, by bubble id."""
    prefix = f"{BUBBLE_PREFIX}{composer_id}:"
    rows = conn.execute(
        "SELECT key, value FROM cursorDiskKV WHERE key >= ? AND key < ? AND value IS NOT NULL",
        (prefix, _upper(prefix)),
    ).fetchall()
    return {str(key)[len(prefix) :]: value for key, value in rows}


def item_values(conn: sqlite3.Connection, keys: Iterable[str]) -> dict[str, bytes | str]:
    """``ItemTable`` values of the given keys."""
    wanted = list(keys)
    marks = ", ".join("?" for _ in wanted)
    rows = conn.execute(
        f"SELECT key, value FROM ItemTable WHERE key IN ({marks}) AND value IS NOT NULL", wanted
    ).fetchall()
    return {str(key): value for key, value in rows}
