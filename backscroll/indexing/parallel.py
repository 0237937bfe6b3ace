"""Reading files in worker processes while the one writer inserts.

A cold index spends most of its time parsing JSON and picking prose, work that
needs no database. :class:`ParallelReads` runs ``reader.read`` and the
pre-store cleaning (redaction, excluded projects, lone surrogates) of each file
in a pool of processes and hands the results back **in submission order**, so
the writer sees exactly the sequence the in-process path would and each file's
turns stay whole (one result per file, written in one transaction with its
position). A window bounds how many results wait in memory.

Workers fork from a single-threaded process (``backscroll index``); a process
with threads (the daemon) starts them from a fork server instead, since forking
a threaded process can inherit a lock another thread held. Workers log nothing
of their own: every problem travels back with the result and is logged by the
writer's process.
"""

from __future__ import annotations

import contextlib
import gc
import os
import pickle
import signal
import sys
import threading
import time
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from backscroll.config import Config
from backscroll.indexing.clean import Redactor, clean
from backscroll.model import Cursor, ReadResult

if TYPE_CHECKING:
    from concurrent.futures import Future

    from backscroll.indexing.spec import HostSpec

#: One file to read: its host, its path and where to read from.
Task = tuple["HostSpec", Path, "Cursor | None"]

#: Consecutive small files go to a worker together (fewer round trips): a
#: chunk holds files until it reaches this many bytes or CHUNK_FILES files.
CHUNK_BYTES = 4 * 1024 * 1024
CHUNK_FILES = 32
#: Chunks submitted ahead of the one the writer waits for (up to 64 MB of
#: source: the workers keep reading while the writer writes a batch).
WINDOW = 16


@dataclass(frozen=True, slots=True)
class Outcome:
    """A worker's read of one file: the cleaned result, or what it raised."""

    result: ReadResult | None = None
    error: BaseException | None = None

    def get(self) -> ReadResult:
        if self.error is not None:
            raise self.error
        assert self.result is not None
        return self.result


# --------------------------------------------------------------------------- worker side

_redactor: Redactor | None = None
_excluded: tuple[str, ...] = ()


#: How much lower a reader process's scheduling priority is than the writer's.
#: Three processes share two cores: at equal priority the writer gets two
#: thirds of one while it needs three quarters, falls behind, and writes the
#: last tens of milliseconds of results alone after the readers are done.
READER_NICENESS = 5


def yield_to_writer() -> None:
    """Lower this reader process's priority below the writer's (see
    READER_NICENESS); where that is refused, it reads at the same priority."""
    with contextlib.suppress(OSError, AttributeError):
        os.nice(READER_NICENESS)


def init_worker(config: Config, redact: bool, parent: int | None) -> None:
    die_with_parent(parent)
    yield_to_writer()
    keep_freed_memory()
    configure_worker(config, redact)


#: mallopt(3) parameters (glibc's malloc.h) and the values a reader process sets.
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3
_TRIM_THRESHOLD, _MMAP_THRESHOLD = 256 << 20, 32 << 20


def keep_freed_memory() -> None:
    """glibc: keep the memory this reader process frees for its next
    allocations, instead of handing it back to the kernel (heap trimming, and
    blocks of 128 KB or more mapped and unmapped each time). A reader allocates
    and frees lines and chunks of up to megabytes all pass long, and each page
    given back faults again when it is taken again: a first read of the 240 MB
    bench corpus took 11-25k page faults in a new process, 1.6k with this
    (bench/RESULTS.md, eighteenth pass). A reader process lives for one pass.
    Elsewhere (not glibc), nothing changes."""
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        libc = ctypes.CDLL(None)
        mallopt = libc.mallopt
    except (OSError, AttributeError):  # (musl has no mallopt)
        return
    mallopt(_M_TRIM_THRESHOLD, _TRIM_THRESHOLD)
    mallopt(_M_MMAP_THRESHOLD, _MMAP_THRESHOLD)


def configure_worker(config: Config, redact: bool) -> None:
    """What a reader process keeps for every file: the projects left out and
    the redactor (its patterns compiled here)."""
    global _redactor, _excluded
    # What the worker inherited stays out of its collections: they would touch
    # (and so copy) every page of the parent's heap.
    gc.freeze()
    _excluded = tuple(config.exclude.projects)
    if redact:
        from backscroll.redact import Redactor as SecretRedactor

        _redactor = SecretRedactor(config.redaction.patterns)


