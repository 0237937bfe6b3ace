"""Progress of a scan: files and bytes done and total with an ETA, in the
writer's state, in ``status`` (JSON and text) and in the daemon's log."""

from __future__ import annotations

import json
import logging
import signal
from pathlib import Path

import pytest

from backscroll import direct, render
from backscroll.config import Config
from backscroll.daemon import worker as worker_mod
from backscroll.daemon.worker import ScanProgress, Worker
from backscroll.store import open_writer
from tests.conftest import DaemonFactory
from tests.daemon.harness import populate


def test_eta_follows_the_byte_rate_so_far() -> None:
    scan = ScanProgress("reconcile", 10, 40, 50_000_000, 200_000_000, started=100.0)
    assert scan.eta_s(now=110.0) == pytest.approx(30.0)  # 50 MB in 10 s, 150 MB to go


def test_eta_falls_back_to_files_without_a_byte_total_and_is_unknown_before_any_progress() -> None:
    assert ScanProgress("changes", 3, 12, started=0.0).eta_s(now=6.0) == pytest.approx(18.0)
    assert ScanProgress("reconcile", 0, 12, 0, 500, started=0.0).eta_s(now=6.0) is None


def test_status_text_shows_files_bytes_and_eta_of_the_scan() -> None:
    result = {
        "daemon": {
            "pid": 1,
            "version": "x",
            "queue_depth": 0,
            "indexing": "/some/file.jsonl",
            "scan": {
                "kind": "reconcile",
                "files_done": 120,
                "files_total": 259,
                "bytes_done": 80_100_000,
                "bytes_total": 200_100_000,
                "elapsed_s": 2.0,
                "eta_s": 3.1,
            },
        },
        "hosts": {},
    }
    assert "indexing: 120/259 files, 80.1/200.1 MB, ETA 3 s" in render.status(result)
    assert "unranked" not in render.status(result)  # (not a bulk load)
    result["daemon"]["bulk_load"] = True  # type: ignore[index, unused-ignore]
    assert "searches are unranked (word match) until this first index finishes" in (
        render.status(result)
    )


def test_a_pass_reports_totals_first_and_ends_with_everything_done(
    tmp_path: Path, isolated_home: Path
) -> None:
    files = populate(isolated_home, copies=2)
    calls: list[tuple[int, int, int, int]] = []
    writer = open_writer(tmp_path / "data" / "index.db")
    try:
        direct.make_indexer(Config(data_dir=str(tmp_path / "data")), writer).reconcile(
            lambda *a: calls.append(a)
        )
    finally:
        writer.close()
    total_bytes = sum(p.stat().st_size for p in files)
    assert calls[0] == (0, len(files), 0, total_bytes)
    assert calls[-1] == (len(files), len(files), total_bytes, total_bytes)
    assert [c[0] for c in calls] == sorted(c[0] for c in calls)


def test_the_writer_logs_progress_lines_and_clears_its_scan_when_done(
    tmp_path: Path,
    isolated_home: Path,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(worker_mod, "PROGRESS_LOG_SECONDS", 0.0)
    files = populate(isolated_home, copies=2)
    writer = open_writer(tmp_path / "data" / "index.db")
    worker = Worker(direct.make_indexer(Config(data_dir=str(tmp_path / "data")), writer))
    worker.start()
    try:
        with caplog.at_level(logging.INFO, logger="backscroll"):
            worker.submit("reconcile").result(timeout=120)
    finally:
        worker.stop()
        worker.join(timeout=60)
    lines = [r for r in caplog.records if getattr(r, "event", None) == "index_progress"]
    assert lines, "no progress line logged"
    first, last = vars(lines[0]), vars(lines[-1])
    assert (first["files_done"], first["files_total"]) == (0, len(files))
    assert last["files_done"] == last["files_total"] == len(files)
    assert last["bytes_done"] == last["bytes_total"] > 0
    assert lines[-1].getMessage().startswith(f"indexing: {len(files)}/{len(files)} files")
    assert worker.state.scan is None


def test_status_shows_the_daemons_first_index_under_way_and_its_log_says_how_far(
    tmp_path: Path, daemon_factory: DaemonFactory
) -> None:
    files = populate(tmp_path / "home", copies=60)
    d = daemon_factory()
    daemon = d.call("status", {})["daemon"]
    assert daemon["cold_index_done"] is False
    scan = daemon["scan"]
    assert scan is not None and scan["kind"] == "reconcile"
    assert scan["files_total"] in (0, len(files))  # 0 only before the files are planned
    assert set(scan) == {
        "kind", "files_done", "files_total", "bytes_done", "bytes_total", "elapsed_s", "eta_s"
    }  # fmt: skip
    d.sync()
    assert d.call("status", {})["daemon"]["scan"] is None
    assert d.stop(signal.SIGTERM) == 0
    events = [json.loads(line) for line in d.stderr_text().splitlines() if line.startswith("{")]
    progress = [e for e in events if e["event"] == "index_progress" and e["kind"] == "reconcile"]
    assert progress[0]["files_total"] == len(files)
    assert progress[-1]["files_done"] == len(files)


def test_a_burst_of_a_few_changed_files_logs_no_progress(
    tmp_path: Path, isolated_home: Path, caplog: pytest.LogCaptureFixture
) -> None:
    files = populate(isolated_home, copies=1)
    writer = open_writer(tmp_path / "data" / "index.db")
    worker = Worker(direct.make_indexer(Config(data_dir=str(tmp_path / "data")), writer))
    worker.submit_paths(files[:3])  # queued first: indexed before the job below
    try:
        with caplog.at_level(logging.INFO, logger="backscroll"):
            worker.start()
            worker.submit("call", lambda idx: None).result(timeout=60)
            indexed = worker.state.files_indexed
    finally:
        worker.stop()
        worker.join(timeout=60)
    assert indexed == 3
    assert not [r for r in caplog.records if getattr(r, "event", None) == "index_progress"]
