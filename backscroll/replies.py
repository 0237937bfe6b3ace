"""The shapes of the query replies (schema 1), typed once for the store that builds
them and the clients that read them: ``search``, ``sessions``, ``session`` (``show``)
and the ``reason`` an empty or short answer carries. ``message`` is filled by each
client from ``reason`` (:mod:`backscroll.wording`); the store leaves it None.

Annotations are evaluated (no ``from __future__ import annotations``) so that
``NotRequired`` shows in ``__required_keys__`` at run time.
"""

from typing import Any, NotRequired, TypedDict


class Reason(TypedDict, total=False):
    """Why an answer is empty or short: a code, and the fields its sentence needs."""

    code: str
    words: Any
    #: The words include a quoted phrase (several words, in that order).
    phrase: bool
    days: float | int | None
    older: int
    #: no_match_in_window: matches after --until, and the filters that cut them
    #: ("since", "since_days", "until").
    newer: int
    cut_by: list[str]
    #: no_such_session: the hosts holding that id, when another was asked for.
    elsewhere: list[str]
    filters: list[str]
    #: all_excluded: the words left out (-word, NOT word), and the matches they hid.
    excluded: list[str]
    count: int
    some: int
    shown: int
    total: int
    capped: bool
    #: more_matches: the result's size budget, not the count asked for, cut the list.
    for_size: bool
    host: str
    enabled: list[str]
    #: session_in_several_hosts: the hosts that hold a session with this id.
    hosts: list[str]
    session: str
    key: str
    candidates: list[dict[str, str]]
    around: int
    until: str


class Context(TypedDict):
    position: str
    role: str
    timestamp: str | None
    text: str
    truncated: bool
    turn_key: str | None
    tainted: bool


class Hit(TypedDict):
    turn_key: str | None
    role: str
    ts: float | None
    timestamp: str | None
    tainted: bool
    subagent: bool
    note: str | None
    host: str
    session_id: str
    project: str | None
    title: str | None
    resume_command: str | None
    source_path: str | None
    excerpt: str
    matches: list[list[int]]
    truncated: bool
    chars: int
    n: int | None
    also_in: NotRequired[list[str]]
    context: NotRequired[list[Context]]


class SearchReply(TypedDict):
    schema: int
    query: str
    hits: list[Hit]
    total: int
    dropped: int
    message: str | None
    reason: Reason | None
    fallback: str | None
    ranked: bool
    notes: NotRequired[list[str]]
    rarity: NotRequired[dict[str, Any]]
    duplicates: NotRequired[int]
    dropped_for_size: NotRequired[int]
    daemon: NotRequired[bool]


class SessionItem(TypedDict):
    host: str
    session_id: str
    project: str | None
    title: str | None
    started: str | None
    last_activity: str | None
    resume_command: str | None
    source_path: str | None
    parent_session_id: str | None
    turns: int


class SessionsReply(TypedDict):
    schema: int
    sessions: list[SessionItem]
    message: str | None
    reason: Reason | None
    daemon: NotRequired[bool]


class SessionInfo(TypedDict):
    host: str
    session_id: str
    project: str | None
    title: str | None
    started: str | None
    last_activity: str | None
    resume_command: str | None
    source_path: str | None
    turns: int


class Turn(TypedDict):
    n: int
    role: str
    timestamp: str | None
    text: str
    truncated: bool
    turn_key: str | None
    tainted: bool
    subagent: bool
    note: str | None


class Window(TypedDict):
    first: int
    last: int
    total: int


class SessionReply(TypedDict):
    schema: int
    session: SessionInfo | None
    turns: list[Turn]
    message: str | None
    reason: Reason | None
    window: NotRequired[Window]
    daemon: NotRequired[bool]


class HostTotals(TypedDict):
    files: int
    missing_files: int
    unreadable_files: int
    sessions: int
    turns: int
    last_indexed: NotRequired[str | None]


class Totals(TypedDict):
    """The index's part of a ``status`` reply (the daemon adds its own state, roots
    and team fields; the direct path adds ``daemon: false``)."""

    hosts: dict[str, HostTotals]
    last_indexed: str | None
