"""Team search: publishing this machine's turns to a shared PostgreSQL, and
searching it.

This is not backscroll's own index (that is SQLite, in :mod:`backscroll.store`):
it holds the PostgreSQL side — the schema a database owner installs once, the
publisher's upserts and deletes, and the team search. The driver (psycopg 3) is
an optional extra, imported only here and only when a team command runs, so
``backscroll search`` without ``--team`` never pays for it.
"""

from __future__ import annotations

from types import ModuleType

from backscroll.errors import BackscrollError

INSTALL = "pip install 'backscroll[team]'"


def driver() -> ModuleType:
    """psycopg, or an error that says how to install it."""
    try:
        import psycopg
    except ImportError as exc:
        raise BackscrollError(
            f"team.url is set but the PostgreSQL driver is not installed ({exc}); "
            f"install it with {INSTALL}"
        ) from exc
    return psycopg
