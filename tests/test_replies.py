"""The typed reply shapes (backscroll.replies) match what the commands print."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from backscroll import replies

GOLDEN = Path(__file__).parent / "golden"


def _fits(data: dict[str, Any], shape: Any, where: str) -> None:
    keys = set(data)
    assert keys <= set(shape.__annotations__), (where, keys - set(shape.__annotations__))
    assert shape.__required_keys__ <= keys, (where, shape.__required_keys__ - keys)


@pytest.mark.parametrize(
    ("golden", "shape", "items", "item"),
    [
        ("search", replies.SearchReply, "hits", replies.Hit),
        ("search_fallback", replies.SearchReply, "hits", replies.Hit),
        ("search_no_match", replies.SearchReply, "hits", replies.Hit),
        ("sessions", replies.SessionsReply, "sessions", replies.SessionItem),
        ("show", replies.SessionReply, "turns", replies.Turn),
    ],
)
def test_each_printed_reply_has_exactly_the_typed_fields(
    golden: str, shape: Any, items: str, item: Any
) -> None:
    data = json.loads((GOLDEN / f"{golden}.json").read_text())
    _fits(data, shape, golden)
    assert bool(data[items]) is (golden != "search_no_match"), golden
    for i, entry in enumerate(data[items]):
        _fits(entry, item, f"{golden}.{items}[{i}]")
    if data.get("reason"):
        assert set(data["reason"]) <= set(replies.Reason.__annotations__)


def test_the_printed_status_carries_the_typed_index_totals() -> None:
    data = json.loads((GOLDEN / "status.json").read_text())
    volatile = {"last_indexed"}  # left out of the golden files (a time)
    assert set(replies.Totals.__annotations__) - volatile <= set(data)
    for host, entry in data["hosts"].items():
        _fits(entry, replies.HostTotals, f"status.hosts.{host}")
