"""DDL, numbered migrations, and opening a connection safely.

Every connection sets ``busy_timeout`` before any other statement. The switch to
WAL retries transient "database is locked" / "disk I/O error" with jitter within
that same budget, since several processes may open a brand-new database at once.
"""

from __future__ import annotations

import os
import random
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path

from backscroll.errors import DatabaseError
from backscroll.paths import take_back
from backscroll.store import fts, prefix
from backscroll.store.fts import has_fts as has_fts  # (its callers import it from here)

BUSY_TIMEOUT_MS = 5000
#: Page size of a new index (SQLite's default is 4096; an existing index keeps
#: its own: in WAL mode nothing changes it). A cold index of the 240 MB bench
#: corpus wrote its turns and full-text index with 7 % less CPU and into a 4 %
#: smaller file, ranked queries as fast (bench/RESULTS.md, eighteenth pass).
PAGE_SIZE = 8192
_FTS5: bool | None = None


def fts5_available() -> bool:
    """Whether this Python's SQLite has FTS5 (``BACKSCROLL_NO_FTS=1`` forces no)."""
    global _FTS5
    if os.environ.get("BACKSCROLL_NO_FTS") == "1":
        return False
    if _FTS5 is None:
        conn = sqlite3.connect(":memory:")
        try:
            conn.execute("CREATE VIRTUAL TABLE t USING fts5(x)")
            _FTS5 = True
        except sqlite3.OperationalError:
            _FTS5 = False
        finally:
            conn.close()
    return _FTS5


