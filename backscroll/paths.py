"""Default locations (DESIGN.md "Paths"); every one is overridable."""

from __future__ import annotations

import os
import sys
from pathlib import Path

#: Unix socket paths must fit in sun_path (104 bytes on macOS, 108 on Linux).
SUN_PATH_MAX = 104


def _env_path(name: str) -> Path | None:
    value = os.environ.get(name, "").strip()
    return Path(os.path.expanduser(value)) if value else None


def home() -> Path:
    return Path(os.path.expanduser("~"))


def config_path() -> Path:
    """``$BACKSCROLL_CONFIG``, else ``$XDG_CONFIG_HOME/backscroll/config.yaml``."""
    explicit = _env_path("BACKSCROLL_CONFIG")
    if explicit:
        return explicit
    base = _env_path("XDG_CONFIG_HOME") or home() / ".config"
    return base / "backscroll" / "config.yaml"


def data_dir() -> Path:
    """``$BACKSCROLL_HOME``, else ``$XDG_DATA_HOME/backscroll`` (macOS: Application Support)."""
    explicit = _env_path("BACKSCROLL_HOME")
    if explicit:
        return explicit
    if sys.platform == "darwin":
        return home() / "Library" / "Application Support" / "backscroll"
    base = _env_path("XDG_DATA_HOME") or home() / ".local" / "share"
    return base / "backscroll"


def socket_path() -> Path:
    """``$BACKSCROLL_SOCKET``, else ``$XDG_RUNTIME_DIR/backscroll/backscroll.sock``.

    Without a runtime dir (macOS, or a bare Linux session) the per-user temp
    directory is used, in a ``backscroll-<uid>`` subdirectory.
    """
    explicit = _env_path("BACKSCROLL_SOCKET")
    if explicit:
        return explicit
    runtime = _env_path("XDG_RUNTIME_DIR")
    if runtime and sys.platform != "darwin":
        return runtime / "backscroll" / "backscroll.sock"
    import tempfile

    uid = os.getuid() if hasattr(os, "getuid") else 0
    return Path(tempfile.gettempdir()) / f"backscroll-{uid}" / "backscroll.sock"


def db_path(data: Path | None = None) -> Path:
    return (data or data_dir()) / "index.db"
