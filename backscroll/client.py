"""Thin synchronous client of the daemon's Unix socket.

Imports only the standard library and protocol.py, so ``backscroll search``
starts as fast as Python can.
"""

from __future__ import annotations

import json
import socket

from backscroll import wire as protocol
from backscroll.errors import DaemonNotRunning

TYPE_CHECKING = False  # typing is not imported at run time: this is the CLI's hot path
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any


class RemoteError(Exception):
    """The daemon answered with a JSON-RPC error."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class Client:
    def __init__(self, path: Path | str, timeout: float = 60.0) -> None:
        self.path = path
        self.timeout = timeout
        self._sock: socket.socket | None = None
        self._buf = b""
        self._id = 0

    def __enter__(self) -> Client:
        if self._sock is None:
            self.connect()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def connect(self) -> None:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(self.timeout)
        try:
            sock.connect(str(self.path))
        except (FileNotFoundError, ConnectionRefusedError, OSError) as exc:
            sock.close()
            raise DaemonNotRunning(
                f"the daemon is not running at {self.path} ({exc.strerror or exc}); start it "
                "with `backscroll daemon` or `systemctl --user start backscroll`"
            ) from None
        self._sock = sock
        self.call("hello", {"protocol": protocol.PROTOCOL_VERSION})

    def close(self) -> None:
        if self._sock is not None:
            self._sock.close()
            self._sock = None

    def call(self, method: str, params: Any = None) -> Any:
        if self._sock is None:
            raise DaemonNotRunning(f"not connected to {self.path}")
        self._id += 1
        try:
            self._sock.sendall(protocol.request(method, params, self._id))
            line = self._readline()
        except OSError as exc:
            raise DaemonNotRunning(f"lost the daemon at {self.path}: {exc}") from None
        reply = json.loads(line)
        if "error" in reply:
            err = reply["error"]
            raise RemoteError(int(err.get("code", 0)), str(err.get("message", "")))
        return reply.get("result")

    def _readline(self) -> bytes:
        assert self._sock is not None
        while b"\n" not in self._buf:
            chunk = self._sock.recv(1 << 16)
            if not chunk:
                raise OSError("connection closed by the daemon")
            self._buf += chunk
        line, _, self._buf = self._buf.partition(b"\n")
        return line


def try_connect(path: Path | str, timeout: float = 60.0) -> Client | None:
    """A connected client, or None when no daemon answers at ``path``."""
    client = Client(path, timeout)
    try:
        client.connect()
    except DaemonNotRunning:
        return None
    return client
