"""Search over a real index file: ranking, bounds, empty answers, duplicates."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from backscroll import render
from backscroll.model import ReadResult, Session, Turn
from backscroll.protocol import SearchParams
from backscroll.store import open_writer
from backscroll.store.queries import run_sync
from backscroll.store.search import search
from backscroll.store.writer import FileStat, IndexWriter, Update
from backscroll.wording import worded


@pytest.fixture
def writer(tmp_path: Path) -> Iterator[IndexWriter]:
    w = open_writer(tmp_path / "index.db")
    yield w
    w.close()


def _add(writer: IndexWriter, path: str, host: str, session: str, texts: list[str]) -> None:
    turns = tuple(
        Turn(session, f"k{i}", "user", t, 1_700_000_000.0 + i, seq=i) for i, t in enumerate(texts)
    )
    writer.apply(
        Update(
            path=path,
            host=host,
            stat=FileStat(size=1, mtime_ns=1, inode=1),
            reader_version=1,
            based_on=None,
            fresh=True,
            result=ReadResult(turns=turns, sessions=(Session(session, project="/p"),), position=1),
        )
    )


def _search(writer: IndexWriter, **params: Any) -> dict[str, Any]:
    result: dict[str, Any] = run_sync(writer.conn, search(SearchParams(**params), fts=True))
    return worded(result, "cli", params)


def test_a_turn_copied_into_another_session_is_shown_once(writer: IndexWriter) -> None:
    history = ["we chose the tortoise migration plan", "later remark"]
    _add(writer, "/a.jsonl", "kilo-code", "legacy-task", history)
    _add(writer, "/b.db", "kilo-cli", "ses_migrated", history)
    result = _search(writer, query="tortoise")
    assert len(result["hits"]) == 1
    assert result["hits"][0]["also_in"] in (["ses_migrated"], ["legacy-task"])
    assert result["duplicates"] == 1 and result["dropped"] == 0


def test_the_total_counts_every_match_and_dropped_says_how_many_were_not_shown(
    writer: IndexWriter,
) -> None:
    _add(writer, "/c.jsonl", "codex", "s", [f"walrus number {i}" for i in range(30)])
    result = _search(writer, query="walrus", limit=5)
    assert (len(result["hits"]), result["total"], result["dropped"]) == (5, 30, 25)
    assert result["reason"] == {
        "code": "more_matches", "shown": 5, "total": 30, "capped": False, "for_size": False
    }  # fmt: skip
    assert "showing 5 of 30" in result["message"] and "raise --limit" in result["message"]


def test_a_list_cut_by_its_size_says_so_and_names_the_size_limit_not_the_count(
    writer: IndexWriter,
) -> None:
    _add(writer, "/c.jsonl", "codex", "s", [f"walrus {i} " + "filler " * 60 for i in range(30)])
    result = _search(writer, query="walrus", limit=50, max_total_chars=2000)
    assert 0 < len(result["hits"]) < 30 and result["dropped_for_size"] > 0
    assert result["reason"]["for_size"] is True
    assert "did not fit in the result's size limit" in result["message"]
    assert "raise --max-total-chars" in result["message"] and "--limit" not in result["message"]
    assert render.hits(result, tty=False).endswith("not shown; raise --max-total-chars)")


def test_total_characters_are_bounded_and_the_cut_is_marked(writer: IndexWriter) -> None:
    long = "heron " + "word " * 2000
    _add(writer, "/d.jsonl", "codex", "s", [long, long + "x", long + "y"])
    result = _search(writer, query="heron", max_turn_chars=500, max_total_chars=1200)
    shown = sum(len(h["excerpt"]) for h in result["hits"])
    assert shown <= 1200 + 100  # the marker text itself
    assert all(h["truncated"] for h in result["hits"])
    assert "truncated" in result["hits"][0]["excerpt"]


def test_no_match_in_the_window_says_how_many_are_older(writer: IndexWriter) -> None:
    _add(writer, "/e.jsonl", "codex", "s", ["the ancient pelican decision"])
    result = _search(writer, query="pelican", since_days=7)
    assert result["hits"] == []
    assert result["reason"] == {
        "code": "no_match_in_window",
        "words": "pelican",
        "days": 7,
        "older": 1,
        "newer": 0,
        "cut_by": ["since_days"],
    }
    assert "last 7 days" in result["message"] and "1 match(es) are older" in result["message"]


def test_fts_syntax_in_the_query_is_matched_as_words(writer: IndexWriter) -> None:
    _add(writer, "/f.jsonl", "codex", "s", ["run login_user(--dry-run) in src/auth/handler.py"])
    for query in ["login_user(--dry-run)", "src/auth/handler.py", "NEAR(login user)", '"dry run"']:
        assert _search(writer, query=query)["hits"], query


def test_a_host_not_enabled_lists_each_enabled_host_once(writer: IndexWriter) -> None:
    # goose and hermes have two readers each (database and JSON lines).
    query = search(SearchParams(query="x", host="nosuch"), fts=True,
                   enabled_hosts=["goose", "goose", "hermes", "hermes", "codex"])  # fmt: skip
    result: dict[str, Any] = run_sync(writer.conn, query)
    assert result["reason"]["enabled"] == ["goose", "hermes", "codex"]
    assert "enabled hosts: goose, hermes, codex" in worded(result, "cli", {})["message"]


def test_show_of_an_id_two_hosts_share_asks_for_the_host_instead_of_picking_one(
    writer: IndexWriter,
) -> None:
    from backscroll.protocol import SessionParams
    from backscroll.store.queries import session

    _add(writer, "/a.db", "opencode", "ses_demo01", ["opencode's copy"])
    _add(writer, "/b.db", "kilo-cli", "ses_demo01", ["kilo's copy"])
    both: dict[str, Any] = run_sync(writer.conn, session(SessionParams(session="ses_demo01")))
    assert both["session"] is None
    assert both["reason"]["code"] == "session_in_several_hosts"
    assert sorted(both["reason"]["hosts"]) == ["kilo-cli", "opencode"]
    message = worded(both, "cli", {"session": "ses_demo01"})["message"]
    assert "'ses_demo01' is in several hosts (" in message and message.endswith("with --host")
    one = run_sync(writer.conn, session(SessionParams(session="ses_demo01", host="kilo-cli")))
    assert [t["text"] for t in one["turns"]] == ["kilo's copy"]
