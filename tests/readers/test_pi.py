"""Pi reader against the real samples in ``tests/fixtures/pi`` (see SOURCES.md there).

``V1`` is a version-1 file (no ``version``, no entry ids), ``V3`` the current tree form.
"""

from __future__ import annotations

import json
from pathlib import Path

from backscroll.model import Cursor, ReaderOptions
from backscroll.readers.base import HostEnv, parse_time
from backscroll.readers.pi import PiReader
from tests.readers.util import (
    MemoryIndex,
    copy_fixture,
    fixture,
    grow_file_incrementally,
    line_starts,
    read_fresh,
    role_counts,
)

V1 = "2024-01-15T10-30-00-000Z_abc12345-1234-5678-9abc-def012345678.jsonl"
V3 = "agentgrep-example.jsonl"
V1_ID = "abc12345-1234-5678-9abc-def012345678"
V3_ID = "019e0000-0000-7000-8000-000000000001"
reader = PiReader()


def test_v1_sample_turns_by_role() -> None:
    index = read_fresh(reader, fixture("pi", V1))
    assert role_counts(index) == {"user": 2, "assistant": 2}
    assert index.texts("user") == [
        "How do I create a Rust struct with a generic lifetime parameter?",
        "Can you show me a tool call example?",
    ]
    assert index.texts("assistant")[1] == "Let me read a file to demonstrate:"
    assert "struct Reference<'a, T>" in index.texts("assistant")[0]


def test_v3_sample_indexes_messages_and_both_summaries() -> None:
    index = read_fresh(reader, fixture("pi", V3))
    assert role_counts(index) == {"user": 1, "assistant": 1, "summary": 2}
    assert set(index.turns) == {(V3_ID, k) for k in ("u1", "a1", "c1", "b1")}
    assert index.texts("summary") == [
        "Compacted earlier discussion about the parser.",
        "Branch explored an alternate approach.",
    ]
    assert index.turns[(V3_ID, "u1")].timestamp == parse_time("2026-05-30T12:00:02.000Z")


def test_thinking_tool_calls_and_tool_results_are_not_searchable() -> None:
    v1 = " ".join(read_fresh(reader, fixture("pi", V1)).texts())
    v3 = " ".join(read_fresh(reader, fixture("pi", V3)).texts())
    assert "Let me explain with a clear example" not in v1  # thinking block
    assert "main.rs" not in v1  # toolCall arguments
    assert "Hello, world" not in v1  # toolResult
    assert "file contents here" not in v3  # toolResult


def test_session_metadata_title_project_start_and_resume() -> None:
    v3 = read_fresh(reader, fixture("pi", V3)).sessions[V3_ID]
    assert v3.title == "Parser design session"  # session_info name beats the first prompt
    assert v3.project == "/home/user/project"
    assert v3.started_at == parse_time("2026-05-30T12:00:00.000Z")
    assert v3.resume_command == f"cd /home/user/project && pi --session {V3_ID}"

    v1 = read_fresh(reader, fixture("pi", V1)).sessions[V1_ID]
    assert v1.title == "How do I create a Rust struct with a generic lifetime parameter?"
    assert v1.project == "/Users/test/project"
    assert v1.updated_at == parse_time("2024-01-15T10:32:00.000Z")


def test_v1_turns_are_keyed_by_byte_offset() -> None:
    index = read_fresh(reader, fixture("pi", V1))
    starts = [0, *line_starts(fixture("pi", V1))]
    assert {k for _, k in index.turns} == {f"o:{starts[i]}" for i in (1, 2, 3, 4)}


