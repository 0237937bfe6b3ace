"""Bulk loading: a file's turns written in one statement through the staging
table, and the secondary indexes a cold pass drops and builds again, on real
SQLite files."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from backscroll.store import fts, open_readonly, open_writer, schema
from backscroll.store import writer as writer_mod
from backscroll.store.writer import IndexWriter
from tests.store.test_writer import _turn, _update


def _contents(w: IndexWriter) -> list[tuple[object, ...]]:
    return w.conn.execute(
        "SELECT id, session, file, key, seq, role, ts, text FROM turns ORDER BY id"
    ).fetchall()


def _matches(w: IndexWriter, word: str) -> list[int]:
    rows = w.conn.execute(
        "SELECT rowid FROM turns_fts WHERE turns_fts MATCH ? ORDER BY rowid", (word,)
    )
    return [int(r[0]) for r in rows]


def _fts_is_consistent(w: IndexWriter) -> None:
    # Raises "database disk image is malformed" when the FTS index and the
    # turns it was built from disagree.
    w.conn.execute("INSERT INTO turns_fts(turns_fts, rank) VALUES ('integrity-check', 1)")


def _load(path: Path, *, bulk: bool = False) -> IndexWriter:
    """Two files: 40 turns with a key written twice, then a rewrite of the first
    file (changed texts, a dropped turn) and a small append to the second; each
    its own transaction, inside one bulk load if ``bulk``."""
    w = open_writer(path)
    if bulk:
        w.begin_bulk()
    first = [_turn(i, f"alpha turn {i}") for i in range(40)]
    first.append(_turn(7, "alpha turn seven written again"))
    w.apply(_update(w, first, path="/t/a.jsonl", size=100, fresh=True))
    second = [_turn(i, f"bravo turn {i}", session="s2") for i in range(20)]
    w.apply(_update(w, second, path="/t/b.jsonl", size=100, fresh=True))
    rewrite = [_turn(i, f"charlie turn {i}" if i % 3 else f"alpha turn {i}") for i in range(39)]
    w.apply(_update(w, rewrite, path="/t/a.jsonl", size=200, replace=True))
    w.apply(_update(w, [_turn(99, "delta appended", session="s2")], path="/t/b.jsonl", size=150))
    return w


def test_staged_writes_store_and_index_exactly_what_row_by_row_writes_do(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    staged = _load(tmp_path / "staged.db")
    monkeypatch.setattr(writer_mod, "STAGE_MIN_TURNS", 10_000)
    plain = _load(tmp_path / "plain.db")
    assert _contents(staged) == _contents(plain)
    assert next(t for t in _contents(staged) if t[3] == "k7")[7] == "charlie turn 7"
    for word in ("alpha", "bravo", "charlie", "delta", "seven"):
        assert _matches(staged, word) == _matches(plain, word), word
    assert _matches(staged, "seven") == []
    assert len(_matches(staged, "charlie")) == 26
    _fts_is_consistent(staged)
    staged.close()
    plain.close()


def test_a_staged_write_counts_new_and_changed_turns_like_a_plain_one(tmp_path: Path) -> None:
    w = open_writer(tmp_path / "index.db")
    turns = [_turn(i) for i in range(30)]
    assert w.apply(_update(w, turns, size=100, fresh=True)).turns_written == 30
    again = [_turn(i, "changed" if i == 3 else None) for i in range(30)]
    assert w.apply(_update(w, again, size=200, replace=True)).turns_written == 1
    w.close()


def test_a_bulk_pass_drops_the_secondary_indexes_and_builds_them_at_its_end(
    tmp_path: Path,
) -> None:
    w = open_writer(tmp_path / "index.db")
    assert w.is_empty()
    w.begin_bulk()
    assert sorted(schema.missing_indexes(w.conn)) == ["turns_file", "turns_order", "turns_ts"]
    w.apply(_update(w, [_turn(i, f"echo {i}") for i in range(50)], size=100, fresh=True))
    w.end_bulk()
    assert schema.missing_indexes(w.conn) == []
    assert not w.is_empty()
    assert len(_matches(w, "echo")) == 50
    _fts_is_consistent(w)
    w.close()


def test_indexes_of_a_bulk_pass_cut_short_are_rebuilt_when_a_writer_next_opens(
    tmp_path: Path,
) -> None:
    db = tmp_path / "index.db"
    w = open_writer(db)
    w.begin_bulk()
    w.apply(_update(w, [_turn(i) for i in range(20)], size=100, fresh=True))
    w.close()  # the process dies before end_bulk
    again = open_writer(db)
    assert schema.missing_indexes(again.conn) == []
    plan = again.conn.execute("EXPLAIN QUERY PLAN SELECT id FROM turns WHERE file = 1").fetchall()
    assert "turns_file" in str(plan)
    assert len(_matches(again, "number")) == 20
    again.close()


def _triggers(w: IndexWriter) -> list[tuple[str, str]]:
    """The full-text index's triggers (the team outbox has its own)."""
    rows = w.conn.execute(
        "SELECT name, sql FROM sqlite_master WHERE type = 'trigger' AND name LIKE 'turns_%'"
    )
    return sorted((str(r[0]), str(r[1])) for r in rows)


