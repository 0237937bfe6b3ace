"""Helpers shared by the team tests and the team bench."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from backscroll.config import TeamConfig
from backscroll.store import open_writer, outbox
from backscroll.store.outbox import OutboxBatch, OutboxStats, Reconcile
from backscroll.store.queries import run_sync
from backscroll.store.writer import IndexWriter
from backscroll.team.keys import TeamKeys
from backscroll.team.publish import Publisher, settings


class WriterOutbox:
    """The publisher's outbox over an :class:`IndexWriter` in the calling thread: a
    publisher run without a daemon."""

    def __init__(self, writer: Any, run: Callable[[Callable[[], Any]], Awaitable[Any]]) -> None:
        self.writer = writer
        self.run = run

    async def stats(self) -> OutboxStats:
        result: OutboxStats = await self.run(lambda: outbox.stats(self.writer))
        return result

    async def batch(self, limit: int) -> OutboxBatch:
        result: OutboxBatch = await self.run(lambda: outbox.read_batch(self.writer, limit))
        return result

    async def ack(self, last_id: int) -> None:
        await self.run(lambda: outbox.ack(self.writer, last_id))

    async def reconcile(self) -> Reconcile | None:
        result: Reconcile | None = await self.run(
            lambda: run_sync(self.writer.conn, outbox.reconcile_query())
        )
        return result

    async def reconciled(self, token: str) -> None:
        await self.run(lambda: outbox.reconciled(self.writer, token))


async def here(fn: Callable[[], Any]) -> Any:
    return fn()


def local_publisher(db: Path, team: TeamConfig) -> tuple[Publisher, IndexWriter]:
    """A publisher over ``db``'s outbox (turned on, so every turn is queued)."""
    writer = open_writer(db)
    keys = TeamKeys.of(db.parent)  # the data directory's secret, as the daemon's
    outbox.enable(writer, settings(team, keys), team.machine_id or "")
    assert team.machine_id
    return Publisher(team, team.machine_id, WriterOutbox(writer, here), keys), writer


def publish_all(db: Path, team: TeamConfig) -> None:
    """Publish everything ``db`` holds, as a daemon with ``team`` would, then stop."""
    pub, writer = local_publisher(db, team)
    try:
        drain(pub)
    finally:
        pub.close()
        writer.close()


def drain(pub: Publisher) -> int:
    """Publish rounds until the outbox is empty; how many rounds sent something."""
    rounds = 0
    while asyncio.run(pub.round()):
        rounds += 1
    return rounds


def wait_until(check: Callable[[], Any], what: str, deadline_s: float = 60.0) -> Any:
    """Poll a real condition until it holds (never a blind sleep)."""
    end = time.monotonic() + deadline_s
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > end:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


class CrashAfterCommit:
    """A local outbox whose ack never happens: the process 'dies' after the
    remote commit and before the local rows are deleted."""

    def __init__(self, inner: WriterOutbox) -> None:
        self.inner = inner

    async def stats(self) -> OutboxStats:
        return await self.inner.stats()

    async def batch(self, limit: int) -> OutboxBatch:
        return await self.inner.batch(limit)

    async def ack(self, last_id: int) -> None:
        raise RuntimeError("killed between the remote commit and the local ack")

    async def reconcile(self) -> Reconcile | None:
        return await self.inner.reconcile()

    async def reconciled(self, token: str) -> None:
        await self.inner.reconciled(token)
