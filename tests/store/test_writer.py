"""The write side of the store, on real SQLite files."""

from __future__ import annotations

import shutil
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from backscroll import config, direct
from backscroll.errors import DatabaseError
from backscroll.model import ReadResult, Session, Turn
from backscroll.store import open_writer, schema
from backscroll.store.writer import FileStat, IndexWriter, Update
from tests.readers.util import fixture


def _turn(i: int, text: str | None = None, session: str = "s1") -> Turn:
    return Turn(session, f"k{i}", "user", text or f"turn number {i}", float(1000 + i), seq=i)


def _update(
    writer: IndexWriter,
    turns: list[Turn],
    *,
    path: str = "/t/a.jsonl",
    size: int = 100,
    replace: bool = False,
    fresh: bool = False,
    sessions: tuple[Session, ...] = (),
) -> Update:
    row = writer.file_row(path)
    return Update(
        path=path,
        host="claude-code",
        stat=FileStat(size=size, mtime_ns=size, inode=1),
        reader_version=1,
        based_on=row.fingerprint if row else None,
        fresh=fresh,
        result=ReadResult(turns=tuple(turns), sessions=sessions, position=size, replace=replace),
    )


@pytest.fixture
def writer(tmp_path: Path) -> Iterator[IndexWriter]:
    w = open_writer(tmp_path / "data" / "index.db")
    yield w
    w.close()


def _texts(writer: IndexWriter) -> list[str]:
    return [r[0] for r in writer.conn.execute("SELECT text FROM turns ORDER BY seq")]


def test_reindexing_the_same_turns_creates_no_duplicate(writer: IndexWriter) -> None:
    turns = [_turn(i) for i in range(5)]
    assert writer.apply(_update(writer, turns, size=100)).turns_written == 5
    report = writer.apply(_update(writer, turns, size=200))
    assert report.turns_written == 0
    assert len(_texts(writer)) == 5


def test_rewrite_with_one_new_turn_writes_exactly_one_turn(writer: IndexWriter) -> None:
    turns = [_turn(i) for i in range(1000)]
    writer.apply(_update(writer, turns, size=100, replace=True))
    report = writer.apply(_update(writer, [*turns, _turn(1000)], size=200, replace=True))
    assert report.turns_written == 1
    assert report.turns_deleted == 0


def test_replace_drops_turns_that_vanished_from_the_document(writer: IndexWriter) -> None:
    writer.apply(_update(writer, [_turn(i) for i in range(4)], size=100, replace=True))
    report = writer.apply(_update(writer, [_turn(0), _turn(2)], size=50, replace=True))
    assert report.turns_deleted == 2
    assert _texts(writer) == ["turn number 0", "turn number 2"]


def test_changed_text_under_the_same_key_is_updated_and_searchable(writer: IndexWriter) -> None:
    writer.apply(_update(writer, [_turn(0, "streaming partial answ")], size=10))
    writer.apply(_update(writer, [_turn(0, "streaming partial answer about kittens")], size=20))
    hits = writer.conn.execute(
        "SELECT count(*) FROM turns_fts WHERE turns_fts MATCH 'kittens'"
    ).fetchone()[0]
    stale = writer.conn.execute(
        "SELECT count(*) FROM turns_fts WHERE turns_fts MATCH 'answ'"
    ).fetchone()[0]
    assert (hits, stale) == (1, 0)


def test_a_stale_update_loses_the_race_and_is_not_written(writer: IndexWriter) -> None:
    first = _update(writer, [_turn(0)], size=100)
    second = _update(writer, [_turn(0), _turn(1)], size=150)  # planned from the same row
    assert writer.apply(first).outcome == "written"
    outcome = writer.apply(second).outcome
    assert outcome == "conflict"
    assert _texts(writer) == ["turn number 0"]


