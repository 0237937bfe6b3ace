"""A real PostgreSQL for the team tests: one throwaway cluster per session
(see pgserver.py), one fresh database per test with members alice and bob."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from backscroll.config import TeamConfig
from tests.team.pgserver import PASSWORD, PgServer, bindir, start_server

_numbers = itertools.count(1)


@pytest.fixture(scope="session")
def pg() -> Iterator[PgServer]:
    if bindir() is None:
        pytest.skip("PostgreSQL is not installed (no initdb): apt-get install postgresql")
    pytest.importorskip("psycopg", reason="the team extra is not installed")
    server = start_server()
    assert server is not None
    try:
        yield server
    finally:
        server.destroy()


@dataclass
class TeamDb:
    server: PgServer
    name: str
    password_file: Path

    def team(self, user: str, machine: str, **kwargs: object) -> TeamConfig:
        return TeamConfig(
            url=self.server.url(user, self.name),
            password_file=str(self.password_file),
            machine_id=machine,
            interval_s=0.05,
            max_backoff_s=0.5,
            **kwargs,  # type: ignore[arg-type]
        )

    def rows(self, *columns: str) -> list[tuple[object, ...]]:
        """Every row of the team table, read as the database owner (no RLS)."""
        import psycopg

        cols = ", ".join(columns) or "machine_id, owner, host, session_id, turn_key"
        with psycopg.connect(self.server.admin_dsn(self.name)) as conn:
            return sorted(conn.execute(f"SELECT {cols} FROM backscroll.turns").fetchall())  # type: ignore[arg-type, unused-ignore]


@pytest.fixture
def team_db(pg: PgServer, tmp_path: Path) -> TeamDb:
    # Before the server started, a restarted one from an earlier test is waited for.
    if pg.proc is None:
        pg.start()
    name = f"team{next(_numbers)}"
    pg.create_team_db(name, ["alice", "bob"])
    pw = tmp_path / "pgpassword"
    pw.write_text(PASSWORD + "\n")
    pw.chmod(0o600)
    return TeamDb(pg, name, pw)
