"""``backscroll team ...`` and ``search --team``: the team database from the CLI.

Imported only when one of them runs: the driver (psycopg) stays out of
``backscroll search``'s start-up.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from backscroll.errors import BackscrollError


def search_team(
    args: argparse.Namespace, cfg: Any, params: Callable[[argparse.Namespace, Any], Any]
) -> dict[str, Any]:
    from backscroll.team.query import search

    if getattr(args, "context", None):
        raise BackscrollError("--context is not available with --team; drop one of them")
    result: dict[str, Any] = search(cfg, params(args, cfg))
    return result


def cmd_team_init(args: argparse.Namespace) -> int:
    from backscroll.team import ddl

    if not args.check:
        try:
            sys.stdout.write(ddl.init_sql(args.member or []))
        except ValueError as exc:
            raise BackscrollError(f"--member: {exc}") from exc
        return 0
    from backscroll import config
    from backscroll.team.connect import connect, safe_url, schema_version, sql_user

    cfg = config.load(Path(args.config) if getattr(args, "config", None) else None)
    with connect(cfg.team) as conn:
        version = schema_version(conn)
        user = sql_user(conn)
    where = safe_url(cfg.team.url)
    if version is None:
        print(f"{where}: no backscroll schema; the database owner runs "
              "`backscroll team init | psql postgresql://OWNER@HOST/DB`")  # fmt: skip
        return 1
    if version != ddl.SCHEMA_VERSION:
        fix = (
            "upgrade backscroll"
            if version > ddl.SCHEMA_VERSION
            else "the database owner runs `backscroll team init | psql ...` again"
        )
        print(f"{where}: schema version {version}, this backscroll writes "
              f"{ddl.SCHEMA_VERSION}; {fix}")  # fmt: skip
        return 1
    print(f"{where}: schema version {version} (current), connected as {user}")
    return 0


def register(sub: Any) -> None:
    p = sub.add_parser("team", help="team search on PostgreSQL: set up and check")
    team = p.add_subparsers(dest="team_command", required=True, metavar="COMMAND")
    q = team.add_parser("init", help="print the SQL a database owner runs once (--check: "
                        "check the configured database's schema instead)")  # fmt: skip
    q.add_argument("--member", action="append", metavar="ROLE",
                   help="also create this login role as a team member (repeatable)")  # fmt: skip
    q.add_argument("--check", action="store_true",
                   help="connect with team.url and check the installed schema")  # fmt: skip
    q.set_defaults(func=cmd_team_init)
