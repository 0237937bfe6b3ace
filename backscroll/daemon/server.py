"""The daemon: one lifecycle class, startup -> serve -> shutdown.

Startup takes the config, migrations, the lock, the socket, the watcher and the
scheduler; SIGTERM/SIGINT stop it cleanly (the file being written commits or
rolls back whole, the WAL is checkpointed, the socket removed); SIGHUP reloads
the config.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import fcntl
import json
import logging
import os
import signal
import socket
import stat
import sys
import time
from pathlib import Path
from typing import Any

from backscroll import __version__, protocol
from backscroll import config as config_mod
from backscroll.config import Config
from backscroll.daemon import systemd
from backscroll.daemon.connection import serve_connection
from backscroll.daemon.handlers import DaemonContext, ReadPool
from backscroll.daemon.logging import log_format, setup_logging
from backscroll.daemon.team import TeamRunner
from backscroll.daemon.ui import UiServer
from backscroll.daemon.watcher import Watcher
from backscroll.daemon.worker import Worker
from backscroll.errors import BackscrollError
from backscroll.indexing.indexer import Indexer, build_hosts
from backscroll.indexing.spec import HostSpec
from backscroll.paths import SUN_PATH_MAX
from backscroll.readers.base import SETTLE_SECONDS
from backscroll.store import ensure_private_dir, open_writer, private_files, remove_index

log = logging.getLogger("backscroll.daemon")


class AlreadyRunning(BackscrollError):
    pass


class Debouncer:
    """Per-path debouncing on the event loop.

    A change to a path that has been quiet for ``quiet`` seconds is handed on at
    once (an append is searchable without waiting); changes that follow within
    the quiet period are coalesced and handed on when the path goes quiet, or
    after ``max_wait`` at the latest (a transcript being streamed).
    """

    def __init__(self, loop: asyncio.AbstractEventLoop, quiet: float, max_wait: float,
                 fire: Any) -> None:  # fmt: skip
        self.loop = loop
        self.quiet = quiet
        self.max_wait = max_wait
        self.fire = fire
        self._first: dict[Path, float] = {}
        self._handles: dict[Path, asyncio.TimerHandle] = {}
        self._last: dict[Path, float] = {}

    def touch(self, path: Path) -> None:
        now = self.loop.time()
        if path not in self._handles and now - self._last.get(path, -1e9) >= self.quiet:
            self._last[path] = now
            if len(self._last) > 10000:
                self._last = {p: t for p, t in self._last.items() if now - t < self.quiet}
            self.fire([path])
            return
        first = self._first.setdefault(path, now)
        handle = self._handles.pop(path, None)
        if handle is not None:
            handle.cancel()
        when = min(now + self.quiet, first + self.max_wait)
        self._handles[path] = self.loop.call_at(when, self._fire, path)

    def _fire(self, path: Path) -> None:
        self._handles.pop(path, None)
        self._first.pop(path, None)
        self._last[path] = self.loop.time()
        self.fire([path])

    def flush(self) -> None:
        paths = list(self._handles)
        for p in paths:
            self._handles.pop(p).cancel()
            self._first.pop(p, None)
        if paths:
            self.fire(paths)

    def pending(self) -> int:
        return len(self._handles)


class Lock:
    """An flock on ``daemon.lock`` in the data directory: one daemon per index."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.fd: int | None = None

    def acquire(self, socket_path: Path) -> None:
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            try:
                info = json.loads(os.read(fd, 4096) or b"{}")
            except ValueError:
                info = {}
            os.close(fd)
            from backscroll.service import stop_hint

            if isinstance(info, dict) and "rebuild" in info:
                raise AlreadyRunning(
                    f"`backscroll index --rebuild` (pid {info['rebuild']}) is rebuilding "
                    f"{self.path.parent}; start the daemon once it is done"
                ) from None
            raise AlreadyRunning(
                f"another backscroll daemon (pid {info.get('pid', '?')}) already serves "
                f"{self.path.parent} on {info.get('socket', '?')}; stop it first "
                f"({stop_hint(info.get('pid'))})"
            ) from None
        os.ftruncate(fd, 0)
        os.write(fd, json.dumps({"pid": os.getpid(), "socket": str(socket_path)}).encode())
        self.fd = fd

    def release(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


class Daemon:
    def __init__(self, config: Config, config_file: Path | None = None) -> None:
        self.config = config
        #: The file named with --config, read again at SIGHUP (None: the default
        #: location, where a missing file means the defaults, as for the CLI).
        self.config_file = config_file
        self.socket_path = config.socket_path()
        self.db = config.db_path()
        self.lock = Lock(config.data_path() / "daemon.lock")
        self.stopping = asyncio.Event()
        self.server: asyncio.AbstractServer | None = None
        self.worker: Worker | None = None
        self.watcher: Watcher | None = None
        self.pool: ReadPool | None = None
        self.scheduler: Any = None
        self.ctx: DaemonContext | None = None
        self.debouncer: Debouncer | None = None
        self.clients: set[asyncio.Task[None]] = set()
        self.team = TeamRunner()
        self.ui: UiServer | None = None
        #: The process's exit status once it stops (1: it stopped for a fault).
        self.exit_code = 0
        self._own: dict[Path, int | None] = {}

    # ------------------------------------------------------------------ startup

    async def startup(self) -> None:
        loop = asyncio.get_running_loop()
        ensure_private_dir(self.config.data_path())
        if len(os.fsencode(self.socket_path)) >= SUN_PATH_MAX:
            raise BackscrollError(
                f"socket path {self.socket_path} is too long for a Unix socket "
                f"({SUN_PATH_MAX} bytes at most); set BACKSCROLL_SOCKET to a shorter path"
            )
        self.lock.acquire(self.socket_path)
        # Holding the lock, no rebuild runs: a half-built copy is what a killed one left.
        remove_index(self.db.with_name(self.db.name + ".rebuild"))
        writer = open_writer(self.db, check=True)
        from backscroll.direct import make_redactor

        indexer = Indexer(writer, build_hosts(self.config), self.config,
                          make_redactor(self.config))  # fmt: skip
        self.worker = Worker(indexer, self._reconciled(loop))
        self.worker.on_unsettled = self._recheck_later(loop)
        indexer.should_stop = lambda: self.worker is not None and self.worker.should_stop()
        self.worker.start()
        self.pool = ReadPool(self.db, query_seconds=self.config.server.query_timeout_s)
        await self.pool.open()
        idx = self.config.index
        self.debouncer = Debouncer(
            loop, idx.debounce_ms / 1000, idx.max_wait_ms / 1000, self.worker.submit_paths
        )
        polling = os.environ.get("BACKSCROLL_POLLING") == "1"
        self.watcher = Watcher(self._on_fs_event(loop), force_polling=polling)
        self.watcher.start()
        self.watcher.set_roots(self._roots(indexer))
        self.ctx = DaemonContext(
            self.pool, self.worker, self.watcher, self.socket_path,
            [s.host for s in indexer.hosts], flush=self.debouncer.flush,
        )  # fmt: skip
        self.ctx.team = self.team.report
        await self._listen()
        await self.team.start(self.config, self.pool, self.worker)
        self.worker.on_indexed = self._wake_team(loop)
        self.ui = UiServer(self.config, self.ctx)
        self.ctx.start_ui = self.ui.start
        if self.config.ui.enabled:
            await self._start_ui()
        self.worker.submit("reconcile")
        self._start_scheduler()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, self.stopping.set)
        loop.add_signal_handler(signal.SIGHUP, lambda: loop.create_task(self.reload()))
        self._own = self._own_files()
        systemd.notify(f"READY=1\nSTATUS=serving on {self.socket_path}\nMAINPID={os.getpid()}")
        log.info("daemon ready", extra={"event": "ready", "socket": str(self.socket_path),
                 "db": str(self.db), "pid": os.getpid(), "version": __version__})  # fmt: skip

    def _recheck_later(self, loop: asyncio.AbstractEventLoop) -> Any:
        """Read again, once quiet, a file whose writer left its last line unterminated:
        no further change event may come, and the line is complete all the same."""

        def later(paths: list[Path]) -> None:
            if self.worker is not None:
                submit = self.worker.submit_paths
                delay = SETTLE_SECONDS + 0.25
                loop.call_soon_threadsafe(loop.call_later, delay, submit, list(paths))

        return later

    async def _start_ui(self) -> None:
        """``ui.enabled``: serve the viewer now; a port in use is logged, not fatal."""
        assert self.ui is not None
        try:
            await self.ui.start()
        except protocol.ProtocolError as exc:
            log.error("web viewer not started", extra={"event": "ui_failed",
                      "error": exc.message})  # fmt: skip

    def _roots(self, indexer: Indexer) -> list[tuple[str, Path, bool]]:
        return watch_list(indexer.hosts)

    def _reconciled(self, loop: asyncio.AbstractEventLoop) -> Any:
        """After a full pass, also watch directories of transcripts outside the roots."""

        def done(indexer: Indexer) -> None:
            wanted = watch_list(indexer.hosts)
            wanted += [(host, d, False) for host, d in sorted(indexer.outside_dirs)]
            if self.watcher is not None:
                loop.call_soon_threadsafe(self.watcher.set_roots, wanted)

        return done

    def _wake_team(self, loop: asyncio.AbstractEventLoop) -> Any:
        team = self.team

        def wake() -> None:
            with contextlib.suppress(RuntimeError):  # the loop closed: shutting down
                loop.call_soon_threadsafe(team.wake)

        return wake

    def _on_fs_event(self, loop: asyncio.AbstractEventLoop) -> Any:
        def sink(path: Path, kind: str) -> None:
            loop.call_soon_threadsafe(self._route, path, kind)

        return sink

    def _route(self, path: Path, kind: str) -> None:
        if self.worker is None or self.debouncer is None:
            return
        if kind in ("dir", "root"):
            # Scan now, and once more shortly after: a file created in the new
            # directory before its watch was armed has no event of its own.
            self.worker.submit("scan_dir", path)
            loop = asyncio.get_running_loop()
            loop.call_later(1.0, self.worker.submit, "scan_dir", path)
        else:
            self.debouncer.touch(path)

    async def _listen(self) -> None:
        _refuse_shared_dir(self.socket_path.parent)
        ensure_private_dir(self.socket_path.parent)
        if self.socket_path.exists() or self.socket_path.is_symlink():
            if _socket_alive(self.socket_path):
                raise AlreadyRunning(
                    f"a daemon already answers on {self.socket_path}; stop it first, or set "
                    "BACKSCROLL_SOCKET to another path"
                )
            log.info("removing stale socket", extra={"event": "stale_socket",
                     "socket": str(self.socket_path)})  # fmt: skip
            self.socket_path.unlink()
        old = os.umask(0o177)
        try:
            self.server = await asyncio.start_unix_server(
                self._client, path=str(self.socket_path),
                limit=self.config.server.max_request_bytes + 1,
            )  # fmt: skip
        finally:
            os.umask(old)
        os.chmod(self.socket_path, 0o600)

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None and self.ctx is not None
        self.clients.add(task)
        try:
            await serve_connection(self.ctx, self.config.server, reader, writer)
        finally:
            self.clients.discard(task)

    def _start_scheduler(self) -> None:
        from apscheduler.schedulers.asyncio import AsyncIOScheduler

        assert self.worker is not None
        worker = self.worker
        sched = AsyncIOScheduler()
        sched.add_job(lambda: worker.submit("reconcile"), "interval",
                      minutes=max(self.config.index.rescan_minutes, 1), id="reconcile",
                      coalesce=True, max_instances=1)  # fmt: skip
        sched.add_job(self._maintenance, "interval", minutes=10, id="maintenance",
                      coalesce=True, max_instances=1)  # fmt: skip
        interval = systemd.watchdog_interval()
        if interval:
            sched.add_job(self._watchdog, "interval", seconds=interval, id="watchdog")
        sched.add_job(self._status_line, "interval", seconds=60, id="status")
        sched.start()
        self.scheduler = sched

    def _maintenance(self) -> None:
        """FTS optimize, PRAGMA optimize and a WAL checkpoint, only when idle."""
        w = self.worker
        if w is None or w.queue_depth() or w.state.busy_since is not None:
            return
        if time.monotonic() - w.state.idle_since < 60:
            return
        w.submit("maintenance")

    def _watchdog(self) -> None:
        # Ping only while the writer thread lives: a daemon that can no longer
        # index is restarted by systemd rather than left serving a stale index.
        if self.worker is not None and self.worker.is_alive():
            systemd.notify("WATCHDOG=1")
        else:
            log.error("the writer thread has stopped; not pinging the watchdog",
                      extra={"event": "writer_dead"})  # fmt: skip

    def _own_files(self) -> dict[Path, int | None]:
        """The inode of the socket and of the index, as this daemon made them."""
        out: dict[Path, int | None] = {}
        for path in (self.socket_path, self.db):
            try:
                out[path] = os.lstat(path).st_ino
            except OSError:
                out[path] = None
        return out

    def _check_own_files(self) -> None:
        """A socket or index removed or replaced under the daemon (a temp
        cleaner, ``rm -rf`` of the data directory): clients can no longer reach
        it, or it writes into a deleted file. It says so and stops with status 1,
        so that systemd or launchd starts it again on files of its own."""
        now = self._own_files()
        for path, inode in self._own.items():
            if inode is not None and now.get(path) != inode:
                what = "socket" if path == self.socket_path else "index"
                log.error(f"the daemon's {what} was removed or replaced; stopping",
                          extra={"event": "own_file_gone", "path": str(path),
                                 "fix": "start the daemon again (the service manager "
                                        "restarts it)"})  # fmt: skip
                self.exit_code = 1
                self.stopping.set()
                return

    def _status_line(self) -> None:
        self._check_own_files()
        self._check_watches()
        w = self.worker
        if w is not None:
            scan = w.state.scan
            doing = f"; indexing {scan.line()}" if scan is not None else ""
            if self.ctx is not None and self.ctx.restart_needed:
                doing += "; restart to apply the new data_dir/socket"
            systemd.notify(
                f"STATUS=serving; queue {w.queue_depth()}; {w.state.files_indexed} files indexed"
                + doing
            )

    def _check_watches(self) -> None:
        """Watch again the roots whose watch stopped or whose directory was
        replaced (watcher.check), and catch up on them now."""
        if self.watcher is None:
            return
        try:
            roots = self.watcher.check()
        except Exception as exc:  # (a reload must still finish, the status line still go)
            log.warning("could not check the watches", extra={"event": "watch_check_error",
                        "error": repr(exc)})  # fmt: skip
            return
        for root in roots:
            if self.worker is not None:
                self.worker.submit("scan_dir", root)

    # ------------------------------------------------------------------ reload

    async def reload(self) -> None:
        self._check_own_files()
        if self.stopping.is_set():
            return
        try:
            new = config_mod.load(self.config_file)
        except BackscrollError as exc:
            log.error("config reload failed; keeping the old config",
                      extra={"event": "reload_error", "error": str(exc)})  # fmt: skip
            return
        new, restart = self._keep_places(new)
        old_team, self.config = self.config.team, new
        level = getattr(logging, new.effective_log_level().upper(), logging.INFO)
        logging.getLogger("backscroll").setLevel(level)
        logging.getLogger().setLevel(max(logging.WARNING, level))  # (the libraries beside it)
        hosts = build_hosts(new)
        assert self.worker is not None and self.watcher is not None and self.ctx is not None

        def swap(old: Indexer) -> Indexer:
            from backscroll.direct import make_redactor

            fresh = Indexer(old.writer, hosts, new, make_redactor(new),
                            should_stop=old.should_stop)  # fmt: skip
            return fresh

        await asyncio.wrap_future(self.worker.swap_indexer(swap))
        self.watcher.set_roots(watch_list(hosts))
        self._check_watches()
        self.ctx.enabled_hosts = [s.host for s in hosts]
        if self.pool is not None:
            self.pool.query_seconds = new.server.query_timeout_s
        if new.team != old_team and self.pool is not None:
            await self.team.stop()
            await self.team.start(new, self.pool, self.worker)
        if self.ui is not None:
            self.ui.config = new
            if new.ui.enabled:
                await self._start_ui()
        self._retime(new)
        self.worker.submit("reconcile")
        self.ctx.restart_needed = restart
        fix = "restart the daemon (`systemctl --user restart backscroll`)"
        for change in restart:
            log.warning(f"config reloaded, but {change}",
                        extra={"event": "restart_needed", "fix": fix})  # fmt: skip
        log.info("config reloaded", extra={"event": "reloaded", "hosts": len(hosts),
                 "restart_needed": restart})  # fmt: skip

    def _retime(self, new: Config) -> None:
        """The index's timings from a reloaded config: the debouncer's quiet and
        longest waits, and the periodic rescan's interval."""
        if self.debouncer is not None:
            self.debouncer.quiet = new.index.debounce_ms / 1000
            self.debouncer.max_wait = new.index.max_wait_ms / 1000
        if self.scheduler is not None:
            self.scheduler.reschedule_job(
                "reconcile", trigger="interval", minutes=max(new.index.rescan_minutes, 1)
            )

    def _keep_places(self, new: Config) -> tuple[Config, list[str]]:
        """``new`` with the data directory and socket this daemon runs on, and what
        of them changed: the lock, the index, the read pool and the listening
        socket were taken at start, so a change applies only at a restart."""
        restart = []
        running_data, wanted_data = self.config.data_path(), new.data_path()
        if wanted_data != running_data:
            restart.append(f"data_dir changed to {wanted_data}: the daemon still uses "
                           f"{running_data} until it is restarted")  # fmt: skip
        if new.socket_path() != self.socket_path:
            restart.append(f"socket changed to {new.socket_path()}: the daemon still listens "
                           f"on {self.socket_path} until it is restarted")  # fmt: skip
        kept = dataclasses.replace(new, data_dir=self.config.data_dir, socket=self.config.socket)
        return kept, restart

    # ------------------------------------------------------------------ serve / shutdown

    async def serve(self) -> None:
        await self.stopping.wait()

    async def shutdown(self) -> None:
        if self.lock.fd is None:
            return  # never started: nothing of ours to stop
        systemd.notify("STOPPING=1")
        log.info("shutting down", extra={"event": "stopping"})
        if self.server is not None:
            self.server.close()
        if self.ui is not None:
            await self.ui.stop()
        for task in list(self.clients):
            task.cancel()
        if self.scheduler is not None:
            self.scheduler.shutdown(wait=False)
        if self.watcher is not None:
            await asyncio.to_thread(self.watcher.stop)
        await self.team.stop()
        if self.worker is not None:
            self.worker.stop()
            await asyncio.to_thread(self.worker.join, 30)
        if self.pool is not None:
            await self.pool.close()
        if self.server is not None:  # only the socket this daemon made
            with contextlib.suppress(FileNotFoundError):
                self.socket_path.unlink()
            private_files(self.db)
        self.lock.release()
        log.info("stopped", extra={"event": "stopped"})


