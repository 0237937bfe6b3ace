"""Reader processes forked before ``backscroll index`` has imported the rest of itself.

A first index of many files spends its first ~0.15 s in one process (imports,
configuration, the new index's schema, the scan, the plan) while the second
core idles, and each reader process of
:class:`~backscroll.indexing.parallel.ParallelReads` then spends ~50 ms
compiling the redaction patterns before it reads anything.

:func:`maybe_start` forks one reader process as the command starts, when no
index exists yet at the default place. On the idle core it reads the
configuration and hands it to the command (:meth:`Prefork.config`, while the
command imports the store), imports the readers' shared helpers and compiles
the redaction patterns. Once the command has found that no index exists at the
configured place either (:meth:`Prefork.configure`) and which hosts have files
(:meth:`Prefork.prepare`, after its scan, while it plans), it imports those
hosts' reader modules and forks the other reader processes from itself, so the
patterns are compiled and the modules imported once, while the command plans.
The pass hands them its chunks exactly as it would a :class:`ParallelReads`
pool: results come back in submission order.

``backscroll index --rebuild`` forks them the same way, whether an index
exists or not: it reads every file again, into a new index.

Linux only (elsewhere the pass starts its pool as before): the other reader
processes are forked from the first, and only Linux ends them with it
(``PR_SET_PDEATHSIG``) without a watching thread.

The pipes carry length-prefixed pickles. One thread of this process takes each
result as it arrives and gives that process its next chunk, so a reader process
never waits for the writer, busy in SQLite, to ask for more. Once every chunk is
handed out it closes the task pipes: each reader process ends after its last
chunk, while the writer still writes the last files (ending them at the close
took 6-7 ms at the end of the pass, on one core).
"""

from __future__ import annotations

import contextlib
import os
import pickle
import selectors
import signal
import sys
import threading
from collections import deque
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path

    from backscroll.config import Config
    from backscroll.indexing.parallel import Outcome, Task

#: Chunks each reader process holds (one it reads, one waiting): it goes on
#: at once when it sends a result, without a round trip to this process.
DEPTH = 2
#: Bytes of a message's length prefix.
_HEAD = 8


def default_workers() -> int:
    """``BACKSCROLL_INDEX_WORKERS`` if set (0 or 1: read in-process), else one
    worker per CPU this process may use, at most 4."""
    env = os.environ.get("BACKSCROLL_INDEX_WORKERS", "").strip()
    if env.isascii() and env.isdigit():  # ("²".isdigit(), but int("²") fails)
        return int(env)
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # macOS
        cpus = os.cpu_count() or 1
    return min(cpus, 4)


def maybe_start(config_file: Path | None, *, rebuild: bool = False) -> Prefork | None:
    """Reader processes for what looks like a first index or is a rebuild
    (every file read again into a new index), or None where they cannot be
    forked here (see the module's docstring). Before the configuration
    (``config_file``, or the default) is read: :meth:`Prefork.configure` ends
    them if, for an index, the configured index exists after all."""
    if not sys.platform.startswith("linux"):
        return None
    if threading.active_count() != 1:
        return None
    from backscroll import paths

    try:
        if not rebuild and paths.db_path(paths.data_dir()).exists():
            return None  # not a first index: most passes are small
    except (OSError, ValueError):
        return None
    workers = default_workers()
    if workers < 2:
        return None
    try:
        return Prefork(workers, config_file, rebuild=rebuild)
    except OSError:  # (out of file descriptors or processes: the pass starts a pool)
        return None


