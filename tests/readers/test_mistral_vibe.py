"""Mistral Vibe reader against ``tests/fixtures/mistral-vibe`` (see SOURCES.md).

The ``constructed-*`` pair is hand-made from mistral-vibe's source (a session and
the one compaction started after it); the ``agentsview-*`` files are peer
fixtures (no ``injected`` field, tool arguments as an object).
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

from backscroll import config, direct
from backscroll.model import ReaderOptions
from backscroll.readers.base import HostEnv
from backscroll.readers.mistral_vibe import MistralVibeReader
from tests.readers.util import (
    MemoryIndex,
    append_lines,
    fixture,
    grow_file_incrementally,
    line_cuts,
    read_fresh,
)

reader = MistralVibeReader()
COMPACTED = "session_20260730_093000_b41e7d09"
SID = "b41e7d09-6c3a-4f8e-b2d1-5e0f8f2c1a7e"


def _session(home: Path, folder: str, messages: str, meta: str | None) -> Path:
    session = home / ".vibe" / "logs" / "session" / folder
    session.mkdir(parents=True)
    shutil.copy(fixture("mistral-vibe", messages), session / "messages.jsonl")
    if meta is not None:
        shutil.copy(fixture("mistral-vibe", meta), session / "meta.json")
    return session / "messages.jsonl"


def _compacted(home: Path) -> Path:
    return _session(
        home,
        COMPACTED,
        f"constructed-{COMPACTED}-messages.jsonl",
        f"constructed-{COMPACTED}-meta.json",
    )


def test_compaction_context_gives_a_summary_and_typed_prompts(isolated_home: Path) -> None:
    index = read_fresh(reader, _compacted(isolated_home))
    assert index.texts("summary") == [
        "The user asked why `vibe --continue` picks the wrong session. Cause: the loader sorts "
        "by directory mtime. Proposed fix: sort by `end_time` from meta.json."
    ]
    assert index.texts("user") == ["Apply the fix."]
    assert index.texts("assistant") == ["Done: `find_latest_session` now orders by `end_time`."]
    assert "<previous_user_messages>" not in "\n".join(index.texts())


def test_meta_json_gives_id_parent_title_project_and_times(isolated_home: Path) -> None:
    path = _compacted(isolated_home)
    assert reader.sidecars(path) == [path.parent / "meta.json"]
    assert reader.source_for(path.parent / "meta.json") == path
    session = read_fresh(reader, path).sessions[SID]
    assert session.parent_session_id == "8f2c1a7e-3d5b-4e9f-a0c6-5e0f8f2c1a7e"
    assert session.title == "Wrong session picked by --continue"
    assert session.project == "/home/dev/src/vibe-demo"
    assert session.started_at is not None and session.updated_at is not None
    assert session.resume_command == f"cd /home/dev/src/vibe-demo && vibe --resume {SID}"


def test_reasoning_tool_calls_and_tool_output_stay_out(isolated_home: Path) -> None:
    folder = "session_20260730_091500_8f2c1a7e"
    index = read_fresh(
        reader, _session(isolated_home, folder, f"constructed-{folder}-messages.jsonl", None)
    )
    text = "\n".join(index.texts())
    assert "Check the session loader's sort key." not in text  # reasoning_content
    assert "session_loader.py:123" not in text  # tool output
    assert "find_latest_session" not in text.split("Sorting by")[0]  # tool arguments
    assert index.texts("user") == ["Why does `vibe --continue` pick the wrong session?"]
    assert len(index.texts("assistant")) == 2
    assert set(index.sessions) == {"8f2c1a7e"}  # no meta.json yet: the folder's short id


def test_meta_json_arriving_later_moves_the_turns_to_the_real_id(isolated_home: Path) -> None:
    path = _session(isolated_home, COMPACTED, f"constructed-{COMPACTED}-messages.jsonl", None)
    index = MemoryIndex()
    index.read(reader, path)
    assert {sid for sid, _ in index.turns} == {"b41e7d09"}
    shutil.copy(
        fixture("mistral-vibe", f"constructed-{COMPACTED}-meta.json"), path.parent / "meta.json"
    )
    index.read(reader, path)
    assert {sid for sid, _ in index.turns} == {SID}


def test_meta_json_arriving_later_leaves_no_empty_session_under_the_folder_id(
    isolated_home: Path,
) -> None:
    path = _session(isolated_home, COMPACTED, f"constructed-{COMPACTED}-messages.jsonl", None)
    cfg = config.load()
    direct.index(cfg)
    assert [s["session_id"] for s in _sessions(cfg)] == ["b41e7d09"]
    meta = path.parent / "meta.json"
    shutil.copy(fixture("mistral-vibe", f"constructed-{COMPACTED}-meta.json"), meta)
    later = path.stat().st_mtime_ns + 5_000_000_000
    os.utime(meta, ns=(later, later))
    direct.index(cfg)
    sessions = _sessions(cfg)
    assert [s["session_id"] for s in sessions] == [SID]
    assert sessions[0]["turns"] == 3


def _sessions(cfg: config.Config) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = direct.query(cfg, "sessions", {"host": "mistral-vibe"})[
        "sessions"
    ]
    return found


def test_peer_fixtures_without_injected_field_and_object_arguments(isolated_home: Path) -> None:
    basic = read_fresh(
        reader,
        _session(
            isolated_home,
            "session_20260613_100000_abc123de",
            "agentsview-session_basic-messages.jsonl",
            "agentsview-session_basic-meta.json",
        ),
    )
    assert basic.texts("user") == [
        "Create a Python function to sort a list",
        "Can you add type hints?",
    ]
    assert len(basic.texts("assistant")) == 3
    tools = read_fresh(
        reader,
        _session(
            isolated_home,
            "session_20260613_110000_def456gh",
            "agentsview-session_with_tools-messages.jsonl",
            "agentsview-session_with_tools-meta.json",
        ),
    )
    assert "This is a sample project." not in tools.texts("user")
    assert len(tools.texts("assistant")) == 2


def test_reading_as_the_file_grows_equals_reading_it_whole(isolated_home: Path) -> None:
    source = fixture("mistral-vibe", f"constructed-{COMPACTED}-messages.jsonl")
    dest = isolated_home / ".vibe" / "logs" / "session" / COMPACTED / "messages.jsonl"
    dest.parent.mkdir(parents=True)
    shutil.copy(
        fixture("mistral-vibe", f"constructed-{COMPACTED}-meta.json"), dest.parent / "meta.json"
    )
    grown = grow_file_incrementally(reader, source, dest, line_cuts(source.read_bytes()))
    assert grown.comparable() == read_fresh(reader, dest).comparable()


def test_reply_after_a_web_tool_is_tainted(isolated_home: Path) -> None:
    path = _compacted(isolated_home)
    call = {
        "id": "c1",
        "index": 0,
        "type": "function",
        "function": {"name": "web_fetch", "arguments": json.dumps({"url": "https://example.com"})},
    }
    append_lines(
        path,
        {"role": "user", "content": "What does the page say?", "injected": False},
        {"role": "assistant", "content": "", "injected": False, "tool_calls": [call]},
        {"role": "tool", "content": "page text", "injected": False, "name": "web_fetch"},
        {"role": "assistant", "content": "It says hello.", "injected": False},
    )
    index = read_fresh(reader, path)
    reply = next(t for t in index.turns.values() if t.text == "It says hello.")
    assert reply.tainted


def test_sub_agent_sessions_only_with_include_subagents(isolated_home: Path) -> None:
    parent = _compacted(isolated_home).parent
    sub = parent / "agents" / "explore_20260730_093010_aa11bb22" / "messages.jsonl"
    sub.parent.mkdir(parents=True)
    shutil.copy(fixture("mistral-vibe", f"constructed-{COMPACTED}-messages.jsonl"), sub)
    assert reader.source_for(sub) == sub
    assert read_fresh(reader, sub).texts() == []
    index = read_fresh(reader, sub, ReaderOptions(include_subagents=True))
    assert index.turns and all(t.subagent for t in index.turns.values())


def test_default_root_and_vibe_home_override(tmp_path: Path) -> None:
    home = tmp_path / "h"
    assert reader.roots(HostEnv(home=home)) == [home / ".vibe" / "logs" / "session"]
    env = HostEnv(home=home, environ={"VIBE_HOME": str(tmp_path / "v")}, platform="win32")
    assert reader.roots(env) == [tmp_path / "v" / "logs" / "session"]
