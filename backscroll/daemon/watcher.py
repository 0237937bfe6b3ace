"""watchdog observers on every enabled root; the watchdog thread only hands
``(path, kind)`` to the event loop and never touches SQLite.

A root that does not exist yet is waited for by watching its nearest existing
ancestor (not recursively); when it appears it is watched and then scanned, so
nothing created in between is missed. When the OS runs out of inotify watches,
the affected root falls back to polling, with a warning that says how to raise
the limit. A root on a file system that other machines write to (a network
share, WSL's Windows drives: mounts.py) is polled from the start.

A root whose directory is replaced under its watch (moved aside and made anew,
deleted and made again, a symbolic link pointed elsewhere) is found by
:meth:`Watcher.check` and watched again where it now is.

Locks: watchdog calls the handler from its dispatch thread while holding its
observer's lock, and scheduling a watch takes that lock. So the handler never
takes the watcher's own lock (held while scheduling): what it must change
(a root waited for has appeared) is handed to the watcher's own thread.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from watchdog.events import (
    DirCreatedEvent,
    DirDeletedEvent,
    DirMovedEvent,
    FileClosedEvent,
    FileCreatedEvent,
    FileDeletedEvent,
    FileModifiedEvent,
    FileMovedEvent,
    FileSystemEvent,
    FileSystemEventHandler,
)
from watchdog.observers import Observer
from watchdog.observers.polling import PollingObserver

from backscroll import mounts
from backscroll.paths import UNREACHABLE_FIX, is_under

log = logging.getLogger("backscroll.watcher")

#: Called from watchdog threads with (path, kind); kind is "file", "dir" or "root".
Sink = Callable[[Path, str], None]

#: A native watch that stops again this soon after it was placed again is
#: stopped by the inotify watch limit (see Watcher.check).
RESTOP_SECONDS = 600.0

INOTIFY_HINT = (
    "raise the limit with `sudo sysctl fs.inotify.max_user_watches=524288` "
    "(persist it in /etc/sysctl.d/)"
)


@dataclass
class RootWatch:
    host: str
    path: Path
    mode: str  # "inotify" (or the platform's native API), "polling", "waiting", "error"
    watching: Path | None = None
    #: ``watching`` with its symbolic links resolved: where the watch is placed.
    real: str | None = None
    recursive: bool = True
    #: The shared file system (mounts.REMOTE) it was last found on, if any.
    remote: str | None = None
    #: (device, inode) of the watched directory when the watch was placed.
    ident: tuple[int, int] | None = None
    #: When its native watch, stopped with the directory still there, was last
    #: placed again (time.monotonic()).
    restarted: float = float("-inf")


#: The events a change to a transcript makes. Opening and reading a file are not
#: asked for, so the kernel does not queue them: by default watchdog watches
#: those too, and every file the daemon itself read (two or three opens per
#: indexed file) came back as events for its Python threads to parse and drop,
#: taking the interpreter lock from the writer during a first index.
CHANGES: list[type[FileSystemEvent]] = [
    FileCreatedEvent,
    FileModifiedEvent,
    FileMovedEvent,
    FileDeletedEvent,
    FileClosedEvent,
    DirCreatedEvent,
    DirMovedEvent,
    DirDeletedEvent,
]
#: A root that does not exist yet is waited for on an ancestor, often the home
#: directory: only what is created or moved into it matters there, not every
#: write to a shell's history file beside it.
APPEARING: list[type[FileSystemEvent]] = [
    DirCreatedEvent,
    DirMovedEvent,
    FileCreatedEvent,
    FileMovedEvent,
]


class _Handler(FileSystemEventHandler):
    def __init__(self, watcher: Watcher) -> None:
        self.watcher = watcher

    def on_any_event(self, event: FileSystemEvent) -> None:
        if event.event_type in ("opened", "closed_no_write"):
            return
        paths = [event.src_path]
        dest = getattr(event, "dest_path", "")
        if dest:
            paths.append(dest)
        for raw in paths:
            try:
                p = self.watcher.as_watched(raw if isinstance(raw, str) else raw.decode())
                self.watcher.on_event(p, "dir" if event.is_directory else "file", event.event_type)
            except Exception as exc:
                # Raised here, it would end watchdog's thread, and with it every
                # later event: the daemon would go on serving an index that no
                # longer follows the transcripts.
                log.warning("could not handle a file event", extra={"event": "watch_event_error",
                            "path": str(raw), "error": repr(exc)})  # fmt: skip


class Watcher:
    def __init__(self, sink: Sink, *, force_polling: bool = False) -> None:
        self.sink = sink
        self.force_polling = force_polling
        self.native = Observer()
        self.polling: PollingObserver | None = None
        self.roots: dict[Path, RootWatch] = {}
        self._watches: dict[Path, Any] = {}
        #: Real path -> the path the roots name, for each watched directory
        #: reached through a symbolic link (see _relink). Replaced, never
        #: changed in place: watchdog's thread reads it without the lock.
        self._links: dict[str, str] = {}
        self._lock = threading.Lock()
        self._handler = _Handler(self)
        self._started = False
        #: Runs what an event asks of the watches (a root appeared), off
        #: watchdog's dispatch thread (see the module's note on locks).
        self._own = ThreadPoolExecutor(max_workers=1, thread_name_prefix="backscroll-watch")
        #: The kernel dropped events (watchdog logs it, and tells the handler
        #: nothing): the next check returns every natively watched root.
        self.lost_events = threading.Event()
        self._overflow = _OverflowFilter(self.lost_events)

    def start(self) -> None:
        source = logging.getLogger(_INOTIFY_LOGGER)
        # Its warnings reach the filter whatever log_level says; the filter
        # passes on only what the configured level would have let through.
        source.setLevel(logging.WARNING)
        source.addFilter(self._overflow)
        self.native.start()
        self._started = True

    def stop(self) -> None:
        logging.getLogger(_INOTIFY_LOGGER).removeFilter(self._overflow)
        for obs in (self.native, self.polling):
            if obs is not None and obs.is_alive():
                obs.stop()
        for obs in (self.native, self.polling):
            if obs is not None and obs.is_alive():
                obs.join(timeout=5)
        self._own.shutdown(wait=True, cancel_futures=True)

    # ------------------------------------------------------------------ roots

    def set_roots(self, roots: list[tuple[str, Path, bool]]) -> None:
        """Watch exactly these (host, root, recursive) (called at start and on reload)."""
        wanted = {path: (host, recursive) for host, path, recursive in roots}
        with self._lock:
            for path in list(self.roots):
                if path not in wanted:
                    self._unwatch(path)
                    del self.roots[path]
            for path, (host, recursive) in wanted.items():
                if path not in self.roots:
                    self.roots[path] = RootWatch(host, path, "waiting", recursive=recursive)
                    self._arm(self.roots[path])

    def _arm(self, root: RootWatch) -> None:
        """Watch ``root`` if it exists, else its nearest existing ancestor. A
        root this user may not look into (a directory above it denies access)
        is an error for this root alone, not for the daemon."""
        try:
            self._arm_at(root)
        except OSError as exc:
            root.mode = "error"
            log.warning(
                "cannot watch root",
                extra={"event": "watch_error", "host": root.host, "path": str(root.path),
                       "error": str(exc), "fix": UNREACHABLE_FIX},
            )  # fmt: skip

    def _arm_at(self, root: RootWatch) -> None:
        target = root.path
        recursive = root.recursive
        if target.is_file():
            target, recursive = target.parent, False
        elif not target.is_dir():
            # Through a symbolic link whose target is not made yet (~/.claude a
            # link to another disk), the root will appear where the link points:
            # wait there, not beside the link.
            real = Path(os.path.realpath(target))
            ancestor = real.parent
            while not ancestor.is_dir() and ancestor != ancestor.parent:
                ancestor = ancestor.parent
            self._watch(root, ancestor, recursive=False, waiting=True)
            # A directory made on the way to the root between the look above and the
            # new watch sends no event to it (mkdir -p): look again once watching.
            nearer = real if real.is_dir() else None
            probe = real.parent
            while nearer is None and probe != ancestor and probe != probe.parent:
                nearer = probe if probe.is_dir() else None
                probe = probe.parent
            if nearer is not None and root.watching == ancestor:
                self._arm_at(root)
            return
        self._watch(root, target, recursive=recursive, waiting=False)

    def _watch(self, root: RootWatch, target: Path, *, recursive: bool, waiting: bool) -> None:
        if root.watching == target and root.mode != "error":
            return
        self._unwatch(root.path)
        use_polling = self.force_polling or root.mode == "polling"
        # Watched at its real path: inotify does not follow a root that is a
        # symbolic link, and macOS reports real paths whatever was watched.
        where = os.path.realpath(target)
        remote = None if self.force_polling else mounts.remote_fs(where)
        if remote is not None and remote != root.remote:
            log.info(
                "polling a root on a shared file system: changes made from outside "
                "this machine send no file events there",
                extra={"event": "watch_polling_remote_fs", "host": root.host,
                       "path": str(root.path), "fs": remote},
            )  # fmt: skip
        root.remote = remote
        use_polling = use_polling or remote is not None
        try:
            observer = self._poller() if use_polling else self.native
            # watchdog keeps one inotify watch per directory, whose event mask
            # the last schedule sets: a wait on a directory another root watches
            # asks for what that root needs too, or its writes would go unseen.
            narrow = waiting and (use_polling or not self._natively_watched(where))
            events = APPEARING if narrow else CHANGES
            watch = observer.schedule(
                self._handler, where, recursive=recursive, event_filter=events
            )
        except OSError as exc:
            if exc.errno in (errno.ENOSPC, errno.EMFILE) and not use_polling:
                log.warning(
                    "out of inotify watches; polling instead",
                    extra={"event": "watch_fallback_polling", "host": root.host,
                           "path": str(root.path), "error": str(exc), "fix": INOTIFY_HINT},
                )  # fmt: skip
                root.mode = "polling"
                self._watch(root, target, recursive=recursive, waiting=waiting)
                return
            root.mode = "error"
            log.warning("cannot watch root", extra={"event": "watch_error", "host": root.host,
                        "path": str(root.path), "error": str(exc)})  # fmt: skip
            return
        self._watches[root.path] = (watch, use_polling)
        root.watching, root.real, root.ident = target, where, _identity(where)
        self._relink()
        if waiting:
            root.mode = "waiting"
        elif not use_polling:
            root.mode = "inotify"
        else:
            root.mode = "polling"

    def _natively_watched(self, where: str) -> bool:
        """Whether a native watch of another root covers directory ``where``."""
        for path, (watch, polled) in self._watches.items():
            other = self.roots.get(path)
            if polled or other is None or other.real is None or other.mode != "inotify":
                continue
            if where == other.real or (
                watch.is_recursive and is_under(Path(where), Path(other.real))
            ):
                return True
        return False

    def _poller(self) -> PollingObserver:
        if self.polling is None:
            self.polling = PollingObserver(timeout=mounts.POLL_SECONDS)
            self.polling.start()
        return self.polling

    def _unwatch(self, path: Path) -> None:
        entry = self._watches.pop(path, None)
        if entry is None:
            return
        watch, polled = entry
        obs = self.polling if polled else self.native
        # Roots waited for on the same ancestor share one watch (watchdog keeps
        # one per directory and filter): it goes with the last of them.
        shared = entry in self._watches.values()
        try:
            if obs is not None and not shared:
                obs.unschedule(watch)
        except (KeyError, ValueError, OSError):
            pass
        root = self.roots.get(path)
        if root is not None:
            root.watching = root.real = root.ident = None
            self._relink()

    def _relink(self) -> None:
        """The map from real paths to the paths the roots name, from the watches."""
        self._links = {
            r.real: str(r.watching)
            for r in self.roots.values()
            if r.watching is not None and r.real is not None and r.real != str(r.watching)
        }

    # ------------------------------------------------------------------ events

    def as_watched(self, raw: str) -> Path:
        """An event's path, under the symbolic link it was watched through."""
        for real, link in self._links.items():
            if raw == real or raw.startswith(real + os.sep):
                return Path(link + raw[len(real) :])
        return Path(raw)

    def on_event(self, path: Path, kind: str, event_type: str) -> None:
        if event_type not in ("created", "moved"):
            if kind == "file":
                self.sink(path, "file")
            return
        # What was made may be a root waited for: watched first, then reported
        # (so that its scan comes after its watch), on the watcher's own thread.
        with contextlib.suppress(RuntimeError):  # (stopped)
            self._own.submit(self._made, path, kind)

    def _made(self, path: Path, kind: str) -> None:
        try:
            self._appeared(path)
            self.sink(path, kind)
        except Exception as exc:  # (as in _Handler: the next events must still come)
            log.warning("could not handle a file event", extra={"event": "watch_event_error",
                        "path": str(path), "error": repr(exc)})  # fmt: skip

    def _appeared(self, path: Path) -> None:
        """Watch each root waited for that ``path``, just created or moved
        there, is (or leads to). Only a creation or a move can make a root
        appear, so a write to a transcript does not walk every root."""
        with self._lock:
            waiting = [r for r in self.roots.values() if r.mode == "waiting" and r.watching]
            if not waiting:
                return
            # The path as reported (under a link a root is named by) and as it is.
            seen = {path, Path(os.path.realpath(path))}
            for root in waiting:
                watched = root.watching
                if root.mode != "waiting" or watched is None:
                    continue  # (armed meanwhile by this loop)
                if not any(p != watched and is_under(p, watched) for p in seen):
                    continue
                wanted = (root.path, Path(os.path.realpath(root.path)))
                if any(is_under(w, p) for w in wanted for p in seen):
                    # The root, or a directory on the way to it, appeared.
                    self._arm(root)
                    if root.mode != "waiting":
                        log.info("root appeared", extra={"event": "root_appeared",
                                 "host": root.host, "path": str(root.path)})  # fmt: skip
                        self.sink(root.path, "root")

    def check(self) -> list[Path]:
        """Watch again the roots whose watch no longer follows their directory;
        returns them (to be scanned: their files may have changed unseen), and,
        after the kernel dropped file events, every natively watched root.

        - Its directory (or, for a root waited for, the ancestor watched) was
          replaced: moved aside and made anew, deleted and made again, a
          symbolic link on the way pointed elsewhere. Watched where it now is,
          natively as before.
        - Its directory was removed: waited for to appear again, as at start.
        - watchdog's native thread stopped with the directory still there: it
          may have been deleted and made again with the same inode number (ext4
          reuses them), so it is watched natively again. Were the inotify watch
          limit exhausted, that fails at once and the root is polled; stopped
          again within RESTOP_SECONDS (a new subdirectory's watch failing), it
          is polled too. Either way with the hint to raise the limit.
        """
        moved: list[Path] = []
        lost: list[Path] = []
        if self.lost_events.is_set():
            self.lost_events.clear()
            with self._lock:
                lost = [r.path for r in self.roots.values() if r.mode == "inotify"]
            log.warning(
                "the kernel's file event queue overflowed; scanning the roots again",
                extra={"event": "watch_events_lost", "roots": len(lost)},
            )
        with self._lock:  # (the emitters looked at under it: no re-arm in between)
            dead_native = _dead(self.native)
            dead_polled = _dead(self.polling) if self.polling is not None else set()
            for root in list(self.roots.values()):
                entry = self._watches.get(root.path)
                if entry is None or root.path in moved or root.watching is None:
                    continue
                watch, polled = entry
                dead = watch in (dead_polled if polled else dead_native)
                waiting = root.mode == "waiting"
                where, ident = os.path.realpath(root.watching), _identity(root.watching)
                if ident is None:
                    if not waiting:
                        log.info("watched directory removed; waiting for it to appear again",
                                 extra={"event": "root_removed", "host": root.host,
                                        "path": str(root.watching)})  # fmt: skip
                    root.mode = "waiting"
                elif where != root.real or ident != root.ident:
                    log.info("watched directory replaced; watching the new one",
                             extra={"event": "root_replaced", "host": root.host,
                                    "path": str(root.watching), "now": where})  # fmt: skip
                elif not dead:
                    continue
                elif waiting or polled:
                    root.mode = "waiting"  # (watched again as it is: polled if shared)
                elif time.monotonic() - root.restarted > RESTOP_SECONDS:
                    root.restarted = time.monotonic()
                    log.info("native watch stopped; watching again",
                             extra={"event": "watch_restarted", "host": root.host,
                                    "path": str(root.path)})  # fmt: skip
                else:
                    log.warning(
                        "native watch stopped again; polling instead",
                        extra={"event": "watch_fallback_polling", "host": root.host,
                               "path": str(root.path), "fix": INOTIFY_HINT},
                    )  # fmt: skip
                    root.mode = "polling"
                moved += self._rearm([root])
        return moved + [path for path in lost if path not in moved]

    def _rearm(self, stale: list[RootWatch]) -> list[Path]:
        """Watch ``stale`` roots afresh. Every root sharing one of their watches
        (a root and a symbolic link to it, roots waited for on one ancestor) is
        unwatched first: watchdog keeps one watch per directory, and one placed
        again while another root still holds it would stay on the old directory."""
        reals = {r.real for r in stale if r.real is not None}
        group = {r.path: r for r in self.roots.values() if r.real in reals}
        group.update((r.path, r) for r in stale)
        for root in group.values():
            self._unwatch(root.path)
        for root in group.values():
            self._arm(root)
        return list(group)

    def modes(self) -> list[dict[str, str]]:
        with self._lock:
            return [
                {"host": r.host, "path": str(r.path), "mode": r.mode} for r in self.roots.values()
            ]


#: Where watchdog's inotify code logs that the kernel's event queue overflowed.
_INOTIFY_LOGGER = "watchdog.observers.inotify_c"


class _OverflowFilter(logging.Filter):
    """Notes watchdog's "Inotify queue overflowed" warning (a burst of tens of
    thousands of files): events were lost and only a scan finds what changed.
    Lets a record through only at the level the root logger is set to."""

    def __init__(self, flag: threading.Event) -> None:
        super().__init__()
        self.flag = flag

    def filter(self, record: logging.LogRecord) -> bool:
        if "overflow" in str(record.msg).lower():
            self.flag.set()
        return record.levelno >= logging.getLogger().getEffectiveLevel()


def _identity(path: Path | str) -> tuple[int, int] | None:
    """(device, inode) of the directory at ``path`` (links followed), or None."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino)


def _dead(observer: Any) -> set[Any]:
    """The watches of ``observer`` whose emitter thread has ended."""
    for _ in range(3):
        try:  # (watchdog's own set: copied, since its threads may change it)
            emitters = list(observer.emitters)
        except RuntimeError:
            continue
        return {e.watch for e in emitters if not e.is_alive()}
    return set()
