"""Thin synchronous client of the daemon's Unix socket.

Imports only the standard library (os, socket, struct, json) and the wire
format, so ``backscroll search`` starts as fast as Python can.

Before sending anything the client checks that the socket is its own user's:
the directory and the socket belong to this uid and are closed to others, and
the process serving it runs as this uid (SO_PEERCRED / LOCAL_PEERCRED). A socket
that fails a check is not used; callers read the index directly instead.
"""

from __future__ import annotations

import json
import os
import socket
import struct
import sys

from backscroll import wire as protocol
from backscroll.errors import DaemonNotRunning

TYPE_CHECKING = False  # typing is not imported at run time: this is the CLI's hot path
if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path
    from typing import Any

#: Seconds to connect and exchange ``hello``: a daemon that cannot answer that
#: fast is saturated, and the caller reads the index directly instead.
CONNECT_TIMEOUT = 5.0

_S_IFMT = 0o170000
_S_IFSOCK = 0o140000
_S_IFLNK = 0o120000


class RemoteError(Exception):
    """The daemon answered with a JSON-RPC error."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class UntrustedSocket(DaemonNotRunning):
    """The socket may belong to another user: nothing is sent to it."""


def peer_uid(sock: socket.socket) -> int | None:
    """The uid of the process at the other end (SO_PEERCRED / LOCAL_PEERCRED,
    what getpeereid reads); None where the platform cannot say."""
    try:
        if sys.platform.startswith("linux"):
            creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
            _pid, uid, _gid = struct.unpack("3i", creds)
            return int(uid)
        if sys.platform == "darwin":
            # struct xucred { u_int cr_version; uid_t cr_uid; short cr_ngroups; gid_t[16] }
            raw = sock.getsockopt(0, 0x001, 76)  # SOL_LOCAL, LOCAL_PEERCRED
            return int(struct.unpack_from("I", raw, 4)[0])
    except OSError:
        return None
    return None


def _untrusted(path: str, why: str) -> UntrustedSocket:
    return UntrustedSocket(
        f"not using the socket {path}: {why}, so another user may have put it there; "
        "reading the index directly instead. Fix: remove it if you did not make it, or set "
        "XDG_RUNTIME_DIR (or BACKSCROLL_SOCKET) to a private directory of your own"
    )


def check_socket(path: str) -> None:
    """Raise :class:`UntrustedSocket` unless ``path`` and its directory are this
    user's and closed to others; :class:`DaemonNotRunning` when there is none."""
    uid = os.getuid()
    directory = os.path.dirname(path) or "."
    try:
        st = os.stat(directory)  # followed: the directory the socket really lives in
        lst = os.lstat(path)
    except FileNotFoundError:
        raise DaemonNotRunning(
            f"the daemon is not running at {path} (no such socket); start it "
            "with `backscroll daemon` or `systemctl --user start backscroll`"
        ) from None
    except OSError as exc:
        raise _untrusted(path, f"it cannot be checked ({exc.strerror or exc})") from None
    if st.st_uid != uid:
        raise _untrusted(path, f"its directory {directory} belongs to uid {st.st_uid}, not {uid}")
    if st.st_mode & 0o022:
        mode = oct(st.st_mode & 0o7777)[2:]
        raise _untrusted(path, f"its directory {directory} is writable by others (mode {mode})")
    kind = lst.st_mode & _S_IFMT
    if kind == _S_IFLNK:
        raise _untrusted(path, "it is a symlink")
    if kind != _S_IFSOCK:
        raise _untrusted(path, "it is not a socket")
    if lst.st_uid != uid:
        raise _untrusted(path, f"it belongs to uid {lst.st_uid}, not {uid}")
    if lst.st_mode & 0o077:
        raise _untrusted(path, f"it is open to others (mode {oct(lst.st_mode & 0o777)[2:]})")


