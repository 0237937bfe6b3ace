"""A cold index read in worker processes and bulk loaded ends up exactly as the
one-file-at-a-time path does, loses nothing when it dies at any commit point,
and reports a worker's read problems like an in-process read."""

from __future__ import annotations

import os
import platform
import re
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from backscroll import direct
from backscroll.config import Config
from backscroll.indexing import indexer as indexer_mod
from backscroll.indexing import parallel
from backscroll.indexing.indexer import build_hosts
from backscroll.store import fts, open_writer, schema
from backscroll.store.writer import IndexWriter
from tests.conftest import DaemonFactory
from tests.daemon.harness import dump_turns, fresh_index, populate
from tests.test_reliability import Crash, config_for, crash_at, index_into


@pytest.fixture
def corpus(isolated_home: Path) -> list[Path]:
    return populate(isolated_home, copies=3)


def _in_process(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BACKSCROLL_INDEX_WORKERS", "1")
    monkeypatch.setattr(indexer_mod, "BULK_MIN_FILES", 10**9)


def _parallel_bulk(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BACKSCROLL_INDEX_WORKERS", "2")
    monkeypatch.setattr(indexer_mod, "PARALLEL_MIN_BYTES", 0)
    monkeypatch.setattr(indexer_mod, "BULK_MIN_FILES", 1)


def _count_pools(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    made: list[int] = []
    real = parallel.ParallelReads.__init__

    def init(self: parallel.ParallelReads, workers: int, *args: object) -> None:
        made.append(workers)
        real(self, workers, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(parallel.ParallelReads, "__init__", init)
    return made


def test_a_parallel_bulk_cold_index_equals_the_in_process_one(
    tmp_path: Path, corpus: list[Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    _in_process(monkeypatch)
    index_into(tmp_path / "serial")
    expected = dump_turns(tmp_path / "serial" / "index.db")
    assert len(expected) > 50
    _parallel_bulk(monkeypatch)
    pools = _count_pools(monkeypatch)
    index_into(tmp_path / "parallel")
    assert pools == [2]
    assert dump_turns(tmp_path / "parallel" / "index.db") == expected
    w = open_writer(tmp_path / "parallel" / "index.db")
    assert schema.missing_indexes(w.conn) == []
    w.close()


def test_a_parallel_bulk_index_killed_at_any_commit_point_recovers_exactly(
    tmp_path: Path, corpus: list[Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    _in_process(monkeypatch)
    index_into(tmp_path / "fresh")
    expected = dump_turns(tmp_path / "fresh" / "index.db")
    _parallel_bulk(monkeypatch)
    monkeypatch.setattr(indexer_mod, "BATCH_FILES", 4)
    for k in (1, 3, 7, len(corpus)):
        data = tmp_path / f"k{k}"
        with pytest.raises(Crash):
            index_into(data, crash_at(k))
        assert set(dump_turns(data / "index.db")) <= set(expected), k
        index_into(data)
        assert dump_turns(data / "index.db") == expected, f"crash at commit point {k}"


def test_a_workers_malformed_lines_and_unknown_versions_are_reported_as_in_process(
    tmp_path: Path, corpus: list[Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    with open(corpus[0], "a", encoding="utf-8") as fh:
        fh.write("{not json\n")
    corpus[1].write_text(corpus[1].read_text().replace('"version":"2.', '"version":"99.'))
    summaries = []
    for arm, setup in (("serial", _in_process), ("parallel", _parallel_bulk)):
        setup(monkeypatch)
        writer = open_writer(tmp_path / arm / "index.db")
        summaries.append(direct.make_indexer(config_for(tmp_path / arm), writer).reconcile())
        rows = writer.file_rows()
        assert "unknown format version" in (rows[str(corpus[1])].error or "")
        writer.close()
    serial, par = summaries
    assert par.problems == serial.problems >= 1
    assert (par.files_changed, par.turns_added) == (serial.files_changed, serial.turns_added)
    assert dump_turns(tmp_path / "parallel" / "index.db") == dump_turns(
        tmp_path / "serial" / "index.db"
    )


def test_what_a_worker_read_raises_comes_back_to_the_writer(isolated_home: Path) -> None:
    spec = next(s for s in build_hosts(Config()) if s.host == "claude-code")
    gone = isolated_home / ".claude" / "projects" / "-p" / "gone.jsonl"
    outcome = parallel.read_file(spec, gone, None)
    with pytest.raises(FileNotFoundError):
        outcome.get()


def test_a_process_with_threads_starts_its_readers_from_a_fork_server(
    tmp_path: Path, corpus: list[Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    _in_process(monkeypatch)
    index_into(tmp_path / "serial")
    _parallel_bulk(monkeypatch)
    pools = _count_pools(monkeypatch)
    started = threading.Event()
    release = threading.Event()

    def other_thread() -> None:  # as in the daemon: the loop, the watcher, ...
        started.set()
        release.wait(60)

    thread = threading.Thread(target=other_thread)
    thread.start()
    started.wait(10)
    try:
        assert parallel._context().get_start_method() != "fork"
        index_into(tmp_path / "parallel")
    finally:
        release.set()
        thread.join()
    assert pools == [2]
    assert dump_turns(tmp_path / "parallel" / "index.db") == dump_turns(
        tmp_path / "serial" / "index.db"
    )


def test_a_daemons_first_index_read_by_worker_processes_equals_a_fresh_index(
    tmp_path: Path, daemon_factory: DaemonFactory
) -> None:
    files = populate(tmp_path / "home", copies=90)
    assert sum(p.stat().st_size for p in files) > indexer_mod.PARALLEL_MIN_BYTES
    d = daemon_factory(env={"BACKSCROLL_INDEX_WORKERS": "2"})
    d.sync()
    daemon = d.call("status", {})["daemon"]
    assert daemon["fts"] is True and daemon["bulk_load"] is False  # ranked again once done
    assert d.stop() == 0
    assert '"event": "parallel_read"' in d.stderr_text()
    assert "pool_error" not in d.stderr_text()
    assert dump_turns(d.db_path) == fresh_index(tmp_path, tmp_path / "fresh")
    w = open_writer(d.db_path)
    assert schema.missing_indexes(w.conn) == []
    w.close()
    # Its full-text index, fed in steps during the load, is whole and searchable:
    # the same answers as an FTS5 table fed the same turns row by row.
    conn = sqlite3.connect(d.db_path)
    assert fts.searchable(conn)
    conn.execute("INSERT INTO turns_fts(turns_fts, rank) VALUES ('integrity-check', 1)")
    conn.execute("CREATE VIRTUAL TABLE temp.plain USING fts5(text, tokenize='porter unicode61')")
    conn.execute("INSERT INTO plain(rowid, text) SELECT id, text FROM turns")
    texts = " ".join(r[0] for r in conn.execute("SELECT text FROM turns LIMIT 50"))
    words = sorted(set(re.findall(r"[a-z]{6,}", texts)))[:25]
    assert words
    for word in words:
        ours = conn.execute("SELECT rowid FROM turns_fts WHERE turns_fts MATCH ?", (word,))
        plain = conn.execute("SELECT rowid FROM plain WHERE plain MATCH ?", (word,))
        assert sorted(ours.fetchall()) == sorted(plain.fetchall()), word
    conn.close()


def test_turns_and_sessions_cross_to_the_writer_with_every_field() -> None:
    """A worker's turns are pickled as constructor arguments: every field, in order."""
    import dataclasses
    import pickle

    from backscroll.model import SESSION_FIELD_NAMES, TURN_FIELD_NAMES, Session, Turn

    assert tuple(f.name for f in dataclasses.fields(Turn)) == TURN_FIELD_NAMES
    assert tuple(f.name for f in dataclasses.fields(Session)) == SESSION_FIELD_NAMES
    turn = Turn("s", "k", "assistant", "text", 1.5, 7, tainted=True, subagent=True, note="n")
    session = Session("s", "/p", "title", 1.0, 2.0, "resume s", "parent")
    assert pickle.loads(pickle.dumps(turn)) == turn
    assert pickle.loads(pickle.dumps(session)) == session


def test_a_first_index_starts_its_readers_before_planning_and_closes_them_if_small(
    tmp_path: Path, corpus: list[Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The pool of a likely cold pass forks before the files are planned (its
    workers set up meanwhile); found too small to need them, it is closed unused
    and the files are read in-process, with the same result."""
    _in_process(monkeypatch)
    index_into(tmp_path / "serial")
    expected = dump_turns(tmp_path / "serial" / "index.db")
    monkeypatch.setenv("BACKSCROLL_INDEX_WORKERS", "2")
    monkeypatch.setattr(indexer_mod, "BULK_MIN_FILES", 1)  # PARALLEL_MIN_BYTES stays 16 MB
    pools = _count_pools(monkeypatch)
    planned_after: list[int] = []
    real_plan = indexer_mod.Indexer.plan

    def plan(self: indexer_mod.Indexer, *args: object) -> object:
        planned_after.append(len(pools))
        return real_plan(self, *args)  # type: ignore[arg-type]

    runs: list[int] = []
    real_run = parallel.ParallelReads.run

    def run(self: parallel.ParallelReads, tasks: Any) -> Any:
        runs.append(1)
        return real_run(self, tasks)

    monkeypatch.setattr(indexer_mod.Indexer, "plan", plan)
    monkeypatch.setattr(parallel.ParallelReads, "run", run)
    index_into(tmp_path / "early")
    assert pools == [2] and planned_after and set(planned_after) == {1}
    assert runs == []  # closed unused: too few bytes for workers
    assert dump_turns(tmp_path / "early" / "index.db") == expected


def test_a_process_with_threads_starts_no_pool_before_planning(
    tmp_path: Path, corpus: list[Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BACKSCROLL_INDEX_WORKERS", "2")
    monkeypatch.setattr(indexer_mod, "BULK_MIN_FILES", 1)
    pools = _count_pools(monkeypatch)
    go = threading.Event()
    thread = threading.Thread(target=go.wait)
    thread.start()
    try:
        assert not parallel.can_fork()
        index_into(tmp_path / "threaded")  # small: read in-process, no pool at all
    finally:
        go.set()
        thread.join()
    assert pools == []
    assert parallel.can_fork()


def test_a_parallel_bulk_index_builds_its_indexes_before_its_last_batches(
    tmp_path: Path, corpus: list[Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Read in workers, the secondary indexes are built while files are still
    to be written (not on one core after the last one), and the result is the
    same as the in-process index, which builds none early."""
    _in_process(monkeypatch)
    built: list[int] = []
    real = IndexWriter.build_indexes

    def build(self: IndexWriter) -> None:
        built.append(self.conn.execute("SELECT count(*) FROM files").fetchone()[0])
        real(self)

    monkeypatch.setattr(IndexWriter, "build_indexes", build)
    index_into(tmp_path / "serial")
    assert built == []
    expected = dump_turns(tmp_path / "serial" / "index.db")
    _parallel_bulk(monkeypatch)
    monkeypatch.setattr(indexer_mod, "BATCH_FILES", 2)
    monkeypatch.setattr(indexer_mod, "EARLY_INDEX_PART", 2)  # (its last files are over 1/8)
    index_into(tmp_path / "parallel")
    w = open_writer(tmp_path / "parallel" / "index.db")
    files = w.conn.execute("SELECT count(*) FROM files").fetchone()[0]
    assert len(built) == 1 and 0 < built[0] < files
    assert dump_turns(tmp_path / "parallel" / "index.db") == expected
    assert schema.missing_indexes(w.conn) == []
    assert w.conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    w.close()


_KILLED_WRITER = """
import fcntl, os, sys, time
from backscroll.config import Config
from backscroll.indexing import parallel

fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o600)
fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # as a rebuild holds daemon.lock
pool = parallel.ParallelReads(2, Config(), False)
list(pool.pool.map(time.sleep, [0.3, 0.3]))  # one job each: both workers are set up
print(" ".join(str(pid) for pid in pool.pool._processes), flush=True)
sys.stdin.read()  # until the test kills this process
"""


def test_pool_workers_run_at_a_lower_priority_than_the_writer() -> None:
    pool = parallel.ParallelReads(2, Config(), False)
    try:
        niceness = set(pool.pool.map(os.nice, [0, 0]))
    finally:
        pool.close()
    assert niceness == {os.nice(0) + parallel.READER_NICENESS}


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state not in ("Z", "X")


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
def test_reader_processes_die_with_a_killed_writer_and_free_its_lock(tmp_path: Path) -> None:
    import fcntl
    import os
    import signal
    import subprocess
    import sys
    import time

    lock = tmp_path / "daemon.lock"
    with subprocess.Popen(
        [sys.executable, "-c", _KILLED_WRITER, str(lock)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    ) as writer:  # fmt: skip
        assert writer.stdout is not None
        workers = [int(pid) for pid in writer.stdout.readline().split()]
        assert len(workers) == 2 and all(_alive(pid) for pid in workers)
        os.kill(writer.pid, signal.SIGKILL)  # as `kill -9` of `backscroll index --rebuild`
        writer.wait()
    deadline = time.monotonic() + 20
    try:
        while any(_alive(pid) for pid in workers):
            assert time.monotonic() < deadline, "reader processes outlived their writer"
            time.sleep(0.05)
    finally:
        for pid in filter(_alive, workers):  # (the test failed: leave no orphan behind)
            os.kill(pid, signal.SIGKILL)
    fd = os.open(lock, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # nobody holds it any more
    finally:
        os.close(fd)


def _pid_namespaces() -> bool:
    import shutil
    import subprocess

    if shutil.which("unshare") is None:
        return False
    probe = ["unshare", "--user", "--pid", "--fork", "--map-root-user", "true"]
    return subprocess.run(probe, capture_output=True, check=False).returncode == 0


_AS_PID_1 = """
import os, sys
from backscroll.config import Config
from backscroll.indexing import parallel

assert os.getpid() == 1
pool = parallel.ParallelReads(2, Config(), False)
print(sorted(pool.pool.map(abs, [-1, -2, -3])), flush=True)
pool.close()
"""


@pytest.mark.skipif(not _pid_namespaces(), reason="needs unshare with user and pid namespaces")
def test_reader_processes_work_for_a_writer_that_is_pid_1() -> None:
    """A container's `backscroll index` runs as pid 1: its workers' parent is 1,
    which is no sign that the parent died."""
    import subprocess
    import sys

    done = subprocess.run(
        ["unshare", "--user", "--pid", "--fork", "--map-root-user",
         sys.executable, "-c", _AS_PID_1],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[1, 2, 3]"


def test_a_fork_server_pool_starts_with_a_configuration_holding_mappings(
    tmp_path: Path,
) -> None:
    """The daemon's pool pickles the configuration for its workers: one with a
    ``hosts`` section (most users' file) must cross, or every first index falls
    back to reading in-process."""
    from backscroll import config as config_mod

    path = tmp_path / "config.yaml"
    path.write_text("hosts:\n  codex:\n    enabled: true\n")
    loaded = config_mod.load(path)
    release = threading.Event()
    thread = threading.Thread(target=release.wait, args=(60,))
    thread.start()
    try:
        pool = parallel.ParallelReads(2, loaded, True)
        try:
            assert parallel._context().get_start_method() != "fork"
            assert sorted(pool.pool.map(abs, [-1, -2, -3])) == [1, 2, 3]
        finally:
            pool.close()
    finally:
        release.set()
        thread.join()


_FAULTS_AFTER_FREEING = """
import resource, sys
from backscroll.indexing.parallel import keep_freed_memory
if sys.argv[1] == "keep":
    keep_freed_memory()
def faults():
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt
blocks = [bytearray(100_000) for _ in range(300)]  # (30 MB in blocks below 128 KB)
del blocks
before = faults()
blocks = [bytearray(100_000) for _ in range(300)]
print(faults() - before)
"""


@pytest.mark.skipif(
    not sys.platform.startswith("linux") or platform.libc_ver()[0] != "glibc",
    reason="mallopt is glibc's",
)
def test_a_reader_process_keeps_the_memory_it_frees_for_its_next_lines() -> None:
    """30 MB freed and taken again: given back to the kernel, every page
    faults again (some 7,000); kept, none does."""

    def faults(mode: str) -> int:
        out = subprocess.run(
            [sys.executable, "-c", _FAULTS_AFTER_FREEING, mode],
            capture_output=True, text=True, check=True, timeout=60,
        )  # fmt: skip
        return int(out.stdout)

    assert faults("default") > 5000
    assert faults("keep") < 500
