"""The write side of the store: one connection, owned by one thread.

Functions are named for intent. Every file's turns and its new saved position
are written in one transaction; many files may share a transaction on a cold
index. :meth:`IndexWriter.apply` re-reads the file's row inside the
transaction, so a second writer that lost the race sees the work done and skips.
"""

from __future__ import annotations

import dataclasses
import json
import sqlite3
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from backscroll.errors import DatabaseError
from backscroll.memo import without_prose
from backscroll.model import MTIME_NOTE, ReadResult, Session, Turn
from backscroll.paths import under_any
from backscroll.store import fts, schema


@dataclass(frozen=True, slots=True)
class FileStat:
    """What a cheap look at a file says (``stat`` plus a hash of its first bytes)."""

    size: int
    mtime_ns: int
    inode: int
    head_len: int = 0
    head_hash: str = ""
    #: Hash of the bytes just before the saved position (append-only files).
    tail_hash: str = ""


@dataclass(frozen=True, slots=True)
class FileRow:
    id: int
    path: str
    host: str
    size: int
    mtime_ns: int
    inode: int
    head_len: int
    head_hash: str
    position: int
    state: dict[str, Any]
    reader_version: int
    missing: bool
    error: str | None
    tail_hash: str = ""
    #: The last try could not open the file (permissions, I/O): try again.
    unreadable: bool = False

    @property
    def fingerprint(self) -> tuple[int, int, int, int]:
        return (self.size, self.mtime_ns, self.inode, self.position)


@dataclass(frozen=True, slots=True)
class Update:
    """The outcome of one read, to be written if the file's row is still as it was."""

    path: str
    host: str
    stat: FileStat
    reader_version: int
    #: The row fingerprint the read started from (None: no row existed).
    based_on: tuple[int, int, int, int] | None
    #: The read started from the beginning: the file's old turns are replaced.
    fresh: bool
    result: ReadResult


Outcome = Literal["written", "skipped", "conflict", "unsupported"]


@dataclass(slots=True)
class ApplyReport:
    outcome: Outcome
    turns_written: int = 0
    turns_deleted: int = 0


_FILE_COLS = (
    "id, path, host, size, mtime_ns, inode, head_len, head_hash, position, state, "
    "reader_version, missing, error, tail_hash, unreadable"
)

_UPSERT_TURN = """
INSERT INTO turns (session, file, key, seq, role, ts, text, tainted, subagent, note)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (session, key) DO UPDATE SET
    file = excluded.file, seq = excluded.seq, role = excluded.role, ts = excluded.ts,
    text = excluded.text, tainted = excluded.tainted, subagent = excluded.subagent,
    note = excluded.note
WHERE turns.text IS NOT excluded.text OR turns.role IS NOT excluded.role
    OR turns.ts IS NOT excluded.ts OR turns.file IS NOT excluded.file
    OR turns.seq IS NOT excluded.seq OR turns.tainted IS NOT excluded.tainted
    OR turns.subagent IS NOT excluded.subagent OR turns.note IS NOT excluded.note
"""

#: The same upsert fed from the connection's staging table: one statement for a
#: file's turns, so the FTS trigger's inserts are flushed once per file rather
#: than once per turn (FTS5 syncs its pending terms at every statement).
_STAGE_TABLE = (
    "CREATE TEMP TABLE IF NOT EXISTS turn_stage (session, file, key, seq, role, ts, text,"
    " tainted, subagent, note)"
)
_STAGE_ROW = "INSERT INTO temp.turn_stage VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
_UPSERT_STAGED = _UPSERT_TURN.replace(
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
    "SELECT session, file, key, seq, role, ts, text, tainted, subagent, note"
    " FROM temp.turn_stage WHERE true ORDER BY rowid",
)
#: A session's times from its turns and from one read's (``?``: the session's
#: row id, the read's started_at, the row id, the read's updated_at, the row id);
#: unknown on both sides, the stored time stays.
_RETIME_SESSION = """
UPDATE sessions SET
    started_at = coalesce((SELECT min(v) FROM (
        SELECT min(ts) AS v FROM turns WHERE session = ? UNION ALL SELECT ?)), started_at),
    updated_at = coalesce((SELECT max(v) FROM (
        SELECT max(ts) AS v FROM turns WHERE session = ? UNION ALL SELECT ?)), updated_at)
WHERE id = ?
"""

