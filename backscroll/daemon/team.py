"""The daemon's side of team search: turn the outbox on or off to match the
config, and run the publisher as an asyncio task beside the socket server."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from backscroll.config import Config
from backscroll.daemon.handlers import ReadPool
from backscroll.daemon.worker import Worker
from backscroll.errors import BackscrollError
from backscroll.store import outbox, reredact
from backscroll.store.outbox import OutboxBatch, OutboxStats, Reconcile

log = logging.getLogger("backscroll.team")


class DaemonOutbox:
    """Reads through the daemon's read-only pool; acks through the writer thread."""

    def __init__(self, pool: ReadPool, worker: Worker) -> None:
        self.pool = pool
        self.worker = worker

    async def stats(self) -> OutboxStats:
        result: OutboxStats = await self.pool.run(outbox.stats_query())
        return result

    async def batch(self, limit: int) -> OutboxBatch:
        result: OutboxBatch = await self.pool.run(outbox.batch_query(limit))
        return result

    async def ack(self, last_id: int) -> None:
        await asyncio.wrap_future(
            self.worker.submit("call", lambda ix: outbox.ack(ix.writer, last_id))
        )

    async def reconcile(self) -> Reconcile | None:
        result: Reconcile | None = await self.pool.run(outbox.reconcile_query())
        return result

    async def reconciled(self, token: str) -> None:
        await asyncio.wrap_future(
            self.worker.submit("call", lambda ix: outbox.reconciled(ix.writer, token))
        )


class TeamRunner:
    """The publisher task (or, when it cannot start, why not: shown in ``status``)."""

    def __init__(self) -> None:
        self.publisher: Any = None
        self.task: asyncio.Task[None] | None = None
        self.error: str | None = None
        self.enabled = False

    async def start(self, config: Config, pool: ReadPool, worker: Worker) -> None:
        team = config.team
        self.enabled = bool(team.url)
        if not team.url:
            # No team: stop recording (and drop what waited), if it ever recorded.
            await asyncio.wrap_future(worker.submit("call", _disable))
            return
        try:
            from backscroll.team import driver
            from backscroll.team.connect import machine_id
            from backscroll.team.keys import TeamKeys

            driver()
            machine = machine_id(team, config.data_path())
            keys = TeamKeys.of(config.data_path())  # (its secret file: OSError as above)
        except (BackscrollError, OSError) as exc:
            self.error = str(exc)
            log.error("team publishing is off", extra={"event": "team_error", "error": str(exc)})
            return
        from backscroll.team.publish import Publisher, settings

        unredacted = await asyncio.wrap_future(
            worker.submit("call", lambda ix: reredact.holds_unredacted(ix.writer))
        )
        if unredacted:
            self.error = (
                "this index holds text read while redaction was off (redaction.enabled: "
                "false), and only redacted text may leave the machine; with redaction on, run "
                "`backscroll index --rebuild`, then publishing starts"
            )
            log.error("team publishing is off", extra={"event": "team_error", "error": self.error})
            return
        wanted = settings(team, keys)
        queued = await asyncio.wrap_future(
            worker.submit("call", lambda ix: outbox.enable(ix.writer, wanted, machine))
        )
        self.publisher = Publisher(team, machine, DaemonOutbox(pool, worker), keys)
        self.task = asyncio.get_running_loop().create_task(self.publisher.run())
        log.info("team publishing on", extra={"event": "team_start", "machine_id": machine,
                 "url": self.publisher.state.url, "queued": queued})  # fmt: skip

    def wake(self) -> None:
        if self.publisher is not None:
            self.publisher.wake()

    async def stop(self) -> None:
        if self.publisher is not None:
            self.publisher.stop()
        if self.task is not None:
            try:
                await asyncio.wait_for(self.task, 15)
            except (TimeoutError, asyncio.CancelledError):
                pass
            except Exception as exc:
                log.warning("team publisher stopped with an error",
                            extra={"event": "team_error", "error": repr(exc)})  # fmt: skip
        self.publisher = None
        self.task = None

    def report(self) -> dict[str, Any] | None:
        if not self.enabled:
            return None
        if self.publisher is None:
            return {"enabled": True, "running": False, "last_error": self.error}
        report: dict[str, Any] = {"enabled": True, "running": self.task is not None
                                  and not self.task.done()}  # fmt: skip
        report.update(self.publisher.state.report())
        return report


def _disable(ix: Any) -> None:
    if outbox.is_enabled(ix.writer):
        outbox.disable(ix.writer)
