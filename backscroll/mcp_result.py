"""A tool's ``structuredContent``: the JSON result beside the framed text, kept to
the same size limit (``limits.max_total_chars``) as the text.

Claude Code and VS Code hand the structured result to the model, so it is
bounded in its own terms: the characters of its compact JSON, as written on
the wire. Items (hits, turns, sessions) that do not fit are left out from the
end, and counted in ``cut_for_size``; a first item too long to fit whole keeps
only the fields the schema names, with its text cut and ``truncated: true``.
What is left still satisfies the tool's ``outputSchema``: the required fields
are always there.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from backscroll import recall
from backscroll.mcp_tools import SEARCH_OUTPUT, SESSION_OUTPUT, SESSIONS_OUTPUT
from backscroll.wording import worded

#: The text field of each kind of item: the one cut when a single item is too long.
TEXT_OF = {"hits": "excerpt", "turns": "text", "sessions": "title"}

#: A cut text shorter than this says nothing: the item is left out instead.
MIN_TEXT = 40


#: The fields each kind of item declares in its tool's outputSchema: an item cut
#: to fit keeps these (and its flags) and drops the rest (``also_in``, paths).
def _declared(schema: Any, items: str) -> frozenset[str]:
    return frozenset(schema["properties"][items]["items"]["properties"])


_DECLARED = {
    "hits": _declared(SEARCH_OUTPUT, "hits"),
    "turns": _declared(SESSION_OUTPUT, "turns"),
    "sessions": _declared(SESSIONS_OUTPUT, "sessions"),
}


def size(data: Any) -> int:
    """Characters of ``data`` as compact JSON, as the server writes it."""
    return len(json.dumps(data, ensure_ascii=False, separators=(",", ":"), default=str))


def structured(
    result: Mapping[str, Any],
    caller: str | None,
    items: str,
    shown: int,
    budget: int,
    given: Mapping[str, Any],
) -> dict[str, Any]:
    """The JSON result with the same notice and per-turn flags as the text, and
    at most the ``shown`` items the text shows, in at most ``budget`` characters
    (when that holds the result without any item at all)."""
    out: dict[str, Any] = {"notice": recall.HEADER, **result}
    every = [dict(item) for item in out.get(items) or []]
    for item in every:
        if items == "hits":
            item["from_another_session"] = bool(caller) and item.get("session_id") != caller
        if item.get("tainted"):
            item["taint_note"] = recall.TAINT_NOTE
    candidates = every[:shown]
    room = budget - size(_with(out, items, [], len(every), given))
    kept: list[dict[str, Any]] = []
    for item in candidates:
        need = size(item) + (1 if kept else 0)
        if need > room:
            break
        kept.append(item)
        room -= need
    # The fields saying what was cut grow by a digit or a reworded message:
    # measure the whole, and give up items until it fits.
    bounded = _with(out, items, kept, len(every), given)
    while kept and size(bounded) > budget:
        kept.pop()
        bounded = _with(out, items, kept, len(every), given)
    if not kept and candidates:
        first = _cut(candidates[0], TEXT_OF[items], out, items, len(every), given, budget)
        if first is not None:
            bounded = _with(out, items, [first], len(every), given)
    return bounded


def _with(
    out: Mapping[str, Any],
    items: str,
    kept: list[dict[str, Any]],
    every: int,
    given: Mapping[str, Any],
) -> dict[str, Any]:
    """``out`` holding only ``kept`` of its ``every`` items, saying how many were cut."""
    bounded = {**out, items: kept, "cut_for_size": every - len(kept)}
    cut = every - len(kept)
    if not cut:
        return bounded
    if items == "hits":
        bounded["dropped"] = int(out.get("dropped") or 0) + cut
        reason = out.get("reason")
        if not reason or (isinstance(reason, Mapping) and reason.get("code") == "more_matches"):
            total = int(out.get("total") or every)
            bounded["reason"] = {
                "code": "more_matches",
                "shown": len(kept),
                "total": total,
                "capped": bool(isinstance(reason, Mapping) and reason.get("capped")),
                "for_size": True,
            }
            bounded = worded(bounded, "mcp", given)
    elif items == "turns":
        window = out.get("window")
        if isinstance(window, Mapping) and kept:
            bounded["window"] = {**window, "last": kept[-1]["n"]}
    elif not out.get("message"):
        bounded["message"] = (
            f"{len(kept)} session(s) shown; {cut} more left out for size — narrow with "
            "host or project"
        )
    return bounded


def _cut(
    item: dict[str, Any],
    key: str,
    out: Mapping[str, Any],
    items: str,
    every: int,
    given: Mapping[str, Any],
    budget: int,
) -> dict[str, Any] | None:
    """``item`` with its text cut (and its context left out) so the result
    holding it alone fits ``budget``; None when too little of the text would be left."""
    text = str(item.get(key) or "")
    keep = {*_DECLARED[items], "subagent", "taint_note"} - {"context"}
    short = {k: v for k, v in item.items() if k in keep}
    short.update({key: "", "truncated": True})
    if "matches" in short:
        short["matches"] = []
    room = budget - size(_with(out, items, [short], every, given))
    # JSON escapes make a character up to six long (a control character): the
    # longest start of the text that fits is searched for, not guessed.
    best: dict[str, Any] | None = None
    low, high = 0, min(len(text), max(room, 0))
    while low <= high:
        middle = (low + high) // 2
        cut = text[:middle].rstrip()
        short[key] = cut
        if "matches" in item:
            short["matches"] = [m for m in item.get("matches") or [] if m[1] <= len(cut)]
        if size(_with(out, items, [short], every, given)) <= budget:
            best, low = dict(short), middle + 1
        else:
            high = middle - 1
    if best is None or (len(best[key]) < MIN_TEXT and len(best[key]) < len(text)):
        return None  # (too little of the text would be left)
    return best
