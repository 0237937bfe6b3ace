"""The watcher on real directories: roots that appear later, and the fallback
to polling when a native watch dies."""

from __future__ import annotations

import threading
from pathlib import Path

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
