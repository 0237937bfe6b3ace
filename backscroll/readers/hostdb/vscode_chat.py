"""SQL for VS Code's ``state.vscdb`` (``ItemTable``), opened read-only.

Only the chat keys are read, each by its exact name: the same table holds auth
tokens. ``chat.ChatSessionStore.index`` is the session index of VS Code since
about March 2025; ``interactive.sessions`` the whole chats of the builds before
(a JSON array, read as bytes: nothing is decoded before it is known to have
changed). ``backscroll/readers/vscode_copilot_chat.py`` and
``vscode_chat_db.py`` decide what the values mean.
"""

from __future__ import annotations

import sqlite3

from backscroll.readers.hostdb import table_names

INDEX_KEY = "chat.ChatSessionStore.index"
SESSIONS_KEY = "interactive.sessions"


def chat_index(conn: sqlite3.Connection) -> bytes | str | None:
    """The ``chat.ChatSessionStore.index`` value, or None when there is none."""
    if "ItemTable" not in table_names(conn):
        return None
    row = conn.execute("SELECT value FROM ItemTable WHERE key = ?", (INDEX_KEY,)).fetchone()
    value = row[0] if row else None
    return value if isinstance(value, bytes | str) else None


def has_chat_index(conn: sqlite3.Connection) -> bool:
    """Whether ``chat.ChatSessionStore.index`` is set (its value is not read)."""
    if "ItemTable" not in table_names(conn):
        return False
    row = conn.execute("SELECT 1 FROM ItemTable WHERE key = ?", (INDEX_KEY,)).fetchone()
    return row is not None


def persisted_sessions(conn: sqlite3.Connection) -> bytes | None:
    """The ``interactive.sessions`` value as bytes, or None when there is none."""
    if "ItemTable" not in table_names(conn):
        return None
    row = conn.execute(
        "SELECT CAST(value AS BLOB) FROM ItemTable WHERE key = ?", (SESSIONS_KEY,)
    ).fetchone()
    value = row[0] if row else None
    return value if isinstance(value, bytes) else None