class Prefork:
    """Reader processes forked now; :meth:`run` has the shape of
    :meth:`ParallelReads.run <backscroll.indexing.parallel.ParallelReads.run>`.

    Only the pump thread (:meth:`_pump`, started by :meth:`configure`) writes
    to the reader processes, never blocking: a reader process blocked writing a
    result while this process is blocked writing it a chunk would wait forever.
    """

    def __init__(
        self, workers: int, config_file: Path | None = None, *, rebuild: bool = False
    ) -> None:
        self.workers = workers
        #: For a rebuild, which reads every file whether an index exists or not.
        self.rebuild = rebuild
        parent_pid = os.getpid()
        fds: list[int] = []
        try:
            tasks = [_pipe(fds) for _ in range(workers)]
            results = [_pipe(fds) for _ in range(workers)]
            # (a Ctrl-C between the fork and the child's own handling must not
            # send the child back into the command)
            mask = signal.pthread_sigmask(signal.SIG_BLOCK, _STOPS)
            try:
                pid = os.fork()
                if pid == 0:  # the first reader process; it never returns
                    try:
                        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
                        _first_child(parent_pid, config_file, tasks, results)
                    finally:
                        os._exit(1)
            finally:
                signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        except BaseException:
            for fd in fds:
                os.close(fd)
            raise
        self.pid = pid
        for r, _w in tasks:
            os.close(r)
        for _r, w in results:
            os.close(w)
        self.task_fds = [w for _r, w in tasks]
        #: Reader processes whose task pipe is closed (they have every chunk).
        self.ended: set[int] = set()
        self.result_fds = [r for r, _w in results]
        for fd in self.task_fds:
            os.set_blocking(fd, False)
        self.wake_r, self.wake_w = os.pipe()
        os.set_blocking(self.wake_w, False)
        self.cond = threading.Condition()
        self.chunks: list[list[Task]] = []
        self.assigned: list[deque[int]] = [deque() for _ in range(workers)]
        self.outbox: list[deque[memoryview]] = [deque() for _ in range(workers)]
        self.done: dict[int, bytes] = {}
        self.next = 0
        self.consumed = 0
        self.window = 0
        self.error: BaseException | None = None
        self.thread: threading.Thread | None = None
        self.config_taken = False
        #: The host modules were named (the first reader process waits for them).
        self.prepared = False
        #: The first reader process ended before its go-ahead.
        self.gone = False
        self.ran = False
        self.stopping = False
        self.closed = False

    def config(self) -> Config | None:
        """The configuration the first reader process read, or None where it
        could not (the caller reads it again, to say why) or is gone."""
        self.config_taken = True
        try:
            data = _recv(self.result_fds[0])
            if data is None:
                self.gone = True
            return pickle.loads(data) if data else None
        except Exception:  # (the caller reads it itself, and says what is wrong)
            self.gone = True
            return None

    def configure(self, config: Config) -> bool:
        """Let the reader processes go on with ``config``; False (and they end)
        where this is not a first index (nor a rebuild) after all, or they are gone."""
        if not self.config_taken:
            self.config()
        try:
            first = self.rebuild or not config.db_path().exists()
        except OSError:  # (the pass says what is wrong with the place, as without this)
            first = False
        if first and not self.closed and not self.gone:
            try:
                payload = pickle.dumps(config, pickle.HIGHEST_PROTOCOL)
            except (pickle.PicklingError, TypeError):
                payload = None  # (a configuration that cannot cross: the pass starts a pool)
            if payload is not None:
                self.outbox[0].append(_framed(payload))
                self.thread = threading.Thread(target=self._pump, name="readers", daemon=True)
                self.thread.start()
                return True
        self.close()
        return False

    def prepare(self, modules: Iterable[str]) -> None:
        """Name the host reader modules the tasks will need: the first reader
        process imports them before it forks the others (once, where they would
        each import them with their first task). Called once, before run()."""
        if self.prepared:
            return
        self.prepared = True
        payload = pickle.dumps(sorted(set(modules)), pickle.HIGHEST_PROTOCOL)
        with self.cond:
            self.outbox[0].append(_framed(payload))
        self._wake()

    def run(self, tasks: Iterable[tuple[Task, int]]) -> Iterator[Outcome]:
        """Each task's outcome, in the tasks' order (each given with its size in
        bytes); at most WINDOW chunks are in flight. Raises RuntimeError if a
        reader process ends early (the caller reads the rest itself)."""
        from backscroll.indexing.parallel import WINDOW, chunks

        self.prepare(())  # (if the caller did not: the first reader process waits for it)
        with self.cond:
            self.ran = True
            self.chunks = list(chunks(tasks))
            self.window = WINDOW
            if self.thread is None:
                self.error = RuntimeError("the reader processes were not configured")
        self._wake()
        for i in range(len(self.chunks)):
            with self.cond:
                while i not in self.done:
                    if self.error is not None:
                        raise self.error
                    if self.thread is not None and not self.thread.is_alive():
                        raise RuntimeError("the reader processes' thread ended")
                    self.cond.wait(1.0)
                data = self.done.pop(i)
                self.consumed = i + 1
            self._wake()  # (the window moved on: the pump sends more)
            yield from pickle.loads(data)

    def _wake(self) -> None:
        with contextlib.suppress(BlockingIOError, OSError):
            os.write(self.wake_w, b"!")

    def _feed(self) -> None:
        """Queue chunks for each reader process up to DEPTH, WINDOW ahead at
        most (the condition's lock held)."""
        limit = min(len(self.chunks), self.consumed + self.window)
        for w, queue in enumerate(self.assigned):
            while len(queue) < DEPTH and self.next < limit and self.error is None:
                queue.append(self.next)
                payload = pickle.dumps(self.chunks[self.next], pickle.HIGHEST_PROTOCOL)
                self.chunks[self.next] = []  # (queued: its tasks are not needed here)
                self.next += 1
                self.outbox[w].append(_framed(payload))

    def _pump(self) -> None:
        """The one thread that talks to the reader processes: it writes the
        queued chunks as their pipes take them, and takes each result as it
        arrives, until :meth:`close`."""
        sel = selectors.DefaultSelector()
        sel.register(self.wake_r, selectors.EVENT_READ, -1)
        live = set(range(self.workers))
        for w, fd in enumerate(self.result_fds):
            sel.register(fd, selectors.EVENT_READ, w)
        writing: set[int] = set()
        try:
            while True:
                with self.cond:
                    if self.stopping:
                        return
                    self._feed()
                    want = {w for w in live if self.outbox[w]}
                    handed_out = self.ran and self.next >= len(self.chunks)
                for w in want - writing:
                    sel.register(self.task_fds[w], selectors.EVENT_WRITE, self.workers + w)
                for w in writing - want:
                    sel.unregister(self.task_fds[w])
                writing = want
                if handed_out:
                    # A reader process with its last chunk in its pipe reads it,
                    # sends the result and ends while the writer still writes,
                    # rather than at close().
                    for w in set(range(self.workers)) - want - self.ended:
                        self._end_tasks(w)
                for key, _ in sel.select():
                    tag = key.data
                    if tag == -1:
                        os.read(self.wake_r, 4096)
                    elif tag >= self.workers:
                        self._write_some(tag - self.workers)
                    elif not self._take_result(tag):
                        live.discard(tag)
                        sel.unregister(key.fd)
        except BaseException as exc:  # (anything: the pass reads the rest itself)
            self._fail(f"talking to a reader process failed: {exc!r}")
        finally:
            sel.close()

    def _end_tasks(self, w: int) -> None:
        """Close reader process ``w``'s task pipe: it ends after its last chunk."""
        self.ended.add(w)
        os.close(self.task_fds[w])

    def _write_some(self, w: int) -> None:
        with self.cond:
            queue = self.outbox[w]
            try:
                written = os.write(self.task_fds[w], queue[0])
            except BlockingIOError:
                return
            except OSError as exc:  # (EPIPE: it ended)
                queue.clear()
                self._fail(f"a reader process ended early: {exc}")
                return
            if written == len(queue[0]):
                queue.popleft()
            else:
                queue[0] = queue[0][written:]

    def _take_result(self, w: int) -> bool:
        """One result of reader process ``w``; False at its end."""
        data = _recv(self.result_fds[w])  # (it writes the whole message unaided)
        with self.cond:
            queue = self.assigned[w]
            if data is None and not queue and w in self.ended:
                return False  # (its last chunk read: it ended as it should)
            if data is None or not queue:
                self._fail("a reader process ended early")
                return False
            self.done[queue.popleft()] = data
            self.cond.notify_all()
            return True

    def _fail(self, message: str) -> None:
        with self.cond:
            if self.error is None:
                self.error = RuntimeError(message)
            self.cond.notify_all()

    def close(self) -> None:
        """End the reader processes (at once if results are still owed)."""
        if self.closed:
            return
        self.closed = True
        # (results still owed, or never asked for: the first may still be compiling)
        with self.cond:
            owed = not self.ran or any(self.assigned) or self.next < len(self.chunks)
            self.stopping = True
        if owed:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGKILL)  # (the others die with it)
        self._wake()
        if self.thread is not None:
            self.thread.join()
        kept = [fd for w, fd in enumerate(self.task_fds) if w not in self.ended]
        for fd in (*kept, *self.result_fds, self.wake_r, self.wake_w):
            os.close(fd)
        with contextlib.suppress(ChildProcessError):
            os.waitpid(self.pid, 0)


