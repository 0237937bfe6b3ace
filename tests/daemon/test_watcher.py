"""The watcher on real directories: roots that appear later, the fallback to
polling when a native watch dies, and the events it asks the kernel for."""

from __future__ import annotations

import shutil
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from watchdog.events import FileSystemEvent

from backscroll.daemon import watcher as watcher_mod
from backscroll.daemon.watcher import INOTIFY_HINT, Watcher
from backscroll.paths import is_under
from tests.conftest import SharedMount


class Sink:
    def __init__(self) -> None:
        self.seen: list[tuple[Path, str]] = []
        self.cond = threading.Condition()

    def __call__(self, path: Path, kind: str) -> None:
        with self.cond:
            self.seen.append((path, kind))
            self.cond.notify_all()

    def wait_for(self, path: Path, timeout: float = 10.0) -> bool:
        with self.cond:
            return self.cond.wait_for(lambda: any(p == path for p, _ in self.seen), timeout)


class Watching:
    """A started watcher on some roots, what it reported, and every event
    watchdog handed it before its own filtering (``raw``: type, path)."""

    def __init__(self, *, force_polling: bool = False) -> None:
        self.sink = Sink()
        self.watcher = Watcher(self.sink, force_polling=force_polling)
        self.raw: list[tuple[str, str]] = []
        handler = self.watcher._handler
        forward = handler.on_any_event

        def record(event: FileSystemEvent) -> None:
            self.raw.append((event.event_type, str(event.src_path)))
            forward(event)

        handler.on_any_event = record  # type: ignore[method-assign]

    def mode(self) -> str:
        return self.watcher.modes()[0]["mode"]


@contextmanager
def watching(*roots: tuple[str, Path], force_polling: bool = False) -> Iterator[Watching]:
    """A watcher on these (host, root) pairs, each watched recursively."""
    w = Watching(force_polling=force_polling)
    w.watcher.start()
    try:
        w.watcher.set_roots([(host, root, True) for host, root in roots])
        yield w
    finally:
        w.watcher.stop()


def _made(tmp_path: Path, root: Path) -> None:
    root.mkdir(parents=True)


def _moved_into_place(tmp_path: Path, root: Path) -> None:
    # (A restore from a backup, or a host that writes its directory elsewhere first.)
    staged = tmp_path / "staging"
    (staged / root.name).mkdir(parents=True)
    staged.rename(root.parent)


@pytest.mark.parametrize("appear", [_made, _moved_into_place], ids=["made", "moved"])
def test_a_root_that_appears_later_is_watched_and_reported(
    tmp_path: Path, appear: Callable[[Path, Path], None]
) -> None:
    root = tmp_path / "later" / "sessions"
    with watching(("codex", root)) as w:
        assert w.mode() == "waiting"
        appear(tmp_path, root)
        assert w.sink.wait_for(root), "the new root was not reported"
        assert w.mode() == "inotify"
        transcript = root / "a.jsonl"
        transcript.write_text("{}\n")
        assert w.sink.wait_for(transcript)


def _stop_native_watches(w: Watching) -> None:
    for emitter in list(w.watcher.native.emitters):  # what a failed add_watch does
        emitter.stop()
        emitter.join(5)


