"""The sentence for each reason code a query answers with, worded per client.

The store says *why* an answer is empty or short as data (``"reason": {"code":
"no_match_in_window", "days": 14, "older": 3}``); each client (the CLI, the MCP
tools, the viewer) calls :func:`worded` to fill ``message`` in its own terms: CLI
flags, MCP tool arguments or the viewer's filters. A hint never suggests what
was already given (``--any`` after ``--any``), nor starting the daemon when the
daemon answered. Imported on the CLI's hot path: the standard library only.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing is not imported at run time: this is the CLI's hot path
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from typing import Any

    Words = Callable[[str], str]

#: The name of each search parameter in each client's terms.
_CLI = {
    "host": "--host",
    "project": "--project",
    "role": "--role",
    "session": "--session",
    "since_days": "--since-days",
    "since": "--since",
    "until": "--until",
    "any": "--any",
    "limit": "--limit",
    "max_total_chars": "--max-total-chars",
}
_MCP = {
    "host": "host",
    "project": "project",
    "role": "role",
    "session": "session",
    "since_days": "days",
    "limit": "limit",
}
_VIEWER = {
    "host": "the host filter",
    "project": "the project filter",
    "role": "the role filter",
    "session": "the session filter",
    "since_days": "the days filter",
}
NAMES: dict[str, dict[str, str]] = {
    "cli": _CLI,
    "cli-here": {**_CLI, "project": "--here"},  # (the project given as --here)
    "mcp": _MCP,
    "viewer": _VIEWER,
}


def worded(
    result: Mapping[str, Any], client: str = "cli", given: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """``result`` with ``message`` set from its ``reason`` for ``client`` ("cli",
    "mcp" or "viewer"). ``given`` holds the parameters asked with (protocol names),
    so a hint never repeats one; by default the result's own ``query`` only."""
    out = dict(result)
    reason = out.get("reason")
    if isinstance(reason, dict) and reason.get("code"):
        out["message"] = message(reason, client, given or {}, out.get("daemon"))
    else:
        out.setdefault("message", None)
    return out


def message(
    reason: Mapping[str, Any],
    client: str = "cli",
    given: Mapping[str, Any] | None = None,
    daemon: object = None,
) -> str:
    """The sentence for one reason. ``daemon`` is True when the daemon answered,
    False when the index was read directly, None when not known."""
    names = NAMES.get(client, _CLI)
    given = given or {}
    code = str(reason.get("code"))
    word = _SENTENCES.get(code)
    if word is None:
        return f"no answer ({code})"
    return word(reason, names, given, daemon)


def _any_hint(names: Mapping[str, str], given: Mapping[str, Any]) -> str:
    """``--any`` when the client has that option and it was not given, else ""."""
    flag = names.get("any")
    return "" if flag is None or given.get("any") else flag


def _join(parts: list[str]) -> str:
    """``a``, ``a or b``, ``a, b, or c`` (empty parts left out)."""
    parts = [p for p in parts if p]
    if len(parts) <= 2:
        return " or ".join(parts)
    return ", ".join(parts[:-1]) + ", or " + parts[-1]


def _no_match(r: Mapping[str, Any], n: Mapping[str, str], g: Mapping[str, Any], d: object) -> str:
    flag = _any_hint(n, g)
    tail = f"try fewer or other words, or {flag}" if flag else "try fewer or other words"
    if r.get("phrase"):
        # (`search "two words"` in a shell is a phrase too: the quotes are easy to miss.)
        return (
            f"no match for {r.get('words')!r} with the quoted words side by side, in that "
            f"order; drop the quotes to find them anywhere in a turn, or {tail}"
        )
    return f"no match for {r.get('words')!r}; {tail}"


def _filters(r: Mapping[str, Any], n: Mapping[str, str], g: Mapping[str, Any], d: object) -> str:
    used = ", ".join(n.get(f, f) for f in r.get("filters") or [])
    flag = _any_hint(n, g)
    return f"no match for {r.get('words')!r} with {used}; " + _join(
        ["drop a filter", "use fewer words", f"try {flag}" if flag else ""]
    )


def _excluded(r: Mapping[str, Any], n: Mapping[str, str], g: Mapping[str, Any], d: object) -> str:
    left_out = " or ".join(f"-{w}" for w in r.get("excluded") or [])
    return (
        f"no match for {r.get('words')!r} without {left_out}: {r.get('count')} match(es) hold "
        f"{r.get('words')!r} but also {left_out}; leave out fewer words"
    )


def _window(r: Mapping[str, Any], n: Mapping[str, str], g: Mapping[str, Any], d: object) -> str:
    days = r.get("days")
    window = f"the last {days:g} days" if isinstance(days, int | float) else "the date window"
    counts = []
    if r.get("older"):
        counts.append(f"{r.get('older')} match(es) are older")
    if r.get("newer"):
        counts.append(f"{r.get('newer')} are newer")
    # The filters that cut them (an old reply without ``cut_by``: the days).
    cut = r.get("cut_by") or (["since_days"] if days is not None else [])
    flags = _join([n.get(f, "the dates") for f in dict.fromkeys(cut)]) or "the dates"
    return (
        f"no match for {r.get('words')!r} in {window}; {' and '.join(counts) or 'some match'}"
        f" — widen or drop {flags}"
    )


def _nothing(r: Mapping[str, Any], n: Mapping[str, str], g: Mapping[str, Any], d: object) -> str:
    if d is True:
        return (
            "nothing indexed yet: the daemon is running and indexes what it finds; "
            "`backscroll status` shows its progress and `backscroll doctor` where each "
            "host was looked for"
        )
    return (
        "nothing indexed yet: start the daemon (`backscroll daemon`) or run "
        "`backscroll index`, then search again"
    )


