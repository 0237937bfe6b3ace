"""The team outbox: what the publisher still has to send to PostgreSQL.

Triggers on ``turns`` and ``sessions`` record every committed change to a turn
(inserted, changed, deleted, or its session renamed) as a row naming the turn
(host, session id, turn key), in the same transaction as the change: a crash
either keeps both or neither. They record only while ``meta.team_outbox`` is
``'1'`` (a team URL is configured), so an index without a team pays one
primary-key lookup per written turn and nothing more.

A row says *which* turn changed, not what it became: the publisher reads the
turn as it is now, upserts it (or deletes it remotely if it is gone), and only
then deletes the rows it read. A crash between the two sends the same turn
again, which the remote upsert makes harmless.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

from backscroll.store.queries import Query, run_sync
from backscroll.store.writer import IndexWriter


@dataclass(frozen=True, slots=True)
class OutboxTurn:
    """One turn to publish, as it is in the index now (``text`` None: it is gone)."""

    host: str
    session_id: str
    turn_key: str
    role: str | None
    ts: float | None
    text: str | None
    tainted: bool
    subagent: bool
    project: str | None
    title: str | None
    resume_command: str | None

    @property
    def gone(self) -> bool:
        return self.text is None


@dataclass(frozen=True, slots=True)
class OutboxBatch:
    #: Ids up to and including this one are covered by ``turns``.
    last_id: int
    #: The newest state of each distinct turn named in the batch.
    turns: tuple[OutboxTurn, ...]
    #: When the oldest row of the batch was recorded (Unix seconds).
    oldest: float | None


@dataclass(frozen=True, slots=True)
class OutboxStats:
    pending: int
    #: When the oldest row still waiting was recorded (Unix seconds; None: none waits).
    oldest: float | None


_BATCH = """
SELECT o.id, o.host, o.session_id, o.turn_key, o.created_at, t.role, t.ts, t.text,
       t.tainted, t.subagent, s.project, s.title, s.resume_command