class Client:
    def __init__(self, path: Path | str, timeout: float = 60.0) -> None:
        self.path = path
        #: The index the daemon serves (None from a daemon too old to say).
        self.served_db: str | None = None
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
        path = str(self.path)
        check_socket(path)
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(min(self.timeout, CONNECT_TIMEOUT))
        try:
            sock.connect(path)
        except OSError as exc:
            sock.close()
            raise DaemonNotRunning(
                f"the daemon is not running at {path} ({exc.strerror or exc}); start it "
                "with `backscroll daemon` or `systemctl --user start backscroll`"
            ) from None
        uid = peer_uid(sock)
        if uid is not None and uid != os.getuid():
            sock.close()
            raise _untrusted(path, f"the process serving it runs as uid {uid}, not {os.getuid()}")
        self._sock = sock
        self._buf = b""
        hello = self.call("hello", {"protocol": protocol.PROTOCOL_VERSION})
        served = hello.get("db") if isinstance(hello, dict) else None
        self.served_db = served if isinstance(served, str) else None
        sock.settimeout(self.timeout)

    def close(self) -> None:
        if self._sock is not None:
            self._sock.close()
            self._sock = None

    def call(self, method: str, params: Any = None) -> Any:
        if self._sock is None:
            raise DaemonNotRunning(f"not connected to {self.path}")
        self._id += 1
        data = protocol.request(method, params, self._id)
        try:
            try:
                self._sock.sendall(data)
            except (BrokenPipeError, ConnectionResetError):
                # The daemon closed this connection while it was idle (it closes
                # the longest-idle ones when full): nothing was sent, so reconnect.
                self.close()
                self.connect()
                assert self._sock is not None
                self._sock.sendall(data)
            line = self._readline()
        except OSError as exc:
            raise DaemonNotRunning(f"lost the daemon at {self.path}: {exc}") from None
        reply = _reply(line)
        if reply is None:
            # Not a reply at all (something else listens there, or the stream broke):
            # as good as no daemon, so the caller reads the index directly.
            self.close()
            raise DaemonNotRunning(
                f"the daemon at {self.path} answered something that is not a JSON-RPC "
                "reply; restart it (`systemctl --user restart backscroll`)"
            )
        if "error" in reply:
            err = reply["error"]
            if not isinstance(err, dict):
                err = {"message": str(err)}
            raise RemoteError(_code(err.get("code")), str(err.get("message", "")))
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


def _reply(line: bytes) -> dict[str, Any] | None:
    """The reply object in ``line``, or None when it is not one."""
    try:
        reply = json.loads(line)
    except (ValueError, RecursionError):  # (UnicodeDecodeError is a ValueError)
        return None
    return reply if isinstance(reply, dict) else None


def _code(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def warn_stderr(message: str) -> None:
    """The default for :func:`try_connect`'s ``warn``: one plain line on stderr."""
    try:
        sys.stderr.write(f"backscroll: {message}\n")
    except (OSError, ValueError):  # a closed stderr: the fallback still answers
        return


def try_connect(
    path: Path | str,
    timeout: float = 60.0,
    warn: Callable[[str], None] | None = warn_stderr,
    db: Path | str | None = None,
) -> Client | None:
    """A connected client, or None when no daemon (of this user's) answers at
    ``path`` in time, or it is too busy: the caller reads the index directly.
    A socket that fails the ownership checks is reported through ``warn``, and
    so are a daemon of another protocol version (an upgrade it was not restarted
    for) and a daemon serving another index than ``db`` (when given)."""
    client = Client(path, timeout)
    try:
        client.connect()
    except UntrustedSocket as exc:
        if warn is not None:
            warn(str(exc))
        return None
    except DaemonNotRunning:
        return None
    except RemoteError as exc:
        client.close()
        if exc.code == protocol.BUSY:
            return None
        if exc.code == protocol.VERSION_MISMATCH:
            # A daemon of another release (not restarted since an upgrade): its
            # answers could mean something else. Say so; the index is read directly.
            if warn is not None:
                warn(exc.message)
            return None
        raise
    other = other_index(client, db)
    if other is not None:
        client.close()
        if warn is not None:
            warn(other)
        return None
    return client


def other_index(client: Client, db: Path | str | None) -> str | None:
    """Why ``client``'s daemon is not the one for index ``db``, or None when it is."""
    served = client.served_db
    if db is None or served is None or os.path.realpath(served) == os.path.realpath(db):
        return None
    return (
        f"the daemon at {client.path} serves another index ({served}), not {db}; "
        "answering from this one directly. Give each HOME its own XDG_RUNTIME_DIR, "
        "or set BACKSCROLL_SOCKET"
    )
