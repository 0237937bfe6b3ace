"""Claude Code reader, against the real samples in ``tests/fixtures/claude-code``.

The samples are copied into the layout Claude Code writes (``projects/<slug>/
<uuid>.jsonl``, ``<session>/subagents/agent-<id>.jsonl``) because the layout decides
the session id. A few tests append hand-made lines to a real sample; each such line
follows a record shape from ``shared/formats/claude-code/README.md`` section 4.
"""

from __future__ import annotations

import json
import os
import shutil
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from backscroll import config, direct
from backscroll.model import Cursor, ReaderOptions
from backscroll.readers.base import HostEnv, parse_time
from backscroll.readers.claude_code import ClaudeCodeReader
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

HOST = "claude-code"
READER = ClaudeCodeReader()
SLUG = "-home-u-proj"
SESSION = "0b0c8f9e-5f1a-4c47-9d7e-3f2b8a1c6d10"
PARENT = "ae4a77f8-aedd-4bc1-888f-c94edc91af04"
WITH_SUBAGENTS = ReaderOptions(include_subagents=True)

TOOL_HEAVY = "spotter-tool_heavy.jsonl"
COMPACTION = "spotter-4d5611e5-lines745-775-compaction.jsonl"
SUBAGENT = "spotter-ae4a77f8-subagents-agent-aac57f5.jsonl"
SYNTHETIC = "agent-sessions-stage0-small-synthetic.jsonl"


def main_file(tmp_path: Path, name: str) -> Path:
    return copy_fixture(HOST, name, tmp_path / "projects" / SLUG, f"{SESSION}.jsonl")


def subagent_file(tmp_path: Path) -> Path:
    folder = tmp_path / "projects" / SLUG / PARENT / "subagents"
    return copy_fixture(HOST, SUBAGENT, folder, "agent-aac57f5.jsonl")


def cuts_for(path: Path, step: int = 1777) -> list[int]:
    """Cut points mid-line and at line ends."""
    data = path.read_bytes()
    ends = [i + 1 for i, b in enumerate(data) if b == 0x0A]
    return sorted({*range(1, len(data), step), *ends[::3]})


def assert_hidden(index: MemoryIndex, source: Path, word: str) -> None:
    assert word in source.read_text(encoding="utf-8"), f"{word!r} not in the sample"
    assert word not in all_text(index), f"{word!r} leaked into a turn"


# --------------------------------------------------------------------------- samples


def test_tool_heavy_session_indexes_prompts_and_prose_only(tmp_path: Path) -> None:
    path = main_file(tmp_path, TOOL_HEAVY)
    index = read_fresh(READER, path)
    assert role_counts(index) == {"user": 2, "assistant": 1}
    assert index.texts("user") == [
        "start phoenix in background",
        "scrolling back in xterm.js still does not work (maybe because outer web catches"
        " it)? websearch xterm.js tmux interactions",
    ]
    assert index.texts("assistant")[0].startswith("Phoenix server is starting in the background.")


def test_tool_results_tool_calls_thinking_and_wrappers_are_not_searchable(tmp_path: Path) -> None:
    path = main_file(tmp_path, TOOL_HEAVY)
    index = read_fresh(READER, path)
    assert_hidden(index, path, "JSONSerializer")  # tool result
    assert_hidden(index, path, "run_in_background")  # tool_use input
    assert_hidden(index, path, "possibly because the outer webpage")  # thinking
    assert_hidden(index, path, "Reconnected to tidewave")  # <local-command-stdout>
    assert_hidden(index, path, "local-command-caveat")  # isMeta
    assert_hidden(index, path, "[Request interrupted by user]")  # harness marker


def test_tool_heavy_session_metadata(tmp_path: Path) -> None:
    path = main_file(tmp_path, TOOL_HEAVY)
    session = read_fresh(READER, path).sessions[SESSION]
    assert session.project == "/home/marco/projects/spotter"
    assert session.title == "start phoenix in background"
    # The first line is a file-history-snapshot whose time sits at snapshot.timestamp.
    assert session.started_at == parse_time("2026-02-10T22:57:54.764Z")
    assert session.updated_at == parse_time("2026-02-10T22:59:46.748Z")
    assert session.resume_command == f"cd /home/marco/projects/spotter && claude --resume {SESSION}"


def test_turn_keys_are_entry_uuids_and_times_are_entry_times(tmp_path: Path) -> None:
    index = read_fresh(READER, main_file(tmp_path, TOOL_HEAVY))
    turn = index.turns[(SESSION, "5440873c-2d59-4c8c-88ec-c0a8c38a027d")]
    assert turn.text == "start phoenix in background"
    assert turn.timestamp == parse_time("2026-02-10T22:57:54.684Z")
    seqs = [t.seq for t in sorted(index.turns.values(), key=lambda t: t.seq)]
    assert len(set(seqs)) == len(seqs)


