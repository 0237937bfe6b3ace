"""Read-only queries, written once for both sync sqlite3 and async aiosqlite.

Each query is a generator that yields ``(sql, args)`` and receives the fetched
rows, then returns its result; :func:`run_sync` drives it on a ``sqlite3``
connection and the daemon drives it on an aiosqlite one. So the daemon, the
direct CLI path and the MCP server share one implementation. Full-text search
is in :mod:`backscroll.store.search`; sessions, one session and the totals here.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Generator, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, TypeVar

from backscroll.model import SKIPPED
from backscroll.replies import (
    HostTotals,
    Reason,
    SessionItem,
    SessionReply,
    SessionsReply,
    Totals,
    Turn,
)
from backscroll.wire import RESULT_SCHEMA

if TYPE_CHECKING:  # (the index command reads totals; it needs no request types)
    from backscroll.protocol import SessionParams, SessionsParams

R = TypeVar("R")
Row = Sequence[Any]
Query = Generator[tuple[str, tuple[Any, ...]], list[Row], Any]
#: A query whose result has a known shape (one of :mod:`backscroll.replies`).
Statements = Generator[tuple[str, tuple[Any, ...]], list[Row], R]

MARK_START, MARK_END = "\x02", "\x03"


def run_sync(conn: Any, query: Query) -> Any:
    """Drive a query generator on a sqlite3 connection."""
    try:
        sql, args = next(query)
        while True:
            rows = conn.execute(sql, args).fetchall()
            sql, args = query.send(rows)
    except StopIteration as stop:
        return stop.value


def iso(ts: float | None) -> str | None:
    if ts is None:
        return None
    return datetime.fromtimestamp(ts, tz=UTC).isoformat().replace("+00:00", "Z")


def like_prefix(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


def excerpt(marked: str, limit: int) -> tuple[str, list[list[int]], bool, int]:
    """Plain excerpt of at most ``limit`` chars centred on the first match.

    Returns (text, match offsets within text, truncated, full length).
    """
    plain: list[str] = []
    spans: list[list[int]] = []
    pos = 0
    start: int | None = None
    for piece in re.split(f"([{MARK_START}{MARK_END}])", marked):
        if piece == MARK_START:
            start = pos
        elif piece == MARK_END:
            if start is not None:
                spans.append([start, pos])
            start = None
        else:
            plain.append(piece)
            pos += len(piece)
    text = "".join(plain)
    full = len(text)
    if full <= limit:
        return text, spans, False, full
    first = spans[0][0] if spans else 0
    begin = max(0, min(first - limit // 3, full - limit))
    end = begin + limit
    cut = text[begin:end]
    prefix = "…" if begin > 0 else ""
    suffix = f" […truncated, {full - end} more chars]" if end < full else ""
    shift = len(prefix) - begin
    kept = [[s + shift, e + shift] for s, e in spans if s >= begin and e <= end]
    return prefix + cut + suffix, kept, True, full


#: A session whose project is the path given (twice, as ``?``), or holds it:
#: ordered by the project's length, the first is the deepest such project.
IN_PROJECT = "(project = ? OR substr(?, 1, length(project) + 1) = project || '/')"


def session_filters(
    host: str | None, project: str | None, session: str | None
) -> tuple[list[str], list[Any]]:
    """WHERE terms (on ``sessions s``) for the host, project and session-id prefix."""
    where: list[str] = []
    args: list[Any] = []
    if host:
        where.append("s.host = ?")
        args.append(host)
    if project:
        # The project the path is in: its own sessions, or (from a subdirectory) those
        # of the deepest indexed project above it, so `--here` works anywhere inside one.
        where.append(f"s.project = (SELECT project FROM sessions WHERE {IN_PROJECT}"
                     " ORDER BY length(project) DESC LIMIT 1)")  # fmt: skip
        path = project.rstrip("/") or "/"
        args.extend([path, path])
    if session:
        where.append("s.session_id LIKE ? ESCAPE '\\'")
        args.append(like_prefix(session))
    return where, args


def sessions(p: SessionsParams) -> Statements[SessionsReply]:
    where, args = session_filters(p.host, p.project, p.session)
    if p.since_days is not None:
        where.append("coalesce(s.updated_at, s.started_at) >= ?")
        args.append(time.time() - p.since_days * 86400)
    clause = (" WHERE " + " AND ".join(where)) if where else ""
    rows = yield (
        "SELECT s.host, s.session_id, s.project, s.title, s.started_at, s.updated_at,"
        " s.resume_command, s.source_path, s.parent_session_id,"
        " (SELECT count(*) FROM turns t WHERE t.session = s.id)"
        f" FROM sessions s{clause}"
        " ORDER BY coalesce(s.updated_at, s.started_at, 0) DESC LIMIT ?",
        (*args, p.limit),
    )
    items: list[SessionItem] = [
        {
            "host": r[0],
            "session_id": r[1],
            "project": r[2],
            "title": r[3],
            "started": iso(r[4]),
            "last_activity": iso(r[5]),
            "resume_command": r[6],
            "source_path": r[7],
            "parent_session_id": r[8],
            "turns": r[9],
        }
        for r in rows
    ]
    reason: Reason | None = None if items else {"code": "no_sessions"}
    return {"schema": RESULT_SCHEMA, "sessions": items, "message": None, "reason": reason}


def _no_session(code: str, p: SessionParams, **fields: Any) -> SessionReply:
    """A ``session`` reply that opens none, saying why."""
    reason: Any = {"code": code, "session": p.session, **fields}
    return {"schema": RESULT_SCHEMA, "session": None, "turns": [], "message": None,
            "reason": reason}  # fmt: skip


def session(p: SessionParams) -> Statements[SessionReply]:
    args: list[Any] = [like_prefix(p.session)]
    host = ""
    if p.host:
        host = " AND host = ?"
        args.append(p.host)
    found = yield (
        "SELECT id, host, session_id, project, title, started_at, updated_at, resume_command,"
        f" source_path FROM sessions WHERE session_id LIKE ? ESCAPE '\\'{host}"
        " ORDER BY session_id = ? DESC LIMIT 6",
        (*args, p.session),
    )
    exact = [r for r in found if r[2] == p.session]
    if len(exact) > 1:  # the same id on two hosts (a chat migrated between them)
        return _no_session("session_in_several_hosts", p, hosts=[r[1] for r in exact])
    if exact:
        found = exact
    if not found and p.host:  # on another host? (say so rather than "no such id")
        other = yield (
            "SELECT DISTINCT host FROM sessions WHERE session_id LIKE ? ESCAPE '\\'"
            " ORDER BY host LIMIT 6",
            (like_prefix(p.session),),
        )
        if other:
            return _no_session("no_such_session", p, elsewhere=[str(h[0]) for h in other])
    if not found:
        return _no_session("no_such_session", p)
    if len(found) > 1:
        candidates = [{"session_id": r[2], "host": r[1]} for r in found[:5]]
        return _no_session("ambiguous_session", p, candidates=candidates)
    r = found[0]
    count = yield ("SELECT count(*) FROM turns WHERE session = ?", (r[0],))
    total = int(count[0][0])
    window = p.window or 20
    offset = max(p.around - 1 - window // 2, 0) if p.around is not None else 0
    past_end = p.around is not None and p.around > total
    if past_end:
        offset = max(total - window, 0)  # the last turns, and a message saying why
    rows = yield (
        "SELECT role, ts, text, key, tainted, subagent, note FROM turns WHERE session = ?"
        " ORDER BY coalesce(ts, 0), seq, id LIMIT ? OFFSET ?",
        (r[0], window, offset),
    )
    turns: list[Turn] = []
    for i, t in enumerate(rows):
        text, _spans, truncated, _full = excerpt(str(t[2]), p.max_turn_chars or 2000)
        turns.append(
            {
                "n": offset + i + 1,
                "role": t[0],
                "timestamp": iso(t[1]),
                "text": text,
                "truncated": truncated,
                "turn_key": t[3],
                "tainted": bool(t[4]),
                "subagent": bool(t[5]),
                "note": t[6],
            }
        )
    return {
        "schema": RESULT_SCHEMA,
        "session": {
            "host": r[1],
            "session_id": r[2],
            "project": r[3],
            "title": r[4],
            "started": iso(r[5]),
            "last_activity": iso(r[6]),
            "resume_command": r[7],
            "source_path": r[8],
            "turns": total,
        },
        "turns": turns,
        "window": {"first": offset + 1, "last": offset + len(turns), "total": total},
        "message": None,
        "reason": _window_reason(turns, p.around if past_end else None, total),
    }


def _window_reason(turns: list[Turn], past: int | None, total: int) -> Reason | None:
    """Why the window holds what it does (None: it holds what was asked for)."""
    if total == 0:
        return {"code": "session_empty"}
    if past is not None:
        return {"code": "past_end", "around": past, "total": total, "shown": len(turns)}
    return None if turns else {"code": "window_empty"}


def totals() -> Statements[Totals]:
    """Per-host files, sessions and turns, and the time of the last completed index."""
    files = yield (
        "SELECT host, count(*), sum(missing), sum(error IS NOT NULL AND NOT missing),"
        " max(indexed_at)"
        " FROM files GROUP BY host",
        (),
    )
    sess = yield ("SELECT host, count(*) FROM sessions GROUP BY host", ())
    turns = yield (
        "SELECT s.host, count(*) FROM turns t JOIN sessions s ON s.id = t.session GROUP BY s.host",
        (),
    )
    hosts: dict[str, HostTotals] = {}

    def entry(h: str) -> HostTotals:
        return hosts.setdefault(
            h, {"files": 0, "missing_files": 0, "unreadable_files": 0, "sessions": 0, "turns": 0}
        )

    last = None
    for h, n, missing, bad, at in files:
        e = entry(h)
        e["files"], e["missing_files"], e["unreadable_files"] = n, missing or 0, bad or 0
        e["last_indexed"] = iso(at)
        last = max(last or 0, at or 0) or None
    for h, n in sess:
        entry(h)["sessions"] = n
    for h, n in turns:
        entry(h)["turns"] = n
    return {"hosts": hosts, "last_indexed": iso(last)}


def _skipped(state: str | None) -> str | None:
    """Why the reader indexed nothing of the file on purpose (its memo's note)."""
    try:
        memo = json.loads(state or "{}")
    except ValueError:
        return None
    reason = memo.get(SKIPPED) if isinstance(memo, dict) else None
    return reason if isinstance(reason, str) else None


def file_report(path: str) -> Query:
    """One file's saved state and what it holds, for ``backscroll explain`` (None:
    the file has no row)."""
    rows = yield (
        "SELECT id, host, size, position, reader_version, indexed_at, problems, error, missing,"
        " state FROM files WHERE path = ?",
        (path,),
    )
    if not rows:
        return None
    fid, host, size, position, version, at, problems, error, missing, state = rows[0]
    counts = yield ("SELECT count(*), count(DISTINCT session) FROM turns WHERE file = ?", (fid,))
    sessions = yield (
        "SELECT s.session_id, s.title FROM sessions s WHERE s.id IN"
        " (SELECT DISTINCT session FROM turns WHERE file = ?) ORDER BY s.updated_at DESC LIMIT 5",
        (fid,),
    )
    return {
        "host": host,
        "size": size,
        "position": position,
        "reader_version": version,
        "indexed_at": iso(at),
        "problems": problems,
        "error": error,
        "missing": bool(missing),
        "skipped": _skipped(state),
        "turns": counts[0][0],
        "sessions": counts[0][1],
        "session_ids": [{"session": s, "title": t} for s, t in sessions],
    }
