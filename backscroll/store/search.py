"""Full-text search: every word quoted before FTS5, ranked by bm25, bounded,
with excerpts centred on the first match and an honest sentence when empty.

A query generator like those in :mod:`backscroll.store.queries`.
"""

from __future__ import annotations

import re
import time
from collections.abc import Generator, Sequence
from typing import Any

from backscroll.protocol import RESULT_SCHEMA, SearchParams
from backscroll.store.queries import (
    MARK_END,
    MARK_START,
    Query,
    Row,
    excerpt,
    iso,
    session_filters,
)

COUNT_CAP = 10000

# Words that alone match nearly everything.
_STOP_TEXT = """a an and are as at be but by for from has have he her his i if in into is it
its me my no not of on or our she so that the their them then there these they this to up was we
were what when where which who why will with you your do does did can could would should
how about"""
STOPWORDS = frozenset(_STOP_TEXT.split())

_TOKEN = re.compile(r'"([^"]*)"|(\S+)')


def terms_of(text: str) -> list[str]:
    """Words and "quoted phrases" of a query, in order."""
    out: list[str] = []
    for m in _TOKEN.finditer(text):
        term = (m.group(1) if m.group(1) is not None else m.group(2)).strip()
        if term and re.search(r"\w", term):
            out.append(term)
    return out


def fts_match(terms: list[str], any_word: bool, prefix: bool = False) -> str:
    """An FTS5 MATCH string in which every term is a quoted string: no syntax leaks.
    With ``prefix``, the last term also matches words it begins (``"quok"*``)."""
    quoted = ['"' + t.replace('"', '""') + '"' for t in terms]
    if prefix and quoted:
        quoted[-1] += "*"
    return (" OR " if any_word else " ").join(quoted)


def prefix_of(p: SearchParams) -> bool:
    """Whether the last word is still being typed: asked for, not a quoted phrase, not
    followed by a space, and long enough (a one- or two-letter prefix matches too much)."""
    query = p.query
    if not p.prefix or not query or query[-1].isspace() or query.endswith('"'):
        return False
    last = query.split()[-1]
    return len(last) >= 3 and last.isalnum()


def _filters(p: SearchParams, now: float) -> tuple[str, list[Any]]:
    where, args = session_filters(p.host, p.project, p.session)
    if p.role:
        where.append("t.role = ?")
        args.append(p.role)
    since = p.since
    if p.since_days is not None:
        since = max(since or 0.0, now - p.since_days * 86400)
    if since is not None:
        where.append("t.ts >= ?")
        args.append(since)
    if p.until is not None:
        where.append("t.ts < ?")
        args.append(p.until)
    if p.exclude_session:
        where.append("s.session_id != ?")
        args.append(p.exclude_session)
    return (" AND " + " AND ".join(where)) if where else "", args


_HIT_COLS = (
    "t.id, t.session, t.key, t.seq, t.role, t.ts, t.tainted, t.subagent, t.note, "
    "s.host, s.session_id, s.project, s.title, s.resume_command, s.source_path"
)


def search(p: SearchParams, *, fts: bool, enabled_hosts: Sequence[str] | None = None) -> Query:
    now = time.time()
    terms = terms_of(p.query)
    out: dict[str, Any] = {
        "schema": RESULT_SCHEMA,
        "query": p.query,
        "hits": [],
        "total": 0,
        "dropped": 0,
        "message": None,
        "fallback": None,
        "ranked": fts,
    }
    if not terms:
        out["message"] = "the query has no words to search for; give one or more words"
        return out
    if all(t.lower() in STOPWORDS for t in terms):
        out["message"] = (
            f"the query is made only of common words ({' '.join(terms)}), which would match "
            "nearly everything; add a distinctive word"
        )
        return out
    if p.host and enabled_hosts is not None and p.host not in enabled_hosts:
        out["message"] = (
            f"host {p.host!r} is not enabled or not installed; enabled hosts: "
            f"{', '.join(enabled_hosts) or 'none'} (see `backscroll doctor`)"
        )
        return out
    total_rows = yield ("SELECT EXISTS (SELECT 1 FROM turns)", ())
    if not total_rows or not total_rows[0][0]:
        out["message"] = (
            "nothing indexed yet: start the daemon (`backscroll daemon`) or run "
            "`backscroll index`, then search again"
        )
        return out
    any_word = p.any
    ids, total = yield from _ranked(p, terms, any_word, fts, now)
    if not ids and not any_word and len(terms) > 1:
        any_ids, any_total = yield from _ranked(p, terms, True, fts, now)
        if any_ids:
            if p.fallback:
                ids, total, any_word = any_ids, any_total, True
                out["fallback"] = "any"
                out["message"] = (
                    "no turn has all of the words; showing turns with any of them "
                    "(use fewer words or quote a phrase to be precise)"
                )
            else:
                out["message"] = (
                    f"no turn has all of the words, but {any_total} have some of them; try --any"
                )
                return out
    if not ids:
        out["message"] = yield from _explain_empty(p, terms, fts, now)
        return out
    hits = yield from _hits(ids, terms, any_word, fts, prefix_of(p))
    out["total"] = total
    yield from _bound(out, hits, p)
    return out


