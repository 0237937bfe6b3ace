"""The daemon's read connections: a query that runs too long is stopped with an
error saying to narrow it, and it does not hold up the other queries."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Generator
from pathlib import Path
from typing import Any

import pytest

from backscroll.daemon.handlers import ReadPool
from backscroll.protocol import TIMEOUT, ProtocolError
from backscroll.store import open_writer

#: Counting to 10^9 in SQL: seconds of work for SQLite, whatever the machine.
SLOW = (
    "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c LIMIT 1000000000) "
    "SELECT count(*) FROM c"
)


def one(sql: str) -> Generator[tuple[str, tuple[Any, ...]], list[Any], Any]:
    rows = yield (sql, ())
    return rows[0][0]


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "index.db"
    open_writer(path).close()
    return path


def test_a_query_past_its_time_is_stopped_and_others_are_answered_meanwhile(db: Path) -> None:
    async def scenario() -> tuple[list[Any], float, int]:
        pool = ReadPool(db, query_seconds=0.5)
        await pool.open()
        try:
            heavy = [asyncio.ensure_future(pool.run(one(SLOW))) for _ in range(2)]
            await asyncio.sleep(0)  # (both heavy queries hold a connection first)
            started = time.monotonic()
            quick = await pool.run(one("SELECT 41 + 1"))
            waited = time.monotonic() - started
            outcomes = await asyncio.gather(*heavy, return_exceptions=True)
            again = await pool.run(one("SELECT count(*) FROM turns"))  # (connections reusable)
            assert quick == 42
            return outcomes, waited, again
        finally:
            await pool.close()

    outcomes, waited, again = asyncio.run(scenario())
    assert waited < 0.5  # answered on a free connection, not after the heavy ones
    for outcome in outcomes:
        assert isinstance(outcome, ProtocolError), outcome
        assert outcome.code == TIMEOUT
        assert "ran longer than 0.5 s and was stopped; narrow it" in outcome.message
    assert again == 0


def test_a_query_whose_client_went_away_is_stopped_not_left_running(db: Path) -> None:
    async def scenario() -> tuple[float, Any]:
        pool = ReadPool(db, size=1, query_seconds=60)
        await pool.open()
        try:
            heavy = asyncio.ensure_future(pool.run(one(SLOW)))
            for _ in range(3):
                await asyncio.sleep(0)  # (a yield: its statement goes to aiosqlite's thread)
            heavy.cancel()
            started = time.monotonic()
            answer = await pool.run(one("SELECT 6 * 7"))  # the one connection, free again
            return time.monotonic() - started, answer
        finally:
            await pool.close()

    waited, answer = asyncio.run(scenario())
    assert answer == 42
    assert waited < 5  # (not the seconds the counting query would have gone on for)
