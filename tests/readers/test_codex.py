"""Codex CLI reader, against the samples in ``tests/fixtures/codex``.

The two ``rollout-*``/``agent-sessions-*`` samples are public files copied byte for
byte (see SOURCES.md). No public sample exists for the two older eras, so
``handmade-bare-era.jsonl`` (README section 6, era 2: bare ``{id, timestamp,
instructions}`` first line, bare response items, ``record_type: state`` lines) and
``handmade-typescript.json`` (README section 6, era 1: the TypeScript CLI's
``{session, items}`` document) are hand-made from the README. Tests that append
lines use the record shapes of README sections 2-3.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import zstandard

from backscroll.model import Cursor, ReaderOptions
from backscroll.readers.base import HostEnv, parse_time
from backscroll.readers.codex import CodexReader
from tests.readers.util import (
    MemoryIndex,
    all_text,
    append_lines,
    copy_fixture,
    fixture,
    grow_file_incrementally,
    read_fresh,
    role_counts,
)

HOST = "codex"
READER = CodexReader()
REAL = "rollout-2026-05-11T11-26-55-019e1625-789d-76c0-80ab-3724b5ddb799.lines1-77.jsonl"
REAL_ID = "019e1625-789d-76c0-80ab-3724b5ddb799"
REAL_NAME = f"rollout-2026-05-11T11-26-55-{REAL_ID}.jsonl"
SYNTHETIC = "agent-sessions-stage0-small-synthetic.jsonl"
SYNTHETIC_ID = "019fc8be-3658-7ca3-9e29-000000000000"
BARE = "handmade-bare-era.jsonl"
BARE_ID = "5973b6c0-94b8-487b-a530-2aeb6098ae0e"
TYPESCRIPT = "handmade-typescript.json"
TS_ID = "b1a2c3d4-0000-4000-8000-00000000abcd"


def codex_home(tmp_path: Path) -> Path:
    return tmp_path / ".codex"


def rollout(tmp_path: Path, name: str, new_name: str) -> Path:
    folder = codex_home(tmp_path) / "sessions" / "2026" / "05" / "11"
    return copy_fixture(HOST, name, folder, new_name)


def real(tmp_path: Path) -> Path:
    return rollout(tmp_path, REAL, REAL_NAME)


def synthetic(tmp_path: Path) -> Path:
    return rollout(tmp_path, SYNTHETIC, f"rollout-2026-08-03T10-48-56-{SYNTHETIC_ID}.jsonl")


def assert_hidden(index: MemoryIndex, source: Path, word: str) -> None:
    assert word in source.read_text(encoding="utf-8"), f"{word!r} not in the sample"
    assert word not in all_text(index), f"{word!r} leaked into a turn"


def event(payload: dict[str, Any], ts: str = "2026-05-11T09:00:00.000Z") -> dict[str, Any]:
    return {"timestamp": ts, "type": "event_msg", "payload": payload}


def item(payload: dict[str, Any], ts: str = "2026-05-11T09:00:00.000Z") -> dict[str, Any]:
    return {"timestamp": ts, "type": "response_item", "payload": payload}


def message(role: str, text: str, kind: str) -> dict[str, Any]:
    return item({"type": "message", "role": role, "content": [{"type": kind, "text": text}]})


def cuts_for(path: Path, step: int = 3331) -> list[int]:
    data = path.read_bytes()
    ends = [i + 1 for i, b in enumerate(data) if b == 0x0A]
    return sorted({*range(1, len(data), step), *ends[::2]})


def write_index(tmp_path: Path, *entries: dict[str, Any]) -> None:
    path = codex_home(tmp_path) / "session_index.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    append_lines(path, *entries)


# --------------------------------------------------------------------------- real sample


def test_real_rollout_indexes_each_prompt_and_reply_once(tmp_path: Path) -> None:
    index = read_fresh(READER, real(tmp_path))
    assert role_counts(index) == {"user": 2, "assistant": 4}
    assert index.texts("user") == [
        "show tools",
        "let's update the defailt context compart to 90 in env var",
    ]
    assistant = index.texts("assistant")
    assert assistant[0].startswith("Available tool groups in this session:")
    assert assistant[-1].startswith("I found compact-related hook code under")


def test_tool_output_reasoning_and_injected_context_are_not_searchable(tmp_path: Path) -> None:
    path = real(tmp_path)
    index = read_fresh(READER, path)
    assert_hidden(index, path, "Chunk ID")  # function_call_output
    assert_hidden(index, path, "write_stdin failed")  # function_call_output
    assert_hidden(index, path, "rg --files")  # function_call arguments / exec_command_end
    assert_hidden(index, path, "Filesystem sandboxing")  # developer message
    assert_hidden(index, path, "codebase-memory-mcp")  # injected AGENTS.md "user" message
    assert_hidden(index, path, "<shell>zsh</shell>")  # injected environment context
    assert_hidden(index, path, "gAAAAABqAZLp")  # encrypted reasoning


def test_real_rollout_session_metadata(tmp_path: Path) -> None:
    session = read_fresh(READER, real(tmp_path)).sessions[REAL_ID]
    assert session.project == "/Users/Sample_User/repos/codemie-ai/codemie-code"
    assert session.title == "show tools"
    assert session.started_at == parse_time("2026-05-11T08:26:55.042Z")
    assert session.updated_at == parse_time("2026-05-11T08:33:54.640Z")
    assert session.resume_command == f"codex resume {REAL_ID}"


def test_prompt_keeps_the_event_copy_under_the_first_copys_key(tmp_path: Path) -> None:
    path = real(tmp_path)
    index = read_fresh(READER, path)
    data = path.read_bytes()
    item_offset = data.index(b'"input_text","text":"show tools"')
    item_offset = data.rindex(b"\n", 0, item_offset) + 1
    turn = index.turns[(REAL_ID, f"o:{item_offset}")]
    assert turn.text == "show tools"
    assert turn.timestamp == parse_time("2026-05-11T08:27:17.495Z")  # the user_message event


# --------------------------------------------------------------------------- synthetic sample


def test_synthetic_sample_counts_and_exclusions(tmp_path: Path) -> None:
    path = synthetic(tmp_path)
    index = read_fresh(READER, path)
    # user: "List the files", two legacy user_message events and one item_completed
    # UserMessage; assistant: one reply written three ways (response item, agent
    # message, task_complete); summaries: the five non-empty compacted messages.
    assert role_counts(index) == {"user": 4, "assistant": 1, "summary": 5}
    assert index.texts("user")[0] == "List the files"
    assert index.texts("assistant") == ["Found 2 files."]
    assert_hidden(index, path, "a.txt\\nb.txt")  # custom tool output
    assert_hidden(index, path, "https://example.invalid")  # web search results
    assert_hidden(index, path, "gpt-5.6-luna")  # settings event


def test_reply_after_web_search_is_tainted(tmp_path: Path) -> None:
    index = read_fresh(READER, synthetic(tmp_path))
    (reply,) = [t for t in index.turns.values() if t.role == "assistant"]
    assert reply.tainted
    assert not any(t.tainted for t in index.turns.values() if t.role != "assistant")


def test_synthetic_metadata_ignores_repeated_meta_and_placeholder_cwds(tmp_path: Path) -> None:
    session = read_fresh(READER, synthetic(tmp_path)).sessions[SYNTHETIC_ID]
    assert session.project == "/tmp/repo"
    assert session.started_at == parse_time("2026-08-03T10:48:56.000Z")
    assert session.title == "[trimmed for fixture]"  # thread_name_updated beats the prompt


# --------------------------------------------------------------------------- titles


def test_title_comes_from_newest_non_blank_session_index_line(tmp_path: Path) -> None:
    path = real(tmp_path)
    write_index(
        tmp_path,
        {"id": REAL_ID, "thread_name": "first name", "updated_at": "2026-05-11T09:00:00Z"},
        {"id": "someone-else", "thread_name": "other", "updated_at": "2026-05-11T09:01:00Z"},
        {"id": REAL_ID, "thread_name": "Context compaction env var", "updated_at": "x"},
        {"id": REAL_ID, "thread_name": "  ", "updated_at": "2026-05-11T09:03:00Z"},
    )
    assert read_fresh(READER, path).sessions[REAL_ID].title == "Context compaction env var"


def test_title_upgrades_across_reads_but_never_downgrades(tmp_path: Path) -> None:
    path = real(tmp_path)
    index = read_fresh(READER, path)
    assert index.sessions[REAL_ID].title == "show tools"
    append_lines(path, event({"type": "thread_name_updated", "thread_name": "Compaction env"}))
    index.read(READER, path)
    assert index.sessions[REAL_ID].title == "Compaction env"
    write_index(tmp_path, {"id": REAL_ID, "thread_name": "Indexed name", "updated_at": "x"})
    append_lines(path, event({"type": "token_count", "info": None}))
    index.read(READER, path)
    assert index.sessions[REAL_ID].title == "Indexed name"
    append_lines(
        path,
        event({"type": "thread_name_updated", "thread_name": "Later event name"}),
        event({"type": "user_message", "message": "another prompt", "images": []}),
    )
    index.read(READER, path)
    assert index.sessions[REAL_ID].title == "Indexed name"


# --------------------------------------------------------------------------- incremental


@pytest.mark.parametrize("name", [REAL, SYNTHETIC, BARE])
def test_incremental_reads_equal_a_fresh_read(tmp_path: Path, name: str) -> None:
    new_name = f"rollout-2026-05-11T11-26-55-{REAL_ID}.jsonl"
    fresh = read_fresh(READER, rollout(tmp_path / "a", name, new_name))
    source = fixture(HOST, name)
    dest = codex_home(tmp_path / "b") / "sessions" / new_name
    grown = grow_file_incrementally(READER, source, dest, cuts_for(source))
    assert grown.comparable() == fresh.comparable()
    assert grown.sessions == fresh.sessions


def test_zstd_rollout_gives_the_same_turns_and_keys_as_the_plain_file(tmp_path: Path) -> None:
    plain = real(tmp_path / "plain")
    archived = codex_home(tmp_path / "zst") / "archived_sessions"
    archived.mkdir(parents=True)
    compressed = archived / f"{REAL_NAME}.zst"
    compressed.write_bytes(zstandard.ZstdCompressor().compress(plain.read_bytes()))
    assert READER.source_for(compressed) == compressed
    fresh = read_fresh(READER, plain)
    from_zst = read_fresh(READER, compressed)
    assert from_zst.comparable() == fresh.comparable()
    assert from_zst.sessions == fresh.sessions
    # A second read of the unchanged archive gives the same answer again.
    from_zst.read(READER, compressed)
    assert from_zst.comparable() == fresh.comparable()


def test_a_corrupt_zstd_rollout_is_a_problem_and_keeps_what_came_before(
    tmp_path: Path,
) -> None:
    plain = real(tmp_path / "plain")
    archived = codex_home(tmp_path / "zst") / "archived_sessions"
    archived.mkdir(parents=True)
    good = zstandard.ZstdCompressor().compress(plain.read_bytes())
    middle = len(good) // 2
    compressed = archived / f"{REAL_NAME}.zst"
    compressed.write_bytes(good[:middle] + bytes(64) + good[middle + 64 :])
    result = READER.read(compressed, None, ReaderOptions())
    assert [p.message for p in result.problems if "corrupt zstd stream" in p.message]
    whole = {t.key for t in READER.read(plain, None, ReaderOptions()).turns}
    assert {t.key for t in result.turns} < whole


def test_plain_file_wins_over_its_zstd_twin(tmp_path: Path) -> None:
    plain = real(tmp_path)
    twin = plain.with_name(plain.name + ".zst")
    twin.write_bytes(zstandard.ZstdCompressor().compress(plain.read_bytes()))
    assert READER.source_for(twin) == plain
    assert list(READER.discover(codex_home(tmp_path) / "sessions")) == [plain]


def test_agent_message_is_used_when_no_assistant_item_is_written(tmp_path: Path) -> None:
    path = codex_home(tmp_path) / "sessions" / f"rollout-2026-05-11T09-00-00-{REAL_ID}.jsonl"
    path.parent.mkdir(parents=True)
    meta = {"id": REAL_ID, "timestamp": "2026-05-11T09:00:00Z", "cwd": "/w"}
    append_lines(
        path,
        {"timestamp": "2026-05-11T09:00:00Z", "type": "session_meta", "payload": meta},
        event({"type": "user_message", "message": "hi"}),
        event({"type": "agent_message", "message": "hello from the event"}),
        event({"type": "task_complete", "last_agent_message": "hello from the event"}),
    )
    index = read_fresh(READER, path)
    assert index.texts("assistant") == ["hello from the event"]
    # Once response items appear, the event copies are ignored and nothing doubles.
    append_lines(
        path,
        event({"type": "user_message", "message": "again"}),
        event({"type": "agent_message", "message": "second reply"}),
        message("assistant", "second reply", "output_text"),
    )
    index.read(READER, path)
    assert index.texts("assistant") == ["hello from the event", "second reply"]


def test_paginated_history_takes_prose_from_completed_items(tmp_path: Path) -> None:
    path = codex_home(tmp_path) / "sessions" / f"rollout-2026-05-11T09-00-00-{REAL_ID}.jsonl"
    path.parent.mkdir(parents=True)
    meta = {"id": REAL_ID, "timestamp": "2026-05-11T09:00:00Z", "history_mode": "paginated"}
    user_item = {"type": "UserMessage", "id": "u1", "content": [{"type": "text", "text": "go"}]}
    agent_item = {"type": "AgentMessage", "id": "a1", "content": [{"type": "Text", "text": "ok"}]}
    append_lines(
        path,
        {"timestamp": "2026-05-11T09:00:00Z", "type": "session_meta", "payload": meta},
        message("user", "go", "input_text"),
        event({"type": "item_completed", "turn_id": "t1", "item": user_item}),
        event({"type": "item_completed", "turn_id": "t1", "item": agent_item}),
        message("assistant", "ok", "output_text"),
    )
    index = read_fresh(READER, path)
    assert index.texts() == ["go", "ok"]


# --------------------------------------------------------------------------- older eras


def test_bare_era_rollout_uses_response_items_and_recovers_cwd(tmp_path: Path) -> None:
    path = rollout(tmp_path, BARE, f"rollout-2025-07-14T09-12-03-{BARE_ID}.jsonl")
    index = read_fresh(READER, path)
    assert index.texts("user") == ["why does the widget cache miss on cold start?"]
    assert index.texts("assistant") == ["The cache is only warmed after the first request."]
    assert_hidden(index, path, "Always run ruff")  # <user_instructions>
    assert_hidden(index, path, "warm_cache_zebra")  # tool output
    assert_hidden(index, path, "cachewarmer")  # reasoning summary
    session = index.sessions[BARE_ID]
    assert session.project == "/home/dev/widgets"
    assert session.started_at == parse_time("2025-07-14T09:12:03.118Z")
    assert session.title == "why does the widget cache miss on cold start?"


def test_typescript_document_is_read_whole(tmp_path: Path) -> None:
    path = copy_fixture(HOST, TYPESCRIPT, codex_home(tmp_path) / "sessions")
    path = path.rename(path.with_name(f"rollout-2025-04-22-{TS_ID}.json"))
    assert READER.source_for(path) == path
    result = READER.read(path, None, ReaderOptions())
    assert result.replace
    assert result.position == path.stat().st_size
    assert [(t.key, t.role, t.text) for t in result.turns] == [
        ("msg_u1", "user", "rename the helper to load_config"),
        ("msg_a1", "assistant", "Renamed it in app.py."),
        ("msg_u2", "user", "thanks"),
    ]
    (session,) = result.sessions
    assert session.session_id == TS_ID
    assert session.started_at == parse_time("2025-04-22T16:05:44.311Z")
    # A later, longer rewrite is read whole again.
    again = READER.read(path, Cursor(result.position, result.state), ReaderOptions())
    assert again.replace and len(again.turns) == 3


def test_half_written_typescript_document_raises_value_error(tmp_path: Path) -> None:
    path = codex_home(tmp_path) / "sessions" / f"rollout-2025-04-22-{TS_ID}.json"
    path.parent.mkdir(parents=True)
    path.write_bytes(fixture(HOST, TYPESCRIPT).read_bytes()[:200])
    with pytest.raises(ValueError):
        READER.read(path, None, ReaderOptions())


# --------------------------------------------------------------------------- problems


def test_malformed_line_is_reported_and_the_rest_indexed(tmp_path: Path) -> None:
    path = real(tmp_path)
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join([*lines[:10], b'{"type": "event_msg", "payl\n', *lines[10:]]))
    result = READER.read(path, None, ReaderOptions())
    assert [p.line for p in result.problems] == [11]
    assert Counter(t.role for t in result.turns) == {"user": 2, "assistant": 4}


def test_unknown_first_record_is_unsupported(tmp_path: Path) -> None:
    path = codex_home(tmp_path) / "sessions" / f"rollout-2027-01-01T00-00-00-{REAL_ID}.jsonl"
    path.parent.mkdir(parents=True)
    append_lines(path, {"format": 9, "thread": {"id": REAL_ID}}, {"kind": "prompt", "text": "x"})
    result = READER.read(path, None, ReaderOptions())
    assert result.unsupported is not None and "unknown format version" in result.unsupported
    assert result.turns == ()


def test_unknown_typescript_document_shape_is_unsupported(tmp_path: Path) -> None:
    path = codex_home(tmp_path) / "sessions" / f"rollout-2025-04-22-{TS_ID}.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"version": 2, "thread": []}))
    assert READER.read(path, None, ReaderOptions()).unsupported is not None


# --------------------------------------------------------------------------- locations


def test_roots_default_to_dot_codex_and_honour_codex_home(tmp_path: Path) -> None:
    home = tmp_path / "h"
    default = READER.roots(HostEnv(home=home, environ={}))
    assert default == [home / ".codex" / "sessions", home / ".codex" / "archived_sessions"]
    windows = READER.roots(HostEnv(home=home, environ={}, platform="win32"))
    assert windows == default
    moved = READER.roots(HostEnv(home=home, environ={"CODEX_HOME": str(tmp_path / "cx")}))
    assert moved == [tmp_path / "cx" / "sessions", tmp_path / "cx" / "archived_sessions"]


def test_source_for_claims_rollouts_only(tmp_path: Path) -> None:
    sessions = codex_home(tmp_path) / "sessions"
    for name in (REAL_NAME, f"{REAL_NAME}.zst", f"rollout-2025-04-22-{TS_ID}.json"):
        assert READER.source_for(sessions / "2026" / name) == sessions / "2026" / name
    archived = codex_home(tmp_path) / "archived_sessions" / REAL_NAME
    assert READER.source_for(archived) == archived
    for other in (
        codex_home(tmp_path) / "session_index.jsonl",
        codex_home(tmp_path) / "history.jsonl",
        sessions / "notes.jsonl",
        tmp_path / "elsewhere" / REAL_NAME,
    ):
        assert READER.source_for(other) is None, other


# --------------------------------------------------------------------------- spawned sub-agents

SUB = "subagent/traex-rollout_subagent.jsonl"
SUB_ID = "019fbcca-9fd4-7d20-83dc-0762b2f839b3"
SUB_PARENT = "019fbc4a-48b9-7472-a0da-6d92901383db"
WITH_SUBAGENTS = ReaderOptions(include_subagents=True)


def sub_rollout(tmp_path: Path) -> Path:
    return rollout(tmp_path, SUB, f"rollout-2026-08-01T18-07-03-{SUB_ID}.jsonl")


def test_spawned_sub_agent_thread_is_skipped_unless_sub_agents_are_included(
    tmp_path: Path,
) -> None:
    index = read_fresh(READER, sub_rollout(tmp_path))
    assert index.turns == {} and index.sessions == {}


def test_spawned_sub_agent_turns_belong_to_the_parent_session(tmp_path: Path) -> None:
    index = read_fresh(READER, sub_rollout(tmp_path), WITH_SUBAGENTS)
    turns = list(index.turns.values())
    assert {t.session_id for t in turns} == {SUB_PARENT}
    assert all(t.subagent for t in turns)
    assert [t.text for t in turns] == ["The provider facade owns discovery and parsing."]
    assert all(t.key.startswith(f"{SUB_ID}:") for t in turns)
    assert index.sessions == {}  # the parent's own file owns the session's metadata


def test_sub_agent_task_text_is_not_a_prompt_of_the_person(tmp_path: Path) -> None:
    index = read_fresh(READER, sub_rollout(tmp_path), WITH_SUBAGENTS)
    assert "Explore the parser package." not in all_text(index)
    assert role_counts(index) == {"assistant": 1}


def test_sub_agent_copy_of_the_parent_history_is_not_indexed_again(tmp_path: Path) -> None:
    path = sub_rollout(tmp_path)
    lines = path.read_bytes().splitlines(keepends=True)
    copied = [
        json.dumps(event({"type": "user_message", "message": "Copied parent prompt zorkmid"})),
        json.dumps(message("assistant", "Copied parent answer zorkmid", "output_text")),
    ]
    path.write_bytes(lines[0] + "".join(c + "\n" for c in copied).encode() + b"".join(lines[1:]))
    index = read_fresh(READER, path, WITH_SUBAGENTS)
    assert "zorkmid" not in all_text(index)
    assert role_counts(index) == {"assistant": 1}


def test_sub_agent_incremental_reads_equal_a_fresh_read(tmp_path: Path) -> None:
    source = sub_rollout(tmp_path)
    dest = source.with_name(f"rollout-2026-08-01T18-07-04-{SUB_ID}.jsonl")
    grown = grow_file_incrementally(READER, source, dest, cuts_for(source, 501), WITH_SUBAGENTS)
    assert grown.comparable() == read_fresh(READER, dest, WITH_SUBAGENTS).comparable()