FROM (SELECT * FROM team_outbox ORDER BY id LIMIT ?) o
LEFT JOIN sessions s ON s.host = o.host AND s.session_id = o.session_id
LEFT JOIN turns t ON t.session = s.id AND t.key = o.turn_key
ORDER BY o.id
"""


def enable(writer: IndexWriter, settings: str = "", machine: str = "") -> int:
    """Start recording changes. The first time, and whenever ``settings`` (what
    decides which turns are sent and how: excluded and private projects) or the
    ``machine`` id differs from the last call's, queue every turn already
    indexed, so a newly excluded project is deleted remotely and a newly
    private one re-marked, and ask the publisher to reconcile (see
    :func:`reconcile_query`): what changed while nothing was recorded (a forget
    after a rebuild, or while publishing was off) left no row here. Returns
    how many turns were queued."""
    with writer.transaction():
        rows = dict(
            writer.conn.execute(
                "SELECT key, value FROM meta WHERE key IN"
                " ('team_outbox', 'team_settings', 'team_machine', 'team_reconcile')"
            ).fetchall()
        )
        if (
            rows.get("team_outbox") == "1"
            and rows.get("team_settings", "") == settings
            and rows.get("team_machine", "") == machine
        ):
            return 0
        old = set(json.loads(rows.get("team_reconcile") or "{}").get("machines", []))
        if rows.get("team_machine") and rows["team_machine"] != machine:
            old.add(rows["team_machine"])  # its rows go: this index publishes as ``machine`` now
        old.discard(machine)
        plan = json.dumps({"machines": sorted(old), "at": time.time()})
        writer.conn.executemany(
            "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)",
            [("team_outbox", "1"), ("team_settings", settings), ("team_machine", machine),
             ("team_reconcile", plan)],
        )  # fmt: skip
        cur = writer.conn.execute(
            "INSERT INTO team_outbox (host, session_id, turn_key, created_at)"
            " SELECT s.host, s.session_id, t.key, ? FROM turns t"
            " JOIN sessions s ON s.id = t.session ORDER BY t.id",
            (time.time(),),
        )
        return max(cur.rowcount, 0)


@dataclass(frozen=True, slots=True)
class Reconcile:
    """What the publisher sets right once publishing (re)starts: this machine's
    remote rows that are not among ``local`` (host, session id, turn key) go,
    and so does every row published under ``old_machines``."""

    token: str
    old_machines: tuple[str, ...]
    local: frozenset[tuple[str, str, str]]


def reconcile_query() -> Query:
    """The pending :class:`Reconcile`, or None (read with one snapshot)."""
    rows = yield ("SELECT value FROM meta WHERE key = 'team_reconcile'", ())
    if not rows:
        return None
    token = str(rows[0][0])
    plan = json.loads(token)
    keys = yield (
        "SELECT s.host, s.session_id, t.key FROM turns t JOIN sessions s ON s.id = t.session",
        (),
    )
    return Reconcile(
        token,
        tuple(str(m) for m in plan.get("machines", [])),
        frozenset((str(h), str(sid), str(k)) for h, sid, k in keys),
    )


def reconciled(writer: IndexWriter, token: str) -> None:
    """The reconcile ``token`` names is done (a newer one asked for since stays)."""
    with writer.transaction():
        writer.conn.execute("DELETE FROM meta WHERE key = 'team_reconcile' AND value = ?", (token,))


def disable(writer: IndexWriter) -> None:
    """Stop recording and drop what waits (enabling again re-queues everything)."""
    with writer.transaction():
        writer.conn.execute("DELETE FROM meta WHERE key IN ('team_outbox', 'team_settings')")
        writer.conn.execute("DELETE FROM team_outbox")


def is_enabled(writer: IndexWriter) -> bool:
    row = writer.conn.execute("SELECT value FROM meta WHERE key = 'team_outbox'").fetchone()
    return bool(row and row[0] == "1")


def batch_query(limit: int) -> Query:
    """The oldest ``limit`` outbox rows, resolved to their turns as they are now
    (one statement, so one snapshot); run it with ``run_sync`` or the daemon's pool."""
    rows = yield (_BATCH, (limit,))
    latest: dict[tuple[str, str, str], OutboxTurn] = {}
    for (_id, host, sid, key, _at, role, ts, text, tainted, subagent, project, title,
         resume) in rows:  # fmt: skip
        ident = (str(host), str(sid), str(key))
        latest.pop(ident, None)  # keep the order of each turn's last change
        latest[ident] = OutboxTurn(
            ident[0], ident[1], ident[2], role, ts, text, bool(tainted), bool(subagent),
            project, title, resume,
        )  # fmt: skip
    return OutboxBatch(
        last_id=int(rows[-1][0]) if rows else 0,
        turns=tuple(latest.values()),
        oldest=float(rows[0][4]) if rows else None,
    )


def read_batch(writer: IndexWriter, limit: int) -> OutboxBatch:
    batch: OutboxBatch = run_sync(writer.conn, batch_query(limit))
    return batch


def ack(writer: IndexWriter, last_id: int) -> int:
    """Drop the rows a publish has covered (ids up to ``last_id``)."""
    with writer.transaction():
        cur = writer.conn.execute("DELETE FROM team_outbox WHERE id <= ?", (last_id,))
        return max(cur.rowcount, 0)


_STATS = "SELECT count(*), min(created_at) FROM team_outbox"


def stats(writer: IndexWriter) -> OutboxStats:
    return _stats(writer.conn.execute(_STATS).fetchall())


def stats_query() -> Query:
    """:func:`stats` for the daemon's read-only connections (an index from before
    the outbox existed has none: nothing pending)."""
    rows = yield ("SELECT count(*) FROM sqlite_master WHERE name = 'team_outbox'", ())
    if not rows or not rows[0][0]:
        return OutboxStats(0, None)
    return _stats((yield (_STATS, ())))


def _stats(rows: list[Any]) -> OutboxStats:
    count, oldest = rows[0]
    return OutboxStats(int(count), None if oldest is None else float(oldest))
