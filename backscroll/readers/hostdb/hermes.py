"""Queries against Hermes Agent's ``state.db`` (``$HERMES_HOME/state.db``), read-only.

``sessions`` (text ids, REAL epoch-second times, ``parent_session_id`` linking a
session continued after compression) and ``messages`` (``id INTEGER
AUTOINCREMENT``, one insert per message). ``backscroll/readers/hermes.py``
decides what is prose.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from typing import NamedTuple

from backscroll.readers import hostdb
from backscroll.readers.hostdb import table_columns

_NEEDED = {
    "sessions": {"id", "parent_session_id", "started_at"},
    "messages": {"id", "session_id", "role", "content", "timestamp"},
}


class Marks(NamedTuple):
    message_id: int
    session_rowid: int
    session_top: str
    ended_at: float


class SessionRow(NamedTuple):
    id: str
    parent_session_id: str | None
    title: str | None
    started_at: float | None
    ended_at: float | None


class MessageRow(NamedTuple):
    id: int
    role: str
    content: str | None
    tool_calls: str | None
    tool_name: str | None
    timestamp: float | None


def schema_problem(conn: sqlite3.Connection) -> str | None:
    return hostdb.schema_problem(conn, _NEEDED)


def _column(conn: sqlite3.Connection, table: str, column: str) -> str:
    """``column`` when ``table`` has it, else NULL (older/newer schema versions)."""
    return column if column in table_columns(conn, table) else "NULL"


def marks(conn: sqlite3.Connection) -> Marks:
    msg = conn.execute("SELECT max(id) FROM messages").fetchone()[0]
    top = conn.execute("SELECT rowid, id FROM sessions ORDER BY rowid DESC LIMIT 1").fetchone()
    top = top or (0, "")
    ended = conn.execute(f"SELECT max({_column(conn, 'sessions', 'ended_at')}) FROM sessions")
    return Marks(int(msg or 0), int(top[0]), str(top[1]), float(ended.fetchone()[0] or 0))


def session_ids(conn: sqlite3.Connection) -> set[str]:
    return {str(r[0]) for r in conn.execute("SELECT id FROM sessions")}


def changed_session_ids(conn: sqlite3.Connection, since: Marks) -> set[str]:
    """Sessions with messages past the last id seen, new session rows (past the old
    top rowid, or at it under another id) and sessions ended since (``>=``)."""
    found = {
        str(r[0])
        for r in conn.execute(
            "SELECT DISTINCT session_id FROM messages WHERE id > ?", (since.message_id,)
        )
    }
    rows = conn.execute("SELECT id, rowid FROM sessions WHERE rowid >= ?", (since.session_rowid,))
    found.update(str(r[0]) for r in rows if r[1] > since.session_rowid or r[0] != since.session_top)
    ended = _column(conn, "sessions", "ended_at")
    if ended != "NULL":
        found.update(
            str(r[0])
            for r in conn.execute(
                f"SELECT id FROM sessions WHERE {ended} >= ?", (since.ended_at or 1,)
            )
        )
    return found


def sessions(conn: sqlite3.Connection, ids: Iterable[str]) -> list[SessionRow]:
    wanted = list(ids)
    if not wanted:
        return []
    title = _column(conn, "sessions", "title")
    ended = _column(conn, "sessions", "ended_at")
    rows = conn.execute(
        f"SELECT id, parent_session_id, {title}, started_at, {ended} "
        f"FROM sessions WHERE id IN ({','.join('?' * len(wanted))})",
        wanted,
    )
    return [SessionRow(*row) for row in rows]


def session_messages(conn: sqlite3.Connection, session_id: str) -> list[MessageRow]:
    calls = _column(conn, "messages", "tool_calls")
    name = _column(conn, "messages", "tool_name")
    rows = conn.execute(
        f"SELECT id, role, content, {calls}, {name}, timestamp FROM messages "
        "WHERE session_id = ? ORDER BY id",
        (session_id,),
    )
    return [MessageRow(*row) for row in rows]


def has_session(conn: sqlite3.Connection, session_id: str) -> bool:
    """Whether ``sessions`` holds ``session_id`` (False without a ``sessions`` table).
    For the session-log reader: the database copy of a session wins."""
    if "id" not in table_columns(conn, "sessions"):
        return False
    row = conn.execute("SELECT 1 FROM sessions WHERE id = ? LIMIT 1", (session_id,)).fetchone()
    return row is not None