def watch_list(hosts: list[HostSpec]) -> list[tuple[str, Path, bool]]:
    return [(s.host, r, s.reader.watch_recursive(r)) for s in hosts for r in s.roots]


def _refuse_shared_dir(directory: Path) -> None:
    """The socket directory is made 0700: refuse one that others share (/tmp) or own,
    rather than lock them out of it."""
    try:
        st = directory.stat()
    except FileNotFoundError:
        return  # ensure_private_dir creates it, private
    if st.st_uid != os.getuid() or st.st_mode & stat.S_ISVTX:
        raise BackscrollError(
            f"the socket directory {directory} is shared (mode {stat.S_IMODE(st.st_mode):o}, "
            f"owner uid {st.st_uid}) and the daemon makes its socket directory private; set "
            "BACKSCROLL_SOCKET to a path in a directory of its own, e.g. "
            "$XDG_RUNTIME_DIR/backscroll/backscroll.sock"
        )


def _socket_alive(path: Path) -> bool:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(1)
    try:
        sock.connect(str(path))
        sock.sendall(protocol.request("hello", {"protocol": protocol.PROTOCOL_VERSION}, 0))
        return bool(sock.recv(1))
    except OSError:
        return False
    finally:
        sock.close()


async def _main(config: Config, config_file: Path | None) -> int:
    daemon = Daemon(config, config_file)
    try:
        await daemon.startup()
    except BackscrollError as exc:
        log.error("startup failed", extra={"event": "startup_failed", "error": str(exc)})
        if sys.stderr.isatty():  # a person at a terminal also gets the plain sentence
            sys.stderr.write(f"backscroll: {exc}\n")
        await daemon.shutdown()
        return 1
    except Exception as exc:
        # Whatever else stops the start: what started is stopped, or its threads
        # (the watcher's, the indexer's) would keep a dead daemon's process alive.
        log.error("startup failed", extra={"event": "startup_failed", "error": repr(exc)})
        try:
            await daemon.shutdown()
        except Exception as later:  # (half started: what failed first is what to fix)
            log.error("stopping after the failed start failed too",
                      extra={"event": "shutdown_error", "error": repr(later)})  # fmt: skip
        raise
    try:
        await daemon.serve()
    finally:
        await daemon.shutdown()
    return daemon.exit_code


def config_failed(exc: BackscrollError) -> int:
    """A config that does not load stops the daemon before it starts. Under a
    service manager that is said as the daemon's other lines are, a JSON line
    (with its journald priority under systemd), so that `journalctl -p warning`
    and `backscroll logs` show why the service died; on a terminal it is the
    plain sentence every command prints (raised on to the CLI)."""
    if log_format(sys.stderr) == "text":
        raise exc
    setup_logging("info")  # (not the config's level: the config is what failed)
    log.error("the config does not load; the daemon did not start",
              extra={"event": "startup_failed", "error": str(exc),
                     "fix": "fix what each problem names, then start it again"})  # fmt: skip
    return exc.exit_code


def run_daemon(config: Config, config_file: Path | None = None) -> int:
    """``backscroll daemon``: run in the foreground until SIGTERM/SIGINT;
    ``config_file`` is the file given with --config, if one was."""
    setup_logging(config.effective_log_level())
    try:
        import uvloop

        runner: Any = uvloop.run
    except ImportError:  # pragma: no cover - Windows or a minimal install
        runner = asyncio.run
    return int(runner(_main(config, config_file)))