def test_a_writer_that_lost_the_race_to_the_same_state_skips(writer: IndexWriter) -> None:
    a = _update(writer, [_turn(0)], size=100)
    b = _update(writer, [_turn(0)], size=100)
    assert writer.apply(a).outcome == "written"
    assert writer.apply(b).outcome == "skipped"


def test_session_metadata_merges_and_keeps_known_fields(writer: IndexWriter) -> None:
    writer.apply(
        _update(
            writer,
            [_turn(0)],
            size=10,
            sessions=(Session("s1", project="/p", title="first title"),),
        )
    )
    writer.apply(_update(writer, [_turn(1)], size=20, sessions=(Session("s1", title="better"),)))
    row = writer.conn.execute(
        "SELECT project, title, started_at, updated_at FROM sessions WHERE session_id = 's1'"
    ).fetchone()
    assert row == ("/p", "better", 1000.0, 1001.0)


def test_a_newer_schema_is_refused_and_left_untouched(tmp_path: Path) -> None:
    db = tmp_path / "index.db"
    conn = sqlite3.connect(db)
    conn.execute("PRAGMA user_version = 99")
    conn.close()
    before = db.read_bytes()
    with pytest.raises(DatabaseError, match="newer backscroll"):
        IndexWriter(db)
    assert db.read_bytes() == before


def test_garbage_database_is_refused_naming_the_file(tmp_path: Path) -> None:
    db = tmp_path / "index.db"
    db.write_bytes(b"this is not a database at all" * 100)
    before = db.read_bytes()
    with pytest.raises((DatabaseError, sqlite3.DatabaseError)) as err:
        IndexWriter(db)
    assert str(db) in str(err.value) or "not a database" in str(err.value)
    assert db.read_bytes() == before


def test_migration_from_schema_one_keeps_turns_and_builds_fts(tmp_path: Path) -> None:
    db = tmp_path / "index.db"
    conn = schema.connect(db)
    conn.execute("BEGIN IMMEDIATE")
    schema.MIGRATIONS[0][1](conn)
    conn.execute("PRAGMA user_version = 1")
    conn.execute("INSERT INTO sessions (host, session_id) VALUES ('codex', 'old')")
    conn.execute(
        "INSERT INTO turns (session, key, role, text) VALUES (1, 'k', 'user', 'legacy zebra')"
    )
    conn.execute("COMMIT")
    conn.close()
    writer = IndexWriter(db)
    try:
        found = writer.conn.execute(
            "SELECT count(*) FROM turns_fts WHERE turns_fts MATCH 'zebra'"
        ).fetchone()[0]
        assert found == 1
        assert writer.conn.execute("PRAGMA user_version").fetchone()[0] == schema.SCHEMA_VERSION
    finally:
        writer.close()


def test_a_new_index_has_bigger_pages_and_an_old_one_keeps_its_own(tmp_path: Path) -> None:
    fresh = open_writer(tmp_path / "new" / "index.db")
    try:
        size = fresh.conn.execute("PRAGMA page_size").fetchone()[0]
        assert size == schema.PAGE_SIZE == 8192
    finally:
        fresh.close()
    # An index written with SQLite's default pages (every index before this)
    # opens, migrates and takes turns as it is: WAL mode leaves its page size.
    old = tmp_path / "old" / "index.db"
    old.parent.mkdir()
    conn = sqlite3.connect(old, isolation_level=None)
    conn.execute("PRAGMA page_size = 4096")
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    conn.close()
    writer = open_writer(old)
    try:
        writer.apply(_update(writer, [_turn(1, "an old index's zebra")]))
        assert writer.conn.execute("PRAGMA page_size").fetchone()[0] == 4096
        found = writer.conn.execute(
            "SELECT count(*) FROM turns_fts WHERE turns_fts MATCH 'zebra'"
        ).fetchone()[0]
        assert found == 1
    finally:
        writer.close()


def test_database_files_are_private_whatever_the_umask(tmp_path: Path) -> None:
    import os

    old = os.umask(0)
    try:
        w = open_writer(tmp_path / "data" / "index.db")
        w.close()
    finally:
        os.umask(old)
    assert (tmp_path / "data").stat().st_mode & 0o777 == 0o700
    assert (tmp_path / "data" / "index.db").stat().st_mode & 0o777 == 0o600