def test_compaction_summary_is_indexed_as_summary(tmp_path: Path) -> None:
    path = main_file(tmp_path, COMPACTION)
    index = read_fresh(READER, path)
    assert role_counts(index) == {"summary": 1, "assistant": 2}
    (summary,) = index.texts("summary")
    assert summary.startswith("This session is being continued from a previous conversation")
    assert index.texts("assistant") == [
        "Continuing with spotter-dov.3. Let me fix the two errors in"
        " `transcript_components.ex` and then proceed with the remaining work.",
        "Now fix the credo nesting issue by extracting the nested case into a helper.",
    ]
    assert_hidden(index, path, "The two immediate issues are already fixed")  # thinking
    assert_hidden(index, path, "has been updated successfully")  # tool result
    session = index.sessions[SESSION]
    assert session.project == "/home/USER/projects/spotter-worktrees/spotter-dov"
    assert session.title is None  # this slice holds no prompt and no title line
    assert session.started_at == parse_time("2026-02-12T20:29:01.009Z")


def test_synthetic_sample_covers_queued_prompts_and_skips_meta_records(tmp_path: Path) -> None:
    path = main_file(tmp_path, SYNTHETIC)
    index = read_fresh(READER, path)
    # user: "Hello", 4 queued_command attachments, 5 typed prompts (string/text/image+text);
    # assistant: 5 text blocks (thinking-only, fallback and <synthetic> lines give none).
    assert role_counts(index) == {"user": 10, "assistant": 5, "summary": 1}
    assert index.texts("summary") == ["Summary of prior context."]
    texts = all_text(index)
    for word in ("Hello", "I'll list files.", "Done.", "Partial reply", "Listing the files."):
        assert word in texts
    assert_hidden(index, path, "Reasoning goes here.")  # thinking
    assert_hidden(index, path, "file1")  # toolUseResult
    assert_hidden(index, path, "The user doesn't want to proceed")  # rejected tool result
    assert_hidden(index, path, "Refused for policy reasons.")  # system api_refusal
    assert_hidden(index, path, "stage0 placeholder result")  # unknown record type
    assert_hidden(index, path, "Claude Code: Context usage summary")  # summary line = title only


def test_title_prefers_custom_title_over_ai_title_summary_and_prompt(tmp_path: Path) -> None:
    index = read_fresh(READER, main_file(tmp_path, SYNTHETIC))
    session = index.sessions[SESSION]
    assert session.title == "Stage0 small fixture"
    assert session.project == "/tmp"  # placeholder cwds later in the file are ignored
    assert session.started_at == parse_time("2025-12-16T00:00:00.000Z")
    assert session.resume_command == f"cd /tmp && claude --resume {SESSION}"


def test_trimmed_ids_fall_back_to_offsets_so_keys_stay_unique(tmp_path: Path) -> None:
    path = main_file(tmp_path, SYNTHETIC)
    result = READER.read(path, None, ReaderOptions())
    keys = [t.key for t in result.turns]
    assert len(keys) == len(set(keys))
    assert "u1" in keys and "att-nested-7" in keys
    assert any(k.startswith("o:") for k in keys)


# --------------------------------------------------------------------------- sub-agents


def test_subagent_transcript_gives_no_turns_by_default(tmp_path: Path) -> None:
    path = subagent_file(tmp_path)
    assert READER.source_for(path) == path
    result = READER.read(path, None, ReaderOptions())
    assert result.turns == ()
    assert result.unsupported is None


def test_subagent_turns_go_under_parent_session_when_enabled(tmp_path: Path) -> None:
    path = subagent_file(tmp_path)
    index = read_fresh(READER, path, WITH_SUBAGENTS)
    assert role_counts(index) == {"user": 1, "assistant": 3}
    assert {sid for sid, _ in index.turns} == {PARENT}
    assert all(t.subagent for t in index.turns.values())
    assert all(key.startswith("agent-aac57f5:") for _, key in index.turns)
    assert index.texts("user")[0].startswith("Search hex.pm for the latest versions")
    # The sub-agent neither names nor re-homes the parent session.
    assert index.sessions[PARENT].title is None
    assert index.sessions[PARENT].project is None


