"""One client connection: peer check, framing, limits, errors as replies.

A malformed, oversized or half-sent request gets a JSON-RPC error (or a
timeout) and, when the stream can no longer be trusted, the connection is
closed; the daemon keeps serving everyone else.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import struct
import sys
from typing import Any

from backscroll import protocol
from backscroll.config import ServerConfig
from backscroll.daemon.handlers import DaemonContext, dispatch
from backscroll.protocol import ProtocolError

log = logging.getLogger("backscroll.server")


def peer_uid(sock: socket.socket) -> int | None:
    """The connecting process's uid (SO_PEERCRED / LOCAL_PEERCRED), None if unknown."""
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


async def serve_connection(
    ctx: DaemonContext,
    limits: ServerConfig,
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
) -> None:
    ctx.connections += 1
    try:
        if ctx.connections > limits.max_connections:
            busy = f"too many connections (max {limits.max_connections}); try again"
            await _send(writer, protocol.error(None, protocol.INTERNAL_ERROR, busy))
            return
        sock = writer.get_extra_info("socket")
        uid = peer_uid(sock) if sock is not None else None
        if uid is not None and uid != os.getuid():
            log.warning("refused a connection from another user",
                        extra={"event": "peer_refused", "uid": uid})  # fmt: skip
            await _send(writer, protocol.error(None, protocol.INVALID_REQUEST,
                        "this daemon serves only its own user"))  # fmt: skip
            return
        await _loop(ctx, limits, reader, writer)
    except (ConnectionError, asyncio.CancelledError):
        pass
    finally:
        ctx.connections -= 1
        writer.close()
        with contextlib.suppress(OSError, TimeoutError, asyncio.CancelledError):
            await asyncio.wait_for(writer.wait_closed(), 1)


async def _loop(
    ctx: DaemonContext,
    limits: ServerConfig,
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
) -> None:
    loop = asyncio.get_running_loop()
    buf = bytearray()
    #: When the request being received must be complete (its first byte + the timeout).
    deadline: float | None = None
    while True:
        nl = buf.find(b"\n")
        if nl > limits.max_request_bytes or (nl < 0 and len(buf) > limits.max_request_bytes):
            await _send(writer, protocol.error(None, protocol.REQUEST_TOO_LARGE,
                        f"request larger than {limits.max_request_bytes} bytes; "
                        "the connection is closed"))  # fmt: skip
            return
        if nl >= 0:
            line = bytes(buf[:nl])
            del buf[: nl + 1]
            if line.strip():
                await _send(writer, await _answer(ctx, line))
            deadline = loop.time() + limits.request_timeout_s if buf else None
            continue
        if buf and deadline is None:
            deadline = loop.time() + limits.request_timeout_s
        timeout = deadline - loop.time() if deadline is not None else limits.idle_timeout_s
        try:
            chunk = await asyncio.wait_for(reader.read(65536), max(timeout, 0))
        except TimeoutError:
            if buf:
                await _send(writer, protocol.error(None, protocol.TIMEOUT,
                            f"request not finished within {limits.request_timeout_s:g} s "
                            "(send one JSON object per line, ending in a newline)"))  # fmt: skip
            return
        if not chunk:
            return
        buf += chunk


async def _answer(ctx: DaemonContext, line: bytes) -> bytes:
    ctx.requests += 1
    rid: Any = None
    try:
        rid, method, params = protocol.parse_request(line)
        value = await dispatch(ctx, method, params)
        return protocol.result(rid, value)
    except ProtocolError as exc:
        return protocol.error(rid, exc.code, exc.message)
    except Exception as exc:
        log.exception("request failed", extra={"event": "request_error", "error": repr(exc)})
        return protocol.error(rid, protocol.INTERNAL_ERROR, f"internal error: {exc!r}")


async def _send(writer: asyncio.StreamWriter, data: bytes) -> None:
    writer.write(data)
    await writer.drain()
