"""cursor-agent reader against ``tests/fixtures/cursor-agent/cursor-agent-transcript.jsonl``
(a real, redacted transcript; see SOURCES.md there). Tests that need tool names,
injected context or sub-agents write small lines shaped like the sample's.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from backscroll.model import ReaderOptions
from backscroll.readers.base import MTIME_NOTE, HostEnv
from backscroll.readers.cursor_agent import CursorAgentReader
from tests.readers.util import MemoryIndex, copy_fixture, fixture, read_fresh

SAMPLE = "cursor-agent-transcript.jsonl"
CHAT = "0f8e2b7c-1d2a-4c3b-9e8f-7a6b5c4d3e2f"
reader = CursorAgentReader()


def _place(tmp_path: Path, data: bytes, sub: str | None = None) -> Path:
    chat = tmp_path / ".cursor" / "projects" / "home-u-app" / "agent-transcripts" / CHAT
    path = chat / "subagents" / f"{sub}.jsonl" if sub else chat / f"{CHAT}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def _lines(*objs: object) -> bytes:
    return b"".join(json.dumps(o).encode() + b"\n" for o in objs)


def _user(text: str) -> dict[str, object]:
    return {"role": "user", "message": {"content": [{"type": "text", "text": text}]}}


def _assistant(*blocks: dict[str, object]) -> dict[str, object]:
    return {"role": "assistant", "message": {"content": list(blocks)}}


def _text(text: str) -> dict[str, object]:
    return {"type": "text", "text": text}


def _tool(name: str) -> dict[str, object]:
    return {"type": "tool_use", "name": name, "input": {"q": "zyzzyva"}}


def test_sample_turns_by_role_and_texts(tmp_path: Path) -> None:
    path = _place(tmp_path, fixture("cursor-agent", SAMPLE).read_bytes())
    index = read_fresh(reader, path)
    assert index.texts("user") == ["<redacted user prompt>"]  # unwrapped from <user_query>
    assert index.texts("assistant") == ["<redacted assistant reply>"]
    assert len(index.turns) == 2
    assert {k for _, k in index.turns} == {"o:0", "o:258"}


def test_tool_calls_are_not_searchable(tmp_path: Path) -> None:
    path = _place(tmp_path, fixture("cursor-agent", SAMPLE).read_bytes())
    text = " ".join(read_fresh(reader, path).texts())
    assert "example_tool" not in text
    assert "user_query" not in text


def test_turns_are_stamped_with_the_file_mtime_and_say_so(tmp_path: Path) -> None:
    path = _place(tmp_path, fixture("cursor-agent", SAMPLE).read_bytes())
    os.utime(path, (1_750_000_000, 1_750_000_000))
    index = read_fresh(reader, path)
    assert {t.timestamp for t in index.turns.values()} == {1_750_000_000}
    assert {t.note for t in index.turns.values()} == {MTIME_NOTE}


def test_session_metadata_and_resume_command(tmp_path: Path) -> None:
    path = _place(tmp_path, fixture("cursor-agent", SAMPLE).read_bytes())
    os.utime(path, (1_750_000_000, 1_750_000_000))
    session = read_fresh(reader, path).sessions[CHAT]
    assert session.title == "<redacted user prompt>"
    assert session.project is None  # the project slug is lossy
    assert session.started_at == session.updated_at == 1_750_000_000
    assert session.resume_command == f"cursor-agent --resume {CHAT}"


def test_incremental_reads_equal_a_fresh_read(tmp_path: Path) -> None:
    """Grown piece by piece (mid-line cuts included) with the mtime pinned, since
    the timestamp is the mtime at read time."""
    data = fixture("cursor-agent", SAMPLE).read_bytes()
    path = _place(tmp_path, b"")
    index = MemoryIndex()
    written = 0
    for cut in [1, 100, 116, 117, 118, 250, 258, 300, len(data)]:
        with open(path, "ab") as fh:
            fh.write(data[written:cut])
        written = cut
        os.utime(path, (1_750_000_000, 1_750_000_000))
        index.read(reader, path)
    fresh = read_fresh(reader, path)
    assert index.comparable() == fresh.comparable()
    assert index.sessions == fresh.sessions


def test_a_copied_sample_is_ours(tmp_path: Path) -> None:
    dest = copy_fixture("cursor-agent", SAMPLE, tmp_path / "p" / "agent-transcripts")
    assert reader.source_for(dest) == dest
    assert reader.source_for(tmp_path / "p" / "repo.json") is None
    assert reader.source_for(tmp_path / "chats" / "x.jsonl") is None


def test_injected_context_is_dropped_and_web_tools_taint_replies(tmp_path: Path) -> None:
    path = _place(
        tmp_path,
        _lines(
            _user("<user_info>OS linux, shell zsh, quokka</user_info>\nWhat does the spec say?"),
            _assistant(_text("Checking online."), _tool("WebSearch")),
            {"type": "turn_ended"},
            _assistant(_text("The spec says retries are capped.")),
            _user("<user_query>ok thanks</user_query>"),
            _assistant(_text("Anything else?")),
        ),
    )
    index = read_fresh(reader, path)
    assert index.texts("user") == ["What does the spec say?", "ok thanks"]
    tainted = [t.text for t in index.turns.values() if t.tainted]
    assert tainted == ["The spec says retries are capped."]
    assert "quokka" not in " ".join(index.texts()) and "zyzzyva" not in " ".join(index.texts())
    assert index.cursor is not None and index.cursor.state["tainted"] is False


def test_malformed_line_is_reported_and_the_rest_indexed(tmp_path: Path) -> None:
    lines = fixture("cursor-agent", SAMPLE).read_bytes().splitlines(keepends=True)
    path = _place(tmp_path, b"".join([lines[0], b'{"role":"assistant","mess\n', *lines[1:]]))
    result = reader.read(path, None, ReaderOptions())
    assert [p.line for p in result.problems] == [2]
    assert len(result.turns) == 2


def test_subagent_transcripts_only_when_asked(tmp_path: Path) -> None:
    path = _place(
        tmp_path, _lines(_user("scan the repo"), _assistant(_text("found 3 files"))), "explorer"
    )
    assert reader.source_for(path) == path
    assert reader.read(path, None, ReaderOptions()).turns == ()
    result = reader.read(path, None, ReaderOptions(include_subagents=True))
    assert {t.session_id for t in result.turns} == {CHAT}
    assert all(t.subagent and t.key.startswith("explorer:") for t in result.turns)
    assert result.sessions == ()  # the parent chat's title stays its own


def test_roots_default_to_home_and_follow_cursor_config_dir() -> None:
    assert reader.roots(HostEnv(home=Path("/h"))) == [Path("/h/.cursor/projects")]
    moved = HostEnv(home=Path("/h"), environ={"CURSOR_CONFIG_DIR": "/c"})
    assert reader.roots(moved) == [Path("/c/projects"), Path("/h/.cursor/projects")]
    windows = HostEnv(home=Path("C:/Users/u"), platform="win32")
    assert reader.roots(windows) == [Path("C:/Users/u/.cursor/projects")]


def test_redacted_placeholder_blocks_are_not_assistant_turns(tmp_path: Path) -> None:
    path = _place(
        tmp_path,
        _lines(
            _user("Why is the build red?"),
            _assistant(_text("[REDACTED]")),
            _assistant(_text("[REDACTED]"), _text("The lockfile is stale.")),
        ),
    )
    index = read_fresh(reader, path)
    assert index.texts("assistant") == ["The lockfile is stale."]