def _ranked(
    p: SearchParams, terms: list[str], any_word: bool, fts: bool, now: float
) -> Generator[tuple[str, tuple[Any, ...]], list[Row], tuple[list[int], int]]:
    where, args = _filters(p, now)
    limit = max(p.limit, 1) if p.limit else 10
    if fts:
        match = fts_match(terms, any_word, prefix_of(p))
        base = (
            "FROM turns_fts JOIN turns t ON t.id = turns_fts.rowid"
            " JOIN sessions s ON s.id = t.session WHERE turns_fts MATCH ?" + where
        )
        rows = yield (
            f"SELECT t.id {base} ORDER BY bm25(turns_fts), t.ts DESC LIMIT ?",
            (match, *args, limit),
        )
        if not rows:
            return [], 0
        if not p.count:
            return [int(r[0]) for r in rows], len(rows)
        count = yield (f"SELECT count(*) FROM (SELECT 1 {base} LIMIT {COUNT_CAP})", (match, *args))
    else:
        like, like_args = _like(terms, any_word)
        base = "FROM turns t JOIN sessions s ON s.id = t.session WHERE " + like + where
        rows = yield (
            f"SELECT t.id {base} ORDER BY t.ts DESC LIMIT ?",
            (*like_args, *args, limit),
        )
        if not rows:
            return [], 0
        if not p.count:
            return [int(r[0]) for r in rows], len(rows)
        count = yield (
            f"SELECT count(*) FROM (SELECT 1 {base} LIMIT {COUNT_CAP})",
            (*like_args, *args),
        )
    return [int(r[0]) for r in rows], int(count[0][0])


def _like(terms: list[str], any_word: bool) -> tuple[str, list[str]]:
    parts = ["t.text LIKE ? ESCAPE '\\'" for _ in terms]
    args = ["%" + t.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
            for t in terms]  # fmt: skip
    return "(" + (" OR " if any_word else " AND ").join(parts) + ")", args


def _explain_empty(
    p: SearchParams, terms: list[str], fts: bool, now: float
) -> Generator[tuple[str, tuple[Any, ...]], list[Row], str]:
    words = " ".join(terms)
    if p.since_days is not None or p.since is not None:
        wider = SearchParams(**{**p.to_dict(), "since_days": None, "since": None})
        ids, total = yield from _ranked(wider, terms, p.any, fts, now)
        if ids:
            window = f"the last {p.since_days:g} days" if p.since_days is not None else "the window"
            return (
                f"no match for {words!r} in {window}; {total} match(es) are older — "
                "widen or drop --since-days"
            )
    narrowed = [
        name for name in ("host", "project", "role", "session") if getattr(p, name) is not None
    ]
    if narrowed:
        return (
            f"no match for {words!r} with --{', --'.join(narrowed)}; drop a filter, "
            "use fewer words, or try --any"
        )
    return f"no match for {words!r}; try fewer or other words, or --any"


def _hits(
    ids: list[int], terms: list[str], any_word: bool, fts: bool, prefix: bool = False
) -> Generator[tuple[str, tuple[Any, ...]], list[Row], list[dict[str, Any]]]:
    marks = ",".join("?" * len(ids))
    if fts:
        rows = yield (
            f"SELECT {_HIT_COLS}, highlight(turns_fts, 0, char(2), char(3))"
            " FROM turns_fts JOIN turns t ON t.id = turns_fts.rowid"
            " JOIN sessions s ON s.id = t.session"
            f" WHERE turns_fts MATCH ? AND turns_fts.rowid IN ({marks})",
            (fts_match(terms, any_word, prefix), *ids),
        )
    else:
        rows = yield (
            f"SELECT {_HIT_COLS}, t.text FROM turns t JOIN sessions s ON s.id = t.session"
            f" WHERE t.id IN ({marks})",
            tuple(ids),
        )
        rows = [(*r[:-1], _mark_plain(str(r[-1]), terms)) for r in rows]
    by_id = {int(r[0]): r for r in rows}
    hits: list[dict[str, Any]] = []
    for tid in ids:
        r = by_id.get(tid)
        if r is None:
            continue
        hits.append(
            {
                "_id": tid,
                "_session": int(r[1]),
                "turn_key": r[2],
                "_seq": r[3],
                "role": r[4],
                "ts": r[5],
                "timestamp": iso(r[5]),
                "tainted": bool(r[6]),
                "subagent": bool(r[7]),
                "note": r[8],
                "host": r[9],
                "session_id": r[10],
                "project": r[11],
                "title": r[12],
                "resume_command": r[13],
                "source_path": r[14],
                "_marked": r[15],
            }
        )
    return hits


