"""The store owns every SQL statement: schema, writer, read-only queries."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

from backscroll.store import schema
from backscroll.store.writer import IndexWriter


def ensure_private_dir(path: Path) -> None:
    """Create ``path`` (and parents) and make it 0700 whatever the umask."""
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    if (path.stat().st_mode & 0o777) != 0o700:
        os.chmod(path, 0o700)


def private_files(db: Path) -> None:
    """Database, -wal and -shm files are 0600."""
    for suffix in ("", "-wal", "-shm"):
        p = Path(f"{db}{suffix}")
        if p.exists() and (p.stat().st_mode & 0o777) != 0o600:
            os.chmod(p, 0o600)


def open_writer(db: Path) -> IndexWriter:
    """The write connection; creates the private data directory and database."""
    ensure_private_dir(db.parent)
    old = os.umask(0o077)
    try:
        writer = IndexWriter(db)
    finally:
        os.umask(old)
    private_files(db)
    return writer


def open_readonly(db: Path) -> sqlite3.Connection:
    """A read-only connection for queries (the daemon uses aiosqlite instead)."""
    conn = schema.connect(db, readonly=True)
    schema.check_integrity(conn, db)
    return conn


__all__ = ["IndexWriter", "ensure_private_dir", "open_readonly", "open_writer", "private_files"]
