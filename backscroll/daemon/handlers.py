"""JSON-RPC methods of the daemon. Queries run on read-only aiosqlite
connections, so they never wait on the writer."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import os
import sqlite3
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiosqlite

from backscroll import __version__, methods, protocol
from backscroll.daemon.watcher import Watcher
from backscroll.daemon.worker import Worker
from backscroll.indexing.indexer import Summary
from backscroll.protocol import ProtocolError
from backscroll.store import fts_enabled, open_async_readonly, queries, run_async, schema
from backscroll.wire import INDEX_CORRUPT, TIMEOUT

log = logging.getLogger("backscroll.daemon")


class _Deadline:
    """When the query on one connection must stop (checked by SQLite's progress
    handler, on aiosqlite's thread)."""

    def __init__(self) -> None:
        self.at = math.inf

    def passed(self) -> int:
        return 1 if time.monotonic() > self.at else 0


class ReadPool:
    """A few read-only aiosqlite connections, handed out one query at a time.

    Each query may run ``query_seconds``: past that SQLite interrupts it and the
    client is told to narrow it. Four connections, so that two heavy searches
    (26 one-letter prefixes over 18k turns took 3 s) leave room for the rest."""

    def __init__(self, db: Path, size: int = 4, query_seconds: float = 5.0) -> None:
        self.db = db
        self.size = size
        self.query_seconds = query_seconds
        self._free: asyncio.Queue[tuple[aiosqlite.Connection, _Deadline]] = asyncio.Queue()
        self._all: list[aiosqlite.Connection] = []
        self.fts = True

    async def open(self) -> None:
        for _ in range(self.size):
            conn = await open_async_readonly(self.db)
            deadline = _Deadline()
            await conn.set_progress_handler(deadline.passed, 20_000)
            self._all.append(conn)
            self._free.put_nowait((conn, deadline))
        self.fts = bool(await run_async(self._all[0], fts_enabled()))

    async def run(self, query: queries.Query) -> Any:
        conn, deadline = await self._free.get()
        deadline.at = time.monotonic() + self.query_seconds
        task = asyncio.ensure_future(run_async(conn, query))
        try:
            return await asyncio.shield(task)
        except asyncio.CancelledError:
            # The client went away: stop the statement at SQLite's next progress
            # check, and take the connection back once it has stopped.
            deadline.at = 0.0
            with contextlib.suppress(BaseException):
                await task
            raise
        except sqlite3.OperationalError as exc:
            if "interrupt" not in str(exc):
                raise
            raise ProtocolError(
                TIMEOUT,
                f"the query ran longer than {self.query_seconds:g} s and was stopped; narrow "
                "it: fewer or longer prefixes (a* stands for thousands of words), a host or "
                "date filter, or fewer hits",
            ) from None
        finally:
            deadline.at = math.inf
            self._free.put_nowait((conn, deadline))

    async def close(self) -> None:
        for conn in self._all:
            await conn.close()
        self._all.clear()


@dataclass
class DaemonContext:
    pool: ReadPool
    worker: Worker
    watcher: Watcher
    socket_path: Path
    enabled_hosts: list[str]
    started: float = field(default_factory=time.time)
    connections: int = 0
    requests: int = 0
    #: Connections waiting for their next request, with the loop time they went
    #: idle: when the daemon is full, the longest-idle one is closed for a newcomer.
    idle: dict[Any, float] = field(default_factory=dict)
    #: Flush the debouncer's pending paths into the worker (for ``sync``).
    flush: Callable[[], None] = lambda: None
    #: The team publisher's report for ``status`` (None: no team configured).
    team: Callable[[], dict[str, Any] | None] = lambda: None
    #: Start the web viewer if it is not serving; its URL (for ``ui``).
    start_ui: Callable[[], Awaitable[dict[str, Any]]] | None = None
    #: Config changes the last reload could not apply (data_dir, socket): each
    #: says what the daemon still uses until it is restarted.
    restart_needed: list[str] = field(default_factory=list)


Method = Callable[[DaemonContext, Any], Awaitable[Any]]


async def hello(ctx: DaemonContext, params: Any) -> Any:
    version = params.get("protocol") if isinstance(params, dict) else None
    protocol.check_version(version)
    return {
        "protocol": protocol.PROTOCOL_VERSION,
        "version": __version__,
        "pid": os.getpid(),
        # The index it serves: a client of another (a second HOME under the same
        # uid, sharing /tmp's socket) answers from its own instead.
        "db": os.path.realpath(ctx.worker.indexer.writer.path),
    }


async def status(ctx: DaemonContext, params: Any) -> Any:
    totals = await ctx.pool.run(queries.totals())
    st = ctx.worker.state
    return {
        "schema": protocol.RESULT_SCHEMA,
        "daemon": {
            "pid": os.getpid(),
            "version": __version__,
            "protocol": protocol.PROTOCOL_VERSION,
            "socket": str(ctx.socket_path),
            "uptime_s": round(time.time() - ctx.started, 1),
            "queue_depth": ctx.worker.queue_depth(),
            "writer_alive": ctx.worker.is_alive(),
            "indexing": st.current,
            "scan": st.scan.as_dict() if st.scan is not None else None,
            "cold_index_done": st.cold_index_done,
            "last_index": queries.iso(st.last_index_at),
            "last_error": st.last_error,
            "files_indexed": st.files_indexed,
            "turns_added": st.turns_added,
            "connections": ctx.connections,
            "requests": ctx.requests,
            "fts": fts_now(ctx),
            "bulk_load": ctx.worker.indexer.writer.bulk,
            "restart_needed": list(ctx.restart_needed),
        },
        "roots": ctx.watcher.modes(),
        **totals,
        **({"team": team} if (team := ctx.team()) is not None else {}),
    }


async def sync(ctx: DaemonContext, params: Any) -> Any:
    """Index everything pending now; reply when done (read-your-writes)."""
    ctx.flush()
    summary: Summary = await asyncio.wrap_future(ctx.worker.submit("sync"))
    return {
        "files_changed": summary.files_changed,
        "turns_added": summary.turns_added,
        "turns_deleted": summary.turns_deleted,
        "seconds": round(summary.seconds, 3),
    }


async def ui(ctx: DaemonContext, params: Any) -> Any:
    """Serve the web viewer on 127.0.0.1 (started once); its URL with the access token."""
    if ctx.start_ui is None:
        raise ProtocolError(protocol.INTERNAL_ERROR, "this daemon cannot serve the web viewer")
    return await ctx.start_ui()


def fts_now(ctx: DaemonContext) -> bool:
    """Whether searches use the full-text index now: not while this daemon's
    first index bulk loads (it is fed in steps, store/fts.py), when every
    turn is found by LIKE instead, unranked."""
    return ctx.pool.fts and not ctx.worker.indexer.writer.bulk


def _query_method(name: str) -> Method:
    async def handler(ctx: DaemonContext, params: Any) -> Any:
        query = methods.build(name, params, fts=fts_now(ctx), enabled_hosts=ctx.enabled_hosts)
        return await ctx.pool.run(query)

    return handler


METHODS: dict[str, Method] = {
    "hello": hello,
    "status": status,
    "sync": sync,
    "ui": ui,
    **{name: _query_method(name) for name in methods.QUERY_METHODS},
}


async def dispatch(ctx: DaemonContext, method: str, params: Any) -> Any:
    handler = METHODS.get(method)
    if handler is None:
        known = ", ".join(sorted(METHODS))
        raise ProtocolError(
            protocol.METHOD_NOT_FOUND, f"unknown method {method!r}; known methods: {known}"
        )
    writer = ctx.worker.indexer.writer
    if writer.corrupt is not None and method != "hello":
        raise ProtocolError(INDEX_CORRUPT, str(writer.corrupt))
    try:
        return await handler(ctx, params)
    except sqlite3.DatabaseError as exc:
        if not schema.is_corrupt(exc):
            raise
        # Neither served nor written from now on (the writer checks the same flag).
        error = writer.note_corrupt(exc)
        log.error("the index is corrupt", extra={"event": "index_corrupt", "error": str(exc)})
        raise ProtocolError(INDEX_CORRUPT, str(error)) from exc