_BASE = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS files (
    id INTEGER PRIMARY KEY,
    path TEXT NOT NULL UNIQUE,
    host TEXT NOT NULL,
    size INTEGER NOT NULL DEFAULT 0,
    mtime_ns INTEGER NOT NULL DEFAULT 0,
    inode INTEGER NOT NULL DEFAULT 0,
    head_len INTEGER NOT NULL DEFAULT 0,
    head_hash TEXT NOT NULL DEFAULT '',
    position INTEGER NOT NULL DEFAULT 0,
    state TEXT NOT NULL DEFAULT '{}',
    reader_version INTEGER NOT NULL DEFAULT 0,
    indexed_at REAL,
    problems INTEGER NOT NULL DEFAULT 0,
    error TEXT,
    missing INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS files_host ON files(host);
CREATE TABLE IF NOT EXISTS sessions (
    id INTEGER PRIMARY KEY,
    host TEXT NOT NULL,
    session_id TEXT NOT NULL,
    project TEXT,
    title TEXT,
    started_at REAL,
    updated_at REAL,
    resume_command TEXT,
    source_path TEXT,
    parent_session_id TEXT,
    UNIQUE (host, session_id)
);
CREATE INDEX IF NOT EXISTS sessions_project ON sessions(project);
CREATE TABLE IF NOT EXISTS turns (
    id INTEGER PRIMARY KEY,
    session INTEGER NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    file INTEGER REFERENCES files(id) ON DELETE SET NULL,
    key TEXT NOT NULL,
    seq INTEGER NOT NULL DEFAULT 0,
    role TEXT NOT NULL,
    ts REAL,
    text TEXT NOT NULL,
    tainted INTEGER NOT NULL DEFAULT 0,
    subagent INTEGER NOT NULL DEFAULT 0,
    note TEXT,
    UNIQUE (session, key)
);
CREATE INDEX IF NOT EXISTS turns_file ON turns(file);
CREATE INDEX IF NOT EXISTS turns_order ON turns(session, ts, seq);
CREATE INDEX IF NOT EXISTS turns_ts ON turns(ts);
"""

_FTS: tuple[str, ...] = (
    """CREATE VIRTUAL TABLE IF NOT EXISTS turns_fts USING fts5(
        text, content='turns', content_rowid='id', tokenize='porter unicode61')""",
    """CREATE TRIGGER IF NOT EXISTS turns_ai AFTER INSERT ON turns BEGIN
        INSERT INTO turns_fts(rowid, text) VALUES (new.id, new.text);
    END""",
    """CREATE TRIGGER IF NOT EXISTS turns_ad AFTER DELETE ON turns BEGIN
        INSERT INTO turns_fts(turns_fts, rowid, text) VALUES ('delete', old.id, old.text);
    END""",
    """CREATE TRIGGER IF NOT EXISTS turns_au AFTER UPDATE OF text ON turns
    WHEN old.text IS NOT new.text BEGIN
        INSERT INTO turns_fts(turns_fts, rowid, text) VALUES ('delete', old.id, old.text);
        INSERT INTO turns_fts(rowid, text) VALUES (new.id, new.text);
    END""",
)

# A migration takes the connection inside a transaction.
Migration = Callable[[sqlite3.Connection], None]


def _m1_base(conn: sqlite3.Connection) -> None:
    for statement in _BASE.split(";"):
        if statement.strip():
            conn.execute(statement)


def _m2_fts(conn: sqlite3.Connection) -> None:
    if not fts5_available():
        conn.execute("INSERT OR REPLACE INTO meta(key, value) VALUES ('fts', '0')")
        return
    for statement in _FTS:
        conn.execute(statement)
    conn.execute("INSERT INTO turns_fts(turns_fts) VALUES ('rebuild')")
    conn.execute("INSERT OR REPLACE INTO meta(key, value) VALUES ('fts', '1')")


def _m3_exclusions(conn: sqlite3.Connection) -> None:
    """What the user forgot with ``--and-exclude``: never indexed again."""
    conn.execute(
        "CREATE TABLE IF NOT EXISTS exclusions ("
        " kind TEXT NOT NULL CHECK (kind IN ('session', 'project', 'host')),"
        " host TEXT NOT NULL DEFAULT '', value TEXT NOT NULL, created_at REAL,"
        " PRIMARY KEY (kind, host, value))"
    )


def _m4_tail_hash(conn: sqlite3.Connection) -> None:
    """A hash of the bytes just before the saved position: an in-place rewrite
    that keeps the head and grows no longer passes for an append."""
    conn.execute("ALTER TABLE files ADD COLUMN tail_hash TEXT NOT NULL DEFAULT ''")


def _m5_unreadable(conn: sqlite3.Connection) -> None:
    """A file that could not be opened (permissions, I/O): tried again at every
    rescan, since making it readable (chmod) changes neither its size nor mtime."""
    conn.execute("ALTER TABLE files ADD COLUMN unreadable INTEGER NOT NULL DEFAULT 0")


def _m6_team_outbox(conn: sqlite3.Connection) -> None:
    """The team outbox: every committed change to a turn, recorded by triggers
    in the transaction that made it (only while ``meta.team_outbox`` is 1)."""
    from backscroll.store.outbox_ddl import OUTBOX_DDL

    for statement in OUTBOX_DDL:
        conn.execute(statement)


def _m7_fts_watermark(conn: sqlite3.Connection) -> None:
    """The full-text index's triggers skip turns above ``meta.fts_upto``, the
    watermark of a bulk load that feeds FTS5 in large steps (see store/fts.py)."""
    fts.install_triggers(conn)


def _m8_forgotten(conn: sqlite3.Connection) -> None:
    """The turns ``forget`` took from a file, noted on its row (superseded by
    schema 9's index-wide table; the column is left unused, and its notes, kept
    for a few hours of development, are not carried)."""
    conn.execute("ALTER TABLE files ADD COLUMN forgotten TEXT NOT NULL DEFAULT ''")


def _m9_forgotten_index_wide(conn: sqlite3.Connection) -> None:
    """What ``forget`` took, noted for the whole index rather than per file: the
    same session can be read from another file (OpenCode's JSON tree and its
    database, a Codex rollout moved to archived_sessions). ``mark`` is
    SHA-256 over a salt kept in ``meta`` and the session id and turn key
    (store/forget.py). ``files.forgotten`` (schema 8) is left unused."""
    conn.execute("CREATE TABLE IF NOT EXISTS forgotten (mark TEXT PRIMARY KEY) WITHOUT ROWID")


def _m10_sessions_source(conn: sqlite3.Connection) -> None:
    """Sessions by the file they are named after: a file found missing hands
    its sessions to a file still there (store/writer.py), one lookup each rather
    than a scan of every session per vanished file."""
    conn.execute("CREATE INDEX IF NOT EXISTS sessions_source ON sessions(source_path)")


#: Numbered migrations, applied in order; ``PRAGMA user_version`` records the last.
MIGRATIONS: tuple[tuple[int, Migration], ...] = (
    (1, _m1_base),
    (2, _m2_fts),
    (3, _m3_exclusions),
    (4, _m4_tail_hash),
    (5, _m5_unreadable),
    (6, _m6_team_outbox),
    (7, _m7_fts_watermark),
    (8, _m8_forgotten),
    (9, _m9_forgotten_index_wide),
    (10, _m10_sessions_source),
)
#: Newest schema this code knows: the last migration's number, never written
#: by hand (a merge that renumbers migrations moves it too). A database newer
#: than this is refused.
SCHEMA_VERSION = MIGRATIONS[-1][0]

_TRANSIENT = ("database is locked", "disk i/o error", "database schema is locked", "busy")


def _is_transient(exc: sqlite3.OperationalError) -> bool:
    text = str(exc).lower()
    return any(t in text for t in _TRANSIENT)


def connect(
    path: Path,
    *,
    readonly: bool = False,
    busy_timeout_ms: int = BUSY_TIMEOUT_MS,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> sqlite3.Connection:
    """Open the index database with ``busy_timeout`` set first, then WAL.

    Transient errors while switching to WAL are retried with jitter until the
    busy budget is spent; any other error is raised at once.
    """
    if readonly:
        uri = f"file:{path}?mode=ro"
        conn = sqlite3.connect(uri, uri=True, isolation_level=None, check_same_thread=False)
        conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
        prefix.register(conn)
        return conn
    conn = sqlite3.connect(str(path), isolation_level=None, check_same_thread=False)
    conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
    conn.execute(f"PRAGMA page_size = {PAGE_SIZE}")  # (before WAL: a new file only)
    prefix.register(conn)
    deadline = clock() + busy_timeout_ms / 1000
    delay = 0.005
    while True:
        try:
            mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()
            if mode and str(mode[0]).lower() == "wal":
                break
            raise sqlite3.OperationalError(f"database is locked (journal mode {mode})")
        except sqlite3.OperationalError as exc:
            if not _is_transient(exc) or clock() >= deadline:
                conn.close()
                raise
            sleep(delay * (0.5 + random.random()))
            delay = min(delay * 2, 0.2)
    conn.execute("PRAGMA synchronous = NORMAL")
    conn.execute("PRAGMA foreign_keys = ON")
    # Freed pages are zeroed, so forgotten text does not linger in the file.
    conn.execute("PRAGMA secure_delete = ON")
    return conn


def migrate(conn: sqlite3.Connection, path: Path) -> int:
    """Bring the schema up to :data:`SCHEMA_VERSION`; refuse a newer database."""
    current = int(conn.execute("PRAGMA user_version").fetchone()[0])
    if current > SCHEMA_VERSION:
        raise DatabaseError(
            f"{path} was written by a newer backscroll (schema {current}, this one knows "
            f"{SCHEMA_VERSION}); upgrade backscroll, or point BACKSCROLL_HOME elsewhere"
        )
    if current == SCHEMA_VERSION:
        return current
    conn.execute("BEGIN IMMEDIATE")
    try:
        current = int(conn.execute("PRAGMA user_version").fetchone()[0])
        for number, step in MIGRATIONS:
            if number > current:
                step(conn)
                conn.execute(f"PRAGMA user_version = {number}")
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    return SCHEMA_VERSION


def disk_full(path: Path) -> bool:
    """Less room left beside ``path`` than a WAL needs to open (a few pages)."""
    try:
        st = os.statvfs(path.parent)
    except OSError:
        return False
    return st.f_bavail * st.f_frsize < 16 * PAGE_SIZE


def _no_room(path: Path, exc: BaseException) -> DatabaseError:
    # Not damaged: SQLite cannot create the WAL and its index on a full disk,
    # and says "disk I/O error" (a rebuild would not help).
    return DatabaseError(
        f"{path} cannot be opened: the disk holding it is full ({exc}). Free some "
        "space and run it again; the index was left untouched"
    )


def _unreadable(path: Path, exc: BaseException) -> DatabaseError:
    if disk_full(path):
        return _no_room(path, exc)
    if "readonly" in str(exc) or not os.access(path, os.R_OK):
        # Not damaged: another user's file (an earlier `sudo backscroll ...`).
        fix = take_back(path, path.parent) or (
            f"its mode or its file system is read-only: make it writable (`chmod 600 {path}`)"
        )
        return DatabaseError(
            f"{path} cannot be written ({exc}): {fix}, or point BACKSCROLL_HOME elsewhere"
        )
    return DatabaseError(
        f"{path} cannot be read as an index ({exc}); it was left untouched. Run "
        f"`backscroll index --rebuild` (it is kept as {path.name}.old), or restore a backup"
    )


def check_integrity(conn: sqlite3.Connection, path: Path) -> None:
    """Raise DatabaseError naming the file if SQLite says it is not a database."""
    try:
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except sqlite3.DatabaseError as exc:
        raise _unreadable(path, exc) from exc


# --------------------------------------------------------------------------- corruption

#: SQLITE_CORRUPT and SQLITE_NOTADB (primary codes; extended codes keep them in the low byte).
_CORRUPT_CODES = (11, 26)


def is_corrupt(exc: BaseException) -> bool:
    """Whether ``exc`` is SQLite saying the file is damaged (not busy, not full)."""
    if not isinstance(exc, sqlite3.DatabaseError):
        return False
    code = getattr(exc, "sqlite_errorcode", None)
    if isinstance(code, int) and (code & 0xFF) in _CORRUPT_CODES:
        return True
    text = str(exc).lower()
    return "malformed" in text or "not a database" in text


def corrupt_marker(path: Path) -> Path:
    """``index.db.corrupt``: written when corruption is found, so nothing (a
    restarted daemon, a search) writes into the damaged file until a rebuild."""
    return path.with_name(path.name + ".corrupt")


def mark_corrupt(path: Path, detail: str) -> DatabaseError:
    """Record that ``path`` is corrupt; returns the error to raise."""
    marker = corrupt_marker(path)
    try:
        fd = os.open(marker, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(f"{time.strftime('%Y-%m-%dT%H:%M:%S%z')} {detail}\n")
    except OSError:
        pass  # the error is still raised; only a restart would not remember it
    return corrupt_error(path, detail)


def clear_corrupt(path: Path) -> None:
    corrupt_marker(path).unlink(missing_ok=True)


def corrupt_error(path: Path, detail: str) -> DatabaseError:
    return DatabaseError(
        f"{path} is corrupt ({detail}); it is left as it is and nothing is written to it. "
        "Stop the daemon and run `backscroll index --rebuild`: it builds a new index from "
        f"the transcripts, carries over what can still be read, and keeps this file as "
        f"{path.name}.old"
    )


def quick_check(conn: sqlite3.Connection, path: Path) -> None:
    """``PRAGMA quick_check``: the b-trees of every table and index are whole."""
    try:
        rows = conn.execute("PRAGMA quick_check").fetchall()
    except sqlite3.DatabaseError as exc:
        raise mark_corrupt(path, str(exc)) from exc
    problems = [str(r[0]) for r in rows if r and r[0] != "ok"]
    if problems:
        more = f" and {len(problems) - 1} more" if len(problems) > 1 else ""
        raise mark_corrupt(path, f"quick_check: {problems[0]}{more}")


def refuse_if_marked(path: Path) -> None:
    """Raise the corrupt error if ``path`` was found corrupt before (the marker),
    and a clear one if something other than a file is in the index's place."""
    if path.exists() and not path.is_file():
        what = "a directory" if path.is_dir() else "not a regular file"
        raise DatabaseError(
            f"{path} is {what}, not an index; move it aside, and backscroll makes "
            "a new index there at the next `backscroll index`"
        )
    marker = corrupt_marker(path)
    if marker.exists() and path.exists():
        try:
            detail = marker.read_text(encoding="utf-8", errors="replace").strip()
        except OSError:
            detail = "found corrupt earlier"
        raise corrupt_error(path, detail.partition(" ")[2] or detail)


def refuse_unusable(
    path: Path, busy_timeout_ms: int = BUSY_TIMEOUT_MS, *, thorough: bool = False
) -> None:
    """Before anything writes to an existing database, make sure it is one this
    backscroll may use: readable, not corrupt, not from a newer version. Opens it
    read-only, so a refused file is left byte for byte as it was. ``thorough``
    also runs ``PRAGMA quick_check`` (it reads every page: at start-up only)."""
    refuse_if_marked(path)
    if not path.exists() or path.stat().st_size == 0:
        return
    try:
        conn = connect(path, readonly=True, busy_timeout_ms=busy_timeout_ms)
    except sqlite3.Error as exc:
        if disk_full(path):
            raise _no_room(path, exc) from exc
        raise DatabaseError(
            f"{path} cannot be opened ({exc}); it was left untouched. Check its permissions, "
            f"or run `backscroll index --rebuild` (it is kept as {path.name}.old)"
        ) from exc
    try:
        check_integrity(conn, path)
        version = int(conn.execute("PRAGMA user_version").fetchone()[0])
        if thorough and version <= SCHEMA_VERSION:
            quick_check(conn, path)
    except sqlite3.DatabaseError as exc:
        raise _unreadable(path, exc) from exc
    finally:
        conn.close()
    if version > SCHEMA_VERSION:
        raise DatabaseError(
            f"{path} was written by a newer backscroll (schema {version}, this one knows "
            f"{SCHEMA_VERSION}); it was left untouched. Upgrade backscroll, or point "
            "BACKSCROLL_HOME elsewhere"
        )


# --------------------------------------------------------------------------- bulk loading

#: Indexes of ``turns`` besides its UNIQUE (session, key): a cold or rebuild pass
#: drops them and builds each once at the end (sorting once beats updating three
#: B-trees per turn). Whoever opens a writer next recreates any that is missing,
#: so a pass killed half-way leaves no index behind for long.
SECONDARY_INDEXES: tuple[tuple[str, str], ...] = (
    ("turns_file", "CREATE INDEX IF NOT EXISTS turns_file ON turns(file)"),
    ("turns_order", "CREATE INDEX IF NOT EXISTS turns_order ON turns(session, ts, seq)"),
    ("turns_ts", "CREATE INDEX IF NOT EXISTS turns_ts ON turns(ts)"),
)
#: FTS5 merge settings while bulk loading (fewer, bigger merges) and the
#: defaults restored afterwards.
BULK_FTS = (("automerge", 16), ("crisismerge", 64))
DEFAULT_FTS = (("automerge", 4), ("crisismerge", 16))


def missing_indexes(conn: sqlite3.Connection) -> list[str]:
    names = {
        str(r[0])
        for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'index'").fetchall()
    }
    return [name for name, _ddl in SECONDARY_INDEXES if name not in names]


def _fts_settings(conn: sqlite3.Connection, settings: tuple[tuple[str, int], ...]) -> None:
    if has_fts(conn):
        for name, value in settings:
            conn.execute("INSERT INTO turns_fts(turns_fts, rank) VALUES (?, ?)", (name, value))


def drop_secondary_indexes(conn: sqlite3.Connection) -> None:
    """Start of a bulk load (inside the caller's transaction)."""
    for name, _ddl in SECONDARY_INDEXES:
        conn.execute(f"DROP INDEX IF EXISTS {name}")
    _fts_settings(conn, BULK_FTS)


def build_secondary_indexes(conn: sqlite3.Connection) -> bool:
    """Build the missing secondary indexes (inside the caller's transaction),
    leaving FTS5's bulk settings as they are. Returns whether any was missing."""
    missing = missing_indexes(conn)
    for name, ddl in SECONDARY_INDEXES:
        if name in missing:
            conn.execute(ddl)
    return bool(missing)


def restore_secondary_indexes(conn: sqlite3.Connection) -> bool:
    """End of a bulk load, or the first open after one was cut short (inside the
    caller's transaction): the missing indexes built and FTS5's default merge
    settings back. Returns whether any index was missing."""
    built = build_secondary_indexes(conn)
    _fts_settings(conn, DEFAULT_FTS)
    return built