def _everything_matched(w: IndexWriter, words: tuple[str, ...]) -> dict[str, list[int]]:
    return {word: _matches(w, word) for word in words}


_WORDS = ("alpha", "bravo", "charlie", "delta", "seven", "foxtrot", "number")


@pytest.mark.parametrize("catch_up_rows", [1, 10_000], ids=["each-commit", "at-the-end"])
def test_a_bulk_load_feeds_the_full_text_index_in_steps_exactly_as_row_by_row(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, catch_up_rows: int
) -> None:
    """Caught up after every commit (so later commits change and drop turns the
    index already holds) or only at the end (so they change turns it does not
    hold yet): either way the same index as row by row."""
    plain = _load(tmp_path / "plain.db")
    monkeypatch.setattr(fts, "bulk_step", lambda upto: catch_up_rows)
    bulk = _load(tmp_path / "bulk.db", bulk=True)
    assert not fts.searchable(bulk.conn)  # readers take the LIKE path meanwhile
    if catch_up_rows == 1:
        assert _matches(bulk, "bravo") != []
        _fts_is_consistent(bulk)
    else:
        assert _matches(bulk, "bravo") == []
    bulk.end_bulk()
    assert fts.searchable(bulk.conn)
    assert _triggers(bulk) == _triggers(plain)
    assert _contents(bulk) == _contents(plain)
    assert _everything_matched(bulk, _WORDS) == _everything_matched(plain, _WORDS)
    assert len(_matches(bulk, "charlie")) == 26
    _fts_is_consistent(bulk)
    # Its FTS5 hash is the default again.
    config = dict(bulk.conn.execute("SELECT k, v FROM turns_fts_config").fetchall())
    assert config["hashsize"] == fts.DEFAULT_HASHSIZE
    # Row by row again after the load: a change reaches the full-text index at once.
    bulk.apply(_update(bulk, [_turn(5, "foxtrot now")], path="/t/a.jsonl", size=300))
    assert len(_matches(bulk, "foxtrot")) == 1
    _fts_is_consistent(bulk)
    plain.close()
    bulk.close()


def test_bulk_load_steps_grow_with_the_index_between_a_floor_and_a_cap() -> None:
    assert fts.bulk_step(0) == fts.CATCH_UP_MIN
    assert fts.bulk_step(8 * fts.CATCH_UP_MIN) == 2 * fts.CATCH_UP_MIN
    assert fts.bulk_step(10**9) == fts.CATCH_UP_MAX
    steps = [fts.bulk_step(upto) for upto in range(0, 200_000, 1000)]
    assert steps == sorted(steps)


def test_a_writer_beside_a_bulk_load_catches_its_full_text_index_up_before_writing(
    tmp_path: Path,
) -> None:
    db = tmp_path / "index.db"
    bulk = _load(db, bulk=True)
    other = open_writer(db)  # e.g. `backscroll forget` while `backscroll index` loads
    assert fts.searchable(other.conn)
    other.apply(_update(other, [_turn(1, "foxtrot beside")], path="/t/c.jsonl", fresh=True))
    assert len(_matches(other, "bravo")) == 20  # every turn the load had committed
    assert len(_matches(other, "delta")) == 1
    # The load goes on row by row now, and its end finds nothing left to add.
    bulk.apply(_update(bulk, [_turn(2, "foxtrot after", session="s3")], path="/t/d.jsonl"))
    bulk.end_bulk()
    assert len(_matches(bulk, "foxtrot")) == 2
    _fts_is_consistent(bulk)
    other.close()
    bulk.close()


def test_a_bulk_load_killed_before_its_end_leaves_every_committed_turn_searchable(
    tmp_path: Path,
) -> None:
    db = tmp_path / "index.db"
    bulk = _load(db, bulk=True)
    bulk.close()  # killed: the last turns never reached the full-text index
    reader = open_readonly(db)
    assert not fts.searchable(reader)  # queries take the LIKE path meanwhile
    reader.close()
    again = open_writer(db)
    assert fts.searchable(again.conn)
    assert len(_matches(again, "charlie")) == 26
    _fts_is_consistent(again)
    again.close()


