"""SQL for Goose's ``sessions.db`` (block/goose ``session_manager.rs``), opened read-only.

Goose writes a message with one INSERT (AUTOINCREMENT ``id``) and bumps
``sessions.updated_at``; compaction and edits call ``replace_conversation``,
which deletes and re-inserts all of a session's rows (new ids, same
``message_id`` since schema v7) without touching ``updated_at``; a truncation
deletes rows. So a session's fingerprint is its ``updated_at`` plus the count,
lowest and highest id of its messages — all read from the
``idx_messages_session`` index, never from the message bodies.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass

from backscroll.readers.hostdb import table_columns, table_names

REQUIRED_SESSION_COLUMNS = frozenset({"id", "working_dir"})
REQUIRED_MESSAGE_COLUMNS = frozenset(
    {"id", "session_id", "role", "content_json", "created_timestamp"}
)
_SESSION_OPTIONAL = (
    "name",
    "description",
    "session_type",
    "created_at",
    "updated_at",
    "parent_session_id",
)
_MESSAGE_OPTIONAL = ("metadata_json", "message_id")
_CHUNK = 400


@dataclass(frozen=True, slots=True)
class Schema:
    version: int | None
    session_columns: frozenset[str]
    message_columns: frozenset[str]


@dataclass(frozen=True, slots=True)
class SessionRow:
    id: str
    working_dir: str | None
    name: str | None
    description: str | None
    session_type: str | None
    created_at: str | None
    updated_at: str | None
    parent_session_id: str | None


@dataclass(frozen=True, slots=True)
class MessageRow:
    id: int
    session_id: str
    role: str
    content_json: str | bytes | None
    created_timestamp: int | float | str | None
    metadata_json: str | None
    message_id: str | None


def schema(conn: sqlite3.Connection) -> Schema:
    version = None
    if "schema_version" in table_names(conn):
        row = conn.execute("SELECT MAX(version) FROM schema_version").fetchone()
        version = int(row[0]) if row and row[0] is not None else None
    return Schema(
        version,
        frozenset(table_columns(conn, "sessions")),
        frozenset(table_columns(conn, "messages")),
    )


def session_fingerprints(conn: sqlite3.Connection, columns: frozenset[str]) -> dict[str, str]:
    """``updated_at|count|min id|max id`` for every session."""
    updated = "s.updated_at" if "updated_at" in columns else "NULL"
    rows = conn.execute(
        f"SELECT s.id, {updated}, COUNT(m.id), MIN(m.id), MAX(m.id) "
        "FROM sessions s LEFT JOIN messages m ON m.session_id = s.id GROUP BY s.id"
    ).fetchall()
    return {str(r[0]): f"{r[1]}|{r[2]}|{r[3]}|{r[4]}" for r in rows if r[0] is not None}


def sessions_by_id(
    conn: sqlite3.Connection, ids: Iterable[str], columns: frozenset[str]
) -> list[SessionRow]:
    optional = ", ".join(c if c in columns else f"NULL AS {c}" for c in _SESSION_OPTIONAL)
    out: list[SessionRow] = []
    for chunk in _chunks(ids):
        marks = ", ".join("?" for _ in chunk)
        sql = f"SELECT id, working_dir, {optional} FROM sessions WHERE id IN ({marks})"
        for r in conn.execute(sql, chunk).fetchall():
            out.append(SessionRow(str(r[0]), r[1], r[2], r[3], r[4], r[5], r[6], r[7]))
    return out


def messages_of_sessions(
    conn: sqlite3.Connection, ids: Iterable[str], columns: frozenset[str]
) -> list[MessageRow]:
    """The sessions' messages in insertion order (which is conversation order)."""
    optional = ", ".join(c if c in columns else f"NULL AS {c}" for c in _MESSAGE_OPTIONAL)
    out: list[MessageRow] = []
    for chunk in _chunks(ids):
        marks = ", ".join("?" for _ in chunk)
        sql = (
            f"SELECT id, session_id, role, content_json, created_timestamp, {optional} "
            f"FROM messages WHERE session_id IN ({marks}) ORDER BY session_id, id"
        )
        for r in conn.execute(sql, chunk).fetchall():
            out.append(MessageRow(int(r[0]), str(r[1]), str(r[2]), r[3], r[4], r[5], r[6]))
    return out


def _chunks(ids: Iterable[str]) -> list[list[str]]:
    wanted = list(ids)
    return [wanted[i : i + _CHUNK] for i in range(0, len(wanted), _CHUNK)]
