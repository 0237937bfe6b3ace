"""One client connection: peer check, framing, limits, errors as replies.

A malformed, oversized or half-sent request gets a JSON-RPC error (or a
timeout) and, when the stream can no longer be trusted, the connection is
closed; the daemon keeps serving everyone else. A last request whose newline
never came (the client shut its side down) is answered all the same. Every
connection is bounded in
time (a request must arrive within ``request_timeout_s`` of its first byte, a
reply must be taken within ``write_timeout_s``) and in size (request line,
query text, reply). When ``max_connections`` are open, the longest-idle
connection is closed to make room; when none is idle the newcomer is told the
daemon is busy, and the CLI reads the index directly.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from typing import Any

from backscroll import protocol
from backscroll.client import peer_uid
from backscroll.config import ServerConfig
from backscroll.daemon.handlers import DaemonContext, dispatch
from backscroll.protocol import ProtocolError

log = logging.getLogger("backscroll.server")

__all__ = ["peer_uid", "serve_connection"]


async def serve_connection(
    ctx: DaemonContext,
    limits: ServerConfig,
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
) -> None:
    ctx.connections += 1
    try:
        if ctx.connections > limits.max_connections and not _evict_idle(ctx):
            busy = (
                f"too many connections (max {limits.max_connections}, all busy); "
                "try again, or read the index directly"
            )
            await _send(writer, protocol.error(None, protocol.BUSY, busy), limits)
            return
        sock = writer.get_extra_info("socket")
        uid = peer_uid(sock) if sock is not None else None
        if uid is not None and uid != os.getuid():
            log.warning("refused a connection from another user",
                        extra={"event": "peer_refused", "uid": uid})  # fmt: skip
            await _send(writer, protocol.error(None, protocol.INVALID_REQUEST,
                        "this daemon serves only its own user"), limits)  # fmt: skip
            return
        await _loop(ctx, limits, reader, writer)
    except (ConnectionError, TimeoutError, asyncio.CancelledError):
        pass
    finally:
        ctx.idle.pop(writer, None)
        ctx.connections -= 1
        writer.close()
        with contextlib.suppress(OSError, TimeoutError, asyncio.CancelledError):
            await asyncio.wait_for(writer.wait_closed(), 1)


#: Seconds a new connection may take to send its first request before it counts
#: as idle (and may be closed to make room): a burst of clients that have just
#: connected must not evict each other before any is served.
FRESH_GRACE_S = 2.0


def _evict_idle(ctx: DaemonContext) -> bool:
    """Close the connection idle the longest; False when none is idle."""
    now = asyncio.get_running_loop().time()
    idle = {w: since for w, since in ctx.idle.items() if since <= now}
    if not idle:
        return False
    oldest = min(idle, key=idle.__getitem__)
    del ctx.idle[oldest]
    log.info("closed the longest-idle connection to make room",
             extra={"event": "idle_evicted", "connections": ctx.connections})  # fmt: skip
    oldest.close()
    return True


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
    #: When this connection counts as idle once it waits (later for a new one).
    idle_after = loop.time() + FRESH_GRACE_S
    while True:
        nl = buf.find(b"\n")
        if nl > limits.max_request_bytes or (nl < 0 and len(buf) > limits.max_request_bytes):
            await _send(writer, protocol.error(None, protocol.REQUEST_TOO_LARGE,
                        f"request larger than {limits.max_request_bytes} bytes; "
                        "the connection is closed"), limits)  # fmt: skip
            return
        if nl >= 0:
            line = bytes(buf[:nl])
            del buf[: nl + 1]
            if line.strip():
                await _send(writer, await _answer(ctx, limits, line), limits)
                idle_after = loop.time()
            deadline = loop.time() + limits.request_timeout_s if buf else None
            continue
        if buf and deadline is None:
            deadline = loop.time() + limits.request_timeout_s
        timeout = deadline - loop.time() if deadline is not None else limits.idle_timeout_s
        if not buf:
            ctx.idle[writer] = max(loop.time(), idle_after)
        try:
            chunk = await asyncio.wait_for(reader.read(65536), max(timeout, 0))
        except TimeoutError:
            if buf:
                await _send(writer, protocol.error(None, protocol.TIMEOUT,
                            f"request not finished within {limits.request_timeout_s:g} s "
                            "(send one JSON object per line, ending in a newline)"),
                            limits)  # fmt: skip
            return
        finally:
            ctx.idle.pop(writer, None)
        if not chunk:
            if buf.strip():
                # The client shut its side down after a last request without its
                # newline: answer it (a whole request is served, a cut one gets a
                # parse error saying why) rather than close without a word.
                await _send(writer, await _answer(ctx, limits, bytes(buf), ended=True), limits)
            return
        buf += chunk


async def _answer(
    ctx: DaemonContext, limits: ServerConfig, line: bytes, ended: bool = False
) -> bytes:
    """The reply to one request line (``ended``: the connection ended before its newline)."""
    ctx.requests += 1
    rid: Any = None
    try:
        rid, method, params = protocol.parse_request(line)
        protocol.check_query_length(method, params, limits.max_query_chars)
        value = await dispatch(ctx, method, params)
        reply = protocol.result(rid, value)
    except ProtocolError as exc:
        message = exc.message
        if ended and exc.code == protocol.PARSE_ERROR:
            message += (
                "; the connection ended before the request's newline "
                "(send one JSON object per line, ending in a newline)"
            )
        return protocol.error(rid, exc.code, message)
    except Exception as exc:
        log.exception("request failed", extra={"event": "request_error", "error": repr(exc)})
        return protocol.error(rid, protocol.INTERNAL_ERROR, f"internal error: {exc!r}")
    if len(reply) > limits.max_reply_bytes:
        log.warning("reply too large, refused", extra={"event": "reply_too_large",
                    "method": method, "bytes": len(reply)})  # fmt: skip
        return protocol.error(rid, protocol.REPLY_TOO_LARGE,
                              f"the reply would be {len(reply)} bytes, more than the "
                              f"{limits.max_reply_bytes} allowed (server.max_reply_bytes); "
                              "ask for less (a lower --limit or --max-total-chars)")  # fmt: skip
    return reply


async def _send(writer: asyncio.StreamWriter, data: bytes, limits: ServerConfig) -> None:
    """Write a reply; a client that does not take it within ``write_timeout_s``
    is dropped (TimeoutError ends its connection). A connection closed meanwhile
    (evicted, or gone) ends as a ConnectionError."""
    if writer.is_closing():
        raise ConnectionError("the connection was closed")
    try:
        writer.write(data)
    except RuntimeError as exc:  # (uvloop: "unable to perform operation on ... closed")
        raise ConnectionError(str(exc)) from None
    try:
        await asyncio.wait_for(writer.drain(), limits.write_timeout_s)
    except TimeoutError:
        log.info("a client did not take its reply in time; closed",
                 extra={"event": "write_timeout", "bytes": len(data)})  # fmt: skip
        writer.transport.abort()  # close() would wait for the unread bytes to drain
        raise ConnectionError("write timeout") from None