def test_a_workflows_subagent_one_level_deeper_is_claimed_and_goes_under_its_session(
    tmp_path: Path,
) -> None:
    # (The format notes: <session>/subagents/workflows/<workflow-id>/agent-<id>.jsonl.)
    projects = tmp_path / "projects"
    folder = projects / SLUG / PARENT / "subagents" / "workflows" / "wf-7f3a"
    path = copy_fixture(HOST, SUBAGENT, folder, "agent-aac57f5.jsonl")
    assert READER.source_for(path) == path
    assert path in set(READER.discover(projects))
    assert READER.read(path, None, ReaderOptions()).turns == ()
    index = read_fresh(READER, path, WITH_SUBAGENTS)
    assert role_counts(index) == {"user": 1, "assistant": 3}
    assert {sid for sid, _ in index.turns} == {PARENT}
    assert all(t.subagent for t in index.turns.values())
    assert all(key.startswith("wf-7f3a/agent-aac57f5:") for _, key in index.turns)
    assert READER.source_for(folder / "agent-aac57f5.meta.json") is None
    assert READER.source_for(projects / SLUG / "workflows" / "wf" / "agent-x.jsonl") is None


def test_subagent_text_after_web_tools_is_tainted(tmp_path: Path) -> None:
    index = read_fresh(READER, subagent_file(tmp_path), WITH_SUBAGENTS)
    ordered = sorted(index.turns.values(), key=lambda t: t.seq)
    assert [t.tainted for t in ordered if t.role == "assistant"] == [False, True, True]
    assert_hidden(index, fixture(HOST, SUBAGENT), "Web search results for query")


def test_old_flat_agent_file_uses_the_entries_session_id(tmp_path: Path) -> None:
    path = copy_fixture(HOST, SUBAGENT, tmp_path / "projects" / SLUG, "agent-aac57f5.jsonl")
    assert READER.source_for(path) == path
    assert read_fresh(READER, path).turns == {}
    index = read_fresh(READER, path, WITH_SUBAGENTS)
    assert {sid for sid, _ in index.turns} == {PARENT}
    assert len(index.turns) == 4


def test_turning_subagents_on_later_indexes_the_whole_file(tmp_path: Path) -> None:
    path = subagent_file(tmp_path)
    index = MemoryIndex()
    index.read(READER, path)
    assert index.turns == {}
    index.read(READER, path, WITH_SUBAGENTS)
    assert len(index.turns) == 4


# --------------------------------------------------------------------------- incremental


@pytest.mark.parametrize("name", [TOOL_HEAVY, COMPACTION, SYNTHETIC])
def test_incremental_reads_equal_a_fresh_read(tmp_path: Path, name: str) -> None:
    fresh = read_fresh(READER, main_file(tmp_path / "a", name))
    dest = tmp_path / "b" / "projects" / SLUG / f"{SESSION}.jsonl"
    grown = grow_file_incrementally(
        READER, fixture(HOST, name), dest, cuts_for(fixture(HOST, name))
    )
    assert grown.comparable() == fresh.comparable()
    assert grown.sessions == fresh.sessions


def test_incremental_subagent_reads_equal_a_fresh_read(tmp_path: Path) -> None:
    fresh = read_fresh(READER, subagent_file(tmp_path / "a"), WITH_SUBAGENTS)
    dest = tmp_path / "b" / "projects" / SLUG / PARENT / "subagents" / "agent-aac57f5.jsonl"
    source = fixture(HOST, SUBAGENT)
    grown = grow_file_incrementally(READER, source, dest, cuts_for(source), WITH_SUBAGENTS)
    assert grown.comparable() == fresh.comparable()


def test_half_written_last_line_waits_for_its_newline(tmp_path: Path) -> None:
    path = main_file(tmp_path, TOOL_HEAVY)
    index = read_fresh(READER, path)
    line = {"type": "user", "uuid": "u-late", "message": {"role": "user", "content": "late"}}
    raw = json.dumps(line)
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(raw[:20])
    index.read(READER, path)
    assert "late" not in index.texts()
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(raw[20:] + "\n")
    index.read(READER, path)
    assert index.texts("user")[-1] == "late"


def test_title_upgrades_across_reads_but_never_downgrades(tmp_path: Path) -> None:
    path = main_file(tmp_path, TOOL_HEAVY)
    index = read_fresh(READER, path)
    assert index.sessions[SESSION].title == "start phoenix in background"
    # A summary whose leaf is another session's message says nothing about this one.
    append_lines(path, {"type": "summary", "summary": "Elsewhere", "leafUuid": "not-here"})
    index.read(READER, path)
    assert index.sessions[SESSION].title == "start phoenix in background"
    leaf = json.loads(path.read_text().splitlines()[3])["uuid"]  # (a message read before)
    append_lines(path, {"type": "summary", "summary": "Phoenix and xterm", "leafUuid": leaf})
    index.read(READER, path)
    assert index.sessions[SESSION].title == "Phoenix and xterm"
    append_lines(path, {"type": "custom-title", "sessionId": SESSION, "customTitle": "My rename"})
    index.read(READER, path)
    assert index.sessions[SESSION].title == "My rename"
    append_lines(
        path,
        {"type": "ai-title", "sessionId": SESSION, "aiTitle": "An AI title"},
        {"type": "summary", "summary": "Another summary", "leafUuid": "y"},
    )
    index.read(READER, path)
    assert index.sessions[SESSION].title == "My rename"
    append_lines(
        path, {"type": "custom-title", "sessionId": SESSION, "customTitle": "Renamed again"}
    )
    index.read(READER, path)
    assert index.sessions[SESSION].title == "Renamed again"


