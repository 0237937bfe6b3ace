"""A config reload during a long pass: the daemon's writer stops the pass at
its next file, swaps in the new config, and the pass after it reads with that
config (a host just disabled is not read to the end of a first index)."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable
from concurrent.futures import Future
from pathlib import Path
from typing import Any

from backscroll import config as config_mod
from backscroll import direct
from backscroll.config import Config
from backscroll.daemon.worker import Worker
from backscroll.indexing.indexer import Indexer, build_hosts
from backscroll.store import open_writer
from tests.daemon.harness import dump_turns, populate


def _without_codex(data: Path) -> Config:
    return config_mod.parse({"data_dir": str(data), "hosts": {"codex": {"enabled": False}}}, "test")


def _swap_to(cfg: Config) -> Callable[[Indexer], Indexer]:
    def build(old: Indexer) -> Indexer:
        return Indexer(old.writer, build_hosts(cfg), cfg, direct.make_redactor(cfg),
                       should_stop=old.should_stop)  # fmt: skip

    return build


def _reload_after_first_file(
    worker: Worker, cfg: Config, kind: str, last: bool = False
) -> list[Future[Any]]:
    """Has ``worker`` ask for a swap to ``cfg`` (as SIGHUP does) from its first
    ``kind`` pass, once that pass has read one file (``last``: all its files)."""
    asked: list[Future[Any]] = []
    once = threading.Lock()
    progress = worker._progress

    def hooked(pass_kind: str) -> Callable[[int, int, int, int], None]:
        update = progress(pass_kind)

        def hook(files: int, total: int, done: int, total_bytes: int) -> None:
            update(files, total, done, total_bytes)
            enough = files == total if last else files >= 1
            if pass_kind == kind and enough and once.acquire(blocking=False):
                asked.append(worker.swap_indexer(_swap_to(cfg)))

        return hook

    worker._progress = hooked  # type: ignore[method-assign, assignment]
    return asked


def _started(tmp_path: Path) -> tuple[Worker, Path]:
    data = tmp_path / "data"
    writer = open_writer(data / "index.db")
    worker = Worker(direct.make_indexer(Config(data_dir=str(data)), writer))
    worker.indexer.should_stop = worker.should_stop
    worker.start()
    return worker, data


def _hosts(data: Path) -> set[str]:
    return {host for host, *_ in dump_turns(data / "index.db")}


def _files_with_turns(data: Path) -> set[str]:
    conn = sqlite3.connect(f"file:{data / 'index.db'}?mode=ro", uri=True)
    try:
        rows = conn.execute("SELECT DISTINCT f.path FROM turns t JOIN files f ON f.id = t.file")
        return {str(path) for (path,) in rows}
    finally:
        conn.close()


def test_a_reload_stops_the_first_index_early_and_a_disabled_host_is_not_read(
    tmp_path: Path, isolated_home: Path
) -> None:
    files = populate(isolated_home, copies=2)  # Claude Code first, Codex last
    worker, data = _started(tmp_path)
    try:
        asked = _reload_after_first_file(worker, _without_codex(data), "reconcile")
        first = worker.submit("reconcile").result(timeout=120)
        assert asked, "the pass never read a file"
        assert first.files_changed < len(files)  # stopped early
        assert worker.state.cold_index_done is False
        asked[0].result(timeout=60)
        worker.submit("reconcile").result(timeout=120)  # what the reload queues next
        assert worker.state.cold_index_done is True
    finally:
        worker.stop()
        worker.join(timeout=60)
    assert _hosts(data) == {"claude-code"}  # Codex disabled before its files came up
    claude = [p for p in files if ".claude" in p.parts]
    assert _files_with_turns(data) == {str(p) for p in claude}


def test_a_sync_a_client_waits_on_is_not_cut_short_by_a_reload(
    tmp_path: Path, isolated_home: Path
) -> None:
    files = populate(isolated_home, copies=2)
    worker, data = _started(tmp_path)
    try:
        asked = _reload_after_first_file(worker, _without_codex(data), "sync")
        summary = worker.submit("sync").result(timeout=120)
        assert asked, "the sync never read a file"
        assert summary.files_changed == len(files)  # read whole, with the old config
        asked[0].result(timeout=60)
    finally:
        worker.stop()
        worker.join(timeout=60)
    assert _hosts(data) == {"claude-code", "codex"}


def test_a_pass_queued_before_a_reload_runs_with_the_new_config(
    tmp_path: Path, isolated_home: Path
) -> None:
    # (The periodic rescan queues a pass while a long first index still runs.)
    populate(isolated_home, copies=2)
    worker, data = _started(tmp_path)
    try:
        asked = _reload_after_first_file(worker, _without_codex(data), "reconcile")
        first, queued = worker.submit("reconcile"), worker.submit("reconcile")
        first.result(timeout=120)
        queued.result(timeout=120)
        assert asked and asked[0].done()
        assert worker.state.cold_index_done is True
    finally:
        worker.stop()
        worker.join(timeout=60)
    assert _hosts(data) == {"claude-code"}


def test_a_reload_asked_for_once_the_pass_has_read_everything_leaves_it_complete(
    tmp_path: Path, isolated_home: Path
) -> None:
    files = populate(isolated_home, copies=1)
    worker, data = _started(tmp_path)
    reconciled: list[Indexer] = []
    worker.on_reconciled = reconciled.append
    try:
        asked = _reload_after_first_file(worker, _without_codex(data), "reconcile", last=True)
        summary = worker.submit("reconcile").result(timeout=120)
        assert asked, "the pass never read its last file"
        assert summary.files_changed == len(files)
        assert worker.state.cold_index_done is True  # nothing was cut short
        assert len(reconciled) == 1
    finally:
        worker.stop()
        worker.join(timeout=60)
