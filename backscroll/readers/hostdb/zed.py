"""SQL for Zed's agent thread store (``threads.db``), opened with ``open_readonly``.

One row per thread, replaced whole on every save (``INSERT ... ON CONFLICT(id) DO
UPDATE``), so "what changed" is decided from ``(id, updated_at)`` alone and only
the changed rows' blobs are fetched. Each statement is its own short read
transaction.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass

from backscroll.readers.hostdb import table_columns

#: Columns the reader cannot do without (zed-industries/zed crates/agent/src/db.rs).
REQUIRED_COLUMNS = frozenset({"id", "summary", "updated_at", "data_type", "data"})
#: Columns added by later migrations; read as NULL when absent.
OPTIONAL_COLUMNS = ("parent_id", "folder_paths", "folder_paths_order", "created_at")

_CHUNK = 400


@dataclass(frozen=True, slots=True)
class ThreadRow:
    id: str
    summary: str | None
    updated_at: str
    data_type: str
    data: bytes | str | None
    parent_id: str | None
    folder_paths: str | None
    folder_paths_order: str | None
    created_at: str | None


def thread_columns(conn: sqlite3.Connection) -> set[str]:
    """Columns of the ``threads`` table (empty when it does not exist)."""
    return table_columns(conn, "threads")


def thread_versions(conn: sqlite3.Connection) -> dict[str, str]:
    """Every thread id with its ``updated_at`` text: the cheap change fingerprint."""
    rows = conn.execute("SELECT id, updated_at FROM threads").fetchall()
    return {str(r[0]): str(r[1]) for r in rows if r[0] is not None}


def threads_by_id(
    conn: sqlite3.Connection, ids: Iterable[str], columns: set[str]
) -> list[ThreadRow]:
    """The full rows (blob included) of the given threads that still exist."""
    optional = ", ".join(c if c in columns else f"NULL AS {c}" for c in OPTIONAL_COLUMNS)
    wanted = list(ids)
    out: list[ThreadRow] = []
    for start in range(0, len(wanted), _CHUNK):
        chunk = wanted[start : start + _CHUNK]
        marks = ", ".join("?" for _ in chunk)
        sql = (
            f"SELECT id, summary, updated_at, data_type, data, {optional} "
            f"FROM threads WHERE id IN ({marks})"
        )
        for r in conn.execute(sql, chunk).fetchall():
            out.append(
                ThreadRow(
                    id=str(r[0]),
                    summary=r[1],
                    updated_at=str(r[2]),
                    data_type=str(r[3]),
                    data=r[4],
                    parent_id=r[5],
                    folder_paths=r[6],
                    folder_paths_order=r[7],
                    created_at=r[8],
                )
            )
    return out