TRAE_SID = "019fbcca-9fd4-7d20-83dc-0762b2f839b3"


@pytest.mark.parametrize("on_delete", ["keep", "forget"])
@pytest.mark.parametrize("new_path_seen_first", [True, False])
def test_a_session_whose_transcript_moved_names_the_file_that_now_holds_it(
    isolated_home: Path, on_delete: str, new_path_seen_first: bool
) -> None:
    """``traex archive`` (like ``codex archive``) moves a rollout to
    archived_sessions/: the session's source path follows it, whichever of the
    two paths the indexer hears of first (a pass finds the new one first; the
    watcher may hear of the old one's removal first)."""
    cfg_file = isolated_home / ".config" / "backscroll" / "config.yaml"
    cfg_file.parent.mkdir(parents=True)
    cfg_file.write_text(f"index:\n  on_delete: {on_delete}\n")
    trae = isolated_home / ".trae" / "cli"
    name = f"rollout-2026-08-01T18-07-03-{TRAE_SID}.jsonl"
    old = trae / "sessions" / "2026" / "08" / "01" / name
    new = trae / "archived_sessions" / name
    old.parent.mkdir(parents=True)
    new.parent.mkdir(parents=True)
    shutil.copy(fixture("trae-cli", "handmade-rollout-main.jsonl"), old)
    cfg = config.load()
    direct.index(cfg)
    old.rename(new)  # traex archive
    if new_path_seen_first:
        direct.index(cfg)
    else:
        writer = open_writer(cfg.db_path())
        try:
            indexer = direct.make_indexer(cfg, writer)
            for path in (old, new):  # as the watcher hands them over
                item = indexer.owner(path)
                assert item is not None
                indexer.index_item(item)
        finally:
            writer.close()
    sessions = direct.query(cfg, "sessions", {"host": "trae-cli"})["sessions"]
    assert [(s["session_id"], s["source_path"], s["turns"]) for s in sessions] == [
        (TRAE_SID, str(new), 2)
    ]


def test_a_vanished_file_finds_the_sessions_named_after_it_through_an_index(
    tmp_path: Path,
) -> None:
    """Hosts prune old transcripts by the thousand; each vanished file hands its
    sessions on. Found by a scan of every session, 3,000 deletions among 12,000
    sessions took 11.7 s instead of 0.7 s."""
    from backscroll.store.writer import _FOLLOW_TURNS

    writer = open_writer(tmp_path / "index.db")
    try:
        plan = writer.conn.execute(
            "EXPLAIN QUERY PLAN " + _FOLLOW_TURNS, ("claude-code", "/gone.jsonl")
        ).fetchall()
    finally:
        writer.close()
    steps = " | ".join(str(row[-1]) for row in plan)
    assert "sessions USING INDEX sessions_source" in steps, steps


def test_an_error_in_a_transaction_sqlite_already_ended_is_not_masked(tmp_path: Path) -> None:
    """When SQLite has already ended the transaction (an interrupt, a full disk),
    the error that stopped the body comes out, not "cannot rollback - no
    transaction is active", and the writer can begin again."""
    writer = open_writer(tmp_path / "index.db")
    try:
        with pytest.raises(KeyboardInterrupt), writer.transaction():
            writer.conn.execute("INSERT INTO meta (key, value) VALUES ('k', 'v')")
            writer.conn.execute("ROLLBACK")  # as SQLite does on SQLITE_INTERRUPT
            raise KeyboardInterrupt
        with writer.transaction():
            writer.conn.execute("INSERT INTO meta (key, value) VALUES ('k2', 'v')")
        keys = {r[0] for r in writer.conn.execute("SELECT key FROM meta")}
        assert "k2" in keys and "k" not in keys
    finally:
        writer.close()
