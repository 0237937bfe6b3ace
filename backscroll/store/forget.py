"""Forgetting for real: the turns go, and so do their bytes.

Deleting rows is not enough: FTS5 keeps deleted tokens in old segments until
they are merged, and freed pages keep their bytes until overwritten. So a
forget deletes, merges the FTS index (``optimize``), vacuums with
``secure_delete`` on, and truncates the WAL.
"""

from __future__ import annotations

import dataclasses
import json
import sqlite3
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from backscroll.memo import without_prose
from backscroll.store import exclusions as names
from backscroll.store import schema
from backscroll.store.writer import IndexWriter, text_key


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
    #: Why the scrub failed (disk full...): the deleted text may remain in free
    #: pages until a retry succeeds (recorded in meta, retried by the next writer).
    scrub_error: str | None = None
    #: Other files that may still hold the text (an unusable index.db.old).
    leftovers: list[Path] = field(default_factory=list)


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
        copies = _Copies.collect(writer, where, args)
        _remember(writer, where, args)
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
        # with no turns keeps its position (so it is not re-read) and the ids
        # and paths of its memo (so that its next turns still name their
        # project, which an exclusion may keep out), not its prose.
        for (file_id,) in files:
            if file_id is not None:
                _drop_memo_prose(writer, int(file_id))
        copies.remove(writer)
        if exclude:
            report.excluded = _exclude(writer, sel, ids)
        _mark_scrub_pending(writer)
    try:
        report.wal_busy = scrub(writer)
    except sqlite3.OperationalError as exc:
        report.scrub_error = str(exc)
        return report
    report.scrubbed = not report.wal_busy
    return report


@dataclass
class _Copies:
    """Text of forgotten turns copied where it outlives them: a surviving
    session's title (its first prompt) and a surviving file's saved memo (a title
    candidate, the first prompt). ``forget --before`` leaves sessions behind."""

    texts: dict[str, list[str]] = field(default_factory=dict)  # "s<id>" / "f<id>"

    @classmethod
    def collect(cls, writer: IndexWriter, where: str, args: list[Any]) -> _Copies:
        conn = writer.conn
        picked = f"SELECT t.id FROM turns t JOIN sessions s ON s.id = t.session WHERE {where}"
        survivors = {
            f"{kind}{r[0]}"
            for kind, col in (("s", "session"), ("f", "file"))
            for r in conn.execute(
                f"SELECT DISTINCT t.{col} FROM turns t JOIN sessions s ON s.id = t.session"
                f" WHERE {where} AND t.{col} IS NOT NULL AND EXISTS (SELECT 1 FROM turns u"
                f" WHERE u.{col} = t.{col} AND u.id NOT IN ({picked}))",
                args + args,
            )
        }
        out = cls()
        if not survivors:
            return out
        cur = conn.execute(
            f"SELECT t.session, t.file, t.text FROM turns t JOIN sessions s ON s.id = t.session"
            f" WHERE {where}",
            args,
        )
        for session, file, text in cur:
            for key in (f"s{session}", f"f{file}"):
                if key in survivors:
                    out.texts.setdefault(key, []).append(str(text))
        return out

    def remove(self, writer: IndexWriter) -> None:
        conn = writer.conn
        for key, texts in self.texts.items():
            rowid = int(key[1:])
            if key[0] == "s":
                row = conn.execute("SELECT title FROM sessions WHERE id = ?", (rowid,)).fetchone()
                if row and row[0] and _copied(str(row[0]), texts):
                    conn.execute("UPDATE sessions SET title = NULL WHERE id = ?", (rowid,))
                continue
            row = conn.execute("SELECT state FROM files WHERE id = ?", (rowid,)).fetchone()
            keep = {
                str(v)
                for r in conn.execute(
                    "SELECT DISTINCT s.session_id, s.project FROM turns t"
                    " JOIN sessions s ON s.id = t.session WHERE t.file = ?",
                    (rowid,),
                )
                for v in r
                if v
            }
            try:
                state = json.loads(row[0]) if row else None
            except ValueError:
                state = None
            if state is None:
                continue
            cleaned = _without_copies(state, texts, keep)
            if cleaned != state:
                conn.execute(
                    "UPDATE files SET state = ? WHERE id = ?",
                    (json.dumps(cleaned, separators=(",", ":")), rowid),
                )


def _remember(writer: IndexWriter, where: str, args: list[Any]) -> None:
    """Note the turns about to be forgotten, for the whole index: a later read of
    any file holding them (a new reader version reads every file again; the same
    session in another file) leaves them out (IndexWriter._without_forgotten)."""
    rows = writer.conn.execute(
        "SELECT s.session_id, t.key, t.text, t.ts, t.note FROM turns t"
        f" JOIN sessions s ON s.id = t.session WHERE {where}",
        args,
    ).fetchall()
    if not rows:
        return
    mark = writer.forgotten_mark()
    marks = [
        (mark(str(sid), key),)
        for sid, k, text, ts, note in rows
        for key in (str(k), text_key(text, ts, note))
    ]
    writer.conn.executemany("INSERT OR IGNORE INTO forgotten (mark) VALUES (?)", marks)


def _drop_memo_prose(writer: IndexWriter, file_id: int) -> None:
    row = writer.conn.execute(
        "SELECT state FROM files WHERE id = ?"
        " AND NOT EXISTS (SELECT 1 FROM turns WHERE turns.file = files.id)",
        (file_id,),
    ).fetchone()
    if row is None:
        return
    try:
        state = json.loads(row[0]) if row[0] else {}
    except ValueError:
        state = {}
    kept = without_prose(state) if isinstance(state, dict) else {}
    writer.conn.execute(
        "UPDATE files SET state = ? WHERE id = ?",
        (json.dumps(kept, separators=(",", ":")), file_id),
    )


