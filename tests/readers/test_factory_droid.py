"""Factory Droid reader.

The fixture in ``tests/fixtures/factory-droid`` is HAND-MADE (droid is closed source
and no public sample transcript exists): it follows the "Storage kind" and "What to
index" sections of ``shared/formats/factory-droid/README.md``; see HAND-MADE.md there.
Marker words sit only in content that must stay out of the index.
"""

from __future__ import annotations

from pathlib import Path

from backscroll.model import ReaderOptions
from backscroll.readers.base import HostEnv, parse_time
from backscroll.readers.factory_droid import FactoryDroidReader
from tests.readers.util import (
    fixture,
    grow_file_incrementally,
    line_starts,
    read_fresh,
    role_counts,
)

SID = "3f2a9c1e-7b4d-4e2a-9f61-0c8d5e4b7a21"
NAME = f"{SID}.jsonl"
reader = FactoryDroidReader()


def test_turns_by_role_and_texts() -> None:
    index = read_fresh(reader, fixture("factory-droid", NAME))
    assert role_counts(index) == {"user": 3, "assistant": 3, "summary": 1}
    assert index.texts("user") == [
        "The login page redirects forever after signing in. Find out why.",
        "Search the web for how express-session recommends ordering this.",
        "Thanks, please apply that fix.",
    ]
    assert index.texts("assistant")[0] == "I'll look at the auth middleware first."
    assert index.texts("summary") == [
        "The user asked why login redirects forever; the auth middleware runs before the "
        "session store loads."
    ]
    assert {k for _, k in index.turns} == {"m1", "m2", "m4", "cs1", "m5", "m8", "m10"}


def test_tool_traffic_thinking_injections_and_todos_are_not_searchable() -> None:
    text = " ".join(read_fresh(reader, fixture("factory-droid", NAME)).texts()).lower()
    for word in ("quuxenv", "quagmire", "middlewarezz", "xyzzy", "plugh", "frobnicate", "zorkmid"):
        assert word not in text


def test_session_metadata() -> None:
    session = read_fresh(reader, fixture("factory-droid", NAME)).sessions[SID]
    assert session.title == "Login redirect loop"  # sessionTitle wins over title
    assert session.project == "/Users/alice/Dev/webapp"
    assert session.started_at == parse_time("2025-10-02T09:00:00.000Z")
    assert session.updated_at == parse_time("2025-10-02T09:13:00.000Z")
    assert session.resume_command == f"cd /Users/alice/Dev/webapp && droid --resume {SID}"


def test_assistant_text_after_web_search_is_tainted_until_the_next_prompt() -> None:
    index = read_fresh(reader, fixture("factory-droid", NAME))
    tainted = {k for (_, k), t in index.turns.items() if t.tainted}
    assert tainted == {"m8"}


def test_incremental_reads_equal_a_fresh_read(tmp_path: Path) -> None:
    source = fixture("factory-droid", NAME)
    starts = line_starts(source)
    cuts = sorted({*starts, *(s - 5 for s in starts), 3, source.stat().st_size // 2})
    grown = grow_file_incrementally(reader, source, tmp_path / NAME, cuts)
    fresh = read_fresh(reader, source)
    assert grown.comparable() == fresh.comparable()
    assert grown.sessions == fresh.sessions


def test_malformed_line_is_reported_and_the_rest_indexed(tmp_path: Path) -> None:
    lines = fixture("factory-droid", NAME).read_bytes().splitlines(keepends=True)
    dest = tmp_path / NAME
    dest.write_bytes(b"".join([*lines[:2], b"{not json\n", *lines[2:]]))
    result = reader.read(dest, None, ReaderOptions())
    assert [p.line for p in result.problems] == [3]
    assert len(result.turns) == 7


def test_file_without_session_start_falls_back_to_the_file_name(tmp_path: Path) -> None:
    lines = fixture("factory-droid", NAME).read_bytes().splitlines(keepends=True)
    dest = tmp_path / NAME
    dest.write_bytes(b"".join(lines[1:]))
    index = read_fresh(reader, dest)
    assert (
        index.sessions[SID].title
        == "The login page redirects forever after signing in. Find out why."
    )
    assert index.sessions[SID].resume_command == f"droid --resume {SID}"


def test_roots_and_sources() -> None:
    assert reader.roots(HostEnv(home=Path("/h"))) == [Path("/h/.factory/sessions")]
    windows = HostEnv(home=Path("C:/Users/u"), platform="win32")
    assert reader.roots(windows) == [Path("C:/Users/u/.factory/sessions")]
    session = Path("/h/.factory/sessions/-Users-alice-Dev-webapp") / NAME
    assert reader.source_for(session) == session
    assert reader.source_for(session.with_name(f"{SID}.settings.json")) is None


def _session(tmp_path: Path, *records: str) -> Path:
    path = tmp_path / "s1.jsonl"
    path.write_text("".join(r + "\n" for r in records), encoding="utf-8")
    return path


_START = (
    '{"type":"session_start","id":"s1","title":"New Session","sessionTitle":"New Session",'
    '"cwd":"/p"}'
)
_MENTION = (
    '{"type":"message","id":"u1","timestamp":"2025-10-02T09:00:00.000Z","message":{"role":"user",'
    '"content":[{"type":"text","text":"Explain @src/app.py please"},'
    '{"type":"text","text":"Contents of src/app.py (lines 1-3):\\nimport zorkmidlib\\nrun()"}]}}'
)


def test_mentioned_file_expansion_is_not_part_of_the_prompt(tmp_path: Path) -> None:
    index = read_fresh(reader, _session(tmp_path, _START, _MENTION))
    assert index.texts("user") == ["Explain @src/app.py please"]
    assert "zorkmidlib" not in " ".join(index.texts())


def test_placeholder_title_gives_way_to_the_first_prompt(tmp_path: Path) -> None:
    session = read_fresh(reader, _session(tmp_path, _START, _MENTION)).sessions["s1"]
    assert session.title == "Explain @src/app.py please"
