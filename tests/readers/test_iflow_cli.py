"""iFlow CLI reader against the apparently real session in ``tests/fixtures/iflow-cli``
(published by a peer parser; see SOURCES.md there): a Chinese prompt, snapshot
bursts of assistant lines, tool results and a final answer."""

from __future__ import annotations

import json
from pathlib import Path

from backscroll.model import ReaderOptions
from backscroll.readers.base import HostEnv
from backscroll.readers.iflow_cli import IflowCliReader
from tests.readers.util import (
    MemoryIndex,
    append_lines,
    fixture,
    grow_file_incrementally,
    line_cuts,
    read_fresh,
    role_counts,
)

reader = IflowCliReader()
NAME = "agentsview-session-5de701fc-7454-4858-a249-95cac4fd3b51.jsonl"
SID = "session-5de701fc-7454-4858-a249-95cac4fd3b51"


def _session(home: Path) -> Path:
    dest = home / ".iflow" / "projects" / "C--exp-docker-image-retagger" / f"{SID}.jsonl"
    dest.parent.mkdir(parents=True)
    dest.write_bytes(fixture("iflow-cli", NAME).read_bytes())
    return dest


def test_prompt_and_the_three_answers_of_the_sample(tmp_path: Path) -> None:
    index = read_fresh(reader, _session(tmp_path))
    assert role_counts(index) == {"user": 1, "assistant": 3}
    assert index.texts("user") == ['启动app时确保环境变量 DOCKER_API_VERSION="1.46"']
    assert index.texts("assistant")[-1].startswith("已完成修改。")


def test_tool_calls_and_results_stay_out(tmp_path: Path) -> None:
    text = "\n".join(read_fresh(reader, _session(tmp_path)).texts())
    assert "absolute_path" not in text and "read_file" not in text  # tool_use
    assert "This template should help" not in text  # tool_result output
    assert "File modified" not in text


def test_session_project_title_and_no_resume(tmp_path: Path) -> None:
    session = read_fresh(reader, _session(tmp_path)).sessions[SID]
    assert session.project == "C:\\exp\\docker-image-retagger"
    assert session.title == '启动app时确保环境变量 DOCKER_API_VERSION="1.46"'
    assert session.started_at == 1768974994.812
    assert session.resume_command is None


def test_reading_at_every_cut_equals_a_fresh_read(tmp_path: Path) -> None:
    source = fixture("iflow-cli", NAME)
    grown = grow_file_incrementally(
        reader, source, tmp_path / ".iflow/projects/p" / f"{SID}.jsonl",
        line_cuts(source.read_bytes()),
    )  # fmt: skip
    assert grown.comparable() == read_fresh(reader, source).comparable()


def _snapshot(uuid: str, ts: str, *texts: str) -> dict[str, object]:
    blocks: list[dict[str, object]] = [{"type": "text", "text": t} for t in texts]
    blocks.append({"type": "tool_use", "id": f"call_{uuid}", "name": "read_file", "input": {}})
    return {"uuid": uuid, "parentUuid": "p0", "sessionId": SID, "timestamp": ts,
            "type": "assistant", "isSidechain": False,
            "message": {"role": "assistant", "content": blocks}}  # fmt: skip


def test_a_text_repeated_within_a_snapshot_burst_is_said_once(tmp_path: Path) -> None:
    path = tmp_path / ".iflow/projects/p" / f"{SID}.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"uuid": "p0", "parentUuid": None, "sessionId": SID,
                                "timestamp": "2026-01-21T05:00:00.000Z", "type": "user",
                                "message": {"role": "user", "content": "go"}}) + "\n")  # fmt: skip
    append_lines(path, _snapshot("a1", "2026-01-21T05:00:01.000Z", "Reading the files."))
    live = MemoryIndex()
    live.read(reader, path)
    append_lines(
        path,
        _snapshot("a2", "2026-01-21T05:00:01.020Z", "Reading the files.", "Then the config."),
        # Same parent, but seconds later: a new reply that may say the same words.
        _snapshot("a3", "2026-01-21T05:00:09.000Z", "Reading the files."),
    )
    live.read(reader, path)
    assert live.texts("assistant") == [
        "Reading the files.",
        "Then the config.",
        "Reading the files.",
    ]
    assert live.comparable() == read_fresh(reader, path).comparable()


def test_sidechain_lines_are_subagent_turns_only_when_asked(tmp_path: Path) -> None:
    path = tmp_path / ".iflow/projects/p" / f"{SID}.jsonl"
    path.parent.mkdir(parents=True)
    path.write_bytes(b"")
    append_lines(path, {"uuid": "s1", "parentUuid": None, "sessionId": SID, "type": "user",
                        "timestamp": "2026-01-21T05:00:00Z", "isSidechain": True,
                        "message": {"role": "user", "content": "sub-agent task"}})  # fmt: skip
    assert read_fresh(reader, path).turns == {}
    with_subagents = read_fresh(reader, path, ReaderOptions(include_subagents=True))
    assert [t.subagent for t in with_subagents.turns.values()] == [True]


def test_roots_and_ownership(tmp_path: Path) -> None:
    assert reader.roots(HostEnv(home=tmp_path)) == [tmp_path / ".iflow" / "projects"]
    project = tmp_path / ".iflow" / "projects" / "p"
    assert reader.source_for(project / f"{SID}.jsonl") == project / f"{SID}.jsonl"
    assert reader.source_for(project / "notes.jsonl") is None
    assert reader.source_for(tmp_path / ".iflow" / f"{SID}.jsonl") is None
