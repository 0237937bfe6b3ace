"""``doc_freq`` searches (the prompt hook's): rarity counted in sessions through
FTS5, common words left out of the match, turns with a rare word first."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from backscroll.model import ReadResult, Session, Turn
from backscroll.protocol import SearchParams
from backscroll.store import open_writer
from backscroll.store.queries import run_sync
from backscroll.store.search import search
from backscroll.store.writer import FileStat, IndexWriter, Update
from backscroll.wording import worded

LONG = "we settled on zqxident42 for the flag. " + "and then some more talk about it " * 30


def sessions() -> dict[str, list[str]]:
    out = {f"filler-{i}": ["please check the build", "needed some more coffee"] for i in range(30)}
    out.update({f"topic-{i}": ["vexil needed", "vexil again", "vexil done"] for i in range(5)})
    out["target"] = ["hello", LONG]
    out["stems"] = ["the tokenizers were rewritten", "tokenizer tests pass"]
    return out


@pytest.fixture(scope="module")
def writer(tmp_path_factory: pytest.TempPathFactory) -> Iterator[IndexWriter]:
    w = open_writer(tmp_path_factory.mktemp("rarity") / "index.db")
    for n, (session, texts) in enumerate(sessions().items()):
        turns = tuple(
            Turn(session, f"k{i}", "user", t, 1_700_000_000.0 + n * 10 + i, seq=i)
            for i, t in enumerate(texts)
        )
        w.apply(
            Update(
                path=f"/{n}.jsonl",
                host="codex",
                stat=FileStat(size=1, mtime_ns=1, inode=1),
                reader_version=1,
                based_on=None,
                fresh=True,
                result=ReadResult(turns=turns, sessions=(Session(session),), position=1),
            )
        )
    yield w
    w.close()


def ask(writer: IndexWriter, query: str, **params: Any) -> dict[str, Any]:
    p = SearchParams(query=query, any=True, fallback=False, count=False, limit=3, **params)
    result: dict[str, Any] = run_sync(writer.conn, search(p, fts=True))
    return worded(result)


def test_rarity_counts_sessions_through_fts5_stems_and_leaves_out_the_caller(
    writer: IndexWriter,
) -> None:
    result = ask(writer, "tokenizer vexil needed zqxident42", doc_freq=True)
    assert result["rarity"] == {
        "sessions": 37,
        "terms": {"tokenizer": 1, "vexil": 5, "needed": 35, "zqxident42": 1},
        "cap": 500,
    }
    mine = ask(writer, "tokenizer", doc_freq=True, exclude_session="stems")["rarity"]
    assert mine["sessions"] == 36 and mine["terms"] == {"tokenizer": 0}
    assert "rarity" not in ask(writer, "tokenizer")


def test_turns_with_a_rare_word_come_first_and_common_words_are_left_out(
    writer: IndexWriter,
) -> None:
    plain = ask(writer, "zqxident42 vexil")
    rare_first = ask(writer, "zqxident42 vexil", doc_freq=True)
    assert plain["hits"][0]["session_id"] != "target"  # bm25 puts the long turn lower
    assert rare_first["hits"][0]["session_id"] == "target"
    common = ask(writer, "needed please", doc_freq=True)
    assert common["hits"] == [] and "every word is common" in common["message"]
