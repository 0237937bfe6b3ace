"""The publisher: drains the local outbox into the team database.

Each round reads the oldest outbox rows (resolved to the turns as they are
now), sends them to PostgreSQL in one transaction (upserts keyed by machine id,
host, session id and turn key; deletes for turns that are gone or whose project
is excluded), and only after that commit deletes the rows it read. A crash, a
cut connection or a restart at any point leaves the rows in the outbox, and the
next round sends them again: the upserts make that harmless. While PostgreSQL
cannot be reached the publisher waits, doubling the wait up to
``team.max_backoff_s``, and ``status`` says how far behind it is.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from backscroll.config import TeamConfig
from backscroll.paths import under_any
from backscroll.store.outbox import OutboxBatch, OutboxStats, OutboxTurn, Reconcile
from backscroll.team import sql
from backscroll.team.connect import CONNECT_TIMEOUT_S, check_schema, explain, safe_url
from backscroll.team.keys import TeamKeys

if TYPE_CHECKING:
    import psycopg
    from psycopg_pool import ConnectionPool

log = logging.getLogger("backscroll.team")
_T = TypeVar("_T")
#: Sends given up on whose threads still wait (any publisher's: a reload makes
#: a new one): no send starts beside one, which may yet commit.
_STUCK: list[threading.Thread] = []
#: The shortest idle look at the outbox (``team.interval_s: 0`` would spin).
MIN_INTERVAL_S = 0.05


class LocalOutbox(Protocol):
    """The local side: the daemon reads through its read pool and acks through
    the writer thread; tests and the bench use an :class:`IndexWriter` directly."""

    async def stats(self) -> OutboxStats: ...
    async def batch(self, limit: int) -> OutboxBatch: ...
    async def ack(self, last_id: int) -> None: ...
    async def reconcile(self) -> Reconcile | None: ...
    async def reconciled(self, token: str) -> None: ...


@dataclass
class PublisherState:
    """What ``status`` shows under ``team``."""

    url: str
    machine_id: str
    owner: str | None = None
    pending: int = 0
    oldest_pending: float | None = None
    last_publish_at: float | None = None
    last_error: str | None = None
    last_error_at: float | None = None
    published: int = 0
    deleted: int = 0
    retry_in_s: float | None = None

    def report(self, now: float | None = None) -> dict[str, Any]:
        from backscroll.store.queries import iso

        now = time.time() if now is None else now
        lag = max(0.0, now - self.oldest_pending) if self.oldest_pending is not None else 0.0
        return {
            "url": self.url,
            "machine_id": self.machine_id,
            "owner": self.owner,
            "pending": self.pending,
            "lag_s": round(lag, 3),
            "last_publish": iso(self.last_publish_at),
            "published": self.published,
            "deleted": self.deleted,
            "last_error": self.last_error,
            "last_error_at": iso(self.last_error_at),
            "retry_in_s": self.retry_in_s,
        }


def _under(project: str | None, roots: tuple[str, ...]) -> bool:
    return bool(project) and under_any(str(project), roots)


def _clean(text: str | None) -> str | None:
    """PostgreSQL text cannot hold NUL; SQLite's can (a transcript may carry one)."""
    return text.replace("\x00", "") if text and "\x00" in text else text


def _diagnose(team: TeamConfig) -> None:
    """After the pool gave up waiting for a connection: one connection made
    directly, whose failure says why (a refused login, a server that is down)
    as a BackscrollError naming the fix. Returns if it connects."""
    from backscroll.team.connect import connect

    with connect(team):
        pass


def _consume(done: asyncio.Future[Any]) -> None:
    """Retrieve what a send given up on ended with (else asyncio logs it)."""
    if not done.cancelled():
        done.exception()


def remote_changes(
    turns: tuple[OutboxTurn, ...], machine: str, team: TeamConfig, keys: TeamKeys
) -> tuple[list[sql.Upsert], list[sql.Key]]:
    """What to send: turns that exist and are not excluded are upserted (private
    when their project says so); gone or excluded ones are deleted remotely.
    Turn keys go as ``keys`` makes them (team/keys.py)."""
    upserts: list[sql.Upsert] = []
    deletes: list[sql.Key] = []
    for t in turns:
        key = (machine, t.host, t.session_id, keys(t.turn_key))
        if t.text is None or t.role is None or _under(t.project, team.exclude_projects):
            deletes.append(key)
            continue
        private = _under(t.project, team.private_projects)
        upserts.append((*key, private, _clean(t.project), _clean(t.title),
                        _clean(t.resume_command), t.role, t.ts, _clean(t.text) or "",
                        t.tainted, t.subagent))  # fmt: skip
    return upserts, deletes


