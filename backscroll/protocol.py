"""The protocol shared by the daemon and its clients: the wire format
(re-exported from :mod:`backscroll.wire`) and the validated parameter types.

A client's first request may be ``hello`` with its protocol version; a mismatch
is refused with both versions and the fix. Parameters are validated here, so the
daemon, the direct (no-daemon) path and the MCP server accept exactly the same
things.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, fields
from typing import Any

from backscroll.wire import (
    BUSY,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    MAX_SEARCH_LIMIT,
    METHOD_NOT_FOUND,
    PARSE_ERROR,
    PROTOCOL_VERSION,
    REPLY_TOO_LARGE,
    REQUEST_TOO_LARGE,
    RESULT_SCHEMA,
    TIMEOUT,
    VERSION_MISMATCH,
    ProtocolError,
    check_version,
    error,
    parse_request,
    request,
    result,
)

__all__ = [
    "BUSY",
    "INTERNAL_ERROR",
    "INVALID_PARAMS",
    "INVALID_REQUEST",
    "METHOD_NOT_FOUND",
    "PARSE_ERROR",
    "PROTOCOL_VERSION",
    "REPLY_TOO_LARGE",
    "REQUEST_TOO_LARGE",
    "RESULT_SCHEMA",
    "ROLES",
    "TIMEOUT",
    "VERSION_MISMATCH",
    "ActivityParams",
    "LocateParams",
    "ProtocolError",
    "SearchParams",
    "SessionParams",
    "SessionsParams",
    "check_query_length",
    "check_version",
    "error",
    "parse_request",
    "request",
    "result",
]

ROLES = ("user", "assistant", "summary")


def check_query_length(method: str, params: Any, max_chars: int) -> None:
    """Refuse a search whose query text is longer than ``max_chars`` (config
    ``server.max_query_chars``): words past a few KB are a pasted file, not a question."""
    if method != "search" or not isinstance(params, dict):
        return
    query = params.get("query")
    if isinstance(query, str) and len(query) > max_chars:
        raise ProtocolError(
            INVALID_PARAMS,
            f"the query is {len(query)} characters long, more than the {max_chars} allowed "
            "(server.max_query_chars); search for a few distinctive words instead",
        )


def _check(cond: bool, message: str) -> None:
    if not cond:
        raise ProtocolError(INVALID_PARAMS, message)


def _time_value(v: Any) -> bool:
    """Whether ``v`` is absent or a finite number ≥ 0 (days, or Unix seconds): a
    negative or NaN window matches nothing, an infinite one everything."""
    if v is None:
        return True
    if not isinstance(v, int | float) or isinstance(v, bool):
        return False
    try:
        return math.isfinite(float(v)) and v >= 0
    except OverflowError:  # an integer past any float
        return False


@dataclass(frozen=True)
class SearchParams:
    query: str
    host: str | None = None
    project: str | None = None
    role: str | None = None
    since_days: float | None = None
    since: float | None = None  # unix seconds
    until: float | None = None
    session: str | None = None  # session-id prefix
    any: bool = False
    limit: int = 10
    context: int = 0
    max_turn_chars: int = 800
    max_total_chars: int = 6000
    exclude_session: str | None = None
    #: Fall back to any-word when all-words finds nothing (flagged in the result).
    fallback: bool = True
    #: Count every match for ``total``/``dropped``; the prompt hook skips it (speed).
    count: bool = True
    #: Also say in how many other sessions each word occurs (the prompt hook
    #: weighs shared words by it): ``rarity`` in the result; words common in the
    #: index (:func:`backscroll.rarity.is_common`) are left out of the match.
    doc_freq: bool = False
    #: The last word may be unfinished (search as you type): match words it begins.
    prefix: bool = False

    @classmethod
    def from_dict(cls, data: Any) -> SearchParams:
        _check(isinstance(data, dict), "params must be an object")
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        _check(not unknown, f"unknown parameter(s): {', '.join(unknown)}")
        _check(isinstance(data.get("query"), str), "query must be a string")
        for name in ("host", "project", "role", "session", "exclude_session"):
            v = data.get(name)
            _check(v is None or isinstance(v, str), f"{name} must be a string")
        for name in ("since_days", "since", "until"):
            _check(_time_value(data.get(name)), f"{name} must be a finite number ≥ 0")
        for name in ("limit", "context", "max_turn_chars", "max_total_chars"):
            v = data.get(name)
            ok = v is None or (isinstance(v, int) and not isinstance(v, bool) and v >= 0)
            _check(ok, f"{name} must be a whole number ≥ 0")
        for name in ("any", "fallback", "count", "doc_freq", "prefix"):
            v = data.get(name)
            _check(v is None or isinstance(v, bool), f"{name} must be true or false")
        role = data.get("role")
        _check(role is None or role in ROLES, f"role must be one of {', '.join(ROLES)}")
        clean = {k: v for k, v in data.items() if v is not None}
        params = cls(**clean)
        _check(params.limit <= MAX_SEARCH_LIMIT, f"limit must be at most {MAX_SEARCH_LIMIT}")
        _check(params.context <= 50, "context must be at most 50")
        _check(
            params.since is None or params.until is None or params.since < params.until,
            "since must be before until (no turn can be in that window); swap the dates",
        )
        _check(
            params.since_days is None
            or params.until is None
            or time.time() - params.since_days * 86400 < params.until,
            "since_days starts after until (no turn can be in that window); widen or drop one",
        )
        return params

    def to_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


@dataclass(frozen=True)
class SessionsParams:
    host: str | None = None
    project: str | None = None
    since_days: float | None = None
    session: str | None = None
    limit: int = 50

    @classmethod
    def from_dict(cls, data: Any) -> SessionsParams:
        data = data or {}
        _check(isinstance(data, dict), "params must be an object")
        unknown = sorted(set(data) - {f.name for f in fields(cls)})
        _check(not unknown, f"unknown parameter(s): {', '.join(unknown)}")
        for name in ("host", "project", "session"):
            v = data.get(name)
            _check(v is None or isinstance(v, str), f"{name} must be a string")
        _check(_time_value(data.get("since_days")), "since_days must be a finite number ≥ 0")
        lim = data.get("limit", 50)
        _check(isinstance(lim, int) and not isinstance(lim, bool) and 0 < lim <= 10000,
               "limit must be a whole number from 1 to 10000")  # fmt: skip
        return cls(**{k: v for k, v in data.items() if v is not None})


@dataclass(frozen=True)
class SessionParams:
    session: str
    around: int | None = None  # turn number (1-based) to centre on
    window: int = 20
    max_turn_chars: int = 2000
    host: str | None = None

    @classmethod
    def from_dict(cls, data: Any) -> SessionParams:
        _check(isinstance(data, dict), "params must be an object")
        unknown = sorted(set(data) - {f.name for f in fields(cls)})
        _check(not unknown, f"unknown parameter(s): {', '.join(unknown)}")
        _check(isinstance(data.get("session"), str) and bool(data["session"]),
               "session must be a non-empty string (a session id or its prefix)")  # fmt: skip
        for name in ("around", "window", "max_turn_chars"):
            v = data.get(name)
            ok = v is None or (isinstance(v, int) and not isinstance(v, bool) and v >= 0)
            _check(ok, f"{name} must be a whole number ≥ 0")
        _check(data.get("window") is None or data["window"] <= 500, "window must be ≤ 500")
        return cls(**{k: v for k, v in data.items() if v is not None})


@dataclass(frozen=True)
class ActivityParams:
    """Turns per day per host over ``days`` days ending at ``until`` (default: now),
    and the ``projects`` busiest projects of that window."""

    days: int = 90
    until: float | None = None  # unix seconds
    projects: int = 10

    @classmethod
    def from_dict(cls, data: Any) -> ActivityParams:
        data = data or {}
        _check(isinstance(data, dict), "params must be an object")
        unknown = sorted(set(data) - {f.name for f in fields(cls)})
        _check(not unknown, f"unknown parameter(s): {', '.join(unknown)}")
        for name, top in (("days", 3660), ("projects", 100)):
            v = data.get(name)
            ok = v is None or (isinstance(v, int) and not isinstance(v, bool) and 0 < v <= top)
            _check(ok, f"{name} must be a whole number from 1 to {top}")
        v = data.get("until")
        ok = v is None or (
            isinstance(v, int | float) and not isinstance(v, bool) and 0 <= v <= MAX_UNTIL
        )
        _check(ok, f"until must be unix seconds from 0 to {MAX_UNTIL:.0f} (the year 9000)")
        return cls(**{k: v for k, v in data.items() if v is not None})


#: The last second of the year 9000: the days around a later one (or an
#: infinite one) run past the calendar's end (the viewer's limit too).
MAX_UNTIL = 221876927999.0


@dataclass(frozen=True)
class LocateParams:
    """Where one turn (by its key) sits in its session: its 1-based turn number."""

    session: str
    key: str
    host: str | None = None

    @classmethod
    def from_dict(cls, data: Any) -> LocateParams:
        _check(isinstance(data, dict), "params must be an object")
        unknown = sorted(set(data) - {f.name for f in fields(cls)})
        _check(not unknown, f"unknown parameter(s): {', '.join(unknown)}")
        for name in ("session", "key"):
            v = data.get(name)
            _check(isinstance(v, str) and bool(v), f"{name} must be a non-empty string")
        v = data.get("host")
        _check(v is None or isinstance(v, str), "host must be a string")
        return cls(**{k: v for k, v in data.items() if v is not None})