def die_with_parent(expected: int | None) -> None:
    """End this worker when the process that started it dies (``kill -9`` of
    ``backscroll index --rebuild``): left running, it would wait for work
    forever and keep the locks it inherited (the rebuild's ``daemon.lock``),
    so no daemon or rebuild could start. Linux: the kernel sends SIGKILL;
    elsewhere a thread looks at the parent twice a second. ``expected``: the
    forking process's pid (None: started by a fork server, the parent here)."""
    parent = os.getppid()
    if expected is not None and parent != expected:  # orphaned between the fork and this
        os._exit(1)
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            if libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL) == 0:
                if os.getppid() != parent:  # (it died before the call)
                    os._exit(1)
                return
        except (OSError, AttributeError):
            pass

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(0.5)
        os._exit(1)

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()


#: prctl(2) option: the signal this process gets when its parent dies.
_PR_SET_PDEATHSIG = 1


def _sendable(exc: BaseException) -> BaseException:
    try:
        pickle.loads(pickle.dumps(exc))
    except Exception:
        return RuntimeError(f"{type(exc).__name__}: {exc}")
    return exc


def read_file(spec: HostSpec, path: Path, prev: Cursor | None) -> Outcome:
    """Runs in a worker: one file read from ``prev`` and cleaned for the store."""
    try:
        result = spec.reader.read(path, prev, spec.options)
    except Exception as exc:
        return Outcome(error=_sendable(exc))
    return Outcome(result=clean(result, _redactor, _excluded))


def read_files(tasks: list[Task]) -> list[Outcome]:
    """Runs in a worker: a chunk of files, in order."""
    return [read_file(*task) for task in tasks]


# --------------------------------------------------------------------------- writer side


class Reads(Protocol):
    """Reader processes a pass hands its files to: :class:`ParallelReads`, or
    those forked at the start of ``backscroll index`` and ``index --rebuild``
    (indexing/prefork.py)."""

    def close(self) -> None: ...

    def prepare(self, modules: Iterable[str]) -> None:
        """The host reader modules the tasks will name, before the first task."""

    def run(self, tasks: Iterable[tuple[Task, int]]) -> Iterator[Outcome]: ...


def can_fork() -> bool:
    """Workers fork from this process (one thread, a system with fork) rather
    than start from a fork server."""
    import multiprocessing  # only a big pass needs it (an import of ~20 ms)

    return "fork" in multiprocessing.get_all_start_methods() and threading.active_count() == 1


def _context() -> Any:
    import multiprocessing

    methods = multiprocessing.get_all_start_methods()
    if can_fork():
        return multiprocessing.get_context("fork")
    if "forkserver" in methods:
        return multiprocessing.get_context("forkserver")
    return multiprocessing.get_context("spawn")


class ParallelReads:
    """A pool of reader processes; use as a context manager."""

    def __init__(self, workers: int, config: Config, redact: bool) -> None:
        from concurrent.futures import ProcessPoolExecutor

        # Each worker compiles the redaction patterns (~40 ms) itself, in
        # parallel, while this process goes on planning: compiled here, before
        # the fork, they would hold up every worker's start.
        context = _context()
        forked = context.get_start_method() == "fork"
        self.pool = ProcessPoolExecutor(
            max_workers=workers,
            mp_context=context,
            initializer=init_worker,
            initargs=(config, redact, os.getpid() if forked else None),
        )

    def start(self) -> None:
        """Start the workers now rather than at the first chunk."""
        self.pool.submit(os.getpid)

    def __enter__(self) -> ParallelReads:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.pool.shutdown(wait=True, cancel_futures=True)

    def prepare(self, modules: Iterable[str]) -> None:
        """(Each worker imports a host's module with the first task naming it.)"""

    def run(self, tasks: Iterable[tuple[Task, int]]) -> Iterator[Outcome]:
        """Each task's outcome, in the tasks' order (each given with its size in
        bytes); at most WINDOW chunks are in flight. Raises what a broken pool
        raises (the caller reads the rest itself)."""
        pending: deque[Future[list[Outcome]]] = deque()
        pieces = chunks(tasks)
        for chunk in pieces:
            pending.append(self.pool.submit(read_files, chunk))
            if len(pending) >= WINDOW:
                break
        while pending:
            fut = pending.popleft()
            nxt = next(pieces, None)
            if nxt is not None:
                pending.append(self.pool.submit(read_files, nxt))
            yield from fut.result()


def chunks(tasks: Iterable[tuple[Task, int]]) -> Iterator[list[Task]]:
    chunk: list[Task] = []
    size = 0
    for task, nbytes in tasks:
        chunk.append(task)
        size += nbytes
        if size >= CHUNK_BYTES or len(chunk) >= CHUNK_FILES:
            yield chunk
            chunk, size = [], 0
    if chunk:
        yield chunk