#: Signals that stop the command, held back while it forks.
_STOPS = {signal.SIGINT, signal.SIGTERM}


def _pipe(fds: list[int]) -> tuple[int, int]:
    r, w = os.pipe()
    fds += (r, w)
    return r, w


# --------------------------------------------------------------------------- the children


def _first_child(
    parent: int,
    config_file: Path | None,
    tasks: list[tuple[int, int]],
    results: list[tuple[int, int]],
) -> None:
    """The first reader process: read the configuration, set up, fork the
    others, read. Never returns."""
    code = 1
    try:
        for _r, w in tasks:
            os.close(w)
        for r, _w in results:
            os.close(r)
        from backscroll.indexing import parallel

        parallel.die_with_parent(parent)
        parallel.yield_to_writer()  # (the others inherit both)
        parallel.keep_freed_memory()
        _send(results[0][1], _read_config(config_file))
        import backscroll.readers.base  # (the hosts' modules: once the command names them)
        import backscroll.redact  # noqa: F401  (compiles the default patterns)
        from backscroll.readers import lean

        lean.preload()

        data = _recv(tasks[0][0])
        if data is None:
            return  # (not needed after all)
        config = pickle.loads(data)
        parallel.configure_worker(config, config.redaction.enabled)
        data = _recv(tasks[0][0])  # (the host modules the tasks will name)
        if data is None:
            return
        _import_hosts(pickle.loads(data))
        me = os.getpid()
        children = []
        for w in range(1, len(tasks)):
            pid = os.fork()
            if pid == 0:
                _only(w, tasks, results)
                parallel.die_with_parent(me)
                _serve(tasks[w][0], results[w][1])
                os._exit(0)
            children.append(pid)
        _only(0, tasks, results)
        _serve(tasks[0][0], results[0][1])
        for pid in children:
            os.waitpid(pid, 0)
        code = 0
    except BaseException:  # (nothing of a child may run on in the parent's code)
        pass
    finally:
        os._exit(code)


