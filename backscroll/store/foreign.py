"""Read-only access to other applications' live SQLite databases.

backscroll never writes a host's database, never holds a read transaction longer
than one batch and never makes the host wait: a short busy timeout, and
:class:`~backscroll.errors.SourceBusy` when it is locked, so the indexer tries
again on the next change instead of blocking.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import quote

from backscroll.errors import SourceBusy

#: How long backscroll waits on a host's lock before giving up for now.
FOREIGN_BUSY_MS = 50


@contextmanager
def open_readonly(path: Path, busy_ms: int = FOREIGN_BUSY_MS) -> Iterator[sqlite3.Connection]:
    """A read-only connection (``mode=ro``) to a host database, closed on exit.

    "database is locked"/"busy" errors inside the block become SourceBusy.
    """
    uri = f"file:{quote(str(path))}?mode=ro"
    try:
        conn = sqlite3.connect(uri, uri=True, timeout=busy_ms / 1000, check_same_thread=False)
    except sqlite3.OperationalError as exc:
        raise _translate(exc, path) from exc
    try:
        conn.execute(f"PRAGMA busy_timeout = {int(busy_ms)}")
        conn.execute("PRAGMA query_only = ON")
        yield conn
    except sqlite3.OperationalError as exc:
        raise _translate(exc, path) from exc
    finally:
        conn.close()


@contextmanager
def snapshot(conn: sqlite3.Connection) -> Iterator[None]:
    """One short read transaction: every query inside sees the same database."""
    conn.execute("BEGIN")
    try:
        yield
    finally:
        conn.rollback()


def _translate(exc: sqlite3.OperationalError, path: Path) -> Exception:
    text = str(exc).lower()
    if "locked" in text or "busy" in text:
        return SourceBusy(f"{path} is locked by its application; will retry on its next change")
    if "unable to open" in text:
        if not path.exists():  # vanished: the indexer's deleted-source policy applies
            return FileNotFoundError(f"host database {path} is gone: {exc}")
        # Exists but cannot be opened (permissions, a read-only mount of a WAL
        # database): an error to report, never a reason to forget its turns.
        return PermissionError(
            f"cannot open host database {path} read-only ({exc}); check that backscroll "
            "may read it and write its -shm beside it"
        )
    return exc


def table_columns(conn: sqlite3.Connection, table: str) -> set[str]:
    """Column names of ``table`` (empty when it does not exist)."""
    rows = conn.execute("SELECT name FROM pragma_table_info(?)", (table,)).fetchall()
    return {str(r[0]) for r in rows}


def table_names(conn: sqlite3.Connection) -> set[str]:
    rows = conn.execute("SELECT name FROM sqlite_master WHERE type IN ('table','view')")
    return {str(r[0]) for r in rows.fetchall()}


def schema_problem(conn: sqlite3.Connection, needed: Mapping[str, set[str]]) -> str | None:
    """Why the database lacks the ``needed`` tables and columns, or None."""
    tables = table_names(conn)
    for table, columns in needed.items():
        if table not in tables:
            return f"no {table} table"
        missing = columns - table_columns(conn, table)
        if missing:
            return f"table {table} lacks {', '.join(sorted(missing))}"
    return None