# --------------------------------------------------------------------------- hand-made lines


def _user(uuid: str, content: Any, **extra: Any) -> dict[str, Any]:
    return {
        "type": "user",
        "uuid": uuid,
        "timestamp": "2026-02-10T23:00:00.000Z",
        "message": {"role": "user", "content": content},
        **extra,
    }


def _assistant(uuid: str, *blocks: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "assistant",
        "uuid": uuid,
        "timestamp": "2026-02-10T23:00:01.000Z",
        "message": {"role": "assistant", "content": list(blocks)},
    }


def _queued(uuid: str, prompt: Any) -> dict[str, Any]:
    return {
        "type": "attachment",
        "uuid": uuid,
        "timestamp": "2026-02-10T23:00:02.000Z",
        "attachment": {"type": "queued_command", "prompt": prompt, "commandMode": "prompt"},
    }


def _remove(content: str | None) -> dict[str, Any]:
    return {
        "type": "queue-operation",
        "operation": "remove",
        "timestamp": "2026-02-10T23:00:03.000Z",
        "content": content,
    }


def test_assistant_text_after_web_fetch_is_tainted_until_the_next_prompt(tmp_path: Path) -> None:
    # The sample ends right after WebSearch + WebFetch calls and an interruption.
    path = main_file(tmp_path, TOOL_HEAVY)
    index = read_fresh(READER, path)
    append_lines(path, _assistant("a-after", {"type": "text", "text": "The issue says wheel"}))
    index.read(READER, path)
    append_lines(
        path,
        _user("u-next", "thanks, now run the tests"),
        _assistant("a-next", {"type": "text", "text": "Running them."}),
    )
    index.read(READER, path)
    assert index.turns[(SESSION, "a-after")].tainted
    assert not index.turns[(SESSION, "a-next")].tainted
    assert not index.turns[(SESSION, "77c5c1c5-b45d-4b7b-b052-a0e4c2c2a976")].tainted


def test_text_before_an_external_tool_in_the_same_message_is_not_tainted(tmp_path: Path) -> None:
    path = main_file(tmp_path, TOOL_HEAVY)
    append_lines(
        path,
        _user("u-a", "look it up"),
        _assistant(
            "a-multi",
            {"type": "text", "text": "Searching first."},
            {"type": "tool_use", "id": "t1", "name": "mcp__playwright__browser_navigate"},
            {"type": "text", "text": "Found it."},
        ),
    )
    index = read_fresh(READER, path)
    assert not index.turns[(SESSION, "a-multi#0")].tainted
    assert index.turns[(SESSION, "a-multi#1")].tainted


def test_system_reminders_and_ide_tags_are_stripped_from_prompts(tmp_path: Path) -> None:
    path = main_file(tmp_path, TOOL_HEAVY)
    append_lines(
        path,
        _user(
            "u-ide",
            [
                {"type": "text", "text": "<ide_opened_file>The user opened x.py</ide_opened_file>"},
                {
                    "type": "text",
                    "text": "fix the parser<system-reminder>secret reminder</system-reminder>",
                },
            ],
        ),
        _user("u-bash", "<bash-input>ls</bash-input>"),
        _user("u-task", "<task-notification>done</task-notification>"),
        _user(
            "u-cmd", "<command-message>init</command-message>\n<command-name>/init</command-name>"
        ),
    )
    index = read_fresh(READER, path)
    assert index.turns[(SESSION, "u-ide")].text == "fix the parser"
    for key in ("u-bash", "u-task", "u-cmd"):
        assert (SESSION, key) not in index.turns
    assert "secret reminder" not in all_text(index)


def test_queued_prompt_and_its_remove_twin_index_once_in_either_order(tmp_path: Path) -> None:
    path = main_file(tmp_path, TOOL_HEAVY)
    append_lines(
        path,
        _queued("q-1", "also check the logs"),
        _remove("also check the logs"),
        _remove("and the metrics"),
        _queued("q-2", [{"type": "text", "text": "and the metrics"}]),
        _remove(None),  # builds before ~2.1.205 write no text
    )
    index = read_fresh(READER, path)
    queued = [t for t in index.texts("user") if t in ("also check the logs", "and the metrics")]
    assert queued == ["also check the logs", "and the metrics"]
    assert index.turns[(SESSION, "q-1")].text == "also check the logs"