def test_an_index_of_schema_6_gets_the_watermark_triggers_and_keeps_its_full_text_index(
    tmp_path: Path,
) -> None:
    db = tmp_path / "index.db"
    conn = sqlite3.connect(db, isolation_level=None)
    for number, migration in schema.MIGRATIONS:
        if number <= 6:
            conn.execute("BEGIN")
            migration(conn)
            conn.execute(f"PRAGMA user_version = {number}")
            conn.execute("COMMIT")
    conn.close()
    w = open_writer(db)
    assert all(fts.UPTO in sql for _name, sql in _triggers(w))
    assert len(_triggers(w)) == 3
    w.apply(_update(w, [_turn(i, f"golf {i}") for i in range(5)], fresh=True))
    assert len(_matches(w, "golf")) == 5
    _fts_is_consistent(w)
    w.close()


def test_the_daemon_searches_by_like_while_its_own_bulk_load_runs(tmp_path: Path) -> None:
    from types import SimpleNamespace
    from typing import cast

    from backscroll.daemon.handlers import DaemonContext, fts_now

    w = open_writer(tmp_path / "index.db")
    ctx = cast(
        DaemonContext,
        SimpleNamespace(pool=SimpleNamespace(fts=True), worker=SimpleNamespace(
            indexer=SimpleNamespace(writer=w))),
    )  # fmt: skip
    assert fts_now(ctx)
    w.begin_bulk()
    assert not fts_now(ctx)
    w.end_bulk()
    assert fts_now(ctx)
    w.close()


def _fts_config(w: IndexWriter, key: str) -> object:
    row = w.conn.execute("SELECT v FROM turns_fts_config WHERE k = ?", (key,)).fetchone()
    return row[0] if row else None


def test_indexes_built_before_a_bulk_loads_end_take_its_later_rows_and_keep_its_fts_settings(
    tmp_path: Path,
) -> None:
    """``build_indexes`` mid-load: the load goes on with its big FTS merges, the
    rows written after it are in the indexes, and its end puts FTS5's defaults back."""
    w = open_writer(tmp_path / "index.db")
    w.begin_bulk()
    w.apply(_update(w, [_turn(i, f"echo {i}") for i in range(30)], size=100, fresh=True))
    w.build_indexes()
    assert schema.missing_indexes(w.conn) == []
    assert _fts_config(w, "automerge") == dict(schema.BULK_FTS)["automerge"]
    assert fts.deferred(w.conn)
    w.apply(_update(w, [_turn(i, f"echo {i}") for i in range(30, 60)], path="/t/b.jsonl", size=100))
    later = w.conn.execute(
        "SELECT count(*) FROM turns INDEXED BY turns_file WHERE file IS NOT NULL"
    ).fetchone()[0]
    assert later == 60
    w.end_bulk()
    assert _fts_config(w, "automerge") == dict(schema.DEFAULT_FTS)["automerge"]
    assert not fts.deferred(w.conn)
    assert len(_matches(w, "echo")) == 60
    _fts_is_consistent(w)
    assert w.conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    w.close()


def test_indexes_built_before_a_bulk_loads_end_also_catch_its_full_text_index_up(
    tmp_path: Path,
) -> None:
    """``build_indexes`` runs while the reader processes still read: the rows
    written so far go into the full-text index then too, so what is left for
    the end of the load, on one core, is only the rows written after it."""
    w = open_writer(tmp_path / "index.db")
    w.begin_bulk()
    w.apply(_update(w, [_turn(i, f"echo {i}") for i in range(30)], size=100, fresh=True))
    w.build_indexes()
    assert fts.deferred(w.conn)
    top = w.conn.execute("SELECT max(id) FROM turns").fetchone()[0]
    upto = w.conn.execute("SELECT value FROM meta WHERE key = ?", (fts.UPTO,)).fetchone()[0]
    assert int(upto) == top
    indexed = w.conn.execute("SELECT count(*) FROM turns_fts WHERE turns_fts MATCH 'echo'")
    assert indexed.fetchone()[0] == 30
    w.end_bulk()
    assert len(_matches(w, "echo")) == 30
    _fts_is_consistent(w)
    w.close()


def test_a_bulk_load_killed_after_its_early_index_build_is_whole_at_the_next_open(
    tmp_path: Path,
) -> None:
    """The process dies after ``build_indexes`` and more rows, before
    ``end_bulk``: the next writer catches the full-text index up, ends the
    deferral and puts FTS5's defaults back; every row is found."""
    db = tmp_path / "index.db"
    w = open_writer(db)
    w.begin_bulk()
    w.apply(_update(w, [_turn(i, f"echo {i}") for i in range(30)], size=100, fresh=True))
    w.build_indexes()
    w.apply(_update(w, [_turn(i, f"echo {i}") for i in range(30, 60)], path="/t/b.jsonl", size=100))
    w.close()  # killed: no end_bulk
    again = open_writer(db)
    assert schema.missing_indexes(again.conn) == []
    assert not fts.deferred(again.conn)
    assert _fts_config(again, "automerge") == dict(schema.DEFAULT_FTS)["automerge"]
    assert len(_matches(again, "echo")) == 60
    _fts_is_consistent(again)
    again.close()
