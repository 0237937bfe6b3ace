"""The watcher on real directories: roots that appear later, and the fallback
to polling when a native watch dies."""

from __future__ import annotations

import threading
from pathlib import Path

from watchdog.events import FileSystemEvent

from backscroll.daemon.watcher import Watcher


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


def test_a_root_created_later_is_watched_and_reported(tmp_path: Path) -> None:
    sink = Sink()
    watcher = Watcher(sink)
    watcher.start()
    try:
        root = tmp_path / "later" / "sessions"
        watcher.set_roots([("codex", root, True)])
        assert watcher.modes()[0]["mode"] == "waiting"
        root.mkdir(parents=True)
        assert sink.wait_for(root), "the new root was not reported"
        assert watcher.modes()[0]["mode"] == "inotify"
        transcript = root / "a.jsonl"
        transcript.write_text("{}\n")
        assert sink.wait_for(transcript)
    finally:
        watcher.stop()


def test_a_root_moved_into_place_is_watched_and_reported(tmp_path: Path) -> None:
    # (A restore from a backup, or a host that writes its directory elsewhere first.)
    sink = Sink()
    watcher = Watcher(sink)
    watcher.start()
    try:
        root = tmp_path / "later" / "sessions"
        watcher.set_roots([("codex", root, True)])
        assert watcher.modes()[0]["mode"] == "waiting"
        staged = tmp_path / "staging"
        (staged / "sessions").mkdir(parents=True)
        staged.rename(tmp_path / "later")
        assert sink.wait_for(root), "the root moved into place was not reported"
        assert watcher.modes()[0]["mode"] == "inotify"
        transcript = root / "a.jsonl"
        transcript.write_text("{}\n")
        assert sink.wait_for(transcript)
    finally:
        watcher.stop()


def test_a_root_whose_native_watch_died_falls_back_to_polling(tmp_path: Path) -> None:
    sink = Sink()
    watcher = Watcher(sink)
    watcher.start()
    try:
        root = tmp_path / "projects"
        root.mkdir()
        watcher.set_roots([("claude-code", root, True)])
        assert watcher.check() == []  # all alive: nothing to do
        for emitter in list(watcher.native.emitters):  # what a failed add_watch does
            emitter.stop()
            emitter.join(5)
        assert watcher.check() == [root]
        assert watcher.modes()[0]["mode"] == "polling"
        transcript = root / "b.jsonl"
        transcript.write_text("{}\n")
        assert sink.wait_for(transcript), "the polling watch did not see the new file"
    finally:
        watcher.stop()


def _raw_events(watcher: Watcher) -> list[tuple[str, str]]:
    """(type, path) of every event watchdog hands the watcher, before its own
    filtering, recorded from now on."""
    seen: list[tuple[str, str]] = []
    handler = watcher._handler
    forward = handler.on_any_event

    def record(event: FileSystemEvent) -> None:
        seen.append((event.event_type, str(event.src_path)))
        forward(event)

    handler.on_any_event = record  # type: ignore[method-assign]
    return seen


def test_reading_a_watched_transcript_queues_no_event(tmp_path: Path) -> None:
    # Indexing opens each file two or three times; those opens must not come
    # back to the daemon as events to parse and drop.
    root = tmp_path / "projects"
    root.mkdir()
    transcript = root / "a.jsonl"
    transcript.write_text('{"type": "user"}\n')
    sink = Sink()
    watcher = Watcher(sink)
    raw = _raw_events(watcher)
    watcher.start()
    try:
        watcher.set_roots([("claude-code", root, True)])
        for _ in range(20):
            transcript.read_bytes()
        marker = root / "b.jsonl"
        marker.write_text("{}\n")
        assert sink.wait_for(marker), "the new transcript was not reported"
        # inotify reports in order: whatever the reads made has arrived by now.
        assert [kind for kind, _ in raw if kind in ("opened", "closed_no_write")] == []
        with transcript.open("a") as fh:
            fh.write('{"type": "assistant"}\n')
        assert sink.wait_for(transcript), "an append was not reported"
    finally:
        watcher.stop()


def test_a_root_waited_for_on_the_home_directory_ignores_writes_beside_it(
    tmp_path: Path,
) -> None:
    home = tmp_path / "user"
    home.mkdir()
    history = home / ".zsh_history"
    history.write_text(": 1:0;ls\n")
    sink = Sink()
    watcher = Watcher(sink)
    raw = _raw_events(watcher)
    watcher.start()
    try:
        root = home / ".gemini" / "tmp"
        watcher.set_roots([("gemini-cli", root, True)])
        assert watcher.modes()[0]["mode"] == "waiting"
        for n in range(10):
            with history.open("a") as fh:
                fh.write(f": {n}:0;ls\n")
        other = home / "projects"
        other.mkdir()
        assert sink.wait_for(other), "a directory made in the home directory was not reported"
        assert [kind for kind, path in raw if path == str(history)] == []
        root.mkdir(parents=True)
        assert sink.wait_for(root), "the root was not reported when it appeared"
        assert watcher.modes()[0]["mode"] == "inotify"
    finally:
        watcher.stop()