def settings(team: TeamConfig, keys: TeamKeys) -> str:
    """What decides which turns are sent and how; a change re-sends every turn."""
    return json.dumps([sorted(team.exclude_projects), sorted(team.private_projects), keys.prefix])


def push(conn: psycopg.Connection[Any], batch: OutboxBatch, machine: str,
         team: TeamConfig, keys: TeamKeys) -> tuple[int, int]:  # fmt: skip
    """Send one batch in the connection's transaction (the caller commits)."""
    upserts, deletes = remote_changes(batch.turns, machine, team, keys)
    sql.publish(conn, upserts, deletes)
    return len(upserts), len(deletes)


class Publisher:
    def __init__(
        self,
        team: TeamConfig,
        machine: str,
        local: LocalOutbox,
        keys: TeamKeys,
        pool_factory: Callable[[TeamConfig], ConnectionPool] | None = None,
    ) -> None:
        self.team = team
        self.machine = machine
        self.local = local
        self.keys = keys
        self._purged = False
        self.state = PublisherState(safe_url(team.url), machine)
        self._pool_factory = pool_factory
        self._pool: ConnectionPool | None = None
        self._schema_ok = False
        self._stop = asyncio.Event()
        self._wake = asyncio.Event()

    def wake(self) -> None:
        """Look at the outbox now instead of at the next interval."""
        self._wake.set()

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()

    async def run(self) -> None:
        failures = 0
        try:
            while not self._stop.is_set():
                try:
                    sent = await self.round()
                except Exception as exc:
                    failures += 1
                    delay = min(self.team.max_backoff_s, 0.25 * 2 ** min(failures - 1, 16))
                    delay *= 0.75 + random.random() / 2
                    self._failed(exc, delay)
                    await self._sleep(delay)
                    continue
                failures = 0
                self.state.retry_in_s = None
                if not sent:
                    await self._sleep(max(self.team.interval_s, MIN_INTERVAL_S))
        finally:
            await asyncio.to_thread(self.close)

    def close(self) -> None:
        """Close the connection pool (a later round opens a new one)."""
        pool, self._pool = self._pool, None
        self._schema_ok = False
        if pool is not None:
            pool.close()

    async def round(self) -> bool:
        """One look at the outbox; True if something was sent."""
        plan = await self.local.reconcile()
        if plan is not None:
            gone = await self._in_thread(lambda: self._reconcile(plan))
            await self.local.reconciled(plan.token)
            self.state.deleted += gone
            if gone:
                log.info("team rows no longer in this index deleted",
                         extra={"event": "team_reconciled", "deleted": gone})  # fmt: skip
        stats = await self.local.stats()
        self.state.pending, self.state.oldest_pending = stats.pending, stats.oldest
        if not stats.pending:
            return False
        batch = await self.local.batch(max(self.team.batch_size, 1))
        if batch.last_id == 0:
            return False
        ups, dels = await self._in_thread(lambda: self._send(batch))
        await self.local.ack(batch.last_id)
        self.state.published += ups
        self.state.deleted += dels
        self.state.last_publish_at = time.time()
        self.state.last_error = None
        stats = await self.local.stats()
        self.state.pending, self.state.oldest_pending = stats.pending, stats.oldest
        return True

    async def _in_thread(self, work: Callable[[], _T]) -> _T:
        """``work`` (a send) in a thread of its own, waited for at most
        ``team.timeout_s``. A server that stops answering (hung, or behind a
        network that drops packets) leaves that thread waiting: the round fails
        with a message, the stuck connection's pool is let go, and no second
        send starts until the first one returns (a new publisher's neither). The
        thread is a daemon thread,
        so a stuck one never holds up the daemon's exit."""
        _STUCK[:] = [t for t in _STUCK if t.is_alive()]
        if _STUCK:  # (also one a publisher before a reload gave up on)
            raise TimeoutError(self._no_answer)
        loop = asyncio.get_running_loop()
        done: asyncio.Future[_T] = loop.create_future()

        def settle(value: _T | None, error: BaseException | None) -> None:
            if done.done():
                return
            if error is not None:
                done.set_exception(error)
            else:
                done.set_result(value)  # type: ignore[arg-type]

        def send() -> None:
            value: _T | None = None
            error: BaseException | None = None
            try:
                value = work()
            except BaseException as exc:  # (handed to the waiting round)
                error = exc
            with contextlib.suppress(RuntimeError):  # (the loop closed: nobody waits)
                loop.call_soon_threadsafe(settle, value, error)

        thread = threading.Thread(target=send, name="backscroll-team-send", daemon=True)
        thread.start()
        try:
            return await asyncio.wait_for(asyncio.shield(done), self.team.timeout_s)
        except TimeoutError:
            done.add_done_callback(_consume)
            _STUCK.append(thread)
            pool, self._pool = self._pool, None
            self._schema_ok = False
            if pool is not None:  # (closed aside: closing may wait for the stuck one)
                threading.Thread(target=pool.close, daemon=True).start()
            raise TimeoutError(self._no_answer) from None

    @property
    def _no_answer(self) -> str:
        return (
            f"the team database {self.state.url} has not answered for {self.team.timeout_s:g} s; "
            "check that the server runs and the network reaches it (team.timeout_s)"
        )

    def _send(self, batch: OutboxBatch) -> tuple[int, int]:
        return self._with_connection(
            lambda conn: push(conn, batch, self.machine, self.team, self.keys)
        )

    def _reconcile(self, plan: Reconcile) -> int:
        """Delete this machine's remote rows that the local index no longer
        holds, and every row of the machine ids this index published as before."""

        def run(conn: psycopg.Connection[Any]) -> int:
            here = {(h, sid, self.keys(k)) for h, sid, k in plan.local}
            stale = sql.machine_keys(conn, self.machine) - here
            sql.publish(conn, [], [(self.machine, h, sid, k) for h, sid, k in sorted(stale)])
            return len(stale) + sql.delete_machines(conn, plan.old_machines)

        return self._with_connection(run)

    def _with_connection(self, work: Callable[[psycopg.Connection[Any]], _T]) -> _T:
        """``work`` in one transaction on a pooled connection (committed when it
        returns), after the schema check and the one-time purge of old keys."""
        if self._pool is None:
            from backscroll.team.connect import open_pool

            self._pool = (self._pool_factory or open_pool)(self.team)
        pool = self._pool
        try:
            with pool.connection(timeout=CONNECT_TIMEOUT_S) as conn:
                sql.limit_time(conn, self.team.timeout_s)
                if not self._schema_ok:
                    check_schema(conn)
                    self.state.owner = sql.current_user(conn)
                    self._schema_ok = True
                if not self._purged:
                    # Rows under another secret's keys (or sent before keys were
                    # hashed): every turn is queued again under this one's.
                    gone = sql.delete_other_keys(conn, self.machine, self.keys.prefix)
                    if gone:
                        log.info("team rows under an older key scheme deleted; re-sending",
                                 extra={"event": "team_rekeyed", "deleted": gone})  # fmt: skip
                result = work(conn)
        except Exception as exc:
            if type(exc).__name__ == "PoolTimeout":
                _diagnose(self.team)  # (the pool's timeout does not say why)
            raise
        self._purged = True
        return result

    def _failed(self, exc: BaseException, delay: float) -> None:
        message = explain(exc)
        if type(exc).__name__ == "PoolTimeout":
            message = f"cannot reach {self.state.url} ({message})"
        self.state.last_error = message
        self.state.last_error_at = time.time()
        self.state.retry_in_s = round(delay, 2)
        log.warning("team publish failed", extra={"event": "team_publish_error",
                    "error": message, "retry_in_s": round(delay, 2)})  # fmt: skip

    async def _sleep(self, seconds: float) -> None:
        self._wake.clear()
        if self._stop.is_set():
            return
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._wake.wait(), timeout=seconds)
