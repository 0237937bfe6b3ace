"""Default locations (DESIGN.md "Paths"); every one is overridable.

Each location is computed as text first (``*_text``), which the CLI's query
path uses so that it never imports pathlib; the ``Path`` functions wrap them.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False  # typing and pathlib are not imported on the CLI's hot path
if TYPE_CHECKING:
    from collections.abc import Iterable
    from pathlib import Path

#: Unix socket paths must fit in sun_path (104 bytes on macOS, 108 on Linux).
SUN_PATH_MAX = 104

#: The fix for a root behind a directory this user may not enter.
UNREACHABLE_FIX = (
    "give your user read and search access to it, or remove it from the host's roots / extra_roots"
)


def is_under(path: Path | str, root: Path | str) -> bool:
    """``path`` is ``root`` or inside it, lexically (as ``Path.relative_to``
    decides, at a fraction of its cost: the daemon asks for every event)."""
    p, r = str(path), str(root)
    return p == r or p.startswith(r if r.endswith(os.sep) else r + os.sep)


def foreign_owner(path: Path) -> int | None:
    """The uid owning ``path`` (or its nearest existing parent) when it is not
    this user's; None when it is, or when nothing can be said."""
    for p in (path, *path.parents):
        try:
            uid = os.lstat(p).st_uid
        except OSError:
            continue
        return uid if uid != os.getuid() else None
    return None


def take_back(path: Path, target: Path | str) -> str | None:
    """When ``path`` belongs to another user: whose it is and the ``chown`` of
    ``target`` that makes it this user's again; None when it is this user's."""
    owner = foreign_owner(path)
    if owner is None:
        return None
    return (
        f"it belongs to uid {owner} (made by `sudo backscroll ...`?): make it yours "
        f"(`sudo chown -R $(id -u) {target}`)"
    )


def permission_problem(exc: OSError) -> str:
    """A permission error on one of backscroll's own files, naming it and the fix."""
    from pathlib import Path  # (an error path: the hot path never imports pathlib)

    name = str(exc.filename) if exc.filename else "one of backscroll's files"
    # The directory holding a file (the index, its -wal) is what to take back.
    target = name if not exc.filename or os.path.isdir(name) else os.path.dirname(name)
    whose = (take_back(Path(name), target) if exc.filename else None) or (
        f"give yourself access to it (`chmod u+rw {name}`)"
    )
    return f"permission denied: {name}; {whose}, or point BACKSCROLL_HOME elsewhere"


def under_any(path: str, roots: Iterable[str]) -> bool:
    """``path`` is one of ``roots`` or inside one (``~`` expanded, lexically)."""
    where = os.path.normpath(os.path.expanduser(path))
    return any(is_under(where, os.path.normpath(os.path.expanduser(r))) for r in roots)


def is_dir_quietly(path: Path) -> bool:
    """``path`` is a directory; False, not an exception, when a directory above
    it denies access (a root behind another user's profile)."""
    try:
        return path.is_dir()
    except OSError:
        return False


def _env(name: str) -> str | None:
    """An environment variable naming a path. A relative ``XDG_*`` is ignored, as
    the XDG spec says; a relative ``BACKSCROLL_HOME`` or ``BACKSCROLL_SOCKET``
    would follow the current directory (a new index in each), so it is refused."""
    value = os.environ.get(name, "").strip()
    if not value:
        return None
    value = os.path.expanduser(value)
    if os.path.isabs(value):
        return value
    if name.startswith("XDG_"):
        return None
    if name in ("BACKSCROLL_HOME", "BACKSCROLL_SOCKET"):
        from backscroll.errors import ConfigError

        raise ConfigError(
            [f"{name}={value} is a relative path, which would change with the current "
             f"directory; set it to an absolute path (e.g. {os.path.abspath(value)})"]
        )  # fmt: skip
    return value


def _home() -> str:
    return os.path.expanduser("~")


