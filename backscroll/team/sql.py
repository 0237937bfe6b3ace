"""Every statement backscroll runs on the team's PostgreSQL database.

Kept in one module, as the local index keeps its statements in its own package.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import psycopg

_COLUMNS = (
    "machine_id, host, session_id, turn_key, private, project, title, resume_command,"
    " role, ts, text, tainted, subagent"
)

UPSERT = f"""
INSERT INTO backscroll.turns ({_COLUMNS})
VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)
ON CONFLICT (machine_id, host, session_id, turn_key) DO UPDATE SET
    private = excluded.private, project = excluded.project, title = excluded.title,
    resume_command = excluded.resume_command, role = excluded.role, ts = excluded.ts,
    text = excluded.text, tainted = excluded.tainted, subagent = excluded.subagent,
    published_at = now()
"""

DELETE = """
DELETE FROM backscroll.turns
WHERE machine_id = %s AND host = %s AND session_id = %s AND turn_key = %s
"""

#: One upsert row: the columns of :data:`_COLUMNS`, in order.
Upsert = tuple[str, str, str, str, bool, str | None, str | None, str | None, str,
               float | None, str, bool, bool]  # fmt: skip
Key = tuple[str, str, str, str]


def limit_time(conn: psycopg.Connection[Any], seconds: float) -> None:
    """A statement of this transaction that runs longer than ``seconds`` is
    cancelled by the server (``SET LOCAL``: a pooler's next client keeps its own)."""
    with conn.cursor() as cur:
        cur.execute(
            "SELECT set_config('statement_timeout', %s, true)", (f"{max(int(seconds * 1000), 1)}",)
        )


def machine_keys(conn: psycopg.Connection[Any], machine: str) -> set[tuple[str, str, str]]:
    """(host, session id, turn key) of every row this role published under
    ``machine`` (another member's rows under the same id are theirs)."""
    with conn.cursor() as cur:
        cur.execute(
            "SELECT host, session_id, turn_key FROM backscroll.turns"
            " WHERE machine_id = %s AND owner = current_user",
            (machine,),
        )
        return {(str(h), str(s), str(k)) for h, s, k in cur.fetchall()}


def delete_machines(conn: psycopg.Connection[Any], machines: Sequence[str]) -> int:
    """Delete the rows published under ``machines`` (this role's own: row-level security)."""
    if not machines:
        return 0
    with conn.cursor() as cur:
        cur.execute("DELETE FROM backscroll.turns WHERE machine_id = ANY(%s)", (list(machines),))
        return max(cur.rowcount, 0)


def delete_other_keys(conn: psycopg.Connection[Any], machine: str, prefix: str) -> int:
    """Delete this machine's rows whose turn key does not start with ``prefix``."""
    with conn.cursor() as cur:
        cur.execute(
            "DELETE FROM backscroll.turns WHERE machine_id = %s AND turn_key NOT LIKE %s",
            (machine, prefix.replace("%", r"\%").replace("_", r"\_") + "%"),
        )
        return max(cur.rowcount, 0)


def schema_version(conn: psycopg.Connection[Any]) -> int | None:
    with conn.cursor() as cur:
        cur.execute("SELECT to_regclass('backscroll.meta') IS NOT NULL")
        row = cur.fetchone()
        if not row or not row[0]:
            return None
        cur.execute("SELECT value FROM backscroll.meta WHERE key = 'schema_version'")
        row = cur.fetchone()
    return int(row[0]) if row else None


def publish(
    conn: psycopg.Connection[Any], upserts: Sequence[Upsert], deletes: Sequence[Key]
) -> None:
    """Upserts and deletes in the connection's current transaction."""
    with conn.cursor() as cur:
        if upserts:
            cur.executemany(UPSERT, upserts)
        if deletes:
            cur.executemany(DELETE, deletes)


def current_user(conn: psycopg.Connection[Any]) -> str:
    with conn.cursor() as cur:
        cur.execute("SELECT current_user")
        row = cur.fetchone()
    return str(row[0]) if row else ""


#: Filters of a team search: (SQL condition, how its argument is made).
_FILTERS = {
    "host": "host = %s",
    "project": "project = %s",
    "role": "role = %s",
    "machine": "machine_id = %s",
    "owner": "owner = %s",
    "since": "ts >= %s",
    "until": "ts < %s",
    "session": "session_id LIKE %s",
}

_SEARCH = """
SELECT machine_id, owner, host, session_id, project, title, role, ts, resume_command,
       turn_key, tainted, subagent, private, length(text),
       ts_headline('english', text, q, %s),
       ts_rank_cd(tsv, q) AS rank, count(*) OVER () AS total
FROM backscroll.turns, websearch_to_tsquery('english', %s) AS q
WHERE tsv @@ q{where}
ORDER BY rank DESC, ts DESC NULLS LAST
LIMIT %s
"""


def search(
    conn: psycopg.Connection[Any], query: str, filters: dict[str, Any], limit: int
) -> list[tuple[Any, ...]]:
    """Ranked full-text matches the caller may read (row-level security decides)."""
    where = "".join(f" AND {_FILTERS[k]}" for k in _FILTERS if filters.get(k) is not None)
    args: list[Any] = [_HEADLINE, query]
    for k in _FILTERS:
        value = filters.get(k)
        if value is not None:
            args.append(_like_prefix(value) if k == "session" else value)
    args.append(limit)
    with conn.cursor() as cur:
        cur.execute(_SEARCH.format(where=where), args)
        return list(cur.fetchall())


#: Matched words between \x02 and \x03, as in the local index's excerpts.
_HEADLINE = "StartSel=\x02, StopSel=\x03, MaxWords=60, MinWords=20, MaxFragments=2"


def count_visible(conn: psycopg.Connection[Any]) -> int:
    with conn.cursor() as cur:
        cur.execute("SELECT count(*) FROM backscroll.turns")
        row = cur.fetchone()
    return int(row[0]) if row else 0


def _like_prefix(prefix: str) -> str:
    return prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
