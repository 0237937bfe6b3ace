"""Queries against OpenCode's (and Kilo CLI's) own ``opencode.db``, read-only.

Schema (v1.2+, Drizzle): ``session``, ``message`` and ``part`` with JSON in
``data`` and integer millisecond ``time_created``/``time_updated``. The reader in
``backscroll/readers/opencode.py`` parses the JSON; this module only fetches rows.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from typing import NamedTuple

from backscroll.readers import hostdb
from backscroll.readers.hostdb import table_names

_NEEDED = {
    "session": {"id", "parent_id", "directory", "title", "time_created", "time_updated"},
    "message": {"id", "session_id", "time_created", "data"},
    "part": {"id", "message_id", "session_id", "data"},
}


class Marks(NamedTuple):
    """High-water marks of one read: what the next read compares against."""

    session_updated: int
    message_rowid: int
    message_top: str
    part_rowid: int
    part_top: str


class SessionRow(NamedTuple):
    id: str
    parent_id: str | None
    directory: str | None
    title: str | None
    time_created: int | None
    time_updated: int | None


class MessageRow(NamedTuple):
    id: str
    time_created: int
    data: str


class PartRow(NamedTuple):
    id: str
    message_id: str
    data: str


def schema_problem(conn: sqlite3.Connection) -> str | None:
    """Why this database is not the 1.x schema we read, or None when it is."""
    problem = hostdb.schema_problem(conn, _NEEDED)
    if problem and problem.startswith("no ") and "session_v2" in table_names(conn):
        return f"{problem} (OpenCode 2.x session_v2 layout)"
    return problem


def v2_session_count(conn: sqlite3.Connection) -> int:
    """Sessions in the OpenCode 2.x ``session_v2`` table (0 when there is none)."""
    if "session_v2" not in table_names(conn):
        return 0
    return int(conn.execute("SELECT count(*) FROM session_v2").fetchone()[0])


def marks(conn: sqlite3.Connection) -> Marks:
    """Latest session update time and the top message/part rows (O(log n))."""
    updated = conn.execute("SELECT max(time_updated) FROM session").fetchone()[0]
    msg = conn.execute("SELECT rowid, id FROM message ORDER BY rowid DESC LIMIT 1").fetchone()
    part = conn.execute("SELECT rowid, id FROM part ORDER BY rowid DESC LIMIT 1").fetchone()
    msg = msg or (0, "")
    part = part or (0, "")
    return Marks(int(updated or 0), int(msg[0]), str(msg[1]), int(part[0]), str(part[1]))


def session_ids(conn: sqlite3.Connection) -> set[str]:
    return {str(r[0]) for r in conn.execute("SELECT id FROM session")}


def changed_session_ids(conn: sqlite3.Connection, since: Marks) -> set[str]:
    """Sessions updated at or after the newest update seen last time (``>=``: a
    write in the same clock tick as that read), plus :func:`inserted_session_ids`."""
    rows = conn.execute("SELECT id FROM session WHERE time_updated >= ?", (since.session_updated,))
    return {str(r[0]) for r in rows} | inserted_session_ids(conn, since)


def inserted_session_ids(conn: sqlite3.Connection, since: Marks) -> set[str]:
    """Sessions holding message/part rows added since ``since``: past the old top
    rowid, or at it under another id (the top row deleted and its rowid reused).
    A rowid range search: O(new rows), whatever the size of the database."""
    found: set[str] = set()
    for table, rowid, top in (
        ("message", since.message_rowid, since.message_top),
        ("part", since.part_rowid, since.part_top),
    ):
        rows = conn.execute(f"SELECT session_id, rowid, id FROM {table} WHERE rowid >= ?", (rowid,))
        found.update(str(r[0]) for r in rows if r[1] > rowid or r[2] != top)
    return found


def sessions(conn: sqlite3.Connection, ids: Iterable[str]) -> list[SessionRow]:
    wanted = list(ids)
    if not wanted:
        return []
    marks_ = ",".join("?" * len(wanted))
    rows = conn.execute(
        "SELECT id, parent_id, directory, title, time_created, time_updated "
        f"FROM session WHERE id IN ({marks_})",
        wanted,
    )
    return [SessionRow(*row) for row in rows]


def session_messages(conn: sqlite3.Connection, session_id: str) -> list[MessageRow]:
    rows = conn.execute(
        "SELECT id, time_created, data FROM message WHERE session_id = ? ORDER BY time_created, id",
        (session_id,),
    )
    return [MessageRow(str(r[0]), int(r[1] or 0), str(r[2])) for r in rows]


def session_parts(conn: sqlite3.Connection, session_id: str) -> list[PartRow]:
    rows = conn.execute(
        "SELECT id, message_id, data FROM part WHERE session_id = ? ORDER BY message_id, id",
        (session_id,),
    )
    return [PartRow(str(r[0]), str(r[1]), str(r[2])) for r in rows]
