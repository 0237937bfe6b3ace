"""Crashes, concurrent writers, the first-run WAL race and unusable databases,
checked against real SQLite files and real sample transcripts: whatever happens,
the index ends up with exactly the turns a fresh index of the same files has."""

from __future__ import annotations

import hashlib
import os
import sqlite3
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from backscroll import cli, direct
from backscroll.config import Config
from backscroll.errors import BackscrollError, DatabaseError
from backscroll.indexing import indexer as indexer_mod
from backscroll.store import open_writer, schema
from tests.daemon.harness import (
    claude_user_line,
    daemon_env,
    dump_turns,
    populate,
    run_cli,
    start_daemon,
)


class Crash(Exception):
    """Stands in for the process dying at a fault point."""


def config_for(data: Path) -> Config:
    return Config(data_dir=str(data))


def index_into(data: Path, fault: Any = None) -> None:
    """Index the test HOME into ``data/index.db`` in this process."""
    writer = open_writer(data / "index.db")
    try:
        idx = direct.make_indexer(config_for(data), writer)
        idx.fault = fault
        idx.reconcile()
    finally:
        writer.close()


def crash_at(k: int) -> Any:
    calls = {"n": 0}

    def fault(point: str, path: Path) -> None:
        assert point == "before_commit"
        calls["n"] += 1
        if calls["n"] == k:
            raise Crash(f"killed before commit #{k} ({path.name})")

    return fault


def fresh(tmp_path: Path, name: str = "fresh") -> list[tuple[str, str, str, str, str]]:
    data = tmp_path / name
    for suffix in ("", "-wal", "-shm"):
        Path(f"{data / 'index.db'}{suffix}").unlink(missing_ok=True)
    index_into(data)
    return dump_turns(data / "index.db")


@pytest.fixture
def corpus(isolated_home: Path, monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """15 real transcripts; batches of 4 files, so a crash lands between and inside batches."""
    monkeypatch.setattr(indexer_mod, "BATCH_FILES", 4)
    return populate(isolated_home, copies=3)


def grow(files: list[Path], round_: int) -> None:
    """Append a new user turn to every other Claude Code transcript."""
    for i, path in enumerate(files):
        if path.parent.parent.name == "projects" and i % 2 == round_ % 2:
            sid = path.name[: -len(".jsonl")]
            line = claude_user_line(sid, f"grow-{round_}-{i}", f"growth {round_} of file {i}")
            with open(path, "a", encoding="utf-8") as fh:
                fh.write(line)


# --------------------------------------------------------------------------- crash consistency


def test_a_crash_at_any_commit_point_of_a_cold_index_loses_and_duplicates_nothing(
    tmp_path: Path, corpus: list[Path]
) -> None:
    expected = fresh(tmp_path)
    assert len(expected) == len(set(expected)) > 50
    for k in range(1, len(corpus) + 1):
        data = tmp_path / f"k{k}"
        with pytest.raises(Crash):
            index_into(data, crash_at(k))
        partial = dump_turns(data / "index.db")
        assert set(partial) <= set(expected), f"k={k}: turns a fresh index does not have"
        index_into(data)
        assert dump_turns(data / "index.db") == expected, f"crash at commit point {k}"


def test_a_crash_during_an_incremental_update_loses_and_duplicates_nothing(
    tmp_path: Path, corpus: list[Path]
) -> None:
    data = tmp_path / "live"
    index_into(data)
    for round_ in range(3):
        grow(corpus, round_)
        expected = fresh(tmp_path)
        changed = sum(1 for p in corpus if p.parent.parent.name == "projects") // 2
        for k in (1, 2, max(changed - 1, 1)):
            with pytest.raises(Crash):
                index_into(data, crash_at(k))
        index_into(data)
        assert dump_turns(data / "index.db") == expected, f"round {round_}"


_DIE_AT = """
import os, sys
from pathlib import Path
from backscroll import direct
from backscroll.config import Config
from backscroll.indexing import indexer as indexer_mod
from backscroll.store import open_writer

indexer_mod.BATCH_FILES = 4
k = int(sys.argv[1])
data = Path(sys.argv[2])
calls = [0]

def fault(point, path):
    calls[0] += 1
    if calls[0] == k:
        os._exit(17)

writer = open_writer(data / "index.db")
idx = direct.make_indexer(Config(data_dir=str(data)), writer)
idx.fault = fault
idx.reconcile()
"""


@pytest.mark.parametrize("k", [3, 6, 14])
def test_a_process_dying_mid_index_recovers_from_the_wal_with_nothing_lost(
    tmp_path: Path, corpus: list[Path], k: int
) -> None:
    expected = fresh(tmp_path)
    data = tmp_path / "died"
    died = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(_DIE_AT), str(k), str(data)],
        env=daemon_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert died.returncode == 17, died.stderr
    assert Path(f"{data / 'index.db'}-wal").exists()  # nothing checkpointed: recovery needed
    assert set(dump_turns(data / "index.db")) <= set(expected)
    index_into(data)
    assert dump_turns(data / "index.db") == expected


