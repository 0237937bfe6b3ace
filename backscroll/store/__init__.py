"""The store owns every SQL statement: schema, writer, read-only queries."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from typing import TYPE_CHECKING, Any

from backscroll.errors import BackscrollError, DatabaseError
from backscroll.paths import make_dirs, take_back
from backscroll.store import prefix, queries, schema
from backscroll.store.carry import CarryReport, carry_exclusions, carry_kept
from backscroll.store.writer import IndexWriter

if TYPE_CHECKING:
    import aiosqlite


def ensure_private_dir(path: Path) -> None:
    """Create ``path`` (and parents) and make it 0700 whatever the umask.

    A directory reached through a symlink is never chmodded: the link may have
    been planted (``/tmp/backscroll-0`` -> ``/etc``). It is used when it is
    already this user's and private (no access for group or others), and refused
    otherwise."""
    try:
        make_dirs(path, 0o700)
    except OSError as exc:
        raise DatabaseError(data_dir_problem(path, exc)) from None
    if path.is_symlink():
        st = path.stat()
        if st.st_uid != os.getuid() or st.st_mode & 0o077:
            target = os.path.realpath(path)
            raise BackscrollError(
                f"{path} is a symlink to {target}, which belongs to uid {st.st_uid} with "
                f"mode {st.st_mode & 0o7777:o}; backscroll never changes permissions through "
                f"a symlink: remove the link, or make {target} your own with mode 700"
            )
        return
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError as exc:
        raise DatabaseError(data_dir_problem(path, exc)) from None
    try:  # fchmod on what was opened: a link swapped in meanwhile is not followed
        if (os.fstat(fd).st_mode & 0o777) != 0o700:
            os.fchmod(fd, 0o700)
    except OSError as exc:  # another user's directory
        raise DatabaseError(data_dir_problem(path, exc)) from None
    finally:
        os.close(fd)


def data_dir_problem(path: Path, exc: OSError) -> str:
    """What is wrong with the data directory ``path``, naming it and the fix."""
    where = f" ({exc.filename})" if exc.filename and str(exc.filename) != str(path) else ""
    fix = take_back(Path(exc.filename) if exc.filename else path, path)
    if fix is not None:
        return (
            f"cannot use the data directory {path}: {exc.strerror or exc}{where}; {fix} "
            "or point BACKSCROLL_HOME elsewhere"
        )
    return (
        f"cannot use the data directory {path}: {exc.strerror or exc}{where}; make it a "
        f"directory you own (`mkdir -p {path} && chmod 700 {path}`) or point "
        "BACKSCROLL_HOME at one (`backscroll doctor` checks it)"
    )


def private_files(db: Path) -> None:
    """Database, -wal and -shm files are 0600."""
    for suffix in ("", "-wal", "-shm"):
        p = Path(f"{db}{suffix}")
        if p.exists() and (p.stat().st_mode & 0o777) != 0o600:
            os.chmod(p, 0o600)


def open_writer(db: Path, *, check: bool = False) -> IndexWriter:
    """The write connection; creates the private data directory and database.
    ``check`` runs ``PRAGMA quick_check`` first (start-up of the daemon, ``index``)."""
    ensure_private_dir(db.parent)
    old = os.umask(0o077)
    try:
        writer = IndexWriter(db, check=check)
    finally:
        os.umask(old)
    private_files(db)
    return writer


def open_readonly(db: Path) -> sqlite3.Connection:
    """A read-only connection for queries (the daemon uses aiosqlite instead)."""
    schema.refuse_if_marked(db)
    try:
        conn = schema.connect(db, readonly=True)
    except sqlite3.OperationalError as exc:
        if db.parent.is_dir():
            raise
        missing = OSError(2, "not a directory or missing", str(db.parent))
        raise DatabaseError(data_dir_problem(db.parent, missing) + f" ({exc})") from None
    schema.check_integrity(conn, db)
    return conn


def remove_index(db: Path) -> None:
    """Delete ``db`` and its -wal/-shm (a half-built rebuild left by a crash)."""
    for suffix in ("", "-wal", "-shm", "-journal"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)


def replace_index(built: Path, db: Path) -> Path | None:
    """Swap the complete, closed index ``built`` in for ``db`` with one ``os.replace``.

    The old index is always kept, with its -wal/-shm, as ``index.db.old`` (the
    one kept by the previous rebuild goes); that path is returned, None when
    there was no old index. A usable old index is checkpointed first, so it is
    whole in one file; an unusable one (corrupt, newer schema) is kept byte for
    byte as it was.
    """
    for suffix in ("-wal", "-journal"):
        leftover = Path(f"{built}{suffix}")
        if leftover.exists() and leftover.stat().st_size:
            raise DatabaseError(f"{built} is not closed cleanly ({leftover} is not empty)")
    if db.is_dir():
        raise DatabaseError(f"{db} is a directory, not an index; move it aside and run again")
    kept: Path | None = None
    if db.exists():
        try:
            schema.refuse_unusable(db)
            conn = schema.connect(db)
            try:
                conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            finally:
                conn.close()
        except (DatabaseError, sqlite3.Error):
            pass  # kept as it is, -wal and all
        kept = db.with_name(db.name + ".old")
        remove_index(kept)
        schema.clear_corrupt(kept)
        if schema.corrupt_marker(db).exists():  # the kept copy stays known as corrupt
            os.replace(schema.corrupt_marker(db), schema.corrupt_marker(kept))
        os.link(db, kept)
        for suffix in ("-wal", "-shm"):
            side = Path(f"{db}{suffix}")
            if side.exists():
                os.replace(side, f"{kept}{suffix}")
    for suffix in ("-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)
        Path(f"{built}{suffix}").unlink(missing_ok=True)
    os.replace(built, db)
    schema.clear_corrupt(db)
    fd = os.open(db.parent, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
    private_files(db)
    if kept is not None:
        private_files(kept)
    return kept


async def open_async_readonly(db: Path) -> aiosqlite.Connection:
    """A read-only aiosqlite connection for the daemon's queries (busy_timeout first)."""
    import aiosqlite

    conn = await aiosqlite.connect(f"file:{db}?mode=ro", uri=True)
    await conn.execute(f"PRAGMA busy_timeout = {schema.BUSY_TIMEOUT_MS}")
    await prefix.register_async(conn)
    return conn


async def run_async(conn: aiosqlite.Connection, query: queries.Query) -> Any:
    """Drive a query generator on an aiosqlite connection."""
    try:
        sql, args = next(query)
        while True:
            async with conn.execute(sql, args) as cur:
                rows = await cur.fetchall()
            sql, args = query.send(list(rows))
    except StopIteration as stop:
        return stop.value


def fts_enabled() -> queries.Query:
    """Whether the database has its FTS5 index (else queries fall back to LIKE)."""
    rows = yield ("SELECT value FROM meta WHERE key = 'fts'", ())
    return bool(rows and rows[0][0] == "1")


__all__ = [
    "CarryReport",
    "IndexWriter",
    "carry_exclusions",
    "carry_kept",
    "ensure_private_dir",
    "fts_enabled",
    "open_async_readonly",
    "open_readonly",
    "open_writer",
    "private_files",
    "remove_index",
    "replace_index",
    "run_async",
]
