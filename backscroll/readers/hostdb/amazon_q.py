"""SQL for Amazon Q Developer CLI's ``data.sqlite3``, opened read-only.

Only the conversation tables are read: the same file holds the ``auth`` table.
``conversations(key, value)`` (migration 007) holds one JSON row per working
directory; release branches add ``conversations_v2(key, conversation_id,
value, created_at, updated_at)`` (migration 008), read too when present.
``backscroll/readers/amazon_q.py`` decides what is prose.
"""

from __future__ import annotations

import sqlite3
from typing import NamedTuple

from backscroll.readers.hostdb import table_columns, table_names


class ConversationRow(NamedTuple):
    #: ``<table>:<key>[:<conversation_id>]``, unique across both tables.
    row_key: str
    directory: str
    value: str
    created_at: float | None


def tables(conn: sqlite3.Connection) -> set[str]:
    return table_names(conn) & {"conversations", "conversations_v2"}


def conversation_rows(conn: sqlite3.Connection) -> list[ConversationRow]:
    """Every conversation row of both tables (a handful: one per directory)."""
    found = tables(conn)
    out: list[ConversationRow] = []
    if "conversations" in found and {"key", "value"} <= table_columns(conn, "conversations"):
        for key, value in conn.execute("SELECT key, value FROM conversations"):
            if isinstance(key, str) and isinstance(value, str | bytes):
                text = value.decode("utf-8", "replace") if isinstance(value, bytes) else value
                out.append(ConversationRow(f"v1:{key}", key, text, None))
    columns = table_columns(conn, "conversations_v2")
    if "conversations_v2" in found and {"key", "conversation_id", "value"} <= columns:
        created = "created_at" if "created_at" in columns else "NULL"
        rows = conn.execute(f"SELECT key, conversation_id, value, {created} FROM conversations_v2")
        for key, cid, value, when in rows:
            if isinstance(key, str) and isinstance(value, str | bytes):
                text = value.decode("utf-8", "replace") if isinstance(value, bytes) else value
                stamp = float(when) if isinstance(when, int | float) else None
                out.append(ConversationRow(f"v2:{key}:{cid}", key, text, stamp))
    return out
