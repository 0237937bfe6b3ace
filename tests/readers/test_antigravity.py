"""Antigravity CLI reader against ``tests/fixtures/antigravity`` (see SOURCES.md).

``cass-transcript.jsonl`` is a synthetic transcript in the real shape,
``agent-sessions-*`` are schema-coverage fixtures (tool calls on planner steps,
truncated fields, unknown step types), ``codeburn-transcript.jsonl`` is a
sanitized transcript from a current CLI. The ``history.jsonl`` rows written in
the tests follow the shape peers describe (no real one is public).
"""

from __future__ import annotations

import json
import os
import shutil
from datetime import datetime
from pathlib import Path
from typing import Any

from backscroll import config, direct
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
#: cass-transcript.jsonl's first prompt, and its step's ``created_at`` in epoch ms.
PROMPT = "Search the codebase for the FLYWHEEL marker and summarize it."
PROMPT_MS = int(datetime.fromisoformat("2026-06-11T20:14:42Z").timestamp() * 1000)


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


def _history(home: Path, *rows: dict[str, Any]) -> Path:
    """``history.jsonl`` holding ``rows``, in the shape peers describe."""
    history = home / ".gemini" / "antigravity-cli" / "history.jsonl"
    history.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return history


def _older_row(workspace: str, display: str = PROMPT, ms: int = PROMPT_MS) -> dict[str, Any]:
    """An older release's row: no ``conversationId``."""
    return {"display": display, "timestamp": ms, "workspace": workspace}


def test_an_older_history_row_without_an_id_is_matched_by_prompt_and_time(
    isolated_home: Path,
) -> None:
    path = _transcript(isolated_home)
    _history(isolated_home, _older_row("/home/dev/flywheel", ms=PROMPT_MS + 700))
    session = read_fresh(reader, path).sessions[CID]
    assert session.project == "/home/dev/flywheel"
    assert session.resume_command == f"cd /home/dev/flywheel && agy --conversation {CID}"


def test_an_older_history_row_of_other_words_or_another_time_is_not_matched(
    isolated_home: Path,
) -> None:
    path = _transcript(isolated_home)
    late = PROMPT_MS + 61_000  # (MATCH_SECONDS is 60)
    _history(
        isolated_home,
        _older_row("/tmp/other-words", display="Search the codebase for the FLYWHEEL marker."),
        _older_row("/tmp/other-time", ms=late),
        _older_row("/tmp/other-conversation") | {"conversationId": "another-conversation"},
    )
    assert read_fresh(reader, path).sessions[CID].project is None


def test_older_history_rows_naming_different_workspaces_match_nothing(
    isolated_home: Path,
) -> None:
    path = _transcript(isolated_home)
    rows = [_older_row("/tmp/a", ms=PROMPT_MS), _older_row("/tmp/b", ms=PROMPT_MS + 20_000)]
    for order in (rows, rows[::-1]):  # (whichever comes first in the file)
        _history(isolated_home, *order)
        assert read_fresh(reader, path).sessions[CID].project is None
    same = [_older_row("/tmp/a", ms=PROMPT_MS), _older_row("/tmp/a", ms=PROMPT_MS + 20_000)]
    _history(isolated_home, *same)  # one workspace twice (the prompt sent again) is no doubt
    assert read_fresh(reader, path).sessions[CID].project == "/tmp/a"


def test_a_history_row_naming_the_conversation_wins_over_an_older_match(
    isolated_home: Path,
) -> None:
    path = _transcript(isolated_home)
    named = {"display": "later", "timestamp": PROMPT_MS, "workspace": "/tmp/named"}
    _history(isolated_home, _older_row("/tmp/older"), named | {"conversationId": CID})
    assert read_fresh(reader, path).sessions[CID].project == "/tmp/named"


def test_history_and_last_conversations_are_sidecars_of_every_transcript(
    isolated_home: Path,
) -> None:
    path = _transcript(isolated_home)
    cli = isolated_home / ".gemini" / "antigravity-cli"
    assert reader.sidecars(path) == [
        cli / "history.jsonl",
        cli / "cache" / "last_conversations.json",
    ]
    assert reader.sidecars(cli / "conversations" / f"{CID}.db") == []


def test_a_history_row_written_after_the_transcript_was_read_sets_the_project(
    isolated_home: Path,
) -> None:
    path = _transcript(isolated_home)
    index = MemoryIndex()
    index.read(reader, path)
    assert index.sessions[CID].project is None
    _history(isolated_home, _older_row("/home/dev/flywheel"))
    index.read(reader, path)  # what a changed sidecar costs: a read from where it stopped
    assert index.sessions == read_fresh(reader, path).sessions
    assert index.sessions[CID].project == "/home/dev/flywheel"


def test_a_changed_history_jsonl_is_seen_by_the_next_pass(isolated_home: Path) -> None:
    path = _transcript(isolated_home)
    cfg = config.load()
    direct.index(cfg)
    history = _history(isolated_home, _older_row("/home/dev/flywheel"))
    later = path.stat().st_mtime_ns + 5_000_000_000
    os.utime(history, ns=(later, later))
    summary, _totals = direct.index(cfg)
    assert summary.files_changed == 1
    assert summary.bytes_read == 0, "the transcript is read on from its end, not again whole"
    (session,) = direct.query(cfg, "sessions", {"host": "antigravity"})["sessions"]
    assert session["project"] == "/home/dev/flywheel"
    again, _ = direct.index(cfg)
    assert again.files_changed == 0, "an unchanged history.jsonl must not force a re-read"


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
