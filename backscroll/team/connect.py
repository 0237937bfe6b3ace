"""Connecting to the team database: URL, password, machine id, schema check.

The password never sits in the URL (config validation refuses one there): it
comes from ``team.password_file`` or from libpq's own ``PGPASSFILE``
(``~/.pgpass``), so it appears in no config dump, log line or error message.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import urlsplit, urlunsplit

from backscroll.config import TeamConfig
from backscroll.errors import BackscrollError
from backscroll.paths import make_dirs
from backscroll.team import INSTALL, driver
from backscroll.team.ddl import SCHEMA_VERSION

if TYPE_CHECKING:
    import psycopg
    from psycopg_pool import ConnectionPool

CONNECT_TIMEOUT_S = 5
_T = TypeVar("_T")
_MACHINE_ID_FILE = "machine-id"


def safe_url(url: str) -> str:
    """The URL with any password replaced by ``***`` (for messages)."""
    try:
        parts = urlsplit(url)
        if parts.password is None:
            return url
        host = parts.hostname or ""
        if parts.port:
            host = f"{host}:{parts.port}"
        user = f"{parts.username}:***@" if parts.username else ":***@"
        return urlunsplit(parts._replace(netloc=user + host))
    except ValueError:
        return "(unreadable URL)"


def _password(team: TeamConfig) -> str | None:
    if not team.password_file:
        return None
    path = Path(os.path.expanduser(team.password_file))
    try:
        return path.read_text(encoding="utf-8").strip("\r\n")
    except OSError as exc:
        raise BackscrollError(
            f"team.password_file {path} cannot be read ({exc.strerror}); create it "
            "(mode 0600) or unset it to use PGPASSFILE"
        ) from exc


def connect_kwargs(team: TeamConfig) -> dict[str, Any]:
    """Keyword arguments for psycopg's connect (besides the URL)."""
    kwargs: dict[str, Any] = {
        "connect_timeout": CONNECT_TIMEOUT_S,
        "application_name": "backscroll",
        # A network that drops packets ends the connection instead of a wait
        # without end: probes after 10 s of silence, and unacknowledged data
        # given up on after team.timeout_s (where the system has the option).
        "keepalives": 1,
        "keepalives_idle": 10,
        "keepalives_interval": 5,
        "keepalives_count": 3,
        "tcp_user_timeout": max(int(team.timeout_s * 1000), 1),
    }
    password = _password(team)
    if password is not None:
        kwargs["password"] = password
    return kwargs


def require_url(team: TeamConfig) -> str:
    if not team.url:
        raise BackscrollError(
            "no team database configured; set team.url (postgresql://USER@HOST/DB) in the "
            "config, and install the driver with " + INSTALL
        )
    return team.url


def connect(team: TeamConfig) -> psycopg.Connection[Any]:
    """One connection (for a CLI command; the daemon uses :func:`open_pool`)."""
    url = require_url(team)  # first: without a URL the driver is not the problem
    pg = driver()
    try:
        conn: psycopg.Connection[Any] = pg.connect(url, **connect_kwargs(team))
    except pg.OperationalError as exc:
        raise BackscrollError(
            f"cannot reach the team database {safe_url(url)} ({first_line(exc)}); check "
            "team.url, the password (team.password_file or PGPASSFILE) and that the server runs"
        ) from exc
    return conn


def open_pool(team: TeamConfig, max_size: int = 2) -> ConnectionPool:
    """A small pool; a connection is checked before use, so one cut by a network
    failure or a server restart is replaced instead of failing a publish."""
    driver()
    from psycopg_pool import ConnectionPool

    pool = ConnectionPool(
        require_url(team), min_size=1, max_size=max_size, kwargs=connect_kwargs(team),
        open=False, check=ConnectionPool.check_connection, reconnect_timeout=0,
        name="backscroll-team",
    )  # fmt: skip
    pool.open(wait=False)
    return pool


def first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


def explain(exc: BaseException) -> str:
    """A database error as a sentence that names the fix."""
    first = first_line(exc)
    state = getattr(exc, "sqlstate", None)
    if state == "42501" or "permission denied" in first:
        return (
            f"the database role lacks a permission ({first}); the database owner makes it a "
            "member: `backscroll team init --member NAME | psql postgresql://OWNER@HOST/DB`"
        )
    if state in ("28P01", "28000") or "password authentication failed" in first:
        return (
            f"the team database refused the login ({first}); check the user in team.url and "
            "the password (team.password_file or PGPASSFILE)"
        )
    if state == "57014":  # query_canceled: statement_timeout
        return (
            f"the team database did not answer in time ({first}); check its load, or raise "
            "team.timeout_s"
        )
    return first


def schema_version(conn: psycopg.Connection[Any]) -> int | None:
    """The installed team schema's version (None: not installed)."""
    from backscroll.team import sql

    return _worded(sql.schema_version, conn)


def sql_user(conn: psycopg.Connection[Any]) -> str:
    """The database role this connection acts as (the owner of what it writes)."""
    from backscroll.team import sql

    return _worded(sql.current_user, conn)


def _worded(query: Callable[[psycopg.Connection[Any]], _T], conn: psycopg.Connection[Any]) -> _T:
    """``query(conn)``, a database error raised as a BackscrollError naming the fix."""
    pg = driver()
    try:
        return query(conn)
    except pg.Error as exc:
        raise BackscrollError(explain(exc)) from exc


def check_schema(conn: psycopg.Connection[Any]) -> int:
    """The version, or an error saying what the database owner must run."""
    version = schema_version(conn)  # (a permission error: BackscrollError, worded)
    if version is None:
        raise BackscrollError(
            "the team database has no backscroll schema; the database owner runs "
            "`backscroll team init | psql postgresql://OWNER@HOST/DB` once"
        )
    if version > SCHEMA_VERSION:
        raise BackscrollError(
            f"the team database's schema is version {version}, newer than this backscroll "
            f"knows ({SCHEMA_VERSION}); upgrade backscroll"
        )
    if version < SCHEMA_VERSION:
        raise BackscrollError(
            f"the team database's schema is version {version}, older than this backscroll's "
            f"({SCHEMA_VERSION}); the database owner runs `backscroll team init | psql ...`"
        )
    return version


def machine_id(team: TeamConfig, data_dir: Path) -> str:
    """``team.machine_id``, else /etc/machine-id, else an id kept in ``data_dir``."""
    if team.machine_id:
        return team.machine_id
    for candidate in (Path("/etc/machine-id"), Path("/var/lib/dbus/machine-id")):
        try:
            value = candidate.read_text(encoding="ascii").strip()
        except (OSError, UnicodeDecodeError):
            continue
        if value:
            return value
    stored = data_dir / _MACHINE_ID_FILE
    try:
        value = stored.read_text(encoding="ascii").strip()
        if value:
            return value
    except (OSError, UnicodeDecodeError):
        pass
    value = uuid.uuid4().hex
    make_dirs(data_dir, 0o700)
    tmp = stored.with_suffix(".tmp")
    tmp.write_text(value + "\n", encoding="ascii")
    os.replace(tmp, stored)
    return value
