"""Where the CLI and the daemon look for the socket when XDG_RUNTIME_DIR is not set."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from backscroll import paths

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux layout")


@pytest.fixture
def login_runtime(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A stand-in for /run/user, without XDG_RUNTIME_DIR or BACKSCROLL_SOCKET."""
    monkeypatch.setattr(paths, "LOGIN_RUNTIME", str(tmp_path / "run-user"))
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    monkeypatch.delenv("BACKSCROLL_SOCKET", raising=False)
    return tmp_path / "run-user"


def test_without_xdg_runtime_dir_the_users_login_runtime_dir_is_where_the_service_listens(
    login_runtime: Path,
) -> None:
    """``su`` or ``sudo -u`` leave XDG_RUNTIME_DIR unset, but the systemd user
    service is given /run/user/<uid>: the CLI looked in the temp directory and
    took a running daemon for none."""
    mine = login_runtime / str(os.getuid())
    mine.mkdir(parents=True, mode=0o700)
    assert paths.socket_path_text() == str(mine / "backscroll" / "backscroll.sock")


def test_a_login_runtime_dir_open_to_others_or_missing_is_not_used(login_runtime: Path) -> None:
    mine = login_runtime / str(os.getuid())
    assert "backscroll-" in paths.socket_path_text()  # (none: the temp directory)
    mine.mkdir(parents=True, mode=0o755)
    mine.chmod(0o755)
    assert "backscroll-" in paths.socket_path_text()
