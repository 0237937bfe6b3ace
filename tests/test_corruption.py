"""A corrupt index is found (``PRAGMA quick_check`` at start, SQLITE_CORRUPT at
any time), refused with the file and the fix, and left byte for byte as it was:
neither served nor written into. ``index --rebuild`` replaces it and keeps it
as ``index.db.old``."""

from __future__ import annotations

import hashlib
import os
import sqlite3
from pathlib import Path

import pytest

from backscroll.client import RemoteError
from backscroll.wire import INDEX_CORRUPT
from tests.daemon.harness import (
    claude_user_line,
    dump_turns,
    fresh_index,
    populate,
    run_cli,
    session_uuid,
    start_daemon,
)


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def smash_page(db: Path, table: str) -> None:
    """Overwrite the root page of ``table`` (a b-tree in the middle of the file)
    with random bytes, the way a bad sector or a stray write would."""
    conn = sqlite3.connect(db)
    try:
        root = conn.execute("SELECT rootpage FROM sqlite_master WHERE name = ?", (table,))
        page = int(root.fetchone()[0])
        size = int(conn.execute("PRAGMA page_size").fetchone()[0])
        assert conn.execute("PRAGMA journal_mode = DELETE").fetchone()[0] == "delete"
    finally:
        conn.close()
    assert 1 < page < db.stat().st_size // size  # neither the header nor the last page
    with open(db, "r+b") as fh:
        fh.seek((page - 1) * size)
        fh.write(os.urandom(size))


def indexed(tmp_path: Path, isolated_home: Path) -> Path:
    populate(isolated_home, copies=1)
    done = run_cli(tmp_path, "index")
    assert done.returncode == 0, done.stderr
    return tmp_path / "data" / "index.db"


@pytest.mark.parametrize("table", ["turns", "turns_fts_data"])
def test_a_corrupt_page_past_the_header_is_refused_at_start_and_left_as_it_was(
    tmp_path: Path, isolated_home: Path, table: str
) -> None:
    db = indexed(tmp_path, isolated_home)
    smash_page(db, table)
    before = digest(db)
    done = run_cli(tmp_path, "index")
    assert done.returncode == 2
    assert str(db) in done.stderr and "corrupt" in done.stderr
    assert "backscroll index --rebuild" in done.stderr
    d = start_daemon(tmp_path, wait_ready=False)
    try:
        assert d.wait() == 1
        assert "corrupt" in d.stderr_text() and str(db) in d.stderr_text()
    finally:
        d.close()
    searched = run_cli(tmp_path, "search", "phoenix")
    assert searched.returncode != 0 and "corrupt" in searched.stderr
    assert digest(db) == before
    assert not Path(f"{db}-wal").exists() or Path(f"{db}-wal").stat().st_size == 0

    rebuilt = run_cli(tmp_path, "index", "--rebuild")
    assert rebuilt.returncode == 0, rebuilt.stderr
    assert digest(db.with_name("index.db.old")) == before
    assert not db.with_name("index.db.corrupt").exists()
    assert db.with_name("index.db.old.corrupt").exists()
    assert dump_turns(db) == fresh_index(tmp_path, tmp_path / "fresh")
    # forget does not write into the corrupt copy either: it names it.
    done = run_cli(tmp_path, "forget", "--session", session_uuid(1), "--json")
    assert done.returncode == 1
    assert str(db.with_name("index.db.old")) in done.stdout
    assert digest(db.with_name("index.db.old")) == before


def test_corruption_found_while_serving_stops_the_daemon_serving_and_writing(
    tmp_path: Path, isolated_home: Path
) -> None:
    db = indexed(tmp_path, isolated_home)
    conn = sqlite3.connect(db)  # the FTS segments damaged, every b-tree whole:
    conn.execute("UPDATE turns_fts_data SET block = substr(block, 1, 3) WHERE id > 10")
    conn.commit()
    assert conn.execute("PRAGMA quick_check").fetchall() == [("ok",)]
    conn.close()
    with start_daemon(tmp_path) as d:
        d.sync()
        before = digest(db)
        with pytest.raises(RemoteError) as err:
            d.call("search", {"query": "phoenix"})
        assert err.value.code == INDEX_CORRUPT
        assert "corrupt" in err.value.message and "--rebuild" in err.value.message
        transcript = next((isolated_home / ".claude" / "projects").rglob("*.jsonl"))
        with open(transcript, "a", encoding="utf-8") as fh:
            fh.write(claude_user_line(session_uuid(1), "bbbbbbbb-0000-4000-8000-000000000001",
                                      "written after the corruption was found"))  # fmt: skip
        with pytest.raises(RemoteError) as err:
            d.sync()
        assert err.value.code == INDEX_CORRUPT
        with pytest.raises(RemoteError):
            d.call("status", {})
        assert digest(db) == before
        assert d.stop() == 0
    assert digest(db) == before
    assert db.with_name("index.db.corrupt").exists()
    again = run_cli(tmp_path, "index")
    assert again.returncode == 2 and "corrupt" in again.stderr
