"""Queries against a Crush project database ``<project>/.crush/crush.db``, read-only.

``sessions``/``messages`` (goose migrations); ``messages.parts`` is a JSON array
parsed by ``backscroll/readers/crush.py``. Times are epoch seconds.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from typing import NamedTuple

from backscroll.readers import hostdb
from backscroll.readers.hostdb import table_columns

_NEEDED = {
    "sessions": {"id", "parent_session_id", "title", "created_at", "updated_at"},
    "messages": {"id", "session_id", "role", "parts", "created_at"},
}


class Marks(NamedTuple):
    session_updated: int
    message_rowid: int
    message_top: str


class SessionRow(NamedTuple):
    id: str
    parent_session_id: str | None
    title: str | None
    created_at: int | None
    updated_at: int | None
    summary_message_id: str | None


class MessageRow(NamedTuple):
    id: str
    role: str
    parts: str
    created_at: int | None
    is_summary: bool


def schema_problem(conn: sqlite3.Connection) -> str | None:
    return hostdb.schema_problem(conn, _NEEDED)


def marks(conn: sqlite3.Connection) -> Marks:
    """Latest session update time and the top message row (O(log n))."""
    updated = conn.execute("SELECT max(updated_at) FROM sessions").fetchone()[0]
    top = conn.execute("SELECT rowid, id FROM messages ORDER BY rowid DESC LIMIT 1").fetchone()
    top = top or (0, "")
    return Marks(int(updated or 0), int(top[0]), str(top[1]))


def session_ids(conn: sqlite3.Connection) -> set[str]:
    return {str(r[0]) for r in conn.execute("SELECT id FROM sessions")}


def changed_session_ids(conn: sqlite3.Connection, since: Marks) -> set[str]:
    """Sessions updated at or after the newest update seen last time (``>=``: a
    write in the same clock tick as that read), plus :func:`inserted_session_ids`."""
    rows = conn.execute("SELECT id FROM sessions WHERE updated_at >= ?", (since.session_updated,))
    return {str(r[0]) for r in rows} | inserted_session_ids(conn, since)


def inserted_session_ids(conn: sqlite3.Connection, since: Marks) -> set[str]:
    """Sessions holding message rows added since ``since``: past the old top rowid,
    or at it under another id (the top row deleted and its rowid reused). A rowid
    range search: O(new rows), whatever the size of the database."""
    rows = conn.execute(
        "SELECT session_id, rowid, id FROM messages WHERE rowid >= ?", (since.message_rowid,)
    )
    return {str(r[0]) for r in rows if r[1] > since.message_rowid or r[2] != since.message_top}


def sessions(conn: sqlite3.Connection, ids: Iterable[str]) -> list[SessionRow]:
    wanted = list(ids)
    if not wanted:
        return []
    summary = (
        "summary_message_id" if "summary_message_id" in table_columns(conn, "sessions") else "NULL"
    )
    rows = conn.execute(
        f"SELECT id, parent_session_id, title, created_at, updated_at, {summary} "
        f"FROM sessions WHERE id IN ({','.join('?' * len(wanted))})",
        wanted,
    )
    return [SessionRow(*row) for row in rows]


def session_messages(conn: sqlite3.Connection, session_id: str) -> list[MessageRow]:
    """Messages in Crush's order (``created_at``; rowid breaks same-second ties)."""
    summary = (
        "is_summary_message" if "is_summary_message" in table_columns(conn, "messages") else "0"
    )
    rows = conn.execute(
        f"SELECT id, role, parts, created_at, {summary} FROM messages "
        "WHERE session_id = ? ORDER BY created_at, rowid",
        (session_id,),
    )
    return [MessageRow(str(r[0]), str(r[1]), str(r[2]), r[3], bool(r[4])) for r in rows]