def _copied(value: str, texts: list[str]) -> bool:
    """Whether ``value`` (a title: a first line, perhaps cut with "…") is a copy
    of some forgotten text."""
    core = value.rstrip("…").strip()
    return len(core) >= 8 and any(core in t for t in texts)


def _without_copies(state: Any, texts: list[str], keep: set[str]) -> Any:
    if isinstance(state, str):
        return None if state not in keep and _copied(state, texts) else state
    if isinstance(state, dict):
        return {k: _without_copies(v, texts, keep) for k, v in state.items()}
    if isinstance(state, list):
        return [_without_copies(v, texts, keep) for v in state]
    return state


_PENDING = "scrub_pending"


def _mark_scrub_pending(writer: IndexWriter) -> None:
    writer.conn.execute(
        "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (_PENDING, str(time.time()))
    )


def scrub_pending(writer: IndexWriter) -> bool:
    row = writer.conn.execute("SELECT 1 FROM meta WHERE key = ?", (_PENDING,)).fetchone()
    return row is not None


def retry_scrub(writer: IndexWriter) -> str | None:
    """Scrub again if a forget's scrub did not finish (disk full, a crash).
    None when nothing was pending or it worked now; else why it failed again."""
    if not scrub_pending(writer):
        return None
    try:
        scrub(writer)
    except sqlite3.OperationalError as exc:
        return str(exc)
    return None


def resolve(writer: IndexWriter, sel: Selection, known_hosts: tuple[str, ...]) -> Selection:
    """``sel`` with its session prefix resolved to the one full id; raises
    names.NotFound (naming what exists) for a host, session or project
    that is not indexed."""
    conn = writer.conn
    if sel.host is not None:
        names.check_host(conn, sel.host, known_hosts)
    if sel.session is not None:
        sel = dataclasses.replace(sel, session=names.resolve_session(conn, sel.session, sel.host))
    if sel.project is not None:
        # Exactly the project given: forgetting is not undone, and a path inside a
        # project (or a typo under one) must not take the whole project with it.
        # The project around it is named, to give instead.
        path = sel.project.rstrip("/") or "/"
        around = names.project_at(conn, path, sel.host)
        if around is not None and around != path:
            raise names.NotFound(
                f"no indexed session has the project {path!r}; it is inside the indexed "
                f"project {around!r}: give `--project {around}` to forget that project"
            )
        names.check_project(conn, path, sel.host)  # raises, naming the projects there are
    return sel


def _exclude(writer: IndexWriter, sel: Selection, ids: list[Any]) -> int:
    """One exclusion, as narrow as the selection: the session(s), else the
    project (on the host, when one is given), else the host."""
    rows: list[tuple[str, str, str]] = []
    if sel.session is not None:
        rows += [("session", str(r[1]), str(r[2])) for r in ids]
    elif sel.project is not None:
        rows.append(("project", sel.host or "", sel.project.rstrip("/") or "/"))
    elif sel.host is not None:
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
    with writer.transaction():
        conn.execute("DELETE FROM meta WHERE key = ?", (_PENDING,))
    busy = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
    return bool(busy and busy[0])


def other_copies(db: Path, sel: Selection) -> list[Path]:
    """Forget ``sel`` in the other copies of the index too: the old index a
    rebuild kept (``index.db.old``) is forgotten in and scrubbed; a half-built
    ``index.db.rebuild`` left by an interrupted rebuild is deleted (when no
    rebuild holds the lock). Returns the copies that may still hold the text."""
    from backscroll.errors import BackscrollError
    from backscroll.store import open_writer, remove_index

    left: list[Path] = []
    built = db.with_name(db.name + ".rebuild")
    if built.exists():
        if _rebuild_running(db):
            left.append(built)
        else:
            remove_index(built)
    old = db.with_name(db.name + ".old")
    if old.exists():
        try:
            writer = open_writer(old, check=True)
        except (BackscrollError, sqlite3.Error):
            return [*left, old]
        try:
            report = forget(writer, sel)
            if report.scrub_error:
                left.append(old)
        except (BackscrollError, sqlite3.Error):
            left.append(old)
        finally:
            writer.close()
    return left


def _rebuild_running(db: Path) -> bool:
    """Whether a rebuild holds the data directory's lock (a daemon's lock means
    no rebuild can run, so a .rebuild file is what a crashed one left)."""
    return rebuild_pid(db) is not None


def rebuild_pid(db: Path) -> int | None:
    """The process id of the rebuild running on ``db``'s data directory, if one is
    (it holds ``daemon.lock`` and wrote its pid there)."""
    import fcntl
    import json
    import os

    try:
        fd = os.open(db.parent / "daemon.lock", os.O_RDWR)
    except FileNotFoundError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            try:
                holder = json.loads(os.read(fd, 4096) or b"{}")
            except ValueError:
                holder = {}
            pid = holder.get("rebuild") if isinstance(holder, dict) else None
            return pid if isinstance(pid, int) else None
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)


def exclusions(writer: IndexWriter) -> list[tuple[str, str, str]]:
    rows = writer.conn.execute("SELECT kind, host, value FROM exclusions").fetchall()
    return [(str(k), str(h), str(v)) for k, h, v in rows]