def _some(r: Mapping[str, Any], n: Mapping[str, str], g: Mapping[str, Any], d: object) -> str:
    flag = _any_hint(n, g)
    hint = f"try {flag}" if flag else "use fewer words"
    return f"no turn has all of the words, but {r.get('some')} have some of them; {hint}"


def _more(r: Mapping[str, Any], n: Mapping[str, str], g: Mapping[str, Any], d: object) -> str:
    total = f"{r.get('total')}{'+' if r.get('capped') else ''}"
    if r.get("for_size"):
        # The size budget, not the count, cut the list: more hits would not show.
        budget = n.get("max_total_chars")
        raise_it = f" or raise {budget}" if budget else ""
        return (
            f"showing {r.get('shown')} of {total} matches: the rest did not fit in the "
            f"result's size limit; narrow with filters{raise_it}"
        )
    limit = n.get("limit")
    raise_it = f" or raise {limit}" if limit else ""
    return f"showing {r.get('shown')} of {total} matches; narrow with filters{raise_it}"


def _host(r: Mapping[str, Any], n: Mapping[str, str], g: Mapping[str, Any], d: object) -> str:
    enabled = ", ".join(r.get("enabled") or []) or "none"
    return (
        f"host {r.get('host')!r} is not enabled or not installed; enabled hosts: "
        f"{enabled} (see `backscroll doctor`)"
    )


def _ambiguous(r: Mapping[str, Any], n: Mapping[str, str], g: Mapping[str, Any], d: object) -> str:
    ids = ", ".join(f"{c['session_id']} ({c['host']})" for c in r.get("candidates") or [])
    return f"{r.get('session')!r} is ambiguous: {ids}; give more of the id"


def _several_hosts(
    r: Mapping[str, Any], n: Mapping[str, str], g: Mapping[str, Any], d: object
) -> str:
    hosts = f" ({', '.join(r['hosts'])})" if r.get("hosts") else ""
    flag = n.get("host")
    return f"{r.get('session')!r} is in several hosts{hosts}; give its host" + (
        f" with {flag}" if flag and not g.get("host") else ""
    )


def _no_session(r: Mapping[str, Any], n: Mapping[str, str], g: Mapping[str, Any], d: object) -> str:
    elsewhere = r.get("elsewhere")
    if elsewhere and g.get("host"):
        flag = n.get("host", "host")
        return (
            f"no session id starts with {r.get('session')!r} on {g.get('host')}; it is on "
            f"{', '.join(elsewhere)}: give that {flag}, or drop it"
        )
    how = (
        "`backscroll sessions`"
        if n.get("host") == "--host"
        else ("list_sessions" if n is _MCP else "Sessions")
    )
    return f"no session id starts with {r.get('session')!r}; list them with {how}"


def _no_sessions(
    r: Mapping[str, Any], n: Mapping[str, str], g: Mapping[str, Any], d: object
) -> str:
    narrowed = any(g.get(k) is not None for k in ("host", "project", "since_days", "session"))
    if narrowed:
        return "no sessions match these filters; drop some to see more"
    return "no sessions indexed yet; `backscroll status` shows what is being indexed"


def _past_end(r: Mapping[str, Any], n: Mapping[str, str], g: Mapping[str, Any], d: object) -> str:
    return (
        f"turn {r.get('around')} is past the end: this session has {r.get('total')} turn(s); "
        f"showing the last {r.get('shown')}"
    )


def _fixed(text: str) -> Callable[..., str]:
    return lambda *_args: text


_SENTENCES: dict[str, Callable[..., str]] = {
    "only_exclusions": _fixed(
        "the query has only words to leave out (-word, NOT word); add a word to find, "
        "e.g. `parser -test`"
    ),
    "no_words": _fixed("the query has no words to search for; give one or more words"),
    "only_common_words": lambda r, *_: (
        f"the query is made only of common words ({' '.join(r.get('words') or [])}), which "
        "would match nearly everything; add a distinctive word"
    ),
    "host_not_enabled": _host,
    "nothing_indexed": _nothing,
    "every_word_common": _fixed("every word is common in this index: nothing distinctive to find"),
    "fallback_any": _fixed(
        "no turn has all of the words; showing turns with any of them "
        "(use fewer words or quote a phrase to be precise)"
    ),
    "some_words_only": _some,
    "no_match_in_window": _window,
    "no_match_with_filters": _filters,
    "all_excluded": _excluded,
    "no_match": _no_match,
    "no_match_team": lambda r, n, g, d: (
        "no match in the team database; " + _join(["try fewer words", _any_hint(n, g)])
    ),
    "more_matches": _more,
    "no_sessions": _no_sessions,
    "no_such_session": _no_session,
    "ambiguous_session": _ambiguous,
    "session_in_several_hosts": _several_hosts,
    "no_turn_with_key": lambda r, *_: (
        f"session {r.get('session')!r} has no turn with key {r.get('key')!r}"
    ),
    "session_empty": _fixed("this session has no indexed turns"),
    "window_empty": _fixed("this session has no indexed turns in that window"),
    "past_end": _past_end,
    "no_turns_in_days": lambda r, *_: (
        f"no turns in the {r.get('days')} days up to {r.get('until')}"
    ),
}

#: Every code the store (and the team search) answers with.
CODES = frozenset(_SENTENCES)
