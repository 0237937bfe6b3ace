"""The one writer thread: owns the write connection and runs every indexing job.

Paths handed in are coalesced (a path queued twice is indexed once), so the
queue depth is the number of distinct files waiting. Control jobs (a full
reconciliation, a directory scan, maintenance, a sync barrier) run in order.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from backscroll.indexing.indexer import Indexer, Item, Summary
from backscroll.readers.base import walk_files
from backscroll.render import scan_line
from backscroll.store.schema import is_corrupt

log = logging.getLogger("backscroll.worker")


#: Seconds between two progress lines in the log during a scan.
PROGRESS_LOG_SECONDS = 5.0
#: A pass this big logs its totals as it starts.
PROGRESS_LOG_FILES = 100
PROGRESS_LOG_BYTES = 64 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class ScanProgress:
    """Where a scan stands; replaced whole on every update (read from another thread)."""

    kind: str
    files_done: int = 0
    files_total: int = 0
    bytes_done: int = 0
    bytes_total: int = 0
    started: float = field(default_factory=time.monotonic)

    def eta_s(self, now: float | None = None) -> float | None:
        """Seconds left at the rate so far (by bytes; by files when no bytes are known)."""
        elapsed = (time.monotonic() if now is None else now) - self.started
        done, total = self.bytes_done, self.bytes_total
        if total <= 0:
            done, total = self.files_done, self.files_total
        if done <= 0 or elapsed <= 0:
            return None
        return max(total - done, 0) * elapsed / done

    def as_dict(self) -> dict[str, Any]:
        eta = self.eta_s()
        return {
            "kind": self.kind,
            "files_done": self.files_done,
            "files_total": self.files_total,
            "bytes_done": self.bytes_done,
            "bytes_total": self.bytes_total,
            "elapsed_s": round(time.monotonic() - self.started, 1),
            "eta_s": None if eta is None else round(eta, 1),
        }

    def line(self) -> str:
        """``120/259 files, 80.1/200.1 MB, ETA 3 s`` for humans."""
        return scan_line(self.as_dict())


@dataclass
class WorkerState:
    """What ``status`` reports: progress, not a heartbeat."""

    last_index_at: float | None = None
    last_error: str | None = None
    files_indexed: int = 0
    turns_added: int = 0
    busy_since: float | None = None
    current: str | None = None
    cold_index_done: bool = False
    idle_since: float = field(default_factory=time.monotonic)
    #: The scan under way (files and bytes done and total), None when idle.
    scan: ScanProgress | None = None


#: What the writer thread can be asked to do besides indexing changed paths; a
#: misspelt kind is a type error, and an unknown one at run time a ValueError.
JobKind = Literal["reconcile", "sync", "scan_dir", "maintenance", "swap", "call"]
Job = tuple[JobKind, Any, "Future[Any] | None"]


class Worker(threading.Thread):
    def __init__(
        self, indexer: Indexer, on_reconciled: Callable[[Indexer], None] | None = None
    ) -> None:
        super().__init__(name="backscroll-writer", daemon=True)
        self.indexer = indexer
        #: Called (in this thread) after every full pass, e.g. to watch new dirs.
        self.on_reconciled = on_reconciled
        #: Called (in this thread) with files whose last line still lacks its newline.
        self.on_unsettled: Callable[[list[Path]], None] | None = None
        self.state = WorkerState()
        self._cond = threading.Condition()
        self._paths: dict[Path, None] = {}
        self._jobs: list[Job] = []
        self._stopping = False
        self.stop_requested = False
        #: The job running now, and whether a swap waits for it to stop early.
        self._running: JobKind | None = None
        self._yield_pass = False
        #: The running pass did stop early for a swap (not just finish as it came).
        self._yielded = False
        self._told_corrupt = False
        #: Called (in this thread) after a pass that changed the index, e.g. to
        #: wake the team publisher instead of leaving it to its next look.
        self.on_indexed: Callable[[], None] | None = None

    # ------------------------------------------------------------------ submitting

    def submit_paths(self, paths: list[Path]) -> None:
        with self._cond:
            for p in paths:
                self._paths[p] = None
            self._cond.notify()

    def submit(self, kind: JobKind, arg: Any = None) -> Future[Any]:
        fut: Future[Any] = Future()
        with self._cond:
            self._jobs.append((kind, arg, fut))
            self._cond.notify()
        return fut

    def queue_depth(self) -> int:
        with self._cond:
            return len(self._paths) + len(self._jobs)

    def stop(self) -> None:
        """Finish the file being written, then exit (its transaction is whole)."""
        with self._cond:
            self._stopping = True
            self.stop_requested = True
            self._cond.notify()

    def swap_indexer(self, build: Callable[[Indexer], Indexer]) -> Future[Any]:
        """Replace the indexer (a config reload) once the running job is done. A
        ``reconcile`` pass running now stops at its next file, so that a host
        just disabled is not read to the end of a long first index; the caller
        queues a new pass (``sync`` passes, which a client waits on, run whole)."""
        fut: Future[Any] = Future()
        with self._cond:
            # First in the queue: a pass queued before it (the periodic rescan)
            # runs with the new config, not whole with the old one.
            self._jobs.insert(0, ("swap", build, fut))
            if self._running == "reconcile":
                self._yield_pass = True
            self._cond.notify()
        return fut

    def should_stop(self) -> bool:
        """For the indexer: stop at the next file (the daemon stops, or a swap waits)."""
        if self._yield_pass:
            self._yielded = True
            return True
        return self.stop_requested

    # ------------------------------------------------------------------ running

    def run(self) -> None:
        try:
            while True:
                with self._cond:
                    while not self._paths and not self._jobs and not self._stopping:
                        self._cond.wait()
                    if self._stopping:
                        break
                    if self._jobs:
                        job: Job | None = self._jobs.pop(0)
                        paths: list[Path] = []
                    else:
                        job = None
                        paths = list(self._paths)
                        self._paths.clear()
                    self._running = job[0] if job is not None else None
                    self._yield_pass = self._yielded = False
                self._run(job, paths)
            self._fail_pending()
        finally:
            self._close()

    def _run(self, job: Job | None, paths: list[Path]) -> None:
        corrupt = self.indexer.writer.corrupt
        if corrupt is not None:  # nothing more is written into a corrupt index
            if job is not None and job[2] is not None:
                job[2].set_exception(corrupt)
            return
        self.state.busy_since = time.monotonic()
        try:
            if job is None:
                self._index_paths(paths)
            else:
                kind, arg, fut = job
                try:
                    value = self._control(kind, arg)
                except BaseException as exc:
                    exc = self._corrupt(exc)
                    self._error(f"{kind} failed: {exc!r}")
                    if fut is not None:
                        fut.set_exception(exc)
                else:
                    if fut is not None:
                        fut.set_result(value)
        finally:
            self.state.busy_since = None
            self.state.current = None
            self.state.scan = None
            self.state.idle_since = time.monotonic()

    def _progress(self, kind: str) -> Callable[[int, int, int, int], None]:
        """A progress callback for the indexer: updates ``state.scan``; logs a line
        when a big pass starts (its totals), every PROGRESS_LOG_SECONDS of any
        pass, and at the end of a pass that logged before. A burst of a few
        changed files logs nothing."""
        started = time.monotonic()
        last_log = [started]
        logged = [False]
        self.state.scan = ScanProgress(kind, started=started)  # looking for files

        def update(files: int, total: int, done: int, total_bytes: int) -> None:
            scan = ScanProgress(kind, files, total, done, total_bytes, started)
            first = self.state.scan is not None and self.state.scan.files_total == 0
            self.state.scan = scan
            now = time.monotonic()
            big = total >= PROGRESS_LOG_FILES or total_bytes >= PROGRESS_LOG_BYTES
            if (
                (first and big)
                or now - last_log[0] >= PROGRESS_LOG_SECONDS
                or (logged[0] and files == total)
            ):
                last_log[0] = now
                logged[0] = True
                log.info(
                    f"indexing: {scan.line()}",
                    extra={"event": "index_progress", **scan.as_dict()},
                )

        return update

    def _control(self, kind: JobKind, arg: Any) -> Any:
        if kind == "reconcile":
            summary = self.indexer.reconcile(self._progress("reconcile"))
            self._note(summary)
            if self._yielded:  # cut short for a swap: the pass after it finishes
                log.info("pass stopped early for a config reload", extra={
                         "event": "pass_yielded", "files": summary.files_changed})  # fmt: skip
                return summary
            self.state.cold_index_done = True
            if self.on_reconciled:
                self.on_reconciled(self.indexer)
            return summary
        if kind == "sync":
            with self._cond:
                pending = list(self._paths)
                self._paths.clear()
            self._index_paths(pending)
            summary = self.indexer.reconcile(self._progress("sync"))
            self._note(summary)
            return summary
        if kind == "scan_dir":
            self._index_paths(list(walk_files(arg)))
            return None
        if kind == "maintenance":
            from backscroll.direct import retry_scrub

            self.indexer.writer.optimize()
            self.indexer.writer.checkpoint()
            retry_scrub(self.indexer.writer)  # a forget's scrub that failed (disk full)
            return None
        if kind == "swap":
            self.indexer = arg(self.indexer)
            return None
        if kind == "call":
            return arg(self.indexer)
        raise ValueError(f"unknown job {kind!r}")

    def _index_paths(self, paths: list[Path]) -> None:
        items: list[Item] = []
        seen: set[Path] = set()
        for p in paths:
            item = self.indexer.owner(p)
            if item is not None and item.path not in seen:
                seen.add(item.path)
                items.append(item)
        if not items:
            return
        summary = Summary()
        progress = self._progress("changes") if len(items) > 1 else None
        for n, item in enumerate(items):
            if self.stop_requested:
                break
            if progress is not None:
                progress(n, len(items), summary.bytes_read, 0)
            self.state.current = str(item.path)
            try:
                self.indexer.index_item(item, summary)
            except Exception as exc:  # never let one file stop the writer
                self._corrupt(exc)
                if self.indexer.writer.corrupt is not None:
                    break
                log.exception("indexing failed", extra={"event": "index_error",
                              "path": str(item.path), "error": repr(exc)})  # fmt: skip
                self._error(f"{item.path}: {exc!r}")
        self._note(summary)

    def _note(self, summary: Summary) -> None:
        if summary.unsettled and self.on_unsettled is not None:
            self.on_unsettled(summary.unsettled)
        if summary.files_changed:
            self.state.last_index_at = time.time()
            self.state.files_indexed += summary.files_changed
            self.state.turns_added += summary.turns_added
            if self.on_indexed is not None:
                self.on_indexed()
        if summary.last_error:
            self.state.last_error = summary.last_error

    def _error(self, message: str) -> None:
        self.state.last_error = message

    def _corrupt(self, exc: BaseException) -> BaseException:
        """SQLite found the index corrupt: stop writing into it (logged once)."""
        writer = self.indexer.writer
        if writer.corrupt is None and is_corrupt(exc):
            writer.note_corrupt(exc)
        if writer.corrupt is not None and not self._told_corrupt:
            self._told_corrupt = True
            log.error("the index is corrupt; nothing more is written to it",
                      extra={"event": "index_corrupt", "error": str(writer.corrupt)})  # fmt: skip
            self._error(str(writer.corrupt))
        return exc

    def _fail_pending(self) -> None:
        with self._cond:
            jobs, self._jobs = self._jobs, []
        for _kind, _arg, fut in jobs:
            if fut is not None and not fut.done():
                fut.set_exception(RuntimeError("the daemon is shutting down"))

    def _close(self) -> None:
        try:
            self.indexer.writer.checkpoint()
        except Exception as exc:
            log.warning(
                "checkpoint failed", extra={"event": "checkpoint_error", "error": repr(exc)}
            )
        self.indexer.writer.close()