def _mark_plain(text: str, terms: list[str]) -> str:
    pattern = "|".join(re.escape(t) for t in sorted(terms, key=len, reverse=True))
    return re.sub(f"({pattern})", MARK_START + r"\1" + MARK_END, text, flags=re.IGNORECASE)


def _bound(
    out: dict[str, Any], hits: list[dict[str, Any]], p: SearchParams
) -> Generator[tuple[str, tuple[Any, ...]], list[Row], None]:
    budget = p.max_total_chars or 6000
    per_turn = p.max_turn_chars or 800
    used = 0
    kept: list[dict[str, Any]] = []
    # The same turn can sit in several sessions (a resumed or forked session that
    # copied its parent's history, a chat migrated between hosts): show it once.
    first: dict[tuple[str, str], dict[str, Any]] = {}
    for i, hit in enumerate(hits):
        same = (hit["role"], hit["_marked"].replace(MARK_START, "").replace(MARK_END, ""))
        if same in first:
            shown = first[same]
            if hit["session_id"] != shown["session_id"]:
                also = shown.setdefault("also_in", [])
                if hit["session_id"] not in also:
                    also.append(hit["session_id"])
            out["duplicates"] = out.get("duplicates", 0) + 1
            continue
        first[same] = hit
        text, spans, truncated, full = excerpt(hit.pop("_marked"), per_turn)
        if used + len(text) > budget and kept:
            out["dropped_for_size"] = len(hits) - i
            break
        if used + len(text) > budget:
            room = max(budget - used, 80)
            text = text[:room] + " […truncated: result size limit]"
            spans = [s for s in spans if s[1] <= room]
            truncated = True
        used += len(text)
        hit.update(excerpt=text, matches=spans, truncated=truncated, chars=full)
        if p.context:
            hit["context"] = yield from _context(hit, p.context, per_turn)
            used += sum(len(c["text"]) for c in hit["context"])
        kept.append(hit)
        if used >= budget:
            if i + 1 < len(hits):
                out["dropped_for_size"] = len(hits) - i - 1
            break
    for hit in kept:
        for key in [k for k in hit if k.startswith("_")]:
            del hit[key]
    out["hits"] = kept
    out["dropped"] = max(out["total"] - len(kept) - out.get("duplicates", 0), 0)
    if out["dropped"] and not out["message"]:
        out["message"] = (
            f"showing {len(kept)} of {out['total']}{'+' if out['total'] >= COUNT_CAP else ''}"
            " matches; narrow with filters or raise --limit"
        )
    return None


def _context(
    hit: dict[str, Any], n: int, per_turn: int
) -> Generator[tuple[str, tuple[Any, ...]], list[Row], list[dict[str, Any]]]:
    key = (hit["ts"] if hit["ts"] is not None else 0.0, hit["_seq"], hit["_id"])
    cols = "role, ts, text, key, tainted"
    before = yield (
        f"SELECT {cols} FROM turns WHERE session = ? AND (coalesce(ts, 0), seq, id) < (?, ?, ?)"
        " ORDER BY coalesce(ts, 0) DESC, seq DESC, id DESC LIMIT ?",
        (hit["_session"], *key, n),
    )
    after = yield (
        f"SELECT {cols} FROM turns WHERE session = ? AND (coalesce(ts, 0), seq, id) > (?, ?, ?)"
        " ORDER BY coalesce(ts, 0), seq, id LIMIT ?",
        (hit["_session"], *key, n),
    )
    out: list[dict[str, Any]] = []
    for where, rows in (("before", list(reversed(before))), ("after", after)):
        for r in rows:
            text, _spans, truncated, _full = excerpt(str(r[2]), per_turn)
            out.append(
                {
                    "position": where,
                    "role": r[0],
                    "timestamp": iso(r[1]),
                    "text": text,
                    "truncated": truncated,
                    "turn_key": r[3],
                    "tainted": bool(r[4]),
                }
            )
    return out


# --------------------------------------------------------------------------- sessions
