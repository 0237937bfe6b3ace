"""``backscroll search --team``: ranked full-text search of the team database.

PostgreSQL's ``websearch_to_tsquery`` takes the words as typed (quotes for a
phrase, ``or``, ``-word``) and never fails on punctuation; hits are ranked by
``ts_rank_cd`` and come back in the local search's shape, plus the machine and
the owner of each turn. Row-level security decides what the caller sees.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Any

from backscroll.config import Config
from backscroll.errors import BackscrollError

SCHEMA = 1
_START, _END = "\x02", "\x03"


def _iso(ts: float | None) -> str | None:
    if ts is None:
        return None
    return datetime.fromtimestamp(ts, tz=UTC).isoformat().replace("+00:00", "Z")


def _excerpt(marked: str, limit: int) -> tuple[str, list[list[int]]]:
    """Strip the match markers, keep their offsets, cut to ``limit`` characters."""
    plain: list[str] = []
    spans: list[list[int]] = []
    pos, start = 0, None
    for ch in marked:
        if ch == _START:
            start = pos
        elif ch == _END:
            if start is not None:
                spans.append([start, pos])
            start = None
        else:
            plain.append(ch)
            pos += 1
    text = "".join(plain)
    if len(text) > limit:
        text = text[:limit] + " […]"
        spans = [s for s in spans if s[1] <= limit]
    return text, spans


def search(config: Config, params: dict[str, Any]) -> dict[str, Any]:
    """Search the team database with the local search's parameters."""
    from backscroll.team import driver, sql
    from backscroll.team.connect import check_schema, connect, explain, require_url

    words = str(params.get("query", "")).strip()
    if not words:
        raise BackscrollError("nothing to search for; give some words")
    if params.get("any"):
        words = " or ".join(words.split())
    limits = config.limits
    limit = int(params.get("limit") or limits.max_hits)
    per_turn = int(params.get("max_turn_chars") or limits.max_turn_chars)
    filters: dict[str, Any] = {
        "host": params.get("host"),
        "project": (params.get("project") or "").rstrip("/") or None,
        "role": params.get("role"),
        "session": params.get("session"),
        "since": params.get("since"),
        "until": params.get("until"),
    }
    if params.get("since_days") is not None:
        since = time.time() - float(params["since_days"]) * 86400
        filters["since"] = max(since, filters["since"] or since)
    require_url(config.team)  # no team database: say that, not that a driver is missing
    psycopg = driver()  # before connecting: a missing driver names the extra
    with connect(config.team) as conn:
        try:
            sql.limit_time(conn, config.team.timeout_s)
            check_schema(conn)
            rows = sql.search(conn, words, filters, limit)
        except psycopg.Error as exc:
            raise BackscrollError(f"the team search failed: {explain(exc)}") from exc
    hits = []
    for (machine, owner, host, sid, project, title, role, ts, resume, key, tainted, subagent,
         private, chars, marked, _rank, _total) in rows:  # fmt: skip
        text, spans = _excerpt(marked, per_turn)
        hits.append({
            "session_id": sid, "host": host, "project": project, "title": title,
            "role": role, "timestamp": _iso(ts), "ts": ts, "excerpt": text,
            "matches": spans, "truncated": len(text) < chars, "chars": chars,
            "resume_command": resume, "source_path": None, "tainted": tainted,
            "subagent": subagent, "turn_key": key, "note": None,
            "machine": machine, "owner": owner, "private": private,
        })  # fmt: skip
    total = int(rows[0][-1]) if rows else 0
    return {
        "schema": SCHEMA,
        "query": params.get("query"),
        "hits": hits,
        "total": total,
        "dropped": max(0, total - len(hits)),
        "message": None,
        "reason": None if hits else {"code": "no_match_team", "words": params.get("query")},
        "fallback": None,
        "ranked": True,
        "daemon": False,
        "team": True,
    }
