from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.daemon.harness import HOST_ENV, DaemonProcess, start_daemon

#: ``daemon_factory(env=None, config=None, wait_ready=True)`` (see the fixture).
DaemonFactory = Callable[..., DaemonProcess]


@pytest.fixture(autouse=True)
def isolated_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Every test gets its own HOME and BACKSCROLL_HOME: nothing touches the real ones."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("BACKSCROLL_HOME", str(tmp_path / "data"))
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path / "run"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.setenv("XDG_DATA_HOME", str(home / ".local" / "share"))
    for var in ("BACKSCROLL_CONFIG", "BACKSCROLL_SOCKET", *HOST_ENV):
        monkeypatch.delenv(var, raising=False)
    yield home


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


#: ``shared_mount(point, kind)``: this process sees ``point`` mounted as ``kind``.
SharedMount = Callable[[Path, str], None]


@pytest.fixture
def shared_mount(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> SharedMount:
    """A mount table of its own for this test (``/`` on ext4, plus ``point`` on
    file system ``kind``), read by backscroll.mounts instead of the machine's."""
    from backscroll import mounts

    def mount(point: Path, kind: str) -> None:
        table = tmp_path / "mountinfo"
        table.write_text(
            "22 1 8:1 / / rw - ext4 /dev/sda1 rw\n"
            f"41 22 0:40 / {point.resolve()} rw,noatime - {kind} share rw\n"
        )
        monkeypatch.setattr(mounts, "MOUNTINFO", str(table))

    return mount