#: A file with at least this many turns goes through the staging table; an
#: append of a few turns keeps the plain ``executemany``.
STAGE_MIN_TURNS = 16

_UPSERT_SESSION = """
INSERT INTO sessions (host, session_id, project, title, started_at, updated_at,
                      resume_command, source_path, parent_session_id)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (host, session_id) DO UPDATE SET
    project = CASE WHEN ? THEN coalesce(sessions.project, excluded.project)
                   ELSE coalesce(excluded.project, sessions.project) END,
    title = coalesce(excluded.title, sessions.title),
    started_at = CASE
        WHEN sessions.started_at IS NULL THEN excluded.started_at
        WHEN excluded.started_at IS NULL THEN sessions.started_at
        ELSE min(sessions.started_at, excluded.started_at) END,
    updated_at = CASE
        WHEN sessions.updated_at IS NULL THEN excluded.updated_at
        WHEN excluded.updated_at IS NULL THEN sessions.updated_at
        ELSE max(sessions.updated_at, excluded.updated_at) END,
    resume_command = coalesce(excluded.resume_command, sessions.resume_command),
    source_path = CASE WHEN EXISTS (SELECT 1 FROM files WHERE files.path = sessions.source_path
                                    AND NOT files.missing)
                       THEN sessions.source_path ELSE excluded.source_path END,
    parent_session_id = coalesce(excluded.parent_session_id, sessions.parent_session_id)
RETURNING id
"""


#: The sessions named after a file that is gone (``?``: host, path) follow their
#: turns to a file still there: a transcript the host moved (Codex and TRAE CLI
#: archive theirs) whose new path was indexed before the old one was missed.
#: With no such file, the name stays. (A session whose file went first takes the
#: path of the next file to give it, in ``_UPSERT_SESSION``.)
_FOLLOW_TURNS = """
UPDATE sessions SET source_path = coalesce((
    SELECT f.path FROM turns t JOIN files f ON f.id = t.file
    WHERE t.session = sessions.id AND NOT f.missing ORDER BY t.ts, t.seq LIMIT 1),
    source_path)
WHERE host = ? AND source_path = ?
"""


#: Whether a session's named file holds any of its turns (``?``: the session's
#: row id twice). Walks the session's turns until one of that file's: at once,
#: as a rule, since the named file is the one that holds them.
_SOURCE_HOLDS = """
SELECT 1 FROM turns WHERE session = ? AND file =
    (SELECT f.id FROM files f JOIN sessions s ON f.path = s.source_path WHERE s.id = ?)
LIMIT 1
"""


def _row(values: tuple[Any, ...]) -> FileRow:
    (fid, path, host, size, mtime, inode, hlen, hhash, pos, state, rver, missing, err,
     tail, unreadable) = values  # fmt: skip
    try:
        parsed = json.loads(state) if state else {}
    except ValueError:
        parsed = {}
    return FileRow(
        int(fid), str(path), str(host), int(size), int(mtime), int(inode), int(hlen),
        str(hhash), int(pos), parsed if isinstance(parsed, dict) else {}, int(rver),
        bool(missing), err, str(tail or ""), bool(unreadable),
    )  # fmt: skip