def config_path_text() -> str:
    """``$BACKSCROLL_CONFIG``, else ``$XDG_CONFIG_HOME/backscroll/config.yaml``."""
    explicit = _env("BACKSCROLL_CONFIG")
    if explicit:
        return explicit
    base = _env("XDG_CONFIG_HOME") or os.path.join(_home(), ".config")
    return os.path.join(base, "backscroll", "config.yaml")


def socket_path_text() -> str:
    """``$BACKSCROLL_SOCKET``, else ``$XDG_RUNTIME_DIR/backscroll/backscroll.sock``.

    Without XDG_RUNTIME_DIR on Linux, the user's ``/run/user/<uid>`` where it
    exists (where the systemd service listens); else (macOS, a bare Linux
    session) the per-user temp directory, in a ``backscroll-<uid>`` subdirectory.
    """
    explicit = _env("BACKSCROLL_SOCKET")
    if explicit:
        return explicit
    runtime = _env("XDG_RUNTIME_DIR") or _login_runtime_dir()
    if runtime and sys.platform != "darwin":
        return os.path.join(runtime, "backscroll", "backscroll.sock")
    import tempfile

    uid = os.getuid() if hasattr(os, "getuid") else 0
    return os.path.join(tempfile.gettempdir(), f"backscroll-{uid}", "backscroll.sock")


#: Where systemd-logind makes each logged-in user's runtime directory.
LOGIN_RUNTIME = "/run/user"


def _login_runtime_dir() -> str | None:
    """This user's ``/run/user/<uid>`` when XDG_RUNTIME_DIR is not set (``su``,
    ``sudo -u``, cron): the systemd user service is given it as XDG_RUNTIME_DIR,
    so the daemon listens there. Only a directory of this user's, private to it."""
    if not sys.platform.startswith("linux") or not hasattr(os, "getuid"):
        return None
    path = os.path.join(LOGIN_RUNTIME, str(os.getuid()))
    try:
        st = os.stat(path)
    except OSError:
        return None
    private = st.st_uid == os.getuid() and (st.st_mode & 0o077) == 0
    return path if private and os.path.isdir(path) else None


def home() -> Path:
    from pathlib import Path

    return Path(_home())


def config_path() -> Path:
    """``$BACKSCROLL_CONFIG``, else ``$XDG_CONFIG_HOME/backscroll/config.yaml``."""
    from pathlib import Path

    return Path(config_path_text())


def data_dir_text() -> str:
    """``$BACKSCROLL_HOME``, else ``$XDG_DATA_HOME/backscroll`` (macOS: Application Support)."""
    explicit = _env("BACKSCROLL_HOME")
    if explicit:
        return explicit
    if sys.platform == "darwin":
        return os.path.join(_home(), "Library", "Application Support", "backscroll")
    base = _env("XDG_DATA_HOME") or os.path.join(_home(), ".local", "share")
    return os.path.join(base, "backscroll")


def data_dir() -> Path:
    """:func:`data_dir_text` as a ``Path``."""
    from pathlib import Path

    return Path(data_dir_text())


def socket_path() -> Path:
    """:func:`socket_path_text` as a ``Path``."""
    from pathlib import Path

    return Path(socket_path_text())


def db_path(data: Path | None = None) -> Path:
    return (data or data_dir()) / "index.db"


def make_dirs(path: Path, mode: int = 0o700, parents_mode: int = 0o755) -> None:
    """Create ``path`` with ``mode`` and any missing parent with ``parents_mode``,
    whatever the umask lets through beyond them (``mkdir -p`` under umask 000
    makes world-writable parents: ``~/.local``, ``~/.config/systemd``)."""
    missing = []
    current = path
    while not os.path.lexists(current):
        missing.append(current)
        if current.parent == current:
            break
        current = current.parent
    for directory in reversed(missing):
        try:
            directory.mkdir(mode=mode if directory == path else parents_mode)
        except FileExistsError:  # (made meanwhile by another process)
            continue
