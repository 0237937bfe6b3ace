"""Read-only access to hosts' own SQLite databases: the one opener, and the
SQL that reads them.

Readers own their inputs. Every statement run on a host's database (OpenCode,
Kilo CLI, Crush, Hermes, Goose, Zed, Cursor, VS Code's ``state.vscdb``, Amazon
Q) lives in this package, one module per host's queries; ``backscroll/store/``
is backscroll's own index alone (tests/test_no_sql_outside_store.py).

backscroll never writes a host's database, never holds a read transaction longer
than one batch and never makes the host wait: every connection comes from
:func:`open_readonly` (``mode=ro``, ``query_only``, a short busy timeout), and
:class:`~backscroll.errors.SourceBusy` when it is locked, so the indexer tries
again on the next change instead of blocking.

Hosts that keep sessions in a table with change marks (OpenCode, Crush, Hermes)
expose their queries as a module satisfying :class:`SessionQueries`, the one
protocol :mod:`backscroll.readers.hostdb.tracking` reads through.
"""

from __future__ import annotations

import importlib
import sqlite3
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Protocol, TypeVar
from urllib.parse import quote

from backscroll.errors import SourceBusy

#: How long backscroll waits on a host's lock before giving up for now.
HOST_BUSY_MS = 50


def later(name: str) -> Any:
    """The module ``name`` (a host's queries), imported at its first use: every
    host's reader module is imported to find the host's files, and most of them
    never open a database (the queries' modules were ~8 ms of the start of
    ``backscroll index``; bench/RESULTS.md, Cold index, sixteenth pass).
    Readers import the real module for type checking."""
    return _Later(name)


class _Later:
    __slots__ = ("_name",)

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attr: str) -> Any:
        return getattr(importlib.import_module(self._name), attr)

    def __repr__(self) -> str:
        return f"<module {self._name!r}, imported at its first use>"


@contextmanager
def open_readonly(path: Path, busy_ms: int = HOST_BUSY_MS) -> Iterator[sqlite3.Connection]:
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


M = TypeVar("M")


class SessionRow(Protocol):
    """A host's session row: what :func:`tracking.fetch_changed` keys on."""

    @property
    def id(self) -> str: ...


class SessionQueries(Protocol[M]):
    """A host's queries over a sessions table with change marks ``M`` (a module:
    ``backscroll/readers/hostdb/opencode.py``, ``crush.py``, ``hermes.py``).

    ``Marks`` rebuilds the marks a read saved; ``changed_session_ids`` names the
    sessions changed since them; ``sessions`` fetches rows by id.
    """

    @property
    def Marks(self) -> Callable[..., M]: ...

    def schema_problem(self, conn: sqlite3.Connection) -> str | None: ...

    def marks(self, conn: sqlite3.Connection) -> M: ...

    def session_ids(self, conn: sqlite3.Connection) -> set[str]: ...

    def changed_session_ids(self, conn: sqlite3.Connection, since: M) -> set[str]: ...

    def sessions(self, conn: sqlite3.Connection, ids: Iterable[str]) -> Sequence[SessionRow]: ...