class IndexWriter:
    """Owns the one write connection to ``index.db``."""

    def __init__(
        self, path: Path, *, busy_timeout_ms: int = schema.BUSY_TIMEOUT_MS, check: bool = False
    ) -> None:
        self.path = path
        #: Set once SQLite has said the file is corrupt: nothing is written after.
        self.corrupt: DatabaseError | None = None
        schema.refuse_unusable(path, busy_timeout_ms, thorough=check)
        self.conn = schema.connect(path, busy_timeout_ms=busy_timeout_ms)
        try:
            schema.check_integrity(self.conn, path)
            schema.migrate(self.conn, path)
        except BaseException:
            self.conn.close()
            raise
        self._in_tx = False
        self._staging = False
        #: This writer is bulk loading (its full-text index is fed in steps: store/fts.py).
        self.bulk = False
        if schema.missing_indexes(self.conn) or fts.deferred(self.conn):
            # A bulk load was cut short (or runs beside this writer): its indexes
            # are built now, and the transaction catches the full-text index up.
            with self.transaction():
                schema.restore_secondary_indexes(self.conn)

    def close(self) -> None:
        self.conn.close()

    # ------------------------------------------------------------------ transactions

    def note_corrupt(self, exc: BaseException) -> DatabaseError:
        """SQLite said the file is corrupt: remember it (here and in the marker
        file), so that nothing more is written into it. Returns the error."""
        if self.corrupt is None:
            self.corrupt = (
                exc if isinstance(exc, DatabaseError) else schema.mark_corrupt(self.path, str(exc))
            )
        return self.corrupt

    def _refuse_if_corrupt(self) -> None:
        if self.corrupt is not None:
            raise self.corrupt

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """``BEGIN IMMEDIATE`` ... ``COMMIT`` (rolled back whole on any error).
        A corrupt database is refused before anything is written."""
        if self._in_tx:
            yield
            return
        self._refuse_if_corrupt()
        try:
            self.conn.execute("BEGIN IMMEDIATE")
        except sqlite3.DatabaseError as exc:
            if schema.is_corrupt(exc):
                raise self.note_corrupt(exc) from exc
            raise
        self._in_tx = True
        try:
            if not self.bulk:
                # A bulk load deferred the full-text index and was killed, or runs
                # beside this writer: catch it up now, before writing past it.
                fts.finish(self.conn)
            yield
            if self.bulk:
                fts.catch_up(self.conn, fts.bulk_step)
        except BaseException as exc:
            self._in_tx = False
            try:
                # (SQLite may have ended it already: an interrupt, a full disk)
                if self.conn.in_transaction:
                    self.conn.execute("ROLLBACK")
            except sqlite3.Error:
                if not schema.is_corrupt(exc):
                    raise
            if schema.is_corrupt(exc):
                raise self.note_corrupt(exc) from exc
            raise
        self._in_tx = False
        try:
            self.conn.execute("COMMIT")
        except sqlite3.DatabaseError as exc:
            if schema.is_corrupt(exc):
                raise self.note_corrupt(exc) from exc
            raise

    # ------------------------------------------------------------------ files

    def file_row(self, path: str) -> FileRow | None:
        cur = self.conn.execute(f"SELECT {_FILE_COLS} FROM files WHERE path = ?", (path,))
        values = cur.fetchone()
        return _row(values) if values else None

    def file_rows(self, host: str | None = None) -> dict[str, FileRow]:
        if host is None:
            cur = self.conn.execute(f"SELECT {_FILE_COLS} FROM files")
        else:
            cur = self.conn.execute(f"SELECT {_FILE_COLS} FROM files WHERE host = ?", (host,))
        return {r.path: r for r in map(_row, cur.fetchall())}

    def known_files(self) -> list[tuple[str, str, bool]]:
        """Every file the index knows: its path, host and whether it is marked
        missing (no memo parsed: a pass's end looks for files gone meanwhile)."""
        cur = self.conn.execute("SELECT path, host, missing FROM files")
        return [(str(path), str(host), bool(missing)) for path, host, missing in cur]

    def apply(self, update: Update) -> ApplyReport:
        """Write one read's turns and the file's new position, in one transaction."""
        with self.transaction():
            row = self.file_row(update.path)
            current = row.fingerprint if row else None
            if (
                row is not None
                and current != update.based_on
                and (row.size, row.mtime_ns, row.inode) == _stat_key(update.stat)
                and row.reader_version == update.reader_version
            ):
                return ApplyReport("skipped")  # another writer indexed this exact state
            if current != update.based_on:
                return ApplyReport("conflict")
            result = update.result
            if result.turns and self._anything_forgotten():
                # What forget took stays out of later reads (a new reader version
                # reads every file again; the same session in another file).
                update = self._without_forgotten(update)
                result = update.result
            file_id = self._save_file(row, update)
            if result.unsupported:
                if result.replace and row is not None:  # (nothing of it is to stay indexed)
                    report = ApplyReport("unsupported")
                    report.turns_deleted = self._drop_stale(file_id, set(), None)
                    self._delete_empty_sessions()
                    return report
                return ApplyReport("unsupported")
            return self._write_turns(file_id, update, new_file=row is None)

    def forgotten_mark(self) -> Callable[[str, str], str]:
        """(session id, turn key) -> the mark that notes it as forgotten: SHA-256
        over this index's salt (made once, in ``meta``) and the two. Each
        forgotten turn is marked by its key and by its text (:func:`text_key`):
        whoever holds the index can test a guess of a forgotten turn's whole
        text, not read it."""
        row = self.conn.execute("SELECT value FROM meta WHERE key = 'forget_salt'").fetchone()
        if row is None:
            import secrets

            salt = secrets.token_hex(16)
            self.conn.execute("INSERT INTO meta(key, value) VALUES ('forget_salt', ?)", (salt,))
        else:
            salt = str(row[0])

        def mark(session_id: str, key: str) -> str:
            import hashlib

            text = f"{salt}\x00{session_id}\x00{key}".encode("utf-8", "surrogatepass")
            return hashlib.sha256(text).hexdigest()[:32]

        return mark

    def _anything_forgotten(self) -> bool:
        return self.conn.execute("SELECT 1 FROM forgotten LIMIT 1").fetchone() is not None

    def _without_forgotten(self, update: Update) -> Update:
        """``update`` less the turns ``forget`` took, with the prose of its memo (a
        title candidate may be a forgotten prompt) and the titles of the sessions
        it took turns from (forget cleared those; a title may be such a turn's
        first line). A session left with no turn is not written either."""
        mark = self.forgotten_mark()
        result = update.result
        # By key, and by text with its time: a host that keys turns by their
        # place in the file (Codex, Claude Code records without a uuid) gives a
        # turn another key when lines move, and a forgotten turn must not come
        # back as new. Forgets before text marks held the time marked the text
        # alone; those marks still count (the same words said again there stay
        # out, as then). Each turn's distinct marks, hashed once.
        per_turn = [
            {
                mark(t.session_id, key)
                for key in {
                    t.key,
                    text_key(t.text, t.timestamp, t.note),
                    text_key(t.text, None, None),
                }
            }
            for t in result.turns
        ]
        marks = list(set().union(*per_turn))
        found: set[str] = set()
        for i in range(0, len(marks), 500):
            chunk = marks[i : i + 500]
            found.update(
                str(r[0])
                for r in self.conn.execute(
                    f"SELECT mark FROM forgotten WHERE mark IN ({','.join('?' * len(chunk))})",
                    chunk,
                )
            )
        if not found:
            return update
        taken = {i for i, own in enumerate(per_turn) if found & own}
        turns = tuple(t for i, t in enumerate(result.turns) if i not in taken)
        touched = {result.turns[i].session_id for i in taken}
        gone = touched - {t.session_id for t in turns}
        kept = dataclasses.replace(
            result,
            turns=turns,
            sessions=tuple(
                dataclasses.replace(s, title=None) if s.session_id in touched else s
                for s in result.sessions
                if s.session_id not in gone
            ),
            state=without_prose(dict(result.state)),
        )
        return dataclasses.replace(update, result=kept)

    def _save_file(self, row: FileRow | None, update: Update) -> int:
        st = update.stat
        result = update.result
        problems = len(result.problems)
        values = (
            update.host, st.size, st.mtime_ns, st.inode, st.head_len, st.head_hash,
            result.position, json.dumps(dict(result.state), separators=(",", ":")),
            update.reader_version, time.time(), result.unsupported, st.tail_hash,
        )  # fmt: skip
        if row is None:
            cur = self.conn.execute(
                "INSERT INTO files (host, size, mtime_ns, inode, head_len, head_hash, position,"
                " state, reader_version, indexed_at, error, tail_hash, problems, path)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (*values, problems, update.path),
            )
            return int(cur.lastrowid or 0)
        self.conn.execute(
            "UPDATE files SET host = ?, size = ?, mtime_ns = ?, inode = ?, head_len = ?,"
            " head_hash = ?, position = ?, state = ?, reader_version = ?, indexed_at = ?,"
            " error = ?, tail_hash = ?, missing = 0, unreadable = 0,"
            " problems = CASE WHEN ? THEN ? ELSE problems + ? END WHERE id = ?",
            (*values, update.fresh, problems, problems, row.id),
        )
        return row.id

    def _excluded_sessions(
        self, host: str, sessions: dict[str, Session], ran_in: str | None = None
    ) -> set[str]:
        """Sessions the user forgot with ``--and-exclude`` (by session, project or
        host); all of them for a sub-agent's transcript run in an excluded project."""
        rows = self.conn.execute(
            "SELECT kind, value FROM exclusions WHERE host IN ('', ?)", (host,)
        ).fetchall()
        if not rows:
            return set()
        ids = {v for k, v in rows if k == "session"}
        projects = {v for k, v in rows if k == "project"}
        if any(k == "host" and v == host for k, v in rows):
            return set(sessions)
        if ran_in and under_any(ran_in, projects):
            return set(sessions)
        known = {
            str(r[0]): str(r[1] or "")
            for r in self.conn.execute(
                "SELECT session_id, project FROM sessions WHERE host = ?", (host,)
            )
            if r[0] in sessions
        }
        out = set()
        for sid, s in sessions.items():
            project = (s.project or known.get(sid, "")).rstrip("/")
            if sid in ids or (project and project in projects):
                out.add(sid)
        return out

    def _write_turns(self, file_id: int, update: Update, *, new_file: bool) -> ApplyReport:
        result = update.result
        sessions = _merge_sessions(result.sessions, result.turns, update.path)
        skip = self._excluded_sessions(update.host, sessions, result.ran_in)
        if skip:
            sessions = {k: v for k, v in sessions.items() if k not in skip}
            # The memo's title candidate or first prompt may be a kept-out session's.
            self.conn.execute(
                "UPDATE files SET state = ? WHERE id = ?",
                (json.dumps(without_prose(dict(result.state)), separators=(",", ":")), file_id),
            )
            result = dataclasses.replace(
                result, turns=tuple(t for t in result.turns if t.session_id not in skip)
            )
        rowids: dict[str, int] = {}
        for s in sessions.values():
            rowids[s.session_id] = self._upsert_session(update.host, s, update.path)
        report = ApplyReport("written")
        params = [
            (rowids[t.session_id], file_id, t.key, t.seq, t.role, t.timestamp, t.text,
             int(t.tainted), int(t.subagent), t.note)
            for t in result.turns
        ]  # fmt: skip
        if len(params) >= STAGE_MIN_TURNS:
            report.turns_written = self._insert_staged(params)
        elif params:
            cur = self.conn.executemany(_UPSERT_TURN, params)
            report.turns_written = max(cur.rowcount, 0)
        replace = (result.replace or update.fresh) and not result.retain
        dropped_sessions = result.replaced_sessions | result.removed_sessions
        # A file that had no row until now has no old turns to drop (ids of
        # forgotten files' turns are set to NULL): no scan of ``turns_file``.
        if (replace or dropped_sessions) and not new_file:
            kept = {(rowids[t.session_id], t.key) for t in result.turns}
            report.turns_deleted = self._drop_stale(
                file_id,
                kept,
                None if replace else self._session_rowids(update.host, dropped_sessions),
            )
            if report.turns_deleted:
                self._retime(sessions, rowids, file_id)
        if result.supersedes and result.replace and rowids:
            dropped = self._drop_superseded(update.host, result.supersedes, rowids)
            if dropped:
                report.turns_deleted += dropped
                self._retime(sessions, rowids, file_id)
        # (after the older copies let go: a session named after one moves here)
        for sid in {t.session_id for t in result.turns}:
            self._take_source(update.path, rowids[sid])
        for sid in result.removed_sessions:
            self.conn.execute(
                "DELETE FROM sessions WHERE host = ? AND session_id = ?"
                " AND NOT EXISTS (SELECT 1 FROM turns WHERE turns.session = sessions.id)",
                (update.host, sid),
            )
        return report

    def _retime(self, sessions: dict[str, Session], rowids: dict[str, int], file_id: int) -> None:
        """A session that lost turns (its transcript rewound or rewritten shorter)
        spans what this read found and the turns it still has, not the times it
        had before: its first and last activity come from those alone. Only for
        a session this file alone holds: other files (a sub-agent's, a fork's)
        gave it times from records that are not turns, which are not known here."""
        for sid, rowid in rowids.items():
            elsewhere = self.conn.execute(
                "SELECT 1 FROM turns WHERE session = ? AND file IS NOT ? LIMIT 1", (rowid, file_id)
            ).fetchone()
            if elsewhere:
                continue
            s = sessions[sid]
            self.conn.execute(_RETIME_SESSION, (rowid, s.started_at, rowid, s.updated_at, rowid))

    def _insert_staged(self, params: list[tuple[Any, ...]]) -> int:
        if not self._staging:
            self.conn.execute(_STAGE_TABLE)
            self._staging = True
        self.conn.execute("DELETE FROM temp.turn_stage")
        self.conn.executemany(_STAGE_ROW, params)
        written = max(self.conn.execute(_UPSERT_STAGED).rowcount, 0)
        self.conn.execute("DELETE FROM temp.turn_stage")
        return written

    def _upsert_session(self, host: str, s: Session, path: str) -> int:
        cur = self.conn.execute(
            _UPSERT_SESSION,
            (host, s.session_id, s.project, s.title, s.started_at, s.updated_at,
             s.resume_command, path, s.parent_session_id, s.project_guess),
        )  # fmt: skip
        return int(cur.fetchone()[0])

    def _session_rowids(self, host: str, session_ids: Iterable[str]) -> set[int]:
        out: set[int] = set()
        for sid in session_ids:
            r = self.conn.execute(
                "SELECT id FROM sessions WHERE host = ? AND session_id = ?", (host, sid)
            ).fetchone()
            if r:
                out.add(int(r[0]))
        return out

    def _take_source(self, path: str, rowid: int) -> None:
        """A session named after a file that holds none of its turns (any more) is
        named after ``path``, which has just written some: a chat VS Code moved
        from its database to a file, a transcript that took over from another.
        (Two steps: one statement with both tests walked all of a long session's
        turns at each append of a sub-agent's file, where the named file's first
        turn ends this look at once.)"""
        row = self.conn.execute("SELECT source_path FROM sessions WHERE id = ?", (rowid,))
        named = row.fetchone()
        if named is None or named[0] == path:
            return
        if self.conn.execute(_SOURCE_HOLDS, (rowid, rowid)).fetchone() is None:
            self.conn.execute("UPDATE sessions SET source_path = ? WHERE id = ?", (path, rowid))

    def _drop_superseded(self, host: str, paths: tuple[str, ...], rowids: dict[str, int]) -> int:
        """Turns of these sessions that older copies of the file still hold (the
        ones this read did not take over: gone from the copy that goes on)."""
        marks = ", ".join("?" * len(rowids))
        deleted = 0
        for path in paths:
            cur = self.conn.execute(
                f"DELETE FROM turns WHERE session IN ({marks}) AND file ="
                " (SELECT id FROM files WHERE path = ? AND host = ?)",
                (*rowids.values(), path, host),
            )
            deleted += max(cur.rowcount, 0)
        return deleted

    def _drop_stale(
        self, file_id: int, kept: set[tuple[int, str]], only_sessions: set[int] | None
    ) -> int:
        rows = self.conn.execute(
            "SELECT id, session, key FROM turns WHERE file = ?", (file_id,)
        ).fetchall()
        stale = [
            (r[0],)
            for r in rows
            if (r[1], r[2]) not in kept and (only_sessions is None or r[1] in only_sessions)
        ]
        if stale:
            self.conn.executemany("DELETE FROM turns WHERE id = ?", stale)
        return len(stale)

    def record_error(
        self,
        path: str,
        host: str,
        message: str,
        stat: FileStat | None = None,
        reader_version: int = 0,
        unreadable: bool = False,
    ) -> None:
        """Note that a file could not be read; its indexed turns stay. With the
        file's stat, the file is not tried again until it changes, unless it was
        ``unreadable`` (could not be opened): that is tried at every rescan."""
        with self.transaction():
            if stat is None:
                self.conn.execute(
                    "INSERT INTO files (path, host, error, unreadable) VALUES (?, ?, ?, ?)"
                    " ON CONFLICT (path) DO UPDATE SET error = excluded.error,"
                    " unreadable = excluded.unreadable",
                    (path, host, message, unreadable),
                )
                return
            self.conn.execute(
                "INSERT INTO files (path, host, error, size, mtime_ns, inode, reader_version,"
                " unreadable) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
                " ON CONFLICT (path) DO UPDATE SET error = excluded.error,"
                " size = excluded.size, mtime_ns = excluded.mtime_ns, inode = excluded.inode,"
                " reader_version = excluded.reader_version, unreadable = excluded.unreadable",
                (path, host, message, stat.size, stat.mtime_ns, stat.inode, reader_version,
                 unreadable),
            )  # fmt: skip

    def mark_missing(self, path: str) -> None:
        """The source vanished; its turns are kept (hosts prune old transcripts). A
        file that never gave a turn (one that could not be read) leaves no row.
        The sessions named after it follow their turns to a file still there."""
        with self.transaction():
            self.conn.execute(
                "DELETE FROM files WHERE path = ? AND error IS NOT NULL"
                " AND NOT EXISTS (SELECT 1 FROM turns WHERE file = files.id)",
                (path,),
            )
            self.conn.execute("UPDATE files SET missing = 1 WHERE path = ?", (path,))
            self._follow_turns(path)

    def forget_missing_file(self, path: str) -> int:
        """Policy ``on_delete: forget``: drop the turns of a vanished source."""
        with self.transaction():
            row = self.file_row(path)
            if row is None:
                return 0
            n = self.conn.execute("DELETE FROM turns WHERE file = ?", (row.id,)).rowcount
            self.conn.execute("DELETE FROM files WHERE id = ?", (row.id,))
            self._delete_empty_sessions()
            self.conn.execute(_FOLLOW_TURNS, (row.host, path))
            return int(n)

    def _follow_turns(self, path: str) -> None:
        row = self.conn.execute("SELECT host FROM files WHERE path = ?", (path,)).fetchone()
        if row is not None:
            self.conn.execute(_FOLLOW_TURNS, (row[0], path))

    def _delete_empty_sessions(self) -> None:
        self.conn.execute(
            "DELETE FROM sessions WHERE NOT EXISTS"
            " (SELECT 1 FROM turns WHERE turns.session = sessions.id)"
        )

    def known_projects(self) -> list[str]:
        """Project directories the indexed sessions name (where Aider keeps history)."""
        rows = self.conn.execute(
            "SELECT DISTINCT project FROM sessions WHERE project IS NOT NULL AND project != ''"
        )
        return [str(r[0]) for r in rows.fetchall()]

    # ------------------------------------------------------------------ upkeep

    def optimize(self) -> None:
        """FTS5 segment merge and ``PRAGMA optimize`` (scheduled when idle)."""
        self._refuse_if_corrupt()
        if schema.has_fts(self.conn):
            with self.transaction():
                self.conn.execute("INSERT INTO turns_fts(turns_fts) VALUES ('optimize')")
        self.conn.execute("PRAGMA optimize")

    def is_empty(self) -> bool:
        """No turn indexed yet: a first index (or a rebuild) is a bulk load."""
        return self.conn.execute("SELECT 1 FROM turns LIMIT 1").fetchone() is None

    def begin_bulk(self) -> None:
        """A cold pass starts: the secondary indexes of ``turns`` go, and the
        full-text index is fed in large steps (store/fts.py), until
        :meth:`end_bulk` (or the next writer's transaction, if this process dies
        first)."""
        with self.transaction():
            schema.drop_secondary_indexes(self.conn)
            fts.defer(self.conn)
        self.bulk = True

    def build_indexes(self) -> None:
        """Build the secondary indexes before a bulk load ends (its own
        transaction); the load's last rows then update them as they go in.
        Worth it while reader processes still read: the sort overlaps their
        work instead of following it on one core. The full-text index is
        caught up in the same transaction, for the same reason: the end of the
        load is then left only the rows written after this (bench/RESULTS.md,
        eleventh pass)."""
        with self.transaction():
            schema.build_secondary_indexes(self.conn)
            fts.catch_up(self.conn)

    def end_bulk(self) -> None:
        """Build the secondary indexes once and catch the full-text index up.

        The FTS segments the steps wrote are left to FTS5's automerge and the
        daemon's idle upkeep (:meth:`optimize`): a final ``optimize`` rewrote
        the whole full-text index on one core (0.4 s at 2 GB) and measured no
        faster queries afterwards (bench/RESULTS.md)."""
        self.bulk = False
        with self.transaction():  # (catches the full-text index up first)
            schema.restore_secondary_indexes(self.conn)

    def checkpoint(self) -> None:
        self._refuse_if_corrupt()
        self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")