# --------------------------------------------------------------------------- two writers


def no_lock_error(done: subprocess.CompletedProcess[str] | tuple[int, str]) -> None:
    code, err = (done.returncode, done.stderr) if not isinstance(done, tuple) else done
    assert code == 0, err
    assert "locked" not in err.lower(), err


def test_two_index_processes_on_the_same_new_database_write_each_turn_once(
    tmp_path: Path, isolated_home: Path
) -> None:
    populate(isolated_home, copies=25)
    env = daemon_env(tmp_path)
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "backscroll", "index", "--json"],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    for p in procs:
        _, err = p.communicate(timeout=300)
        no_lock_error((p.returncode, err))
    got = dump_turns(tmp_path / "data" / "index.db")
    assert got == fresh(tmp_path)
    assert len(got) == len(set(got))


def test_an_index_run_beside_a_cold_indexing_daemon_writes_each_turn_once(
    tmp_path: Path, isolated_home: Path
) -> None:
    files = populate(isolated_home, copies=40)
    with start_daemon(tmp_path) as d:
        no_lock_error(run_cli(tmp_path, "index", "--json"))
        grow(files, 0)
        no_lock_error(run_cli(tmp_path, "index", "--json"))
        d.sync()
        assert d.stop() == 0
    got = dump_turns(tmp_path / "data" / "index.db")
    assert got == fresh(tmp_path)
    assert len(got) == len(set(got))


# --------------------------------------------------------------------------- WAL conversion retry


class FlakyWal(sqlite3.Connection):
    """A real connection whose first ``failures`` WAL switches raise ``error``."""

    failures = 0
    error = ""
    attempts = 0

    def execute(self, sql: str, *args: Any) -> sqlite3.Cursor:
        if "journal_mode = WAL" in sql:
            FlakyWal.attempts += 1
            if FlakyWal.attempts <= FlakyWal.failures:
                raise sqlite3.OperationalError(FlakyWal.error)
        return super().execute(sql, *args)


@pytest.fixture
def flaky(monkeypatch: pytest.MonkeyPatch) -> Iterator[type[FlakyWal]]:
    real = sqlite3.connect

    def connect(*args: Any, **kwargs: Any) -> sqlite3.Connection:
        return real(*args, factory=FlakyWal, **kwargs)

    monkeypatch.setattr("backscroll.store.schema.sqlite3.connect", connect)
    FlakyWal.attempts = 0
    yield FlakyWal


@pytest.mark.parametrize(
    "error", ["database is locked", "disk I/O error", "database schema is locked"]
)
def test_each_transient_error_switching_to_wal_is_retried_until_it_succeeds(
    tmp_path: Path, flaky: type[FlakyWal], error: str
) -> None:
    flaky.failures, flaky.error = 3, error
    sleeps: list[float] = []
    conn = schema.connect(tmp_path / "index.db", sleep=sleeps.append)
    try:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        schema.migrate(conn, tmp_path / "index.db")
    finally:
        conn.close()
    assert flaky.attempts == 4
    assert len(sleeps) == 3


def test_a_non_transient_error_switching_to_wal_is_raised_at_once(
    tmp_path: Path, flaky: type[FlakyWal]
) -> None:
    flaky.failures, flaky.error = 1, "unable to open database file"
    sleeps: list[float] = []
    with pytest.raises(sqlite3.OperationalError, match="unable to open"):
        schema.connect(tmp_path / "index.db", sleep=sleeps.append)
    assert sleeps == []
    assert flaky.attempts == 1


def test_a_locked_new_database_is_retried_until_the_lock_is_released(tmp_path: Path) -> None:
    path = tmp_path / "index.db"
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("CREATE TABLE t (x)")
    holder.execute("BEGIN EXCLUSIVE")
    released: list[float] = []

    def sleep(seconds: float) -> None:  # the first back-off releases the lock
        if not released:
            holder.execute("COMMIT")
            released.append(seconds)

    conn = schema.connect(path, busy_timeout_ms=50, sleep=sleep, clock=lambda: 0.0)
    try:
        assert released, "the first attempt should have found the database locked"
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    finally:
        conn.close()
        holder.close()


def test_an_opener_waits_for_a_write_transaction_and_then_succeeds(tmp_path: Path) -> None:
    path = tmp_path / "index.db"
    holder = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    holder.execute("CREATE TABLE t (x)")
    holder.execute("BEGIN IMMEDIATE")
    holder.execute("INSERT INTO t VALUES (1)")
    committed = threading.Event()
    started = threading.Event()

    def release() -> None:
        started.wait(10)
        committed.wait(0.3)  # hold the lock a moment after the opener started
        holder.execute("COMMIT")
        committed.set()

    thread = threading.Thread(target=release)
    thread.start()
    try:
        started.set()
        writer = open_writer(path)
        assert committed.is_set(), "the opener returned while the write transaction was open"
        assert writer.conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        writer.close()
    finally:
        thread.join()
        holder.close()


