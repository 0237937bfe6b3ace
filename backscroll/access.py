"""One way to ask a question: the daemon when it runs, the index directly when not.

Used by the CLI, the MCP server and the prompt hooks. Imports neither daemon/
nor store/ (nor the config machinery, when there is no config file) unless it
has to fall back to the direct path.
"""

from __future__ import annotations

import os

from backscroll import paths
from backscroll.client import Client, RemoteError, try_connect, warn_stderr
from backscroll.errors import BackscrollError, DaemonNotRunning

TYPE_CHECKING = False  # typing is not imported at run time: this is the CLI's hot path
if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path
    from typing import Any

    from backscroll.config import Config


def _ask(client: Client, method: str, params: dict[str, Any]) -> dict[str, Any] | None:
    """The daemon's answer; None when it did not answer in time or went away
    mid-request (a hung or crashed daemon): the caller reads the index instead.
    Only read-only methods come this way, so asking twice is harmless."""
    with client:
        try:
            result = client.call(method, params)
        except RemoteError as exc:
            raise BackscrollError(exc.message) from None
        except (DaemonNotRunning, ValueError):  # (timed out, closed, or a garbled reply)
            return None
    out = dict(result)
    if method != "status":
        out["daemon"] = True
    return out


def _direct(
    cfg: Config, method: str, params: dict[str, Any], *, indexing: bool = True
) -> dict[str, Any]:
    from backscroll import direct
    from backscroll.protocol import ProtocolError

    try:
        result = direct.query(cfg, method, params, indexing=indexing)
    except ProtocolError as exc:
        raise BackscrollError(exc.message) from None
    out = dict(result)
    out["daemon"] = False
    return out


def _lost(client: Client, timeout: float) -> str:
    return (
        f"the daemon at {client.path} did not answer within {timeout:g} s, or went away; "
        "answered from the index as it stands. Restart the daemon if this repeats "
        "(`backscroll doctor` shows its state)"
    )


def _answer(
    client: Client | None,
    cfg: Config | None,
    load: Callable[[], Config],
    method: str,
    params: dict[str, Any],
    passed: list[str],
) -> dict[str, Any]:
    """The daemon's answer through ``client``, else the index's (``load`` gives the
    config when ``cfg`` is None: the daemon's path does not need it)."""
    if client is not None:
        answer = _ask(client, method, params)
        if answer is not None:
            return answer
        lost = _lost(client, client.timeout)
        warn_stderr(lost)
        # The daemon owns the writing: read what is indexed, without indexing.
        return _skipped(_direct(cfg or load(), method, params, indexing=False), [lost])
    return _skipped(_direct(cfg or load(), method, params), passed)


def query(
    cfg: Config, method: str, params: dict[str, Any], timeout: float = 60.0
) -> dict[str, Any]:
    """The method's result as a dict, with ``"daemon": true|false`` saying who
    answered. A daemon that does not answer within ``timeout`` seconds (or drops
    the connection) is passed over for the index, read without indexing first."""
    passed: list[str] = []
    client = try_connect(cfg.socket_path(), timeout, warn=_told(passed), db=cfg.db_path())
    return _answer(client, cfg, lambda: cfg, method, params, passed)


def _told(passed: list[str]) -> Any:
    """A ``warn`` for try_connect: said on stderr, and kept for the result."""

    def warn(message: str) -> None:
        passed.append(message)
        warn_stderr(message)

    return warn


def _skipped(result: dict[str, Any], passed: list[str]) -> dict[str, Any]:
    """``result`` answered directly, saying why a daemon that answers was not used
    (``daemon_skipped``: another release, another index, a socket not ours)."""
    if passed:
        result["daemon_skipped"] = passed[0]
    return result


def load_config(config_file: Path | None = None) -> Config:
    from backscroll import config

    return config.load(config_file)


def needs_config(config_file: Path | None = None) -> bool:
    """Whether a config file exists that could change the socket or the limits,
    or one was named (``--config``, ``$BACKSCROLL_CONFIG``): a named file that is
    missing is an error, with or without a daemon, never silently the defaults."""
    if config_file or os.environ.get("BACKSCROLL_CONFIG", "").strip():
        return True
    return os.path.exists(paths.config_path_text())


def query_fast(
    config_file: Path | None,
    method: str,
    params: dict[str, Any],
    timeout: float = 60.0,
    cfg: Config | None = None,
) -> dict[str, Any]:
    """Like :func:`query`, but reaches the daemon without loading the config when
    there is no config file (the common case): the CLI's fast path. ``cfg`` is
    the config when the caller has already loaded it."""
    socket: str | Path
    db: str | Path
    if cfg is None and needs_config(config_file):
        cfg = load_config(config_file)
    if cfg is not None:
        socket, db = cfg.socket_path(), cfg.db_path()
    else:
        socket, db = paths.socket_path_text(), os.path.join(paths.data_dir_text(), "index.db")
    passed: list[str] = []
    client = try_connect(socket, timeout, warn=_told(passed), db=db)
    return _answer(client, cfg, lambda: load_config(config_file), method, params, passed)
