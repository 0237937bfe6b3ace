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
