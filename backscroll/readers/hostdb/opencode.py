"""Queries against OpenCode's (and Kilo CLI's) own ``opencode.db``, read-only.

Two layouts, often in one database (the reader in
``backscroll/readers/opencode.py`` parses the JSON; this module only fetches rows):

- 1.x (v1.2+, Drizzle): ``session``, ``message`` and ``part`` with JSON in
  ``data`` and integer millisecond ``time_created``/``time_updated``.
- 2.x: messages in ``session_message(id, session_id, type, seq, time_created,
  time_updated, data)``, one row per message ordered by ``seq``, ``data`` the
  message without its ``id`` and ``type`` (packages/core/src/session/sql.ts and
  message.ts upstream); sessions in ``session`` (upstream source) or
  ``session_v2`` (third-party reports), probed, the ``session_v2`` row preferred.
  An upgraded database keeps its 1.x tables, and 2.x may copy an old session's
  messages into ``session_message`` (its legacy backfill): a session with rows
  there is read from them alone.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from typing import NamedTuple

from backscroll.readers.hostdb import table_columns, table_names

_SESSION_COLUMNS = {"id", "parent_id", "directory", "title", "time_created", "time_updated"}
_V1_NEEDED = {
    "message": {"id", "session_id", "time_created", "data"},
    "part": {"id", "message_id", "session_id", "data"},
}
_V2_COLUMNS = {"id", "session_id", "type", "seq", "time_created", "data"}
#: Session tables, the preferred first (2.x reports name ``session_v2``).
_SESSION_TABLES = ("session_v2", "session")


class Layout(NamedTuple):
    """Which of OpenCode's tables this database holds (probed on every read)."""

    #: Session tables present with the columns read, preferred first.
    session_tables: tuple[str, ...]
    #: Of those, the ones with 2.x's ``time_idle`` (set when a run ends) and
    #: ``fork_session_id`` (a fork copies its parent's messages).
    idle_tables: tuple[str, ...]
    fork_tables: tuple[str, ...]
    #: 1.x ``message`` and ``part``.
    v1: bool
    #: 2.x ``session_message`` (with ``seq``: 1.x builds have the table without it).
    v2: bool


#: The last connection probed and its layout: one read asks several times
#: (marks, session ids, changes, each batch) on one connection, opened for it.
_probed: tuple[sqlite3.Connection, Layout] | None = None


def layout(conn: sqlite3.Connection) -> Layout:
    """Which tables this connection's database holds (probed once per connection)."""
    global _probed
    if _probed is not None and _probed[0] is conn:
        return _probed[1]
    found = _probe(conn)
    _probed = (conn, found)
    return found


def _probe(conn: sqlite3.Connection) -> Layout:
    tables = table_names(conn)
    sessions, idle, fork = [], [], []
    for name in _SESSION_TABLES:
        if name not in tables:
            continue
        columns = table_columns(conn, name)
        if columns >= _SESSION_COLUMNS:
            sessions.append(name)
            if "time_idle" in columns:
                idle.append(name)
            if "fork_session_id" in columns:
                fork.append(name)
    v1 = all(t in tables and cols <= table_columns(conn, t) for t, cols in _V1_NEEDED.items())
    v2 = "session_message" in tables and table_columns(conn, "session_message") >= _V2_COLUMNS
    return Layout(tuple(sessions), tuple(idle), tuple(fork), v1, v2)


class Marks(NamedTuple):
    """High-water marks of one read: what the next read compares against."""

    session_updated: int
    session_idle: int
    message_rowid: int
    message_top: str
    part_rowid: int
    part_top: str
    v2_rowid: int
    v2_top: str


class SessionRow(NamedTuple):
    id: str
    parent_id: str | None
    directory: str | None
    title: str | None
    time_created: int | None
    time_updated: int | None
    #: The session this one was forked from (2.x), whose messages it starts with.
    fork_of: str | None = None


class MessageRow(NamedTuple):
    id: str
    time_created: int
    data: str


class PartRow(NamedTuple):
    id: str
    message_id: str
    data: str


class V2Row(NamedTuple):
    """One 2.x ``session_message`` row."""

    id: str
    type: str
    seq: int
    time_created: int
    data: str


def schema_problem(conn: sqlite3.Connection) -> str | None:
    """Why this database holds neither layout we read, or None when it holds one."""
    found = layout(conn)
    tables = table_names(conn)
    if not found.session_tables:
        present = [t for t in _SESSION_TABLES if t in tables]
        if not present:
            return "no session table"
        lacks = _SESSION_COLUMNS - table_columns(conn, present[0])
        return f"table {present[0]} lacks {', '.join(sorted(lacks))}"
    if not (found.v1 or found.v2):
        if "session_message" in tables and "message" not in tables:
            lacks = _V2_COLUMNS - table_columns(conn, "session_message")
            return f"table session_message lacks {', '.join(sorted(lacks))}"
        return "no message and part tables, nor session_message"
    return None


def _top(conn: sqlite3.Connection, table: str, present: bool) -> tuple[int, str]:
    if not present:
        return 0, ""
    row = conn.execute(f"SELECT rowid, id FROM {table} ORDER BY rowid DESC LIMIT 1").fetchone()
    return (int(row[0]), str(row[1])) if row else (0, "")


