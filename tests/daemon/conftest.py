from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.daemon.harness import DaemonProcess, start_daemon

DaemonFactory = Callable[..., DaemonProcess]


@pytest.fixture
def daemon_factory(tmp_path: Path) -> Iterator[DaemonFactory]:
    """``daemon_factory(env=None, config=None, wait_ready=True)``: a ready daemon in
    ``tmp_path``; every daemon started is stopped (SIGTERM, then SIGKILL) at teardown."""
    started: list[DaemonProcess] = []

    def make(**kwargs: Any) -> DaemonProcess:
        d = start_daemon(tmp_path, **kwargs)
        started.append(d)
        return d

    yield make
    for d in reversed(started):
        d.close()
