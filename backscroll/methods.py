"""Query methods by name, shared by the daemon, the direct path and the MCP server.

Each takes the raw JSON params, validates them (ProtocolError on bad input) and
returns a query generator to run on a read-only connection.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from backscroll import protocol
from backscroll.store import browse, queries, search

QUERY_METHODS = ("search", "sessions", "session", "activity", "locate")


def build(
    method: str, params: Any, *, fts: bool, enabled_hosts: Sequence[str] | None = None
) -> queries.Query:
    if method == "search":
        return search.search(
            protocol.SearchParams.from_dict(params), fts=fts, enabled_hosts=enabled_hosts
        )
    if method == "sessions":
        return queries.sessions(protocol.SessionsParams.from_dict(params))
    if method == "session":
        return queries.session(protocol.SessionParams.from_dict(params))
    if method == "activity":
        return browse.activity(protocol.ActivityParams.from_dict(params))
    if method == "locate":
        return browse.locate(protocol.LocateParams.from_dict(params))
    raise protocol.ProtocolError(protocol.METHOD_NOT_FOUND, f"unknown method {method!r}")
