"""What a rebuild carries over from the old index: exclusions, and kept history.

A rebuild re-reads every transcript that still exists. What it cannot re-read
is kept history: the turns of transcripts the host deleted (kept by default,
the point of backscroll), of hosts or paths no longer scanned, and turns with
no file at all. Those are copied from the old index, text passed through the
current redaction. The exclusions are copied before the rebuild reads
anything, so an excluded session is never indexed even for a moment.

The old index may be damaged (that is often why it is rebuilt): each part is
read on its own, and what could not be read is reported, never silently lost.
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from backscroll.memo import map_prose, without_prose
from backscroll.paths import under_any
from backscroll.store import schema
from backscroll.store.writer import IndexWriter

Redact = Callable[[str], str]

#: Columns of ``files`` copied when present in the old index (older schemas lack some).
_FILE_COLUMNS = (
    "path", "host", "size", "mtime_ns", "inode", "head_len", "head_hash", "position",
    "state", "reader_version", "indexed_at", "problems", "error", "missing", "tail_hash",
    "unreadable",
)  # fmt: skip


#: Team publishing's memory that outlives a rebuild (not whether it records:
#: the rebuilt index starts with a full re-send and a reconcile).
_TEAM_META = ("team_machine", "team_reconcile")


@dataclass
class CarryReport:
    exclusions: int = 0
    files: int = 0
    sessions: int = 0
    turns: int = 0
    #: What could not be read from the old index (it is kept as index.db.old).
    problems: list[str] = field(default_factory=list)


def _open_old(old: Path, report: CarryReport) -> sqlite3.Connection | None:
    if not old.exists() or old.stat().st_size == 0:
        return None
    try:
        return schema.connect(old, readonly=True)
    except sqlite3.Error as exc:
        report.problems.append(f"{old} could not be opened: {exc}")
        return None


def carry_exclusions(old: Path, writer: IndexWriter, report: CarryReport | None = None) -> int:
    """Copy what the user forgot-and-excluded from ``old`` into the rebuild, and
    the team machine id it published as."""
    report = report if report is not None else CarryReport()
    conn = _open_old(old, report)
    if conn is None:
        return 0
    try:
        rows = conn.execute("SELECT kind, host, value, created_at FROM exclusions").fetchall()
    except sqlite3.Error as exc:
        if "no such table" not in str(exc):
            report.problems.append(f"the exclusions of {old} could not be read: {exc}")
        rows = []
    try:
        # Which machine id the team rows were published as, and a reconcile
        # still owed: the rebuilt index reconciles from them (store/outbox.py).
        team = conn.execute(
            f"SELECT key, value FROM meta WHERE key IN ({', '.join('?' * len(_TEAM_META))})",
            _TEAM_META,
        ).fetchall()
    except sqlite3.Error:
        team = []
    finally:
        conn.close()
    with writer.transaction():
        writer.conn.executemany(
            "INSERT OR IGNORE INTO exclusions (kind, host, value, created_at) VALUES (?, ?, ?, ?)",
            rows,
        )
        writer.conn.executemany("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", team)
    report.exclusions = len(rows)
    return len(rows)


def carry_kept(
    old: Path, writer: IndexWriter, redact: Redact | None, report: CarryReport | None = None,
    excluded_projects: tuple[str, ...] = (),
) -> CarryReport:  # fmt: skip
    """Copy from ``old`` every file row the rebuild did not read, with its sessions
    and turns, and every turn that belongs to no file. Turns the rebuild read
    again win (same session and key). Sessions of ``excluded_projects`` (the
    config's ``exclude.projects``, and everything under them) stay behind, as
    the rebuild's own reads leave them out."""
    report = report if report is not None else CarryReport()
    conn = _open_old(old, report)
    if conn is None:
        return report
    try:
        with writer.transaction():
            _carry(conn, old, writer, redact, report, excluded_projects)
    finally:
        conn.close()
    return report


def _carry(
    conn: sqlite3.Connection, old: Path, writer: IndexWriter, redact: Redact | None,
    report: CarryReport, excluded_projects: tuple[str, ...],
) -> None:  # fmt: skip
    new = writer.conn
    read = {str(r[0]) for r in new.execute("SELECT path FROM files")}
    file_ids: dict[int, int] = {}
    try:
        present = {str(r[1]) for r in conn.execute("PRAGMA table_info(files)")}
        cols = [c for c in _FILE_COLUMNS if c in present]
        for row in conn.execute(f"SELECT id, {', '.join(cols)} FROM files"):
            values = dict(zip(cols, row[1:], strict=True))
            if values["path"] in read:
                continue
            if not os.path.exists(str(values["path"])):
                values["missing"] = 1
            if redact and values.get("error"):
                values["error"] = redact(str(values["error"]))
            if redact and values.get("state"):
                values["state"] = _redacted_memo(str(values["state"]), redact)
            if values.get("state") and _holds_excluded(conn, int(row[0]), excluded_projects):
                values["state"] = _memo_without_prose(str(values["state"]))
            cur = new.execute(
                f"INSERT INTO files ({', '.join(values)})"
                f" VALUES ({', '.join('?' for _ in values)})",
                tuple(values.values()),
            )
            file_ids[int(row[0])] = int(cur.lastrowid or 0)
    except sqlite3.Error as exc:
        report.problems.append(f"the file list of {old} could not be read whole: {exc}")
    report.files = len(file_ids)
    sessions: dict[int, int | None] = {}
    try:
        cur = conn.execute(
            "SELECT session, file, key, seq, role, ts, text, tainted, subagent, note FROM turns"
        )
        while batch := cur.fetchmany(500):
            for row in batch:
                _carry_turn(conn, new, row, file_ids, sessions, redact, report,
                            excluded_projects)  # fmt: skip
    except sqlite3.Error as exc:
        report.problems.append(f"the turns of {old} could not be read whole: {exc}")
    report.sessions = sum(1 for v in sessions.values() if v is not None)


def _carry_turn(
    conn: sqlite3.Connection, new: sqlite3.Connection, row: tuple[Any, ...],
    file_ids: dict[int, int], sessions: dict[int, int | None], redact: Redact | None,
    report: CarryReport, excluded_projects: tuple[str, ...],
) -> None:  # fmt: skip
    old_session, old_file, key, seq, role, ts, text, tainted, subagent, note = row
    if old_file is not None and old_file not in file_ids:
        return  # its transcript was read again by the rebuild
    if old_session not in sessions:
        sessions[old_session] = _carry_session(
            conn, new, int(old_session), redact, excluded_projects
        )
    session = sessions[old_session]
    if session is None:
        return
    if redact:
        text = redact(str(text))
        note = redact(str(note)) if note else note
    file = file_ids.get(old_file) if old_file is not None else None
    done = new.execute(
        "INSERT OR IGNORE INTO turns (session, file, key, seq, role, ts, text, tainted,"
        " subagent, note) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (session, file, key, seq, role, ts, text, tainted, subagent, note),
    )
    report.turns += max(done.rowcount, 0)
    new.execute(
        "UPDATE sessions SET started_at = min(coalesce(started_at, ?), ?),"
        " updated_at = max(coalesce(updated_at, ?), ?) WHERE id = ? AND ? IS NOT NULL",
        (ts, ts, ts, ts, session, ts),
    )


def _carry_session(
    conn: sqlite3.Connection, new: sqlite3.Connection, old_id: int, redact: Redact | None,
    excluded_projects: tuple[str, ...],
) -> int | None:  # fmt: skip
    row = conn.execute(
        "SELECT host, session_id, project, title, started_at, updated_at, resume_command,"
        " source_path, parent_session_id FROM sessions WHERE id = ?",
        (old_id,),
    ).fetchone()
    if row is None:
        return None
    host, sid, project, title, started, updated, resume, source, parent = row
    if project and under_any(str(project), excluded_projects):
        return None
    excluded = new.execute(
        "SELECT 1 FROM exclusions WHERE (kind = 'host' AND value = ?)"
        " OR (kind = 'session' AND host = ? AND value = ?)"
        " OR (kind = 'project' AND host IN ('', ?) AND value = rtrim(coalesce(?, ''), '/'))",
        (host, host, sid, host, project),
    ).fetchone()
    if excluded:
        return None
    if redact and title:
        title = redact(str(title))
    if redact and resume:
        resume = redact(str(resume))
    new.execute(
        "INSERT OR IGNORE INTO sessions (host, session_id, project, title, started_at,"
        " updated_at, resume_command, source_path, parent_session_id)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (host, sid, project, title, started, updated, resume, source, parent),
    )
    found = new.execute(
        "SELECT id FROM sessions WHERE host = ? AND session_id = ?", (host, sid)
    ).fetchone()
    return int(found[0])


def _holds_excluded(conn: sqlite3.Connection, file_id: int, excluded: tuple[str, ...]) -> bool:
    """A session of this file (in the old index) is in an excluded project."""
    if not excluded:
        return False
    projects = conn.execute(
        "SELECT DISTINCT s.project FROM turns t JOIN sessions s ON s.id = t.session"
        " WHERE t.file = ?",
        (file_id,),
    ).fetchall()
    return any(p and under_any(str(p), excluded) for (p,) in projects)


def _memo_without_prose(state: str) -> str:
    """A memo kept with no prose (its title candidate may be an excluded session's)."""
    try:
        parsed = json.loads(state)
    except ValueError:
        return "{}"
    return json.dumps(without_prose(parsed), separators=(",", ":"))


def _redacted_memo(state: str, redact: Redact) -> str:
    """A kept file's saved memo with its prose redacted (an unreadable one is
    dropped: the memo of a file that is not read again is not needed)."""
    try:
        parsed = json.loads(state)
    except ValueError:
        return "{}"
    return json.dumps(map_prose(parsed, redact), separators=(",", ":"))