def _import_hosts(modules: list[str]) -> None:
    """Import the host reader modules (and the task module) the tasks will
    name; one that fails is left to the task that needs it to report."""
    import importlib

    for name in ("backscroll.indexing.spec", *modules):
        if name.startswith("backscroll."):
            with contextlib.suppress(Exception):
                importlib.import_module(name)


def _read_config(config_file: Path | None) -> bytes:
    """The configuration, pickled; empty where it cannot be read (the command
    reads it again and says why)."""
    from backscroll import config

    try:
        return pickle.dumps(config.load(config_file), pickle.HIGHEST_PROTOCOL)
    except Exception:
        return b""


def _only(w: int, tasks: list[tuple[int, int]], results: list[tuple[int, int]]) -> None:
    """Close the other reader processes' pipes in this one."""
    for i, ((r, _), (_, out)) in enumerate(zip(tasks, results, strict=True)):
        if i != w:
            for fd in (r, out):
                with contextlib.suppress(OSError):
                    os.close(fd)


def _serve(task_fd: int, result_fd: int) -> None:
    from backscroll.indexing.parallel import read_files

    while True:
        data = _recv(task_fd)
        if data is None:
            return
        _send(result_fd, pickle.dumps(read_files(pickle.loads(data)), pickle.HIGHEST_PROTOCOL))


# --------------------------------------------------------------------------- framing


def _framed(data: bytes) -> memoryview:
    return memoryview(len(data).to_bytes(_HEAD, "little") + data)


def _send(fd: int, data: bytes) -> None:
    """(Blocking: a reader process's side.)"""
    view = _framed(data)
    while view:
        view = view[os.write(fd, view) :]


def _recv(fd: int) -> bytes | None:
    """One message, or None at the end of the pipe."""
    head = _read_exact(fd, _HEAD)
    if head is None:
        return None
    body = _read_exact(fd, int.from_bytes(head, "little"))
    if body is None:
        raise ValueError("a message ended early")
    return body


def _read_exact(fd: int, n: int) -> bytes | None:
    buf = bytearray(n)
    view = memoryview(buf)
    got = 0
    while got < n:
        k = os.readv(fd, [view[got:]])
        if k == 0:
            return None
        got += k
    return bytes(buf)
