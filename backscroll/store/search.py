"""Full-text search: every word quoted before FTS5, ranked by bm25, bounded,
with excerpts centred on the first match and a reason code when empty
(:mod:`backscroll.wording` words it for each client).

A query generator like those in :mod:`backscroll.store.queries`.
"""

from __future__ import annotations

import re
import time
from collections.abc import Generator, Sequence
from typing import Any, cast

from backscroll import rarity
from backscroll.protocol import RESULT_SCHEMA, SearchParams
from backscroll.replies import Hit, Reason, SearchReply
from backscroll.store import doc_freq, match, prefix
from backscroll.store.queries import (
    MARK_END,
    MARK_START,
    Row,
    Statements,
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


def typing(parsed: match.Parsed, p: SearchParams) -> match.Parsed:
    """With ``prefix`` (search as you type), the last word also matches the words it
    begins, so results follow the keystrokes."""
    if not prefix_of(p) or not parsed.groups or not parsed.groups[-1]:
        return parsed
    *head, last = parsed.groups[-1]
    if last.prefix:
        return parsed
    # FTS5's own prefix of the word's stem ("running" finds runs and runners): a
    # hint that follows the keystrokes, fast; `word*` typed is matched exactly.
    groups = [*parsed.groups[:-1], [*head, match.Term(last.text, True, loose=True)]]
    return match.Parsed(groups, parsed.exclude, parsed.notes)


def _expanded(
    parsed: match.Parsed,
) -> Generator[tuple[str, tuple[Any, ...]], list[Row], match.Parsed]:
    """Prefix terms with the stems their candidates need (store/prefix.py)."""
    prefixes = [t.text for g in parsed.groups for t in g if t.prefix and not t.loose]
    prefixes += [t.text for t in parsed.exclude if t.prefix and not t.loose]
    prefixes = [p for p in dict.fromkeys(prefixes) if prefix.expandable(p)]
    if not prefixes:
        return parsed
    stems = yield from prefix.held_stems(prefixes, STOPWORDS)
    return match.with_stems(parsed, stems)


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


def search(
    p: SearchParams, *, fts: bool, enabled_hosts: Sequence[str] | None = None
) -> Statements[SearchReply]:
    now = time.time()
    parsed = match.parse(p.query)
    terms = parsed.terms
    out: SearchReply = {
        "schema": RESULT_SCHEMA,
        "query": p.query,
        "hits": [],
        "total": 0,
        "dropped": 0,
        "message": None,
        "reason": None,
        "fallback": None,
        "ranked": fts,
    }
    if parsed.notes:
        out["notes"] = parsed.notes
    if parsed.only_exclusions():
        out["reason"] = {"code": "only_exclusions"}
        return out
    if not terms:
        out["reason"] = {"code": "no_words"}
        return out
    if all(t.lower() in STOPWORDS for t in terms):
        out["reason"] = {"code": "only_common_words", "words": list(terms)}
        return out
    if p.host and enabled_hosts is not None and p.host not in enabled_hosts:
        # A host turned off since keeps what was indexed (as a search without
        # --host shows): only a host with nothing indexed is refused.
        kept = yield ("SELECT EXISTS (SELECT 1 FROM sessions WHERE host = ?)", (p.host,))
        if not kept or not kept[0][0]:
            enabled = list(dict.fromkeys(enabled_hosts))  # (a host may have two readers)
            out["reason"] = {"code": "host_not_enabled", "host": p.host, "enabled": enabled}
            return out
    total_rows = yield ("SELECT EXISTS (SELECT 1 FROM turns)", ())
    if not total_rows or not total_rows[0][0]:
        out["reason"] = {"code": "nothing_indexed"}
        return out
    if p.doc_freq:
        out["rarity"] = yield from doc_freq.rarity(p, terms, fts)
        parsed = doc_freq.without_common(parsed, out["rarity"])
        if not parsed.groups:
            out["reason"] = {"code": "every_word_common"}
            return out
    if fts:
        parsed = typing(parsed, p)
        parsed = yield from _expanded(parsed)
    any_word = p.any
    ids, total = yield from _ranked(p, parsed, any_word, fts, now)
    if p.doc_freq:
        ids = yield from _rare_first(p, parsed, out["rarity"], ids, fts, now)
    # Any of the words, leaving out the common ones (a typo beside "the" must not
    # fall back to every turn holding "the").
    loose = match.Parsed(
        groups=[g for g in parsed.groups if not all(t.text.lower() in STOPWORDS for t in g)],
        exclude=parsed.exclude,
    )
    if not ids and not any_word and len(parsed.groups) > 1 and loose.groups:
        any_ids, any_total = yield from _ranked(p, loose, True, fts, now)
        if any_ids:
            if p.fallback:
                ids, total, any_word = any_ids, any_total, True
                out["fallback"] = "any"
                out["reason"] = {"code": "fallback_any"}
            else:
                out["reason"] = {"code": "some_words_only", "some": any_total}
                return out
    if not ids:
        out["reason"] = yield from _explain_empty(p, parsed, fts, now)
        return out
    hits = yield from _hits(ids, parsed, any_word, fts)
    out["total"] = total
    yield from _bound(out, hits, p)
    return out


def _ranked(
    p: SearchParams, parsed: match.Parsed, any_word: bool, fts: bool, now: float
) -> Generator[tuple[str, tuple[Any, ...]], list[Row], tuple[list[int], int]]:
    where, args = _filters(p, now)
    limit = max(p.limit, 1) if p.limit else 10
    if fts:
        expr = match.fts_match(parsed, any_word)
        checks, check_args = match.prefix_checks(parsed, any_word)
        base = (
            "FROM turns_fts JOIN turns t ON t.id = turns_fts.rowid"
            " JOIN sessions s ON s.id = t.session WHERE turns_fts MATCH ?" + where
        )
        if checks:
            # Candidates in rank order, checked only until the page is full (the
            # inner LIMIT -1 keeps SQLite from moving the check before the sort).
            rows = yield (
                f"SELECT c.id FROM (SELECT t.id AS id {base}"
                " ORDER BY bm25(turns_fts), t.ts DESC LIMIT -1) AS c"
                f" CROSS JOIN turns t ON t.id = c.id WHERE 1{checks} LIMIT ?",
                (expr, *args, *check_args, limit),
            )
        else:
            rows = yield (
                f"SELECT t.id {base} ORDER BY bm25(turns_fts), t.ts DESC LIMIT ?",
                (expr, *args, limit),
            )
        base += checks
        args = [*args, *check_args]
        if not rows:
            return [], 0
        if not p.count:
            return [int(r[0]) for r in rows], len(rows)
        count = yield (f"SELECT count(*) FROM (SELECT 1 {base} LIMIT {COUNT_CAP})", (expr, *args))
    else:
        like, like_args = match.like_where(parsed, any_word)
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


def _rare_first(
    p: SearchParams,
    parsed: match.Parsed,
    found: dict[str, Any],
    ids: list[int],
    fts: bool,
    now: float,
) -> Generator[tuple[str, tuple[Any, ...]], list[Row], list[int]]:
    """Turns holding a rare word ahead of the rest: bm25 weighs a rare word in a
    long turn below two less rare ones in a short turn, and the hook must see it."""
    judge = rarity.Rarity(found["sessions"], found["terms"])
    rare = [[t] for group in parsed.groups for t in group if judge.rare(t.text)]
    if not rare or len(rare) == len(parsed.terms):
        return ids
    only_rare = match.Parsed(groups=rare, exclude=parsed.exclude)
    first, _total = yield from _ranked(p, only_rare, True, fts, now)
    seen = set(first)
    return (first + [i for i in ids if i not in seen])[: max(len(ids), len(first))]


def _explain_empty(
    p: SearchParams, parsed: match.Parsed, fts: bool, now: float
) -> Generator[tuple[str, tuple[Any, ...]], list[Row], Reason]:
    """Why nothing matched, as a code with fields (the clients word it)."""
    words = parsed.as_typed
    starts: list[tuple[float, str]] = []
    if p.since is not None:
        starts.append((p.since, "since"))
    if p.since_days is not None:
        starts.append((now - p.since_days * 86400, "since_days"))
    if starts or p.until is not None:
        undated = {**p.to_dict(), "since_days": None, "since": None, "until": None}
        older = newer = 0
        binding: list[str] = []
        if starts:
            start, name = max(starts)  # the later start is the one that cuts
            before = SearchParams(**{**undated, "until": start})
            found, older = yield from _ranked(before, parsed, p.any, fts, now)
            if found:
                binding.append(name)
            else:
                older = 0
        if p.until is not None:
            after = SearchParams(**{**undated, "since": p.until})
            found, newer = yield from _ranked(after, parsed, p.any, fts, now)
            if found:
                binding.append("until")
            else:
                newer = 0
        if older or newer:
            return {
                "code": "no_match_in_window",
                "words": words,
                "days": p.since_days if "since_days" in binding else None,
                "older": older,
                "newer": newer,
                "cut_by": binding,
            }
    narrowed = [
        name for name in ("host", "project", "role", "session") if getattr(p, name) is not None
    ]
    if narrowed:
        # Blamed only when the words match without them.
        unfiltered = SearchParams(**{**p.to_dict(), **dict.fromkeys(narrowed)})
        found, _count = yield from _ranked(unfiltered, parsed, p.any, fts, now)
        if found:
            return {"code": "no_match_with_filters", "words": words, "filters": narrowed}
    if parsed.exclude:
        kept = match.Parsed(groups=parsed.groups)
        counted = SearchParams(**{**p.to_dict(), "count": True})
        found, count = yield from _ranked(counted, kept, p.any, fts, now)
        if found:
            excluded = [t.text + ("*" if t.prefix else "") for t in parsed.exclude]
            return {"code": "all_excluded", "words": words, "excluded": excluded, "count": count}
    if any(" " in term for term in parsed.terms):
        return {"code": "no_match", "words": words, "phrase": True}
    return {"code": "no_match", "words": words}


def _hits(
    ids: list[int], parsed: match.Parsed, any_word: bool, fts: bool
) -> Generator[tuple[str, tuple[Any, ...]], list[Row], list[dict[str, Any]]]:
    marks = ",".join("?" * len(ids))
    if fts:
        rows = yield (
            f"SELECT {_HIT_COLS}, highlight(turns_fts, 0, char(2), char(3))"
            " FROM turns_fts JOIN turns t ON t.id = turns_fts.rowid"
            " JOIN sessions s ON s.id = t.session"
            f" WHERE turns_fts MATCH ? AND turns_fts.rowid IN ({marks})",
            (match.fts_match(parsed, any_word), *ids),
        )
        words = [t.text for g in parsed.groups for t in g]
        if words and all(t.checked for g in parsed.groups for t in g):
            # Only prefixes: a mark on a candidate that does not start with one
            # (parallel, for pars*) is taken off.
            rows = [(*r[:-1], prefix.unmark(str(r[-1]), words)) for r in rows]
    else:
        rows = yield (
            f"SELECT {_HIT_COLS}, t.text FROM turns t JOIN sessions s ON s.id = t.session"
            f" WHERE t.id IN ({marks})",
            tuple(ids),
        )
        rows = [(*r[:-1], _mark_plain(str(r[-1]), parsed.terms)) for r in rows]
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
    out: SearchReply, hits: list[dict[str, Any]], p: SearchParams
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
    if kept:
        positions = yield from _positions([hit["_id"] for hit in kept])
        for hit in kept:
            hit["n"] = positions.get(hit["_id"])
    for hit in kept:
        for key in [k for k in hit if k.startswith("_")]:
            del hit[key]
    out["hits"] = cast(list[Hit], kept)  # the private "_" keys are gone
    out["dropped"] = max(out["total"] - len(kept) - out.get("duplicates", 0), 0)
    if out["dropped"] and not out["reason"]:
        out["reason"] = {
            "code": "more_matches",
            "shown": len(kept),
            "total": out["total"],
            "capped": out["total"] >= COUNT_CAP,
            "for_size": out.get("dropped_for_size", 0) > 0,
        }
    return None


def _positions(
    ids: list[int],
) -> Generator[tuple[str, tuple[Any, ...]], list[Row], dict[int, int]]:
    """Each turn's 1-based position in its session, in the order ``session`` reads
    them (so ``show --around n`` and ``read_session(around=n)`` open it)."""
    marks = ",".join("?" * len(ids))
    rows = yield (
        "SELECT t.id, (SELECT count(*) FROM turns u WHERE u.session = t.session"
        " AND (coalesce(u.ts, 0), u.seq, u.id) <= (coalesce(t.ts, 0), t.seq, t.id))"
        f" FROM turns t WHERE t.id IN ({marks})",
        tuple(ids),
    )
    return {int(r[0]): int(r[1]) for r in rows}


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
