"""Bulk loading: a file's turns written in one statement through the staging
table, and the secondary indexes a cold pass drops and builds again, on real
SQLite files."""

from __future__ import annotations

from pathlib import Path

import pytest

from backscroll.store import open_writer, schema
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


def _load(path: Path) -> IndexWriter:
    """Two files: 40 turns with a key written twice, then a rewrite of the first
    file (changed texts, a dropped turn) and a small append to the second."""
    w = open_writer(path)
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
