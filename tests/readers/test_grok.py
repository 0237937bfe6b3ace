"""Grok Build reader against ``tests/fixtures/grok`` (see SOURCES.md).

``constructed-updates.jsonl`` is hand-made from grok-build's source (envelope,
ACP chunk shapes, ``hostTurn``, ``turn_completed``, ``rewind_marker``,
``compaction_checkpoint``); ``agentsview-summary.json`` was serialised by
grok-build's own types. Lines appended in tests follow the same shapes.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from backscroll import config, direct
from backscroll.model import ReaderOptions
from backscroll.readers.base import HostEnv
from backscroll.readers.grok import GrokReader
from tests.readers.util import (
    MemoryIndex,
    append_lines,
    fixture,
    grow_file_incrementally,
    line_cuts,
    read_fresh,
    role_counts,
)

reader = GrokReader()
SID = "019f7a10-3c2e-7d41-9b5a-6e0f2c8d4a17"
FIRST_REPLY = (
    "The lint job runs only on `push`; the nightly run is a `schedule` event, so the "
    "condition is false. Add `|| github.event_name == 'schedule'`."
)


def _session(home: Path, sample: str = "constructed-updates.jsonl") -> Path:
    session = home / ".grok" / "sessions" / "%2Fhome%2Fdev%2Frepo" / SID
    session.mkdir(parents=True)
    path = session / "updates.jsonl"
    shutil.copy(fixture("grok", sample), path)
    return path


def _line(update: dict[str, Any], ts: int = 1785400200, **meta: Any) -> dict[str, Any]:
    params: dict[str, Any] = {"sessionId": SID, "update": update}
    if meta:
        params["_meta"] = meta
    return {"timestamp": ts, "method": "session/update", "params": params}


def _chunk(kind: str, text: str, **chunk_meta: Any) -> dict[str, Any]:
    update: dict[str, Any] = {"sessionUpdate": kind, "content": {"type": "text", "text": text}}
    if chunk_meta:
        update["_meta"] = chunk_meta
    return update


def test_streamed_chunks_become_whole_turns_and_the_rewound_prompt_is_dropped(
    isolated_home: Path,
) -> None:
    index = read_fresh(reader, _session(isolated_home))
    assert index.texts("user") == ["Why is the nightly job skipping the lint step?"]
    assert index.texts("assistant") == ["Let me open the workflow file.", FIRST_REPLY]
    text = "\n".join(index.texts())
    assert "Apply that." not in text and "Done — the condition" not in text  # rewound
    assert "<user_info>" not in text  # host-turn context
    assert "Check the workflow condition" not in text  # thought
    assert "if: github.event_name" not in text  # tool output
    assert role_counts(index) == {"user": 1, "assistant": 2}


def test_session_metadata_from_the_directory_and_envelope(isolated_home: Path) -> None:
    index = read_fresh(reader, _session(isolated_home))
    session = index.sessions[SID]
    assert session.project == "/home/dev/repo"
    assert session.title == "Why is the nightly job skipping the lint step?"
    assert session.resume_command == f"cd /home/dev/repo && grok --resume {SID}"
    assert session.started_at == 1785400000.0  # no summary.json: the first update's time
    first = min(index.turns.values(), key=lambda t: t.seq)
    assert first.timestamp == 1785400000.12  # _meta.agentTimestampMs, not whole seconds


def test_summary_json_gives_title_project_start_and_parent(isolated_home: Path) -> None:
    path = _session(isolated_home)
    shutil.copy(fixture("grok", "agentsview-summary.json"), path.parent / "summary.json")
    # A sidecar whose change reads the log on from its end, never again whole.
    assert reader.sidecars(path) == [path.parent / "summary.json"]
    assert reader.source_for(path.parent / "summary.json") == path
    assert not reader.sidecars_reread_whole
    session = read_fresh(reader, path).sessions[SID]
    assert session.title == "Audit Grok compatibility"
    assert session.project == "/workspace/grok-worktrees/parser-audit"
    assert session.parent_session_id == "019f5000-0000-7000-8000-000000000000"
    assert session.started_at is not None


def test_reading_as_the_file_grows_equals_reading_it_whole(
    isolated_home: Path, tmp_path: Path
) -> None:
    source = fixture("grok", "constructed-updates.jsonl")
    dest = tmp_path / ".grok" / "sessions" / "%2Fx" / SID / "updates.jsonl"
    grown = grow_file_incrementally(reader, source, dest, line_cuts(source.read_bytes()))
    assert grown.comparable() == read_fresh(reader, dest).comparable()


def test_a_reply_still_streaming_when_read_is_completed_on_the_next_read(
    isolated_home: Path,
) -> None:
    path = _session(isolated_home)
    index = MemoryIndex()
    index.read(reader, path)
    append_lines(
        path,
        _line(_chunk("user_message_chunk", "Now check the deploy job.")),
        _line(_chunk("agent_message_chunk", "The deploy job ")),
    )
    index.read(reader, path)
    assert "The deploy job" in index.texts("assistant")
    append_lines(path, _line(_chunk("agent_message_chunk", "also skips scheduled runs.")))
    index.read(reader, path)
    assert index.texts("assistant")[-1] == "The deploy job also skips scheduled runs."
    assert index.comparable() == read_fresh(reader, path).comparable()


def test_a_rewind_appended_later_drops_turns_indexed_by_an_earlier_read(
    isolated_home: Path,
) -> None:
    path = _session(isolated_home)
    index = MemoryIndex()
    append_lines(
        path,
        _line(_chunk("user_message_chunk", "Also add a badge to the README.")),
        _line(_chunk("agent_message_chunk", "Badge added.")),
    )
    index.read(reader, path)
    assert "Badge added." in index.texts("assistant")
    rewind = {"sessionUpdate": "rewind_marker", "target_prompt_index": 0}
    append_lines(
        path,
        {
            "timestamp": 1785400300,
            "method": "_x.ai/session/update",
            "params": {"sessionId": SID, "update": rewind},
        },
    )
    index.read(reader, path)
    assert index.texts() == []
    assert index.comparable() == read_fresh(reader, path).comparable()


def test_prompt_index_markers_count_prompts_once_present(isolated_home: Path) -> None:
    session = isolated_home / ".grok" / "sessions" / "%2Fr" / SID
    session.mkdir(parents=True)
    path = session / "updates.jsonl"
    path.write_text("")
    append_lines(
        path,
        _line(_chunk("user_message_chunk", "first", promptIndex=0)),
        _line(_chunk("agent_message_chunk", "one")),
        _line(_chunk("user_message_chunk", "a mid-turn phantom without a marker")),
        _line(_chunk("agent_message_chunk", "two")),
        _line(_chunk("user_message_chunk", "second", promptIndex=1)),
        _line(_chunk("agent_message_chunk", "three")),
        {
            "timestamp": 1,
            "method": "_x.ai/session/update",
            "params": {
                "sessionId": SID,
                "update": {"sessionUpdate": "rewind_marker", "target_prompt_index": 1},
            },
        },
    )
    index = read_fresh(reader, path)
    assert index.texts() == ["first", "one", "a mid-turn phantom without a marker", "two"]


def test_tool_lines_are_skipped_unparsed_and_an_external_tool_taints_the_reply(
    isolated_home: Path,
) -> None:
    path = _session(isolated_home)
    huge = "x" * 200_000
    append_lines(
        path,
        _line(_chunk("user_message_chunk", "What do the docs say?")),
        _line(
            {
                "sessionUpdate": "tool_call",
                "toolCallId": "c2",
                "title": "web_search",
                "kind": "fetch",
                "status": "pending",
            }
        ),
        _line(
            {
                "sessionUpdate": "tool_call_update",
                "toolCallId": "c2",
                "status": "completed",
                "content": [{"type": "content", "content": {"type": "text", "text": huge}}],
            }
        ),
        _line(_chunk("agent_message_chunk", "The docs say to pin the version.")),
    )
    with open(path, "ab") as fh:
        fh.write(
            b'{"method":"session/update","params":{"update":{"sessionUpdate":"tool_call_update",'
            b'"content":"not json at all\n'
        )
    index = MemoryIndex()
    result = index.read(reader, path)
    assert result.problems == ()  # the garbled tool update was never parsed
    reply = next(t for t in index.turns.values() if t.text == "The docs say to pin the version.")
    assert reply.tainted
    assert huge not in "\n".join(index.texts())


def test_a_sub_agent_session_is_read_only_with_include_subagents(isolated_home: Path) -> None:
    path = _session(isolated_home)
    summary = json.loads(fixture("grok", "agent-sessions-subagent-summary.json").read_text())
    (path.parent / "summary.json").write_text(json.dumps(summary))
    assert read_fresh(reader, path).texts() == []
    index = read_fresh(reader, path, ReaderOptions(include_subagents=True))
    assert index.turns and all(t.subagent for t in index.turns.values())


def test_default_root_and_grok_home_override(tmp_path: Path) -> None:
    home = tmp_path / "h"
    assert reader.roots(HostEnv(home=home)) == [home / ".grok" / "sessions"]
    env = HostEnv(home=home, environ={"GROK_HOME": str(tmp_path / "g")})
    assert reader.roots(env) == [tmp_path / "g" / "sessions"]
    assert reader.roots(HostEnv(home=home, platform="win32")) == [home / ".grok" / "sessions"]


def test_lines_skipped_from_their_bytes_replay_like_parsed_ones(tmp_path: Path) -> None:
    records = [
        _line(_chunk("user_message_chunk", "part one", promptIndex=0)),
        _line(_chunk("agent_thought_chunk", "thinking")),
        _line(_chunk("user_message_chunk", "part two")),
        _line(_chunk("agent_message_chunk", "reply, ")),
        _line({"sessionUpdate": "plan", "entries": []}),
        _line(_chunk("agent_message_chunk", "after the plan")),
        _line({"sessionUpdate": "tool_call_update", "toolCallId": "t", "status": "completed"}),
        _line(_chunk("agent_message_chunk", "after the tool")),
    ]
    texts = []
    for name, separators in (("compact", (",", ":")), ("spaced", (", ", ": "))):
        path = tmp_path / ".grok" / "sessions" / "%2Fp" / name / "updates.jsonl"
        path.parent.mkdir(parents=True)
        path.write_text("".join(json.dumps(r, separators=separators) + "\n" for r in records))
        texts.append(read_fresh(reader, path).texts())
    assert (
        texts[0]
        == texts[1]
        == [
            "part one",
            "part two",  # a thought ends the prompt's run of chunks
            "reply,",
            "after the plan",
            "after the tool",
        ]
    )


def _later(path: Path, than: Path) -> None:
    """``path`` written after ``than`` (a stat-only pass tells them apart)."""
    later = than.stat().st_mtime_ns + 5_000_000_000
    os.utime(path, ns=(later, later))


def _indexed(cfg: config.Config) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    """The store's grok sessions (id, title) and turns (session, key, role, sub-agent's)."""
    conn = sqlite3.connect(cfg.db_path())
    try:
        sessions = conn.execute(
            "SELECT session_id, title FROM sessions WHERE host = 'grok' ORDER BY 1"
        ).fetchall()
        turns = conn.execute(
            "SELECT s.session_id, t.key, t.role, t.subagent FROM turns t"
            " JOIN sessions s ON s.id = t.session WHERE s.host = 'grok' ORDER BY 1, 2"
        ).fetchall()
    finally:
        conn.close()
    return sessions, turns


def _fresh(cfg: config.Config) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    """What a first index of the files as they are now holds."""
    for suffix in ("", "-wal", "-shm"):
        Path(f"{cfg.db_path()}{suffix}").unlink(missing_ok=True)
    direct.index(cfg)
    return _indexed(cfg)


def test_a_title_renamed_in_summary_json_shows_on_the_next_pass_without_rereading_the_log(
    isolated_home: Path,
) -> None:
    path = _session(isolated_home)
    summary_file = path.parent / "summary.json"
    shutil.copy(fixture("grok", "agentsview-summary.json"), summary_file)
    _later(summary_file, path)
    cfg = config.load()
    direct.index(cfg)
    assert _indexed(cfg)[0] == [(SID, "Audit Grok compatibility")]
    summary = json.loads(summary_file.read_text())
    summary.update(generated_title="Nightly lint fix", title_is_manual=True)  # a /rename
    summary_file.write_text(json.dumps(summary))
    _later(summary_file, summary_file)
    renamed, _ = direct.index(cfg)
    assert renamed.files_changed == 1
    assert renamed.bytes_read == 0, "updates.jsonl is read on from its end, not again whole"
    incremental = _indexed(cfg)
    assert incremental[0] == [(SID, "Nightly lint fix")]
    again, _ = direct.index(cfg)
    assert again.files_changed == 0, "an unchanged summary.json must not force a read"
    assert incremental == _fresh(cfg)


@pytest.mark.parametrize("include_subagents", [False, True])
def test_a_summary_json_changing_the_session_kind_rereads_its_turns(
    isolated_home: Path, include_subagents: bool
) -> None:
    if include_subagents:
        cfg_file = isolated_home / ".config" / "backscroll" / "config.yaml"
        cfg_file.parent.mkdir(parents=True)
        cfg_file.write_text("hosts:\n  grok:\n    include_subagents: true\n")
    path = _session(isolated_home)
    cfg = config.load()
    direct.index(cfg)  # the updates came before any summary.json
    assert [t[3] for t in _indexed(cfg)[1]] == [0, 0, 0]
    summary_file = path.parent / "summary.json"
    shutil.copy(fixture("grok", "agent-sessions-subagent-summary.json"), summary_file)
    _later(summary_file, path)
    direct.index(cfg)
    as_subagent = _indexed(cfg)
    if include_subagents:
        assert [t[3] for t in as_subagent[1]] == [1, 1, 1]  # marked as a sub-agent's
    else:
        assert as_subagent == ([], []), (
            "no session is left behind, empty or with the turns as the person's"
        )
    assert as_subagent == _fresh(cfg)
    summary = json.loads(summary_file.read_text())
    del summary["session_kind"]  # and back to an ordinary session
    summary_file.write_text(json.dumps(summary))
    _later(summary_file, summary_file)
    direct.index(cfg)
    ordinary = _indexed(cfg)
    assert [t[3] for t in ordinary[1]] == [0, 0, 0]
    assert ordinary == _fresh(cfg)
