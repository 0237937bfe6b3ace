"""The query language over a real index file, with FTS5 and without it (LIKE)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from backscroll.model import ReadResult, Session, Turn
from backscroll.protocol import SearchParams
from backscroll.store import match, open_writer
from backscroll.store.queries import run_sync
from backscroll.store.search import search
from backscroll.store.writer import FileStat, IndexWriter, Update
from backscroll.wording import CODES, worded

TURNS = {
    "s-parser": ["the parser crashed on unit test input", "we rewrote the parser tokenizer"],
    "s-parsing": ["parsing is slow in production", "the quick brown fox jumps"],
    "s-other": ["brown fox sleeps", "unit tests pass for the migration"],
    "s-stems": [
        "we are optimizing the hot loop",
        "an optimal plan exists",
        "run it in parallel over each part",
        "the parse_config helper reads yaml",
        "a café near the office",
        "happiness is a passing build",
        "parsing runs in parallel now",
        "using the deploying script while copying and studying the generalization",
    ],
}


@pytest.fixture(scope="module", params=[True, False], ids=["fts5", "like"])
def index(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[IndexWriter, bool]]:
    w = open_writer(tmp_path_factory.mktemp("ql") / "index.db")
    for n, (session, texts) in enumerate(TURNS.items()):
        turns = tuple(
            Turn(session, f"k{i}", "user", t, 1_700_000_000.0 + i, seq=i)
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
                result=ReadResult(
                    turns=turns, sessions=(Session(session, project="/p"),), position=1
                ),
            )
        )
    yield w, bool(request.param)
    w.close()


def ask(index: tuple[IndexWriter, bool], query: str, **params: Any) -> dict[str, Any]:
    writer, fts = index
    result: dict[str, Any] = run_sync(
        writer.conn, search(SearchParams(query=query, limit=50, **params), fts=fts)
    )
    return worded(result)  # the store gives a reason code; the CLI's words for it


def texts(result: dict[str, Any]) -> set[str]:
    return {h["excerpt"] for h in result["hits"]}


def test_a_dash_or_not_leaves_turns_with_the_word_out(index: tuple[IndexWriter, bool]) -> None:
    for query in ("parser -unit", "parser NOT unit"):
        assert texts(ask(index, query)) == {"we rewrote the parser tokenizer"}
    assert texts(ask(index, 'fox -"brown fox sleeps"')) == {"the quick brown fox jumps"}


def test_a_star_matches_a_prefix(index: tuple[IndexWriter, bool]) -> None:
    found = texts(ask(index, "pars*"))
    assert "parsing is slow in production" in found
    assert "the parser crashed on unit test input" in found


def test_a_prefix_finds_the_words_that_start_with_it_not_those_that_share_its_stem(
    index: tuple[IndexWriter, bool],
) -> None:
    """The index holds stems: optimizing is "optim", parallel "parallel". A prefix
    is matched against the words as written, with FTS5 and without it alike."""
    assert texts(ask(index, "optimiz*")) == {"we are optimizing the hot loop"}
    assert texts(ask(index, "optim*")) == {
        "we are optimizing the hot loop", "an optimal plan exists"}  # fmt: skip
    pars = texts(ask(index, "pars*"))
    assert "run it in parallel over each part" not in pars
    assert (
        "parsing is slow in production" in pars and "the parser crashed on unit test input" in pars
    )
    assert texts(ask(index, "conf*")) == {"the parse_config helper reads yaml"}
    assert texts(ask(index, "caf*")) == {"a café near the office"}
    assert texts(ask(index, "happin*")) == {"happiness is a passing build"}
    assert texts(ask(index, "optim* -optimiz*")) == {"an optimal plan exists"}
    assert texts(ask(index, "pars* parallel", fallback=False)) == {"parsing runs in parallel now"}
    # Whole words whose stems are short (us), changed inside (copi, deploi) or cut
    # by many letters (gener), as a prefix and as the viewer's last typed word.
    long_one = "using the deploying script while copying and studying the generalization"
    for word in ("using", "deploying", "copying", "studying", "generalization", "generaliz"):
        assert long_one in texts(ask(index, word + "*")), word
        if word != "generaliz":  # (as you type: FTS5's stemmed prefix, a fast hint)
            assert long_one in texts(ask(index, word, prefix=True)), word
    # Search as you type: the last word matches its stem too, as `search` does.
    typed = texts(ask(index, "parsing", prefix=True))
    assert texts(ask(index, "parsing")) <= typed
    if index[1]:  # (stems exist with FTS5 only)
        running = texts(ask(index, "running", prefix=True))  # stem "run", no word "running"
        assert {"run it in parallel over each part", "parsing runs in parallel now"} <= running
    # In an OR group and with any word wanted, a prefix is checked the same way.
    either = texts(ask(index, "pars* OR zzznothing"))
    assert "run it in parallel over each part" not in either
    assert "parsing is slow in production" in either
    anyway = texts(ask(index, "pars* fox", any=True))
    assert "run it in parallel over each part" not in anyway
    assert {"parsing is slow in production", "brown fox sleeps"} <= anyway
    (hit,) = [h for h in ask(index, "pars*")["hits"] if "parallel" in h["excerpt"]]
    marked = [hit["excerpt"][a:b] for a, b in hit["matches"]]
    assert len(marked) == 1 and "parsing".startswith(marked[0])  # (not parallel)


def test_a_quoted_phrase_stays_a_phrase(index: tuple[IndexWriter, bool]) -> None:
    assert texts(ask(index, '"brown fox"')) == {"brown fox sleeps", "the quick brown fox jumps"}
    assert texts(ask(index, '"fox brown"')) == set()
    assert texts(ask(index, "fox brown")) == {"brown fox sleeps", "the quick brown fox jumps"}


def test_or_finds_either_and_and_is_the_default(index: tuple[IndexWriter, bool]) -> None:
    assert texts(ask(index, "sleeps OR jumps")) == {
        "brown fox sleeps", "the quick brown fox jumps",
    }  # fmt: skip
    assert texts(ask(index, "brown AND sleeps")) == {"brown fox sleeps"}


def test_only_words_to_leave_out_get_a_one_line_explanation(
    index: tuple[IndexWriter, bool],
) -> None:
    result = ask(index, "-parser NOT fox")
    assert result["hits"] == []
    assert "only words to leave out" in result["message"] and "\n" not in result["message"]


def test_near_is_searched_as_words_with_a_note(index: tuple[IndexWriter, bool]) -> None:
    result = ask(index, "NEAR(parser tokenizer)")
    assert texts(result) == {"we rewrote the parser tokenizer"}
    assert result["notes"] == [
        "NEAR(...) is not supported: its words were searched anywhere in a turn"
    ]


def test_every_word_reaches_fts5_quoted_and_the_operators_are_written_by_backscroll() -> None:
    parsed = match.parse('pars* -unit "brown fox" a OR b NOT "x y"* col:v')
    assert match.fts_match(parsed, False) == (
        '(("pars" *) AND ("brown fox") AND ("a" OR "b") AND ("col:v")) NOT ("unit" OR "x y" *)'
    )


FTS5_BITS = st.sampled_from(
    ["AND", "OR", "NOT", "NEAR(", ")", "(", '"', "*", "^", "-", "+", ":", "{", "}", "col:",
     "parser", "fox", "--", "\x00", "'", ";", "\\"]
)  # fmt: skip


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.lists(st.one_of(FTS5_BITS, st.text(max_size=6)), max_size=8).map(" ".join))
def test_whatever_is_typed_gets_hits_or_a_one_line_answer_never_an_error(
    index: tuple[IndexWriter, bool], query: str
) -> None:
    result = ask(index, query)
    assert isinstance(result["hits"], list)
    if not result["hits"]:
        assert result["reason"]["code"] in CODES
        assert result["message"] and "\n" not in result["message"]