def test_the_same_queued_text_twice_gives_two_prompts(tmp_path: Path) -> None:
    path = main_file(tmp_path, TOOL_HEAVY)
    append_lines(path, _queued("q-a", "continue"), _remove("continue"))
    index = read_fresh(READER, path)
    append_lines(path, _queued("q-b", "continue"), _remove("continue"))
    index.read(READER, path)
    assert index.texts("user").count("continue") == 2
    assert read_fresh(READER, path).comparable() == index.comparable()


def test_legacy_remove_with_text_is_a_user_prompt(tmp_path: Path) -> None:
    path = main_file(tmp_path, TOOL_HEAVY)
    offset = path.stat().st_size
    append_lines(path, _remove("steer: use port 4001"))
    index = read_fresh(READER, path)
    assert index.turns[(SESSION, f"o:{offset}")].text == "steer: use port 4001"


def test_api_error_and_synthetic_assistant_lines_are_skipped(tmp_path: Path) -> None:
    path = main_file(tmp_path, TOOL_HEAVY)
    error = _assistant("a-err", {"type": "text", "text": "API Error: 500 overloaded"})
    error["isApiErrorMessage"] = True
    synthetic = _assistant("a-syn", {"type": "text", "text": "No response requested."})
    synthetic["message"]["model"] = "<synthetic>"
    append_lines(path, error, synthetic)
    index = read_fresh(READER, path)
    assert "API Error" not in all_text(index)
    assert "No response requested." not in all_text(index)


# --------------------------------------------------------------------------- problems


def test_malformed_line_is_reported_and_the_rest_indexed(tmp_path: Path) -> None:
    path = main_file(tmp_path, TOOL_HEAVY)
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join([*lines[:5], b'{"type": "user", "uuid": \n', *lines[5:]]))
    result = READER.read(path, None, ReaderOptions())
    assert [p.line for p in result.problems] == [6]
    assert Counter(t.role for t in result.turns) == {"user": 2, "assistant": 1}


def test_a_record_whose_type_is_an_object_is_skipped_not_the_whole_file(
    tmp_path: Path,
) -> None:
    # Valid JSON of the wrong shape ("type" an object, a block's "type" a list)
    # must not fail the transcript: every other turn, and later appends, count.
    path = main_file(tmp_path, TOOL_HEAVY)
    before = Counter(t.role for t in READER.read(path, None, ReaderOptions()).turns)
    odd_block = _user("u-odd2", "x")
    odd_block["message"]["content"] = [{"type": ["text"], "text": "odd"}]
    append_lines(path, {**_user("u-odd", "x"), "type": {"oops": 1}}, odd_block,
                 _user("u-after", "the later prompt"))  # fmt: skip
    result = READER.read(path, None, ReaderOptions())
    assert Counter(t.role for t in result.turns) == before + Counter({"user": 1})
    assert "the later prompt" in [t.text for t in result.turns]


def test_unknown_major_version_is_unsupported(tmp_path: Path) -> None:
    path = main_file(tmp_path, TOOL_HEAVY)
    append_lines(path, {**_user("u-v3", "hello"), "version": "3.0.0"})
    result = READER.read(path, None, ReaderOptions())
    assert result.unsupported is not None
    assert "3.0.0" in result.unsupported
    assert result.turns == ()


def test_unknown_version_appended_later_is_unsupported(tmp_path: Path) -> None:
    path = main_file(tmp_path, TOOL_HEAVY)
    first = READER.read(path, None, ReaderOptions())
    append_lines(path, {**_user("u-v3", "hello"), "version": "3.1.0"})
    again = READER.read(path, Cursor(first.position, first.state), ReaderOptions())
    assert again.unsupported is not None


# --------------------------------------------------------------------------- locations


def test_roots_default_to_home_and_xdg_config(tmp_path: Path) -> None:
    home = tmp_path / "h"
    roots = READER.roots(HostEnv(home=home, environ={}))
    assert roots == [home / ".claude" / "projects", home / ".config" / "claude" / "projects"]
    windows = READER.roots(HostEnv(home=home, environ={}, platform="win32"))
    assert windows[0] == home / ".claude" / "projects"


def test_roots_honour_claude_config_dir(tmp_path: Path) -> None:
    home = tmp_path / "h"
    env = HostEnv(home=home, environ={"CLAUDE_CONFIG_DIR": str(tmp_path / "cc")})
    roots = READER.roots(env)
    assert roots[0] == tmp_path / "cc" / "projects"
    assert home / ".claude" / "projects" not in roots


