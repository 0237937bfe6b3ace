"""Queries for browsing rather than searching: activity over time, and where a
turn sits in its session (so a reader can open a session at a search hit).

Query generators like those in :mod:`backscroll.store.queries`.
"""

from __future__ import annotations

import time
from typing import Any

from backscroll.protocol import RESULT_SCHEMA, ActivityParams, LocateParams
from backscroll.store.queries import Query, iso

DAY = 86400


def activity(p: ActivityParams) -> Query:
    """Turns per UTC day per host over the window, the busiest projects in it, and
    the time of the newest turn (so an empty window can say where the turns are)."""
    until = p.until if p.until is not None else time.time()
    last_day = int(until // DAY)
    first_day = last_day - p.days + 1
    start, end = first_day * DAY, (last_day + 1) * DAY
    rows = yield (
        "SELECT s.host, CAST(t.ts / 86400 AS INTEGER) AS d, count(*)"
        " FROM turns t JOIN sessions s ON s.id = t.session"
        " WHERE t.ts >= ? AND t.ts < ? GROUP BY s.host, d",
        (start, end),
    )
    per_day: dict[int, dict[str, int]] = {}
    hosts: dict[str, int] = {}
    for host, day, n in rows:
        per_day.setdefault(int(day), {})[host] = int(n)
        hosts[host] = hosts.get(host, 0) + int(n)
    projects = yield (
        "SELECT s.project, count(*), count(DISTINCT s.id), max(t.ts)"
        " FROM turns t JOIN sessions s ON s.id = t.session"
        " WHERE t.ts >= ? AND t.ts < ? GROUP BY s.project ORDER BY 2 DESC, 1 LIMIT ?",
        (start, end, p.projects),
    )
    newest = yield ("SELECT max(ts) FROM turns", ())
    days = [
        {"day": (iso(d * DAY) or "")[:10], "hosts": per_day.get(d, {})}
        for d in range(first_day, last_day + 1)
    ]
    total = sum(hosts.values())
    return {
        "schema": RESULT_SCHEMA,
        "from": iso(start),
        "until": iso(end),
        "days": days,
        "hosts": dict(sorted(hosts.items(), key=lambda kv: (-kv[1], kv[0]))),
        "turns": total,
        "projects": [
            {"project": r[0], "turns": int(r[1]), "sessions": int(r[2]), "last": iso(r[3])}
            for r in projects
        ],
        "newest_turn": iso(newest[0][0]) if newest and newest[0][0] is not None else None,
        "message": None,
        "reason": None
        if total
        else {"code": "no_turns_in_days", "days": p.days, "until": days[-1]["day"]},
    }


def locate(p: LocateParams) -> Query:
    """The 1-based number of the turn with key ``p.key`` in session ``p.session``,
    in the order :func:`backscroll.store.queries.session` shows turns."""
    host = " AND host = ?" if p.host else ""
    found = yield (
        f"SELECT id FROM sessions WHERE session_id = ?{host} LIMIT 2",
        (p.session, p.host) if p.host else (p.session,),
    )
    out: dict[str, Any] = {
        "schema": RESULT_SCHEMA,
        "session": p.session,
        "turn": None,
        "message": None,
    }
    if len(found) != 1:
        code = "no_such_session" if not found else "session_in_several_hosts"
        out["reason"] = {"code": code, "session": p.session}
        return out
    sid = int(found[0][0])
    turn = yield (
        "SELECT coalesce(ts, 0), seq, id FROM turns WHERE session = ? AND key = ? LIMIT 1",
        (sid, p.key),
    )
    if not turn:
        out["reason"] = {"code": "no_turn_with_key", "session": p.session, "key": p.key}
        return out
    ts, seq, tid = turn[0]
    before = yield (
        "SELECT count(*) FROM turns WHERE session = ? AND (coalesce(ts, 0), seq, id) <= (?, ?, ?)",
        (sid, ts, seq, tid),
    )
    out["turn"] = int(before[0][0])
    out["reason"] = None
    return out