# --------------------------------------------------------------------------- unusable databases


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def make_newer(path: Path) -> None:
    open_writer(path).close()
    conn = sqlite3.connect(path)
    conn.execute(f"PRAGMA user_version = {schema.SCHEMA_VERSION + 1}")
    conn.close()


def make_garbage(path: Path) -> None:
    path.write_bytes(os.urandom(8192))


def make_truncated(path: Path) -> None:
    make_newer(path)  # a real index...
    conn = sqlite3.connect(path)
    conn.execute(f"PRAGMA user_version = {schema.SCHEMA_VERSION}")
    conn.close()
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2 + 100])  # ...cut in the middle of a page


@pytest.mark.parametrize(
    ("make", "says"),
    [(make_garbage, "cannot be read"), (make_newer, "newer backscroll"),
     (make_truncated, "cannot be read")],
)  # fmt: skip
def test_an_unusable_database_is_refused_by_index_and_left_byte_for_byte(
    tmp_path: Path, isolated_home: Path, make: Any, says: str
) -> None:
    populate(isolated_home, copies=1)
    db = tmp_path / "data" / "index.db"
    db.parent.mkdir(mode=0o700)
    make(db)
    before = digest(db)
    done = run_cli(tmp_path, "index")
    assert done.returncode != 0
    assert str(db) in done.stderr
    assert "--rebuild" in done.stderr or "upgrade" in done.stderr.lower()
    assert says in done.stderr
    assert digest(db) == before
    wal = Path(f"{db}-wal")
    assert not wal.exists() or wal.stat().st_size == 0  # a read-only look writes nothing


def test_a_database_that_will_not_open_is_refused_and_left_alone(
    tmp_path: Path, isolated_home: Path
) -> None:
    populate(isolated_home, copies=1)
    db = tmp_path / "data" / "index.db"
    db.mkdir(parents=True)
    (db / "keep").write_text("mine")
    done = run_cli(tmp_path, "index")
    assert done.returncode != 0
    assert str(db) in done.stderr
    assert (db / "keep").read_text() == "mine"
    rebuilt = run_cli(tmp_path, "index", "--rebuild")
    assert rebuilt.returncode != 0
    assert "directory" in rebuilt.stderr
    assert (db / "keep").read_text() == "mine"


def test_rebuild_replaces_a_corrupt_index_with_a_complete_one_and_keeps_the_old(
    tmp_path: Path, isolated_home: Path
) -> None:
    populate(isolated_home, copies=2)
    db = tmp_path / "data" / "index.db"
    db.parent.mkdir(mode=0o700)
    make_garbage(db)
    before = digest(db)
    done = run_cli(tmp_path, "index", "--rebuild")
    assert done.returncode == 0, done.stderr
    assert digest(db.with_name("index.db.old")) == before
    assert not db.with_name("index.db.rebuild").exists()
    assert dump_turns(db) == fresh(tmp_path)


def test_a_crash_mid_rebuild_leaves_the_old_index_serving(
    tmp_path: Path, corpus: list[Path]
) -> None:
    data = tmp_path / "data"
    index_into(data)
    old = dump_turns(data / "index.db")
    grow(corpus, 0)
    for k in (1, 5, len(corpus)):
        with pytest.raises(Crash):
            cli.rebuild(config_for(data), fault=crash_at(k))
        assert dump_turns(data / "index.db") == old, f"crash at {k} touched the old index"
    rebuilt = cli.rebuild(config_for(data))
    assert rebuilt.kept == data / "index.db.old"
    assert rebuilt.summary.files_changed == len(corpus)
    assert dump_turns(data / "index.db") == fresh(tmp_path)
    assert not (data / "index.db.rebuild").exists()


def test_rebuild_is_refused_while_a_daemon_serves_the_index(
    tmp_path: Path, isolated_home: Path
) -> None:
    populate(isolated_home, copies=1)
    with start_daemon(tmp_path) as d:
        d.sync()
        before = dump_turns(d.db_path)
        with pytest.raises(BackscrollError, match="stop it first"):
            cli.rebuild(config_for(tmp_path / "data"))
        served = d.call("status", {})["hosts"]
        assert sum(h["turns"] for h in served.values()) == len(before) > 0
        assert d.stop() == 0


def test_store_refuses_a_newer_schema_before_writing(tmp_path: Path) -> None:
    db = tmp_path / "index.db"
    make_newer(db)
    before = digest(db)
    with pytest.raises(DatabaseError, match="newer backscroll"):
        open_writer(db)
    assert digest(db) == before