def test_source_for_claims_transcripts_only(tmp_path: Path) -> None:
    projects = tmp_path / "projects"
    main = projects / SLUG / f"{SESSION}.jsonl"
    nested = projects / SLUG / SESSION / "subagents" / "agent-a1b2c3.jsonl"
    flat = projects / SLUG / "agent-a1b2c3.jsonl"
    assert READER.source_for(main) == main
    assert READER.source_for(nested) == nested
    assert READER.source_for(flat) == flat
    for other in (
        projects / SLUG / SESSION / "subagents" / "agent-a1b2c3.meta.json",
        projects / SLUG / SESSION / "tool-results" / "x.jsonl",
        projects / SLUG / "sessions-index.json",
        tmp_path / "history.jsonl",
        projects / "loose.jsonl",
    ):
        assert READER.source_for(other) is None, other


def test_discover_finds_sessions_and_subagents(tmp_path: Path) -> None:
    main = main_file(tmp_path, TOOL_HEAVY)
    nested = subagent_file(tmp_path)
    (tmp_path / "projects" / SLUG / PARENT / "tool-results").mkdir(parents=True)
    (tmp_path / "projects" / SLUG / PARENT / "tool-results" / "t.jsonl").write_text("{}\n")
    assert sorted(READER.discover(tmp_path / "projects")) == sorted([main, nested])


def test_a_summary_titles_its_file_only_when_the_message_it_names_is_in_it(
    tmp_path: Path,
) -> None:
    """A summary line comes first; its leafUuid names the last message it sums up,
    which may be in another session's file (the format notes' warning)."""
    path = main_file(tmp_path, TOOL_HEAVY)
    lines = path.read_text().splitlines()
    last_uuid = next(json.loads(x)["uuid"] for x in reversed(lines) if '"uuid"' in x)
    mine = json.dumps({"type": "summary", "summary": "About this file", "leafUuid": last_uuid})
    path.write_text(mine + "\n" + "\n".join(lines) + "\n")
    assert read_fresh(READER, path).sessions[SESSION].title == "About this file"
    other = json.dumps({"type": "summary", "summary": "Another file's", "leafUuid": "elsewhere"})
    path.write_text(other + "\n" + "\n".join(lines) + "\n")
    assert read_fresh(READER, path).sessions[SESSION].title == "start phoenix in background"


