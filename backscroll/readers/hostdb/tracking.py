"""Change marks for readers of a host database with a sessions table.

OpenCode, Crush and Hermes keep sessions in one SQLite database each. Their
readers save the database's change marks (newest update time, top message row)
and the session ids seen; the next read asks the host's queries (a module
satisfying :class:`~backscroll.readers.hostdb.SessionQueries`) which sessions
changed since those marks, re-reads only them, in short batches, and reports the
sessions that are gone. The SQL itself stays in the host's module beside this one.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from backscroll.model import Cursor, Problem, ReadResult, Session, Turn
from backscroll.readers.hostdb import SessionQueries, SessionRow, snapshot

R = TypeVar("R", bound=SessionRow)
T = TypeVar("T")
M = TypeVar("M", bound=Sequence[object])


def saved_state(prev: Cursor | None, version: int) -> Mapping[str, Any] | None:
    """The state the last read saved, or None when there is none of this version
    (the whole database is read again)."""
    return prev.state if prev and prev.state.get("v") == version else None


@dataclass(slots=True)
class Changes:
    """The sessions one read re-reads and drops, and the marks it saves."""

    marks: Sequence[object]
    ids: set[str]
    changed: set[str]
    removed: set[str]

    def state(self, version: int) -> dict[str, Any]:
        kept = sorted(self.ids - self.removed)
        return {"v": version, "marks": list(self.marks), "sessions": kept}

    @property
    def replaced(self) -> frozenset[str]:
        return frozenset(self.changed - self.removed)

    def result(
        self,
        version: int,
        turns: Iterable[Turn],
        sessions: Iterable[Session],
        problems: Iterable[Problem],
    ) -> ReadResult:
        """The read's result: the changed sessions' turns replace theirs, the
        sessions that are gone are removed, and these marks are saved."""
        return ReadResult(
            turns=tuple(turns),
            sessions=tuple(sessions),
            position=0,
            state=self.state(version),
            replaced_sessions=self.replaced,
            removed_sessions=frozenset(self.removed),
            problems=tuple(problems),
        )


def changes(
    conn: sqlite3.Connection,
    state: Mapping[str, Any] | None,
    queries: SessionQueries[M],
) -> Changes:
    """The host's marks and sessions now, and which changed since the marks
    ``state`` saved (every session on a fresh read). Call inside a
    :func:`snapshot`."""
    now = queries.marks(conn)
    ids = queries.session_ids(conn)
    if state is None:
        return Changes(now, ids, set(ids), set())
    changed = queries.changed_session_ids(conn, queries.Marks(*state["marks"])) & ids
    return Changes(now, ids, changed, set(state["sessions"]) - ids)


def fetch_changed(
    conn: sqlite3.Connection,
    found: Changes,
    batch_size: int,
    rows: Callable[[sqlite3.Connection, list[str]], Iterable[R]],
    load: Callable[[sqlite3.Connection, R], T],
) -> list[T]:
    """``load`` each changed session's row, ``batch_size`` sessions per read
    transaction so the host is never held up for long. A session deleted since
    the marks were taken is added to ``found.removed``."""
    fetched: list[T] = []
    ordered = sorted(found.changed)
    for start in range(0, len(ordered), batch_size):
        batch = ordered[start : start + batch_size]
        with snapshot(conn):
            by_id = {row.id: row for row in rows(conn, batch)}
            for sid in batch:
                row = by_id.get(sid)
                if row is None:  # deleted since the marks were taken
                    found.removed.add(sid)
                    continue
                fetched.append(load(conn, row))
    return fetched