def test_incremental_reads_equal_a_fresh_read(tmp_path: Path) -> None:
    for name in (V1, V3):
        source = fixture("pi", name)
        size = source.stat().st_size
        starts = line_starts(source)
        cuts = sorted({*starts, *(s - 7 for s in starts), 1, size // 3, size // 2})
        grown = grow_file_incrementally(reader, source, tmp_path / "--p--" / name, cuts)
        fresh = read_fresh(reader, source)
        assert grown.comparable() == fresh.comparable()
        assert grown.sessions == fresh.sessions


def test_half_written_last_line_waits_for_its_newline(tmp_path: Path) -> None:
    data = fixture("pi", V3).read_bytes()
    dest = tmp_path / V3
    dest.write_bytes(data[:-10])
    result = reader.read(dest, None, ReaderOptions())
    assert result.position == data.rfind(b"\n", 0, len(data) - 1) + 1
    assert result.sessions[0].title == "explain the parser design"  # name line not yet complete


def _migrate_v1_like_pi(lines: list[dict[str, object]]) -> str:
    """What pi's migrateV1ToV2 + migrateV2ToV3 + _rewriteFile write for a v1 file."""
    prev: str | None = None
    out = []
    for n, entry in enumerate(lines):
        if entry["type"] == "session":
            entry["version"] = 3
        else:
            entry["id"] = f"{n:08x}"
            entry["parentId"] = prev
            prev = str(entry["id"])
        out.append(json.dumps(entry, separators=(",", ":"), ensure_ascii=False))
    return "\n".join(out) + "\n"


def test_a_migrated_file_read_fresh_replaces_the_offset_keyed_turns(tmp_path: Path) -> None:
    dest = copy_fixture("pi", V1, tmp_path / "--test-project--")
    index = MemoryIndex()
    index.read(reader, dest)
    before = index.texts()
    lines = [json.loads(raw) for raw in dest.read_text().splitlines()]
    dest.write_text(_migrate_v1_like_pi(lines))
    # The header changed, so the indexer re-reads whole: prev is None.
    index.cursor = None
    result = index.read(reader, dest)
    assert result.replace
    assert index.texts() == before
    assert {k for _, k in index.turns} == {f"{n:08x}" for n in (1, 2, 3, 4)}
    assert index.comparable() == read_fresh(reader, dest).comparable()


def test_malformed_line_is_reported_and_the_rest_indexed(tmp_path: Path) -> None:
    lines = fixture("pi", V3).read_bytes().splitlines(keepends=True)
    dest = tmp_path / V3
    dest.write_bytes(b"".join([*lines[:4], b'{"type":"message",\n', *lines[4:]]))
    result = reader.read(dest, None, ReaderOptions())
    assert [p.line for p in result.problems] == [5]
    assert len(result.turns) == 4


def test_unknown_version_is_unsupported(tmp_path: Path) -> None:
    dest = tmp_path / V3
    data = fixture("pi", V3).read_text().replace('"version":3', '"version":4', 1)
    dest.write_text(data)
    result = reader.read(dest, None, ReaderOptions())
    assert result.unsupported is not None and "version 4" in result.unsupported
    assert result.turns == ()


def test_assistant_text_after_a_web_fetch_is_tainted_until_the_next_prompt(
    tmp_path: Path,
) -> None:
    lines = [
        {"type": "session", "version": 3, "id": "s", "timestamp": "2026-01-01T00:00:00Z"},
        _msg("u1", "user", [{"type": "text", "text": "look it up"}]),
        _msg("a1", "assistant", [{"type": "text", "text": "fetching"}, _call("web_fetch")]),
        _msg("t1", "toolResult", [{"type": "text", "text": "page"}], toolName="web_fetch"),
        _msg("a2", "assistant", [{"type": "text", "text": "the page says"}]),
        _msg("u2", "user", "thanks"),
        _msg("a3", "assistant", [{"type": "text", "text": "welcome"}]),
    ]
    source = tmp_path / "src.jsonl"
    source.write_text("".join(json.dumps(x) + "\n" for x in lines))
    cuts = line_starts(source)
    grown = grow_file_incrementally(reader, source, tmp_path / "--x--" / "s.jsonl", cuts)
    tainted = {k: t.tainted for (_, k), t in grown.turns.items()}
    assert tainted == {"u1": False, "a1": False, "a2": True, "u2": False, "a3": False}


def _msg(entry_id: str, role: str, content: object, **extra: object) -> dict[str, object]:
    message = {"role": role, "content": content, **extra}
    return {
        "type": "message",
        "id": entry_id,
        "timestamp": "2026-01-01T00:00:01Z",
        "message": message,
    }


def _call(name: str) -> dict[str, object]:
    return {"type": "toolCall", "id": "c", "name": name, "arguments": {"url": "x"}}


def test_roots_follow_env_vars_and_default_to_home() -> None:
    home = Path("/h")
    assert reader.roots(HostEnv(home=home)) == [
        home / ".pi" / "agent" / "sessions",
        home / ".omp" / "agent" / "sessions",
    ]
    env = HostEnv(home=home, environ={"PI_CODING_AGENT_DIR": "/p", "OMP_CODING_AGENT_DIR": "/o"})
    assert reader.roots(env) == [Path("/p/sessions"), Path("/o/sessions")]
    windows = HostEnv(home=Path("C:/Users/u"), platform="win32")
    assert reader.roots(windows)[0] == Path("C:/Users/u/.pi/agent/sessions")


def test_source_for_accepts_session_files_only() -> None:
    session = Path("/h/.pi/agent/sessions/--home-u-proj--") / V1
    assert reader.source_for(session) == session
    assert reader.source_for(Path("/h/.pi/agent/settings.json")) is None
    assert reader.source_for(Path("/h/.pi/agent/sessions/--x--/notes.txt")) is None


def test_omp_files_resume_with_omp(tmp_path: Path) -> None:
    dest = copy_fixture("pi", V3, tmp_path / ".omp" / "agent" / "sessions" / "--p--")
    session = read_fresh(reader, dest).sessions[V3_ID]
    assert session.resume_command == f"cd /home/user/project && omp --session {V3_ID}"


def test_state_stays_small_after_many_reads(tmp_path: Path) -> None:
    source = fixture("pi", V3)
    grown = grow_file_incrementally(reader, source, tmp_path / V3, line_starts(source))
    assert isinstance(grown.cursor, Cursor)
    assert set(grown.cursor.state) == {"line", "sid", "cwd", "titled", "tainted"}