def test_summaries_naming_earlier_messages_read_the_earlier_part_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each summary appended after a read names its leaf in the part read before;
    that part is searched in one pass, however many summaries there are."""
    import backscroll.readers.claude_code as claude_code
    from backscroll.readers.base import open_regular

    path = main_file(tmp_path, TOOL_HEAVY)
    index = read_fresh(READER, path)
    uuids = [json.loads(x)["uuid"] for x in path.read_text().splitlines() if '"uuid"' in x]
    opened: list[Path] = []

    def counting(p: Path) -> Any:
        opened.append(p)
        return open_regular(p)

    monkeypatch.setattr(claude_code, "open_regular", counting)
    append_lines(
        path,
        *(
            {"type": "summary", "summary": f"Summary {i}", "leafUuid": leaf}
            for i, leaf in enumerate(uuids[:5])
        ),
        {"type": "summary", "summary": "Not here", "leafUuid": "elsewhere"},
        {"type": "summary", "summary": "A lone surrogate", "leafUuid": "\ud800"},
    )
    index.read(READER, path)
    assert opened == [path]
    assert index.sessions[SESSION].title == "Summary 4"


def test_leaves_are_found_in_lines_longer_than_one_read(tmp_path: Path) -> None:
    """The earlier part is searched in pieces: a uuid at the start of a line that
    spans pieces, and one inside a piece holding no line end, both count."""
    from backscroll.readers.claude_code import _uuids_before

    path = main_file(tmp_path, TOOL_HEAVY)
    pad = "x" * (5 << 19)  # (tool output longer than two pieces)
    result = {"role": "user", "content": [{"type": "tool_result", "content": "ok"}]}
    append_lines(
        path,
        {"type": "user", "uuid": "leaf-first", "toolUseResult": pad, "message": result},
        {
            "type": "user",
            "toolUseResult": pad,
            "uuid": "leaf-inside",
            "extra": pad,
            "message": result,
        },
    )
    found = _uuids_before(path, path.stat().st_size)
    assert {b"leaf-first", b"leaf-inside"} <= found
    index = read_fresh(READER, path)
    append_lines(path, {"type": "summary", "summary": "Spans pieces", "leafUuid": "leaf-inside"})
    index.read(READER, path)
    assert index.sessions[SESSION].title == "Spans pieces"


# --------------------------------------------------------------------------- Desktop "Code" tab

#: The real tool-heavy sample as a Code-tab session, and its constructed sidecar
#: (tests/fixtures/claude-desktop-cowork/SOURCES.md).
CODE_TAB_SESSION = "d6e0bada-1959-4eec-a9d2-0bfade768d8f"
CODE_TAB_LOCAL = "local_5e1f9a3c-7d2b-4c8e-a6f0-3b9d1e7c2a54"
CODE_TAB_TITLE = "Phoenix server in the background"
LINUX_USER_DATA = Path(".config", "Claude")


def code_tab_transcript(home: Path, name: str = TOOL_HEAVY) -> Path:
    """A sample where Claude Desktop's Code tab writes it: the home's ``.claude``."""
    folder = home / ".claude" / "projects" / "-home-marco-projects-spotter"
    return copy_fixture(HOST, name, folder, f"{CODE_TAB_SESSION}.jsonl")


def code_tab_sidecar(
    home: Path, user_data: Path = LINUX_USER_DATA, org: str = "org-1", **fields: Any
) -> Path:
    """The constructed Code-tab sidecar at ``<userData>/claude-code-sessions/<account>/<org>/``."""
    folder = home / user_data / "claude-code-sessions" / "account-1" / org
    folder.mkdir(parents=True, exist_ok=True)
    sidecar = folder / f"{CODE_TAB_LOCAL}.json"
    shutil.copy(fixture("claude-desktop-cowork", f"code-tab-{CODE_TAB_LOCAL}.json"), sidecar)
    if fields:
        sidecar.write_text(json.dumps(json.loads(sidecar.read_text()) | fields))
    return sidecar


@pytest.mark.parametrize(
    "user_data",
    [
        LINUX_USER_DATA,
        Path("Library", "Application Support", "Claude"),
        Path("AppData", "Roaming", "Claude"),
        Path("AppData", "Local", "Packages", "Claude_pzs8sxrjxfjjc", "LocalCache", "Roaming")
        / "Claude",
    ],
)
def test_a_desktop_code_tab_session_takes_the_title_the_app_shows(
    isolated_home: Path, user_data: Path
) -> None:
    path = code_tab_transcript(isolated_home)
    code_tab_sidecar(isolated_home, user_data)
    session = read_fresh(READER, path).sessions[CODE_TAB_SESSION]
    assert session.title == CODE_TAB_TITLE
    # Only the title: the session is Claude Code's, with its own project and resume.
    assert session.project == "/home/marco/projects/spotter"
    assert session.started_at == parse_time("2026-02-10T22:57:54.764Z")
    assert session.resume_command == (
        f"cd /home/marco/projects/spotter && claude --resume {CODE_TAB_SESSION}"
    )


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The monotonic clock the Code-tab lookup reads, moved on by hand."""
    now = [1_000_000.0]
    monkeypatch.setattr("backscroll.readers.claude_desktop.time.monotonic", lambda: now[0])
    return now


def test_the_app_title_wins_over_the_transcripts_custom_title(
    isolated_home: Path, clock: list[float]
) -> None:
    path = code_tab_transcript(isolated_home, SYNTHETIC)  # it holds custom-title and ai-title
    assert read_fresh(READER, path).sessions[CODE_TAB_SESSION].title == "Stage0 small fixture"
    code_tab_sidecar(isolated_home)
    clock[0] += 5.0  # (a home found without the app is looked at again after a while)
    assert read_fresh(READER, path).sessions[CODE_TAB_SESSION].title == CODE_TAB_TITLE


def test_a_home_without_the_app_is_looked_at_again_only_after_a_while(
    isolated_home: Path, clock: list[float]
) -> None:
    """Most homes have no Claude Desktop: a cold index asks twice per transcript,
    and each look at the missing folders cost a stat for every OS's place."""
    path = code_tab_transcript(isolated_home)
    assert READER.sidecars(path) == []
    sidecar = code_tab_sidecar(isolated_home)
    clock[0] += 4.0
    assert READER.sidecars(path) == []  # (not looked for again yet)
    clock[0] += 1.0
    assert READER.sidecars(path) == [sidecar]


def test_a_sidecar_without_a_title_or_for_another_session_leaves_the_transcripts(
    isolated_home: Path,
) -> None:
    path = code_tab_transcript(isolated_home)
    own = "start phoenix in background"
    code_tab_sidecar(isolated_home, title="  ")
    assert read_fresh(READER, path).sessions[CODE_TAB_SESSION].title == own
    code_tab_sidecar(isolated_home, cliSessionId="another-session")
    assert READER.sidecars(path) == []
    assert read_fresh(READER, path).sessions[CODE_TAB_SESSION].title == own