def _max(conn: sqlite3.Connection, column: str, tables: Iterable[str]) -> int:
    best = 0
    for table in tables:
        value = conn.execute(f"SELECT max({column}) FROM {table}").fetchone()[0]
        if isinstance(value, int | float) and not isinstance(value, bool):
            best = max(best, int(value))
    return best


def marks(conn: sqlite3.Connection) -> Marks:
    """Latest session update and run-end times and the top message rows (O(log n)
    per table; the session tables hold one row per session)."""
    found = layout(conn)
    message = _top(conn, "message", found.v1)
    part = _top(conn, "part", found.v1)
    v2 = _top(conn, "session_message", found.v2)
    return Marks(
        _max(conn, "time_updated", found.session_tables),
        _max(conn, "time_idle", found.idle_tables),
        *message,
        *part,
        *v2,
    )


def session_ids(conn: sqlite3.Connection) -> set[str]:
    ids: set[str] = set()
    for table in layout(conn).session_tables:
        ids.update(str(r[0]) for r in conn.execute(f"SELECT id FROM {table}"))
    return ids


def changed_session_ids(conn: sqlite3.Connection, since: Marks) -> set[str]:
    """Sessions updated, or whose run ended, at or after the newest seen last time
    (``>=``: a write in the same clock tick as that read), plus
    :func:`inserted_session_ids`. A 2.x assistant message is rewritten in place
    while it streams; the run's end marks its session (``time_idle``)."""
    found = layout(conn)
    changed: set[str] = set()
    for table in found.session_tables:
        rows = conn.execute(
            f"SELECT id FROM {table} WHERE time_updated >= ?", (since.session_updated,)
        )
        changed.update(str(r[0]) for r in rows)
    for table in found.idle_tables:
        rows = conn.execute(f"SELECT id FROM {table} WHERE time_idle >= ?", (since.session_idle,))
        changed.update(str(r[0]) for r in rows)
    return changed | inserted_session_ids(conn, since, found)


def inserted_session_ids(
    conn: sqlite3.Connection, since: Marks, found: Layout | None = None
) -> set[str]:
    """Sessions holding message rows added since ``since``: past the old top
    rowid, or at it under another id (the top row deleted and its rowid reused).
    A rowid range search: O(new rows), whatever the size of the database."""
    found = found or layout(conn)
    tables: list[tuple[str, int, str]] = []
    if found.v1:
        tables += [
            ("message", since.message_rowid, since.message_top),
            ("part", since.part_rowid, since.part_top),
        ]
    if found.v2:
        tables.append(("session_message", since.v2_rowid, since.v2_top))
    ids: set[str] = set()
    for table, rowid, top in tables:
        rows = conn.execute(f"SELECT session_id, rowid, id FROM {table} WHERE rowid >= ?", (rowid,))
        ids.update(str(r[0]) for r in rows if r[1] > rowid or r[2] != top)
    return ids


def sessions(conn: sqlite3.Connection, ids: Iterable[str]) -> list[SessionRow]:
    """The rows of these sessions; a session in two tables comes from the preferred."""
    wanted = list(ids)
    found = layout(conn)
    rows: dict[str, SessionRow] = {}
    for table in found.session_tables:
        left = [sid for sid in wanted if sid not in rows]
        if not left:
            break
        fork = "fork_session_id" if table in found.fork_tables else "NULL"
        marks_ = ",".join("?" * len(left))
        for row in conn.execute(
            "SELECT id, parent_id, directory, title, time_created, time_updated, "
            f"{fork} FROM {table} WHERE id IN ({marks_})",
            left,
        ):
            rows[str(row[0])] = SessionRow(*row)
    return list(rows.values())


def session_messages(conn: sqlite3.Connection, found: Layout, session_id: str) -> list[MessageRow]:
    if not found.v1:
        return []
    rows = conn.execute(
        "SELECT id, time_created, data FROM message WHERE session_id = ? ORDER BY time_created, id",
        (session_id,),
    )
    return [MessageRow(str(r[0]), int(r[1] or 0), str(r[2])) for r in rows]


def session_parts(conn: sqlite3.Connection, found: Layout, session_id: str) -> list[PartRow]:
    if not found.v1:
        return []
    rows = conn.execute(
        "SELECT id, message_id, data FROM part WHERE session_id = ? ORDER BY message_id, id",
        (session_id,),
    )
    return [PartRow(str(r[0]), str(r[1]), str(r[2])) for r in rows]


def v2_messages(conn: sqlite3.Connection, found: Layout, session_id: str) -> list[V2Row]:
    """A session's 2.x messages in ``seq`` order (none without the table)."""
    if not found.v2:
        return []
    rows = conn.execute(
        "SELECT id, type, seq, time_created, data FROM session_message "
        "WHERE session_id = ? ORDER BY seq",
        (session_id,),
    )
    return [V2Row(str(r[0]), str(r[1]), int(r[2]), int(r[3] or 0), str(r[4])) for r in rows]
