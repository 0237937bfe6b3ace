"""Continue reader against a HAND-MADE fixture in ``tests/fixtures/continue``.

No public session file exists (see SOURCES.md there), so
``5f1c2a3b-4d5e-4f60-8a7b-9c0d1e2f3a4b.json`` and ``sessions.json`` were written
by hand from the Continue README: "Storage kind" (the session object and
``ChatHistoryItem`` fields, string or text-part content, ``toolCalls``) and
"Identity, project, title, time" (``file://`` workspace, ``dateCreated`` in the
index as an epoch-ms string).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from backscroll.model import ReaderOptions
from backscroll.readers.base import HostEnv
from backscroll.readers.continue_dev import ContinueReader
from tests.readers.util import MemoryIndex, fixture, read_fresh, role_counts

reader = ContinueReader()
SID = "5f1c2a3b-4d5e-4f60-8a7b-9c0d1e2f3a4b"
NAME = f"{SID}.json"


def _sessions(tmp_path: Path, with_index: bool = True) -> Path:
    sessions = tmp_path / ".continue" / "sessions"
    sessions.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(fixture("continue", NAME), sessions / NAME)
    if with_index:
        shutil.copyfile(fixture("continue", "sessions.json"), sessions / "sessions.json")
    return sessions / NAME


def test_turns_by_role(tmp_path: Path) -> None:
    index = read_fresh(reader, _sessions(tmp_path))
    assert role_counts(index) == {"user": 2, "assistant": 3, "summary": 1}
    assert index.texts("user") == [
        "How do I debounce the search box in SearchBar.tsx?",
        "Make it 250 ms instead.",
    ]
    assert index.texts("assistant")[2] == "Done: the delay is now 250 ms."
    assert index.texts("summary") == [
        "User wants a debounced search box in SearchBar.tsx; suggested useDebounce with a "
        "300 ms delay."
    ]


def test_context_thinking_tool_and_system_words_are_not_searchable(tmp_path: Path) -> None:
    text = "\n".join(read_fresh(reader, _sessions(tmp_path)).texts())
    for word in (
        "glimmerfile",  # contextItems
        "quibbleweight",  # thinking
        "frobnicated",  # tool message / toolCallStates
        "zanzibarg",  # tool call arguments
        "promptlogsecret",  # promptLogs
        "sysprompttoken",  # system
    ):
        assert word not in text


def test_session_title_project_start_and_resume(tmp_path: Path) -> None:
    path = _sessions(tmp_path)
    session = read_fresh(reader, path).sessions[SID]
    assert session.title == "Debounce the search box"
    assert session.project == "/home/dev/shop front"
    assert session.started_at == 1740470400.0
    assert session.updated_at == path.stat().st_mtime
    assert session.resume_command == "cd '/home/dev/shop front' && cn --fork " + SID


def test_without_the_index_start_is_unknown_and_placeholder_title_falls_back(
    tmp_path: Path,
) -> None:
    path = _sessions(tmp_path, with_index=False)
    doc = json.loads(path.read_text())
    path.write_text(json.dumps({**doc, "title": "New Session"}))
    session = read_fresh(reader, path).sessions[SID]
    assert session.started_at is None
    assert session.title == "How do I debounce the search box in SearchBar.tsx?"


def test_answer_after_a_url_fetch_is_tainted_until_next_prompt(tmp_path: Path) -> None:
    turns = read_fresh(reader, _sessions(tmp_path)).turns.values()
    tainted = {t.text for t in turns if t.tainted}
    assert tainted == {"The React docs recommend a 300 ms delay with useDeferredValue."}


def test_rewrite_appending_one_message_adds_exactly_one_key(tmp_path: Path) -> None:
    path = _sessions(tmp_path)
    doc = json.loads(path.read_text())
    path.write_text(json.dumps({**doc, "history": doc["history"][:-1]}))
    index = MemoryIndex()
    old = {t.key for t in index.read(reader, path).turns}
    path.write_text(json.dumps(doc))
    new = {t.key for t in index.read(reader, path).turns}
    assert old < new and len(new - old) == 1
    assert index.comparable() == read_fresh(reader, path).comparable()


def test_rewrite_with_same_content_gives_identical_turns(tmp_path: Path) -> None:
    path = _sessions(tmp_path)
    index = read_fresh(reader, path)
    before = index.comparable()
    path.write_text(json.dumps(json.loads(path.read_text()), indent=4))
    index.read(reader, path)
    assert index.comparable() == before


def test_truncated_document_raises_value_error(tmp_path: Path) -> None:
    path = _sessions(tmp_path)
    path.write_bytes(path.read_bytes()[:-3])
    with pytest.raises(ValueError):
        reader.read(path, None, ReaderOptions())


def test_malformed_item_is_reported_and_the_rest_indexed(tmp_path: Path) -> None:
    path = _sessions(tmp_path)
    doc = json.loads(path.read_text())
    path.write_text(json.dumps({**doc, "history": [*doc["history"][:2], 7, *doc["history"][2:]]}))
    result = reader.read(path, None, ReaderOptions())
    assert [p.message for p in result.problems] == ["malformed history item #2: no message"]
    assert len(result.turns) == 6


def test_document_without_history_is_unsupported(tmp_path: Path) -> None:
    path = _sessions(tmp_path)
    path.write_text(json.dumps({"sessionId": SID, "messages": []}))
    result = reader.read(path, None, ReaderOptions())
    assert result.unsupported is not None and not result.turns


def test_source_for_skips_the_index(tmp_path: Path) -> None:
    sessions = tmp_path / ".continue" / "sessions"
    assert reader.source_for(sessions / NAME) == sessions / NAME
    assert reader.source_for(sessions / "sessions.json") is None
    moved = tmp_path / "elsewhere" / "sessions"
    assert reader.source_for(moved / NAME) == moved / NAME
    assert reader.source_for(moved / "sessions.index.json") is None
    assert reader.source_for(tmp_path / ".continue" / "config.json") is None


def test_roots_honour_continue_global_dir(tmp_path: Path) -> None:
    assert reader.roots(HostEnv(home=tmp_path)) == [tmp_path / ".continue" / "sessions"]
    env = HostEnv(home=tmp_path, environ={"CONTINUE_GLOBAL_DIR": "/opt/cont"}, platform="win32")
    assert reader.roots(env) == [Path("/opt/cont/sessions")]