def test_only_a_transcript_in_the_homes_claude_folder_is_a_code_tab_one(
    isolated_home: Path,
) -> None:
    code_tab_sidecar(isolated_home)
    elsewhere = isolated_home / "cfg" / "projects" / "-home-marco-projects-spotter"
    path = copy_fixture(HOST, TOOL_HEAVY, elsewhere, f"{CODE_TAB_SESSION}.jsonl")
    assert READER.sidecars(path) == []  # (a CLAUDE_CONFIG_DIR: the app does not write there)
    assert read_fresh(READER, path).sessions[CODE_TAB_SESSION].title == (
        "start phoenix in background"
    )
    sub = code_tab_transcript(isolated_home).with_suffix("") / "subagents" / "agent-a1.jsonl"
    assert READER.sidecars(sub) == []


def test_the_newest_of_several_sidecars_names_the_session(isolated_home: Path) -> None:
    path = code_tab_transcript(isolated_home)
    old = code_tab_sidecar(isolated_home, org="org-a", title="Older name")
    new = code_tab_sidecar(isolated_home, org="org-b", title="Newer name")
    assert sorted(READER.sidecars(path)) == [old, new]
    for newest, title in ((new, "Newer name"), (old, "Older name")):  # (not path order)
        when = path.stat().st_mtime_ns + (10_000_000_000 if newest == new else 20_000_000_000)
        os.utime(newest, ns=(when, when))
        assert read_fresh(READER, path).sessions[CODE_TAB_SESSION].title == title


def test_a_sidecar_the_app_adds_later_is_found(isolated_home: Path) -> None:
    path = code_tab_transcript(isolated_home)
    other = code_tab_sidecar(isolated_home, cliSessionId="another-session")
    assert READER.sidecars(path) == []
    past = path.stat().st_mtime_ns - 60_000_000_000
    for folder in (other.parent, other.parent.parent, other.parent.parent.parent):
        os.utime(folder, ns=(past, past))  # (a listing old enough to be trusted)
    assert READER.sidecars(path) == []
    mine = other.with_name("local_0c1d2e3f-4a5b-4c6d-8e7f-9a0b1c2d3e4f.json")
    mine.write_text(json.dumps({"cliSessionId": CODE_TAB_SESSION, "title": "Added later"}))
    assert READER.sidecars(path) == [mine]
    assert read_fresh(READER, path).sessions[CODE_TAB_SESSION].title == "Added later"


def test_a_rename_in_the_app_read_on_from_the_end_equals_a_fresh_read(
    isolated_home: Path,
) -> None:
    path = code_tab_transcript(isolated_home)
    sidecar = code_tab_sidecar(isolated_home)
    index = read_fresh(READER, path)
    sidecar.write_text(json.dumps(json.loads(sidecar.read_text()) | {"title": "Renamed"}))
    index.read(READER, path)  # what a changed sidecar costs: a read from where it stopped
    assert index.sessions == read_fresh(READER, path).sessions
    assert index.sessions[CODE_TAB_SESSION].title == "Renamed"


def test_a_renamed_code_tab_session_gets_its_new_title_on_the_next_pass(
    isolated_home: Path,
) -> None:
    path = code_tab_transcript(isolated_home)
    sidecar = code_tab_sidecar(isolated_home)
    cfg = config.load()
    direct.index(cfg)

    def titles() -> list[str]:
        sessions = direct.query(cfg, "sessions", {"host": HOST})["sessions"]
        return [s["title"] for s in sessions]

    assert titles() == [CODE_TAB_TITLE]
    sidecar.write_text(json.dumps(json.loads(sidecar.read_text()) | {"title": "Phoenix, renamed"}))
    later = path.stat().st_mtime_ns + 5_000_000_000
    os.utime(sidecar, ns=(later, later))
    summary, _ = direct.index(cfg)
    assert summary.files_changed == 1
    assert summary.bytes_read == 0, "the transcript is read on from its end, not again whole"
    assert titles() == ["Phoenix, renamed"]
    again, _ = direct.index(cfg)
    assert again.files_changed == 0, "an unchanged sidecar must not force a re-read"


def test_a_non_transcript_file_asked_first_does_not_hide_its_folders_sidecars(
    isolated_home: Path,
) -> None:
    """The app's places are worked out once per project folder: a file of that
    folder that is no transcript, asked about first, must not decide it."""
    path = code_tab_transcript(isolated_home)
    sidecar = code_tab_sidecar(isolated_home)
    assert READER.sidecars(path.with_name("notes.txt")) == []
    assert READER.sidecars(path) == [sidecar]
