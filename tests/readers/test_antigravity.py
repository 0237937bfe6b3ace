"""Antigravity CLI reader against ``tests/fixtures/antigravity`` (see SOURCES.md).

``cass-transcript.jsonl`` is a synthetic transcript in the real shape,
``agent-sessions-*`` are schema-coverage fixtures (tool calls on planner steps,
truncated fields, unknown step types), ``codeburn-transcript.jsonl`` is a
sanitized transcript from a current CLI. The ``history.jsonl`` rows written in
the tests follow the shape peers describe (no real one is public).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from backscroll.readers.antigravity import AntigravityReader
from backscroll.readers.base import HostEnv
from tests.readers.util import (
    MemoryIndex,
    append_lines,
    fixture,
    grow_file_incrementally,
    line_cuts,
    read_fresh,
    role_counts,
)

reader = AntigravityReader()
CID = "aaaa1111-bbbb-2222-cccc-333344445555"


def _transcript(home: Path, sample: str = "cass-transcript.jsonl", cid: str = CID) -> Path:
    logs = home / ".gemini" / "antigravity-cli" / "brain" / cid / ".system_generated" / "logs"
    logs.mkdir(parents=True)
    shutil.copy(fixture("antigravity", sample), logs / "transcript.jsonl")
    return logs / "transcript.jsonl"


def test_user_request_and_planner_content_only(isolated_home: Path) -> None:
    index = read_fresh(reader, _transcript(isolated_home))
    assert index.texts("user") == ["Search the codebase for the FLYWHEEL marker and summarize it."]
    assert index.texts("assistant") == [
        "I'll grep for the FLYWHEEL marker now.",
        "Found the FLYWHEEL marker in notes.txt; the associated magic number is 42.",
    ]
    text = "\n".join(index.texts())
    for harness in ("ADDITIONAL_METADATA", "Model Selection", "EPHEMERAL_MESSAGE", "[Notice]"):
        assert harness not in text
    assert "magic number 42.\n" not in text  # tool step output
    assert "Plan: use grep_search" not in text  # thinking


def test_schema_drift_tool_only_steps_and_unknown_types(isolated_home: Path) -> None:
    small = read_fresh(reader, _transcript(isolated_home, "agent-sessions-cli_small.jsonl"))
    assert small.texts("user") == ["List the files."]
    assert small.texts("assistant") == ["The directory contains a.txt and b.txt."]
    assert role_counts(small) == {"user": 1, "assistant": 1}  # no thinking as a fallback
    drift = read_fresh(
        reader, _transcript(isolated_home, "agent-sessions-cli_schema_drift.jsonl", cid="drift")
    )
    assert drift.texts() == ["Go"]


def test_session_metadata_and_resume(isolated_home: Path) -> None:
    path = _transcript(isolated_home)
    session = read_fresh(reader, path).sessions[CID]
    assert session.title == "Search the codebase for the FLYWHEEL marker and summarize it."
    assert session.started_at is not None and session.updated_at is not None
    assert session.project is None  # nothing names the workspace yet
    assert session.resume_command == f"agy --conversation {CID}"


def test_project_from_history_jsonl(isolated_home: Path) -> None:
    path = _transcript(isolated_home)
    history = isolated_home / ".gemini" / "antigravity-cli" / "history.jsonl"
    row = {"display": "Search…", "timestamp": 1, "workspace": "/tmp/proj", "conversationId": CID}
    history.write_text(json.dumps(row) + "\n" + "not json\n")
    session = read_fresh(reader, path).sessions[CID]
    assert session.project == "/tmp/proj"
    assert session.resume_command == f"cd /tmp/proj && agy --conversation {CID}"


def test_reading_as_the_file_grows_equals_reading_it_whole(tmp_path: Path) -> None:
    source = fixture("antigravity", "cass-transcript.jsonl")
    dest = tmp_path / "brain" / CID / ".system_generated" / "logs" / "transcript.jsonl"
    grown = grow_file_incrementally(reader, source, dest, line_cuts(source.read_bytes()))
    assert grown.comparable() == read_fresh(reader, dest).comparable()


def test_a_step_written_again_replaces_its_turn(isolated_home: Path) -> None:
    path = _transcript(isolated_home, "codeburn-transcript.jsonl")
    index = MemoryIndex()
    index.read(reader, path)
    append_lines(
        path,
        {
            "step_index": 1,
            "source": "MODEL",
            "type": "PLANNER_RESPONSE",
            "status": "DONE",
            "created_at": "2026-06-21T13:32:15Z",
            "content": "sanitized fixture response, final",
        },
    )
    index.read(reader, path)
    assert index.texts("assistant") == ["sanitized fixture response, final"]


def test_reply_after_a_web_step_is_tainted(isolated_home: Path) -> None:
    path = _transcript(isolated_home, "codeburn-transcript.jsonl")
    append_lines(
        path,
        {
            "step_index": 2,
            "source": "MODEL",
            "type": "SEARCH_WEB",
            "status": "DONE",
            "created_at": "2026-06-21T13:32:16Z",
            "content": "results",
        },
        {
            "step_index": 3,
            "source": "MODEL",
            "type": "PLANNER_RESPONSE",
            "status": "DONE",
            "created_at": "2026-06-21T13:32:17Z",
            "content": "The web says so.",
        },
    )
    turns = read_fresh(reader, path).turns.values()
    assert [t.tainted for t in sorted(turns, key=lambda t: t.seq)] == [False, False, True]


def test_only_transcripts_under_brain_are_ours(isolated_home: Path) -> None:
    path = _transcript(isolated_home)
    assert reader.source_for(path) == path
    assert reader.source_for(path.with_name("transcript_full.jsonl")) is None
    db = isolated_home / ".gemini" / "antigravity-cli" / "conversations" / f"{CID}.db"
    assert reader.source_for(db) is None


def test_default_root_on_every_platform(tmp_path: Path) -> None:
    for platform in ("linux", "darwin", "win32"):
        roots = reader.roots(HostEnv(home=tmp_path, platform=platform))
        assert roots == [tmp_path / ".gemini" / "antigravity-cli" / "brain"]
