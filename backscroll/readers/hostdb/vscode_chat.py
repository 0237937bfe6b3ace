"""SQL for VS Code's ``state.vscdb`` (``ItemTable``), opened read-only.

Only the chat session index key is read: the same table holds auth tokens.
``backscroll/readers/vscode_copilot_chat.py`` decides what the value means.
"""

from __future__ import annotations

import sqlite3

from backscroll.readers.hostdb import table_names

INDEX_KEY = "chat.ChatSessionStore.index"


def chat_index(conn: sqlite3.Connection) -> bytes | str | None:
    """The ``chat.ChatSessionStore.index`` value, or None when there is none."""
    if "ItemTable" not in table_names(conn):
        return None
    row = conn.execute("SELECT value FROM ItemTable WHERE key = ?", (INDEX_KEY,)).fetchone()
    value = row[0] if row else None
    return value if isinstance(value, bytes | str) else None
