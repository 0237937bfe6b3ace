"""A start that fails after the daemon's threads started stops them: the process
must end (a service manager restarts it), not linger as a dead daemon."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest

from backscroll.config import Config
from backscroll.daemon import server


def test_an_unforeseen_error_in_the_start_stops_what_started(
    isolated_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = set(threading.enumerate())
    real = server.Daemon.startup

    async def fails_late(self: server.Daemon) -> None:
        await real(self)  # (the lock, the index, the worker and the watcher are up)
        raise RuntimeError("something nobody foresaw")

    monkeypatch.setattr(server.Daemon, "startup", fails_late)
    with pytest.raises(RuntimeError, match="nobody foresaw"):
        asyncio.run(server._main(Config(), None))
    left = [t for t in threading.enumerate() if t not in before and not t.daemon and t.is_alive()]
    assert left == [], [t.name for t in left]


def test_a_stop_that_fails_after_a_failed_start_leaves_the_first_error_to_fix(
    isolated_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Half started (the indexer's thread not yet running), the stop can fail
    too; the error raised must still be the start's, not the stop's."""
    real = server.Daemon.startup

    async def fails_late(self: server.Daemon) -> None:
        await real(self)
        raise RuntimeError("the first error")

    shutdown = server.Daemon.shutdown

    async def stop_fails(self: server.Daemon) -> None:
        await shutdown(self)  # (what started is stopped; then the stop's own error)
        raise RuntimeError("cannot join thread before it is started")

    monkeypatch.setattr(server.Daemon, "startup", fails_late)
    monkeypatch.setattr(server.Daemon, "shutdown", stop_fails)
    with pytest.raises(RuntimeError, match="the first error"):
        asyncio.run(server._main(Config(), None))
