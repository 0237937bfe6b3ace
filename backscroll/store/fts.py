"""The full-text index (``turns_fts``) kept in step with ``turns``, row by row
or, during a bulk load, in large steps.

Row by row, three triggers feed FTS5 each insert, delete and text change. A bulk
load (first index, ``--rebuild``) defers that: it records a watermark in
``meta.fts_upto``, the highest turn id the full-text index holds, and the
triggers then act only on rows at or below it. After each of its transactions
the load adds the rows above the watermark in one ``INSERT ... SELECT`` and
moves the watermark (:func:`catch_up`), and its end removes it
(:func:`finish`). FTS5 fed a few thousand rows per statement with a bigger
in-memory hash writes fewer, bigger segments: the writer's CPU time at 2 GB
falls by about half, and the work still overlaps the reading of the next files.

The invariant, at every commit: every turn with ``id <= fts_upto`` is in the
full-text index with its current text, and no other row is. A turn above the
watermark that changes or goes away needs nothing (it is added later with the
text it has then); one at or below it is handled by its trigger as usual.
Whoever else writes while the watermark is set (the load was killed, or
``backscroll forget`` runs beside it) catches up and removes it first, and
readers take the LIKE path while it is set, so no committed turn is ever
unsearchable.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

#: ``meta`` key present while a bulk load defers the full-text index.
UPTO = "fts_upto"
_WATERMARK = f"(SELECT CAST(value AS INTEGER) FROM meta WHERE key = '{UPTO}')"

#: The triggers (schema 7 on): row by row, unless the row is above the watermark.
TRIGGERS: tuple[tuple[str, str], ...] = (
    (
        "turns_ai",
        f"""CREATE TRIGGER IF NOT EXISTS turns_ai AFTER INSERT ON turns
    WHEN new.id <= coalesce({_WATERMARK}, new.id) BEGIN
        INSERT INTO turns_fts(rowid, text) VALUES (new.id, new.text);
    END""",
    ),
    (
        "turns_ad",
        f"""CREATE TRIGGER IF NOT EXISTS turns_ad AFTER DELETE ON turns
    WHEN old.id <= coalesce({_WATERMARK}, old.id) BEGIN
        INSERT INTO turns_fts(turns_fts, rowid, text) VALUES ('delete', old.id, old.text);
    END""",
    ),
    (
        "turns_au",
        f"""CREATE TRIGGER IF NOT EXISTS turns_au AFTER UPDATE OF text ON turns
    WHEN old.text IS NOT new.text AND old.id <= coalesce({_WATERMARK}, old.id) BEGIN
        INSERT INTO turns_fts(turns_fts, rowid, text) VALUES ('delete', old.id, old.text);
        INSERT INTO turns_fts(rowid, text) VALUES (new.id, new.text);
    END""",
    ),
)

#: A bulk load adds the rows above the watermark once a quarter as many as the
#: full-text index holds have gathered, at least CATCH_UP_MIN and at most
#: CATCH_UP_MAX (:func:`bulk_step`), and at its end whatever is left.
CATCH_UP_MIN = 4096
CATCH_UP_MAX = 16384
#: FTS5's in-memory limit for pending terms while a bulk load runs, and
#: SQLite's default, put back at its end.
BULK_HASHSIZE = 16 * 1024 * 1024
DEFAULT_HASHSIZE = 1024 * 1024


def has_fts(conn: sqlite3.Connection) -> bool:
    row = conn.execute("SELECT value FROM meta WHERE key = 'fts'").fetchone()
    return bool(row and row[0] == "1")


def install_triggers(conn: sqlite3.Connection) -> None:
    """Migration 7: the watermark-aware triggers replace the plain ones."""
    if not has_fts(conn):
        return
    for name, ddl in TRIGGERS:
        conn.execute(f"DROP TRIGGER IF EXISTS {name}")
        conn.execute(ddl)


def searchable(conn: sqlite3.Connection) -> bool:
    """The full-text index exists and holds every turn: else queries use LIKE."""
    values = dict(
        conn.execute("SELECT key, value FROM meta WHERE key IN ('fts', ?)", (UPTO,)).fetchall()
    )
    return values.get("fts") == "1" and UPTO not in values


def deferred(conn: sqlite3.Connection) -> bool:
    return conn.execute("SELECT 1 FROM meta WHERE key = ?", (UPTO,)).fetchone() is not None


def defer(conn: sqlite3.Connection) -> None:
    """A bulk load starts (inside its transaction): the watermark is the highest
    turn id now, and FTS5 gets its bigger hash."""
    if not has_fts(conn) or deferred(conn):
        return
    top = conn.execute("SELECT coalesce(max(id), 0) FROM turns").fetchone()[0]
    conn.execute("INSERT INTO meta(key, value) VALUES (?, ?)", (UPTO, str(int(top))))
    _hashsize(conn, BULK_HASHSIZE)


def bulk_step(upto: int) -> int:
    """How many rows a bulk load lets gather above a watermark at ``upto``.

    Steps grow with the index (a few thousand rows make few, big segments and
    no merging), yet stay small enough that the last one, run on one core while
    nothing else is left to read, is short. Against fixed steps of 16384
    (``bench/bench_writer.py``, bench/RESULTS.md): at 240 MB the end of the load
    fell from 0.14 to 0.03 s of CPU for the same total, at 2 GB the total was
    the same (3.13 vs 3.09 s). A floor of 1024 rows cost 0.3 s more at 2 GB."""
    return min(max(upto // 4, CATCH_UP_MIN), CATCH_UP_MAX)


def catch_up(conn: sqlite3.Connection, step: Callable[[int], int] | None = None) -> int:
    """Add the turns above the watermark to the full-text index (if at least
    ``step(watermark)`` wait; any, without ``step``) and move the watermark;
    inside the caller's transaction. Returns how many were added."""
    row = conn.execute("SELECT CAST(value AS INTEGER) FROM meta WHERE key = ?", (UPTO,))
    found = row.fetchone()
    if found is None:
        return 0
    upto = int(found[0])
    top = int(conn.execute("SELECT coalesce(max(id), 0) FROM turns").fetchone()[0])
    if top - upto < max(step(upto) if step else 0, 1):
        return 0
    added = conn.execute(
        "INSERT INTO turns_fts(rowid, text) SELECT id, text FROM turns WHERE id > ? AND id <= ?",
        (upto, top),
    ).rowcount
    conn.execute("UPDATE meta SET value = ? WHERE key = ?", (str(top), UPTO))
    return max(added, 0)


def finish(conn: sqlite3.Connection) -> bool:
    """End the deferral (inside the caller's transaction): add what is left,
    remove the watermark, put FTS5's default hash back. Returns whether the
    index was deferred."""
    if not deferred(conn):
        return False
    catch_up(conn)
    conn.execute("DELETE FROM meta WHERE key = ?", (UPTO,))
    _hashsize(conn, DEFAULT_HASHSIZE)
    return True


def _hashsize(conn: sqlite3.Connection, size: int) -> None:
    conn.execute("INSERT INTO turns_fts(turns_fts, rank) VALUES ('hashsize', ?)", (size,))