def text_key(text: str, ts: float | None, note: str | None) -> str:
    """What a turn is marked by when it is forgotten, beside its key: its text and
    the time its host recorded for it. A line that moves keeps both; the same
    words said again later ("yes", "continue") are a new turn. A turn whose
    host records no time (its timestamp is the file's) is marked by its text
    alone: there, the same words said again in that session stay out too."""
    if ts is None or note == MTIME_NOTE:
        return "\x01text\x00" + text
    return f"\x01text\x00{float(ts)!r}\x00{text}"


def _stat_key(st: FileStat) -> tuple[int, int, int]:
    return (st.size, st.mtime_ns, st.inode)


def _merge_sessions(
    sessions: Iterable[Session], turns: Iterable[Turn], path: str
) -> dict[str, Session]:
    """One Session per id: the reader's metadata plus the turns' time span."""
    merged: dict[str, Session] = {}
    for s in sessions:
        old = merged.get(s.session_id)
        merged[s.session_id] = s if old is None else _combine(old, s)
    spans: dict[str, list[float | None]] = {}
    for t in turns:
        ts = t.timestamp
        span = spans.get(t.session_id)
        if span is None:
            spans[t.session_id] = [ts, ts]
        elif ts is not None:
            lo, hi = span
            if lo is None or ts < lo:
                span[0] = ts
            if hi is None or ts > hi:
                span[1] = ts
    for sid, (lo, hi) in spans.items():
        times = Session(sid, started_at=lo, updated_at=hi)
        old = merged.get(sid)
        merged[sid] = times if old is None else _combine(old, times)
    return merged


def _combine(a: Session, b: Session) -> Session:
    def lo(x: float | None, y: float | None) -> float | None:
        return y if x is None else x if y is None else min(x, y)

    def hi(x: float | None, y: float | None) -> float | None:
        return y if x is None else x if y is None else max(x, y)

    # (a guessed project gives way to one that is not, whichever came first)
    firm = [x for x in (b, a) if x.project and not x.project_guess]
    guessed = [x for x in (b, a) if x.project and x.project_guess]
    project = (firm or guessed or [b])[0]
    return Session(
        a.session_id,
        project=project.project,
        project_guess=project.project_guess,
        title=b.title or a.title,
        started_at=lo(a.started_at, b.started_at),
        updated_at=hi(a.updated_at, b.updated_at),
        resume_command=b.resume_command or a.resume_command,
        parent_session_id=b.parent_session_id or a.parent_session_id,
    )