def test_a_root_whose_native_watch_died_twice_falls_back_to_polling(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Once, it is watched natively again (the directory may have been deleted
    and made again with the same inode number); twice, the inotify limit is
    what stops it, and it is polled with the hint to raise the limit."""
    root = tmp_path / "projects"
    root.mkdir()
    with watching(("claude-code", root)) as w:
        assert w.watcher.check() == []  # all alive: nothing to do
        _stop_native_watches(w)
        assert w.watcher.check() == [root]
        assert w.mode() == "inotify"
        assert INOTIFY_HINT not in [getattr(r, "fix", "") for r in caplog.records]
        _stop_native_watches(w)
        assert w.watcher.check() == [root]
        assert w.mode() == "polling"
        assert [getattr(r, "fix", "") for r in caplog.records][-1] == INOTIFY_HINT
        transcript = root / "b.jsonl"
        transcript.write_text("{}\n")
        assert w.sink.wait_for(transcript), "the polling watch did not see the new file"


def test_reading_a_watched_transcript_queues_no_event(tmp_path: Path) -> None:
    # Indexing opens each file two or three times; those opens must not come
    # back to the daemon as events to parse and drop.
    root = tmp_path / "projects"
    root.mkdir()
    transcript = root / "a.jsonl"
    transcript.write_text('{"type": "user"}\n')
    with watching(("claude-code", root)) as w:
        for _ in range(20):
            transcript.read_bytes()
        marker = root / "b.jsonl"
        marker.write_text("{}\n")
        assert w.sink.wait_for(marker), "the new transcript was not reported"
        # inotify reports in order: whatever the reads made has arrived by now.
        assert [kind for kind, _ in w.raw if kind in ("opened", "closed_no_write")] == []
        with transcript.open("a") as fh:
            fh.write('{"type": "assistant"}\n')
        assert w.sink.wait_for(transcript), "an append was not reported"


def test_a_root_waited_for_on_the_home_directory_ignores_writes_beside_it(
    tmp_path: Path,
) -> None:
    home = tmp_path / "user"
    home.mkdir()
    history = home / ".zsh_history"
    history.write_text(": 1:0;ls\n")
    root = home / ".gemini" / "tmp"
    with watching(("gemini-cli", root)) as w:
        assert w.mode() == "waiting"
        for n in range(10):
            with history.open("a") as fh:
                fh.write(f": {n}:0;ls\n")
        other = home / "projects"
        other.mkdir()
        assert w.sink.wait_for(other), "a directory made in the home directory was not reported"
        assert [kind for kind, path in w.raw if path == str(history)] == []
        root.mkdir(parents=True)
        assert w.sink.wait_for(root), "the root was not reported when it appeared"
        assert w.mode() == "inotify"


def test_roots_waited_for_on_one_ancestor_are_each_reported_when_they_appear(
    tmp_path: Path,
) -> None:
    # (Two hosts not installed yet wait on the home directory: the first one
    # installed must not take the other's watch away with its own.)
    home = tmp_path / "user"
    home.mkdir()
    first, second = home / ".gemini" / "tmp", home / ".codex" / "sessions"
    with watching(("gemini-cli", first), ("codex", second)) as w:
        first.mkdir(parents=True)
        assert w.sink.wait_for(first), "the first root was not reported"
        second.mkdir(parents=True)
        assert w.sink.wait_for(second), "the second root was not reported"
        assert [m["mode"] for m in w.watcher.modes()] == ["inotify", "inotify"]


def test_a_root_deleted_while_watched_is_waited_for_again_not_polled(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    codex = tmp_path / "user" / ".codex"
    root = codex / "sessions"
    root.mkdir(parents=True)
    with watching(("codex", root)) as w:
        emitters = list(w.watcher.native.emitters)
        shutil.rmtree(codex)  # the host uninstalled
        for emitter in emitters:  # watchdog's thread ends with its directory
            emitter.join(10)
        assert w.watcher.check() == [root]
        assert w.mode() == "waiting"
        assert "polling" not in caplog.text
        root.mkdir(parents=True)  # and installed again
        assert w.sink.wait_for(root), "the root was not reported when it came back"
        assert w.mode() == "inotify"


@pytest.mark.parametrize(
    ("path", "root", "under"),
    [
        ("/home/u/.codex/sessions/a.jsonl", "/home/u/.codex", True),
        ("/home/u/.codex", "/home/u/.codex", True),
        ("/home/u/.codex-old/a.jsonl", "/home/u/.codex", False),  # a sibling sharing a prefix
        ("/home/u", "/home/u/.codex", False),
        ("/home/u/a", "/", True),
        ("/home/u/a", "/home/u/", True),
    ],
)
def test_is_under_is_lexical_containment(path: str, root: str, under: bool) -> None:
    assert is_under(Path(path), Path(root)) is under
    assert Path(path).is_relative_to(root) is under  # what it stands in for


def test_an_event_that_fails_to_be_handled_does_not_stop_the_next_ones(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    root = tmp_path / "projects"
    root.mkdir()
    poisoned = root / "poisoned.jsonl"
    with watching(("claude-code", root)) as w:
        forward = w.watcher.sink

        def sink(path: Path, kind: str) -> None:
            if path == poisoned:
                raise PermissionError(13, "Permission denied", str(path))
            forward(path, kind)

        w.watcher.sink = sink
        poisoned.write_text("{}\n")
        later = root / "later.jsonl"
        later.write_text("{}\n")
        assert w.sink.wait_for(later), "an event after the failed one was not reported"
    assert "could not handle a file event" in caplog.text


def test_forced_polling_reports_a_root_that_appears_and_an_append(tmp_path: Path) -> None:
    # BACKSCROLL_POLLING=1: a network file system that sends no inotify events.
    root = tmp_path / "later" / "sessions"
    with watching(("codex", root), force_polling=True) as w:
        assert w.mode() == "waiting"
        root.mkdir(parents=True)
        assert w.sink.wait_for(root), "the new root was not reported"
        assert w.mode() == "polling"
        transcript = root / "a.jsonl"
        transcript.write_text("{}\n")
        assert w.sink.wait_for(transcript), "the new transcript was not reported"
        with w.sink.cond:
            w.sink.seen.clear()
        with transcript.open("a") as fh:
            fh.write('{"more": 1}\n')
        assert w.sink.wait_for(transcript), "an append was not reported"


def _root_is_a_link(tmp_path: Path) -> Path:
    # (~/.claude/projects moved to another disk and linked back.)
    moved = tmp_path / "disk" / "claude-projects"
    moved.mkdir(parents=True)
    root = tmp_path / "user" / ".claude" / "projects"
    root.parent.mkdir(parents=True)
    root.symlink_to(moved)
    return root


def _home_is_a_link(tmp_path: Path) -> Path:
    # (The home directory itself reached through a link, as /tmp is on macOS.)
    real = tmp_path / "real-home"
    (real / ".claude" / "projects").mkdir(parents=True)
    linked = tmp_path / "linked-home"
    linked.symlink_to(real)
    return linked / ".claude" / "projects"


@pytest.mark.parametrize("layout", [_root_is_a_link, _home_is_a_link], ids=["root", "home"])
def test_a_root_reached_through_a_symbolic_link_reports_changes_under_its_own_path(
    tmp_path: Path, layout: Callable[[Path], Path]
) -> None:
    root = layout(tmp_path)
    with watching(("claude-code", root)) as w:
        project = root / "-home-u-app"
        project.mkdir()
        transcript = project / "a.jsonl"
        assert w.sink.wait_for(project), "a new project directory was not reported"
        transcript.write_text("{}\n")
        assert w.sink.wait_for(transcript), "a new transcript was not reported"
        assert all(path.is_relative_to(root) for path, _ in w.sink.seen), w.sink.seen


def test_a_root_on_a_shared_file_system_is_polled_and_its_changes_seen(
    tmp_path: Path, shared_mount: SharedMount
) -> None:
    """inotify hears nothing of what another machine writes to a network share
    or what Windows writes under WSL's /mnt/c: such a root is polled from the
    start, while a root on a local file system keeps its native watch."""
    share = (tmp_path / "share").resolve()
    local = (tmp_path / "local").resolve()
    (share / "Cursor").mkdir(parents=True)
    (local / "projects").mkdir(parents=True)
    shared_mount(share, "9p")
    with watching(("cursor", share / "Cursor"), ("claude-code", local / "projects")) as w:
        modes = {m["host"]: m["mode"] for m in w.watcher.modes()}
        assert modes == {"cursor": "polling", "claude-code": "inotify"}
        db = share / "Cursor" / "state.vscdb"
        db.write_bytes(b"x")
        assert w.sink.wait_for(db), "the polled root's new file was not reported"


def _until(check: Callable[[], object], timeout: float = 15.0) -> object:
    """``check()`` once it returns something true (polled: a polling watch
    notices a change only at its next look, every two seconds)."""
    import time

    deadline = time.monotonic() + timeout
    wake = threading.Event()
    while True:
        found = check()
        if found or time.monotonic() > deadline:
            return found
        wake.wait(0.05)


def test_a_polled_root_that_is_deleted_and_made_again_is_watched_again(tmp_path: Path) -> None:
    """watchdog's polling watch stops for good when its directory goes; the
    root is then waited for, and its new files are seen once it is back."""
    root = tmp_path / "share" / "sessions"
    root.mkdir(parents=True)
    with watching(("codex", root), force_polling=True) as w:
        assert w.mode() == "polling"
        shutil.rmtree(root)
        assert _until(w.watcher.check) == [root]
        assert w.mode() == "waiting"
        root.mkdir()
        assert w.sink.wait_for(root), "the root made again was not reported"
        assert w.mode() == "polling"
        transcript = root / "c.jsonl"
        transcript.write_text("{}\n")
        assert w.sink.wait_for(transcript), "the polled root's new file was not reported"


def test_a_root_on_a_shared_file_system_is_reported_as_polled_once(
    tmp_path: Path, shared_mount: SharedMount, caplog: pytest.LogCaptureFixture
) -> None:
    """Waited for through directories made one by one, a root on a share logs
    why it is polled once, not at every step."""
    share = (tmp_path / "share").resolve()
    share.mkdir()
    shared_mount(share, "nfs4")
    root = share / "a" / "b" / "sessions"
    caplog.set_level("INFO", logger="backscroll.watcher")
    with watching(("codex", root)) as w:
        for step in (share / "a", share / "a" / "b", root):
            step.mkdir()
            assert w.sink.wait_for(step), f"{step} was not reported"
        assert w.mode() == "polling"
    said = [r for r in caplog.records if getattr(r, "event", "") == "watch_polling_remote_fs"]
    assert len(said) == 1


def test_watchdogs_thread_never_waits_for_the_watchers_lock(tmp_path: Path) -> None:
    """watchdog calls the handler holding its observer's lock, and placing a
    watch (done under the watcher's lock) takes that lock: a handler waiting
    for the watcher's lock could deadlock the two. Events must flow while
    another thread holds it."""
    root = tmp_path / "projects"
    root.mkdir()
    with watching(("claude-code", root)) as w:
        with w.watcher._lock:
            made = root / "new.jsonl"  # a creation: what may make a root appear
            made.write_text("{}\n")
            assert w.sink.wait_for(made), "an event waited for the watcher's lock"
        later = root / "-home-u-app"
        later.mkdir()
        assert w.sink.wait_for(later)


def _moved_aside(root: Path) -> None:
    # (A host's data directory restored from a backup, or wiped and made anew.)
    root.rename(root.with_name(root.name + ".old"))
    root.mkdir()


def _deleted_and_made_again(root: Path) -> None:
    shutil.rmtree(root)
    root.mkdir()


@pytest.mark.parametrize(
    "replace", [_moved_aside, _deleted_and_made_again], ids=["moved-aside", "deleted"]
)
def test_a_root_replaced_under_its_watch_is_watched_again_natively(
    tmp_path: Path, replace: Callable[[Path], None], caplog: pytest.LogCaptureFixture
) -> None:
    root = tmp_path / "user" / ".codex" / "sessions"
    root.mkdir(parents=True)
    with watching(("codex", root)) as w:
        emitters = list(w.watcher.native.emitters)
        replace(root)
        if replace is _deleted_and_made_again:
            # The new directory may have the old inode number: what tells is
            # the old watch ending with its directory.
            for emitter in emitters:
                emitter.join(10)
        assert w.watcher.check() == [root]
        assert w.mode() == "inotify"
        assert "inotify watches" not in caplog.text and "polling" not in caplog.text
        transcript = root / "a.jsonl"
        transcript.write_text("{}\n")
        assert w.sink.wait_for(transcript), "a file in the new directory was not reported"
        assert w.watcher.check() == []  # watched where it is now: nothing more to do


def test_a_root_whose_link_is_pointed_elsewhere_is_watched_at_the_new_target(
    tmp_path: Path,
) -> None:
    old, new = tmp_path / "disk1" / "projects", tmp_path / "disk2" / "projects"
    old.mkdir(parents=True)
    new.mkdir(parents=True)
    root = tmp_path / "user" / ".claude" / "projects"
    root.parent.mkdir(parents=True)
    root.symlink_to(old)
    with watching(("claude-code", root)) as w:
        swap = root.with_name("projects.tmp")  # `ln -sfn`: a new link renamed over the old
        swap.symlink_to(new)
        swap.rename(root)
        assert w.watcher.check() == [root]
        transcript = new / "b.jsonl"
        transcript.write_text("{}\n")
        assert w.sink.wait_for(root / "b.jsonl"), w.sink.seen
        assert w.mode() == "inotify"


def test_a_root_and_a_link_to_it_are_both_watched_again_when_it_is_replaced(
    tmp_path: Path,
) -> None:
    # (Two hosts' roots on one directory share watchdog's one watch on it.)
    real = tmp_path / "shared" / "sessions"
    real.mkdir(parents=True)
    link = tmp_path / "user" / "sessions"
    link.parent.mkdir()
    link.symlink_to(real)
    with watching(("codex", real), ("kimi", link)) as w:
        _moved_aside(real)
        assert sorted(w.watcher.check()) == sorted([real, link])
        assert [m["mode"] for m in w.watcher.modes()] == ["inotify", "inotify"]
        (real / "c.jsonl").write_text("{}\n")
        # (Reported under one of the two names: watchdog has one watch for both.)
        with w.sink.cond:
            assert w.sink.cond.wait_for(
                lambda: {p.name for p, _ in w.sink.seen} & {"c.jsonl"}, 10
            ), w.sink.seen


def test_a_native_watch_stopped_again_long_after_is_watched_natively_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # (Deleted and made again twice, days apart: not the inotify limit.)
    monkeypatch.setattr(watcher_mod, "RESTOP_SECONDS", 0.0)
    root = tmp_path / "projects"
    root.mkdir()
    with watching(("claude-code", root)) as w:
        for _ in range(2):
            _stop_native_watches(w)
            assert w.watcher.check() == [root]
            assert w.mode() == "inotify"


@pytest.mark.parametrize("restored", [False, True], ids=["made-anew", "restored-with-root"])
def test_a_root_waited_for_whose_ancestor_is_replaced_is_watched_when_it_is_there(
    tmp_path: Path, restored: bool
) -> None:
    codex = tmp_path / "user" / ".codex"
    codex.mkdir(parents=True)
    root = codex / "sessions"
    with watching(("codex", root)) as w:
        assert w.mode() == "waiting"  # on ~/.codex
        emitters = list(w.watcher.native.emitters)
        if restored:  # deleted, then restored from a backup that holds the root
            shutil.rmtree(codex)
            for emitter in emitters:
                emitter.join(10)
            root.mkdir(parents=True)
        else:  # moved aside and made anew: the watch followed the old directory
            codex.rename(codex.with_name(".codex.bak"))
            root.mkdir(parents=True)
        assert w.watcher.check() == [root]
        assert w.mode() == "inotify"
        transcript = root / "a.jsonl"
        transcript.write_text("{}\n")
        assert w.sink.wait_for(transcript), "a file in the root was not reported"


def test_a_root_that_links_to_a_directory_not_made_yet_is_watched_once_it_is(
    tmp_path: Path,
) -> None:
    """~/.claude a link to a directory on another disk that does not exist yet:
    the root is waited for where its target will be made, not beside the link."""
    target = tmp_path / "disk" / "claude"
    home = tmp_path / "user"
    home.mkdir()
    (home / ".claude").symlink_to(target)
    root = home / ".claude" / "projects"
    with watching(("claude-code", root)) as w:
        assert w.mode() == "waiting"
        (target / "projects" / "-p").mkdir(parents=True)
        assert w.sink.wait_for(root), w.sink.seen  # (watched first, then reported)
        assert w.mode() == "inotify"
        (target / "projects" / "-p" / "a.jsonl").write_text("{}\n")
        assert w.sink.wait_for(root / "-p" / "a.jsonl"), w.sink.seen


def test_a_linked_root_whose_target_is_deleted_is_watched_again_when_it_is_made_again(
    tmp_path: Path,
) -> None:
    target = tmp_path / "disk" / "projects"
    target.mkdir(parents=True)
    root = tmp_path / "user" / ".claude" / "projects"
    root.parent.mkdir(parents=True)
    root.symlink_to(target)
    with watching(("claude-code", root)) as w:
        assert w.mode() == "inotify"
        shutil.rmtree(target)
        w.watcher.check()  # (the daemon's look every minute)
        assert w.mode() == "waiting"
        w.sink.seen.clear()
        target.mkdir()
        assert w.sink.wait_for(root), w.sink.seen
        (target / "a.jsonl").write_text("{}\n")
        assert w.sink.wait_for(root / "a.jsonl"), w.sink.seen
        assert w.mode() == "inotify"


def test_events_lost_to_an_inotify_queue_overflow_are_caught_up_at_the_next_check(
    tmp_path: Path,
) -> None:
    """watchdog rebuilds its watches after the kernel's queue overflows and tells
    the handler nothing: what changed meanwhile waited for the periodic rescan
    (10 minutes). The next check (every minute) now returns the roots to scan."""
    import logging

    root = tmp_path / "projects"
    root.mkdir()
    with watching(("claude-code", root)) as w:
        assert w.watcher.check() == []
        # What watchdog logs when the kernel drops events (a burst of ~30,000 files).
        logging.getLogger("watchdog.observers.inotify_c").warning(
            "Inotify queue overflowed; filesystem events were lost"
        )
        assert w.watcher.check() == [root]
        assert w.watcher.check() == []  # (once)


def test_an_overflow_is_caught_up_whatever_the_log_level(tmp_path: Path) -> None:
    """With log_level: error the root logger drops warnings before any handler:
    the overflow must still reach the watcher."""
    import logging

    root = tmp_path / "projects"
    root.mkdir()
    top = logging.getLogger()
    before = top.level
    top.setLevel(logging.ERROR)
    try:
        with watching(("claude-code", root)) as w:
            logging.getLogger("watchdog.observers.inotify_c").warning(
                "Inotify queue overflowed; filesystem events were lost"
            )
            assert w.watcher.check() == [root]
    finally:
        top.setLevel(before)


def test_a_missing_root_inside_a_linked_root_is_watched_once_made(tmp_path: Path) -> None:
    """~/.hermes a link to a directory; ~/.hermes/sessions (another host's root)
    not made yet: made through the link's target, it is watched and reported."""
    real = tmp_path / "disk" / "hermes"
    real.mkdir(parents=True)
    home = tmp_path / "user"
    home.mkdir()
    (home / ".hermes").symlink_to(real)
    outer, inner = home / ".hermes", home / ".hermes" / "sessions"
    with watching(("hermes", outer), ("hermes-logs", inner)) as w:
        (real / "sessions").mkdir()
        assert w.sink.wait_for(inner), w.sink.seen
        modes = {m["host"]: m["mode"] for m in w.watcher.modes()}
        assert modes["hermes-logs"] == "inotify", modes


@pytest.mark.parametrize("waited_first", [False, True])
def test_a_root_waited_for_inside_another_root_leaves_that_roots_writes_reported(
    tmp_path: Path, waited_first: bool
) -> None:
    """OpenCode's database sits in ``~/.local/share/opencode`` (a root), beside the
    older ``storage/`` (another root, often missing and so waited for there).
    watchdog keeps one inotify watch per directory: the wait's narrower event
    mask replaced the root's, and writes to the database were never reported."""
    root = tmp_path / "opencode"
    root.mkdir()
    db = root / "opencode.db"
    db.write_bytes(b"x")
    waited = root / "storage"
    roots = [("opencode", root), ("opencode", waited)]
    with watching(*(roots[::-1] if waited_first else roots)) as w:
        assert sorted(m["mode"] for m in w.watcher.modes()) == ["inotify", "waiting"]
        with db.open("ab") as fh:
            fh.write(b"a new row")
        assert w.sink.wait_for(db), "a write in the root was not reported"
        waited.mkdir()
        assert w.sink.wait_for(waited), "the root waited for was not reported"
