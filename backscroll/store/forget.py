"""Forgetting for real: the turns go, and so do their bytes.

Deleting rows is not enough: FTS5 keeps deleted tokens in old segments until
they are merged, and freed pages keep their bytes until overwritten. So a
forget deletes, merges the FTS index (``optimize``), vacuums with
``secure_delete`` on, and truncates the WAL.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from backscroll.store import schema
from backscroll.store.writer import IndexWriter


@dataclass(frozen=True)
class Selection:
    session: str | None = None
    project: str | None = None
    host: str | None = None
    before: float | None = None  # unix seconds: turns older than this

    def empty(self) -> bool:
        return (
            self.session is None
            and self.project is None
            and self.host is None
            and (self.before is None)
        )


@dataclass
class ForgetReport:
    sessions: int = 0
    turns: int = 0
    excluded: int = 0
    scrubbed: bool = False
    wal_busy: bool = False


def _where(sel: Selection) -> tuple[str, list[Any]]:
    where: list[str] = []
    args: list[Any] = []
    if sel.session is not None:
        where.append("s.session_id = ?")
        args.append(sel.session)
    if sel.project is not None:
        where.append("s.project = ?")
        args.append(sel.project.rstrip("/") or "/")
    if sel.host is not None:
        where.append("s.host = ?")
        args.append(sel.host)
    if sel.before is not None:
        where.append("t.ts < ?")
        args.append(sel.before)
    return " AND ".join(where) or "1", args


def count(writer: IndexWriter, sel: Selection) -> ForgetReport:
    """How much ``sel`` would forget (for --dry-run)."""
    where, args = _where(sel)
    row = writer.conn.execute(
        "SELECT count(DISTINCT s.id), count(t.id) FROM sessions s"
        f" JOIN turns t ON t.session = s.id WHERE {where}",
        args,
    ).fetchone()
    return ForgetReport(sessions=int(row[0]), turns=int(row[1]))


def forget(writer: IndexWriter, sel: Selection, *, exclude: bool = False) -> ForgetReport:
    """Delete the selected turns (and sessions left empty), then scrub the file."""
    if sel.empty():
        raise ValueError("nothing selected to forget")
    report = ForgetReport()
    where, args = _where(sel)
    with writer.transaction():
        ids = writer.conn.execute(
            f"SELECT s.id, s.host, s.session_id, s.project FROM sessions s WHERE {where}"
            if sel.before is None
            else f"SELECT DISTINCT s.id, s.host, s.session_id, s.project FROM sessions s"
            f" JOIN turns t ON t.session = s.id WHERE {where}",
            args,
        ).fetchall()
        report.sessions = len(ids)
        files = writer.conn.execute(
            f"SELECT DISTINCT t.file FROM turns t JOIN sessions s ON s.id = t.session"
            f" WHERE {where}",
            args,
        ).fetchall()
        report.turns = writer.conn.execute(
            f"DELETE FROM turns WHERE id IN (SELECT t.id FROM turns t"
            f" JOIN sessions s ON s.id = t.session WHERE {where})",
            args,
        ).rowcount
        writer.conn.execute(
            "DELETE FROM sessions WHERE NOT EXISTS"
            " (SELECT 1 FROM turns WHERE turns.session = sessions.id)"
        )
        # A reader's saved memo can hold prose (a title candidate): a file left
        # with no turns keeps its position (so it is not re-read) but not its memo.
        writer.conn.executemany(
            "UPDATE files SET state = '{}' WHERE id = ?"
            " AND NOT EXISTS (SELECT 1 FROM turns WHERE turns.file = files.id)",
            [(f[0],) for f in files if f[0] is not None],
        )
        if exclude:
            report.excluded = _exclude(writer, sel, ids)
    report.wal_busy = scrub(writer)
    report.scrubbed = not report.wal_busy
    return report


def _exclude(writer: IndexWriter, sel: Selection, ids: list[Any]) -> int:
    rows: list[tuple[str, str, str]] = []
    if sel.session is not None:
        rows += [("session", str(r[1]), str(r[2])) for r in ids]
    if sel.project is not None:
        rows.append(("project", "", sel.project.rstrip("/") or "/"))
    if sel.host is not None:
        rows.append(("host", "", sel.host))
    now = time.time()
    writer.conn.executemany(
        "INSERT OR IGNORE INTO exclusions (kind, host, value, created_at) VALUES (?, ?, ?, ?)",
        [(*r, now) for r in rows],
    )
    return len(rows)


def scrub(writer: IndexWriter) -> bool:
    """Merge FTS segments, vacuum and truncate the WAL. True if a reader kept
    the WAL from being truncated (its old pages may linger until it is)."""
    conn = writer.conn
    if schema.has_fts(conn):
        with writer.transaction():
            conn.execute("INSERT INTO turns_fts(turns_fts) VALUES ('optimize')")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.execute("VACUUM")
    busy = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
    return bool(busy and busy[0])


def exclusions(writer: IndexWriter) -> list[tuple[str, str, str]]:
    rows = writer.conn.execute("SELECT kind, host, value FROM exclusions").fetchall()
    return [(str(k), str(h), str(v)) for k, h, v in rows]
