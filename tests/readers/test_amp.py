"""Amp reader against the sample in ``tests/fixtures/amp`` (see SOURCES.md there).

The sample is a structural thread written by cli-continues (real field names,
invented content). ``WEB_THREAD`` below is hand-made from the Amp README
("Storage kind": ``env.initial.trees[].uri``, ``thinking``/``tool_use``/
``tool_result`` blocks, ``meta``) to pin project, taint and exclusions.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from backscroll.model import ReaderOptions
from backscroll.readers.amp import AmpReader
from backscroll.readers.base import HostEnv
from tests.readers.util import MemoryIndex, fixture, read_fresh, role_counts

reader = AmpReader()
SAMPLE = "test-thread-1.json"
SID = "test-thread-1"
WEB_ID = "T-5b1d0f3e-0000-4000-8000-000000000001"
WEB_THREAD: dict[str, Any] = {
    "v": 12,
    "id": WEB_ID,
    "created": 1750000000000,
    "messages": [
        {
            "role": "user",
            "messageId": 0,
            "content": [{"type": "text", "text": "What changed in Python 3.13?"}],
            "meta": {"sentAt": 1750000001000},
        },
        {
            "role": "assistant",
            "messageId": 1,
            "content": [
                {"type": "thinking", "thinking": "ruminatrix"},
                {"type": "text", "text": "Let me look it up."},
                {"type": "tool_use", "id": "tu1", "name": "read_web_page", "input": {"url": "u"}},
            ],
        },
        {
            "role": "user",
            "messageId": 2,
            "content": [{"type": "tool_result", "toolUseID": "tu1", "content": "webblurb"}],
        },
        {
            "role": "assistant",
            "messageId": 3,
            "content": [{"type": "text", "text": "3.13 adds a free-threaded build."}],
        },
        {"role": "user", "messageId": 4, "content": [{"type": "text", "text": "Thanks!"}]},
        {"role": "assistant", "messageId": 5, "content": [{"type": "text", "text": "Welcome."}]},
    ],
    "env": {"initial": {"trees": [{"displayName": "api", "uri": "file:///home/dev/api"}]}},
}


def _thread(tmp_path: Path, doc: Any = None, name: str = SAMPLE) -> Path:
    threads = tmp_path / ".local" / "share" / "amp" / "threads"
    threads.mkdir(parents=True, exist_ok=True)
    path = threads / name
    if doc is None:
        shutil.copyfile(fixture("amp", SAMPLE), path)
    else:
        path.write_text(json.dumps(doc, indent=2))
    return path


def test_sample_turns_by_role(tmp_path: Path) -> None:
    index = read_fresh(reader, _thread(tmp_path))
    assert role_counts(index) == {"user": 3, "assistant": 3}
    assert index.texts("user") == [
        "Create a login form component with email and password fields",
        "Add a 'Remember me' checkbox and a forgot password link",
        "Now add loading state during form submission",
    ]
    assert index.texts("assistant")[1] == (
        "I'll add a 'Remember me' checkbox and a 'Forgot password?' link below the form fields."
    )
    assert set(index.turns) == {(SID, str(i)) for i in range(1, 7)}


def test_tool_use_and_ledger_words_are_not_searchable(tmp_path: Path) -> None:
    text = "\n".join(read_fresh(reader, _thread(tmp_path)).texts())
    assert "Writing src/components/LoginForm.tsx" not in text  # tool_use block
    assert "title-generation" not in text and "claude-sonnet" not in text


def test_sample_session_title_start_and_resume(tmp_path: Path) -> None:
    path = _thread(tmp_path)
    session = read_fresh(reader, path).sessions[SID]
    assert session.title == "Create a login form component"
    assert session.started_at == 1740470400.0
    assert session.updated_at == path.stat().st_mtime
    assert session.project is None  # the sample's env has no trees
    assert session.resume_command == "amp threads continue test-thread-1"


def test_project_comes_from_the_first_tree(tmp_path: Path) -> None:
    index = read_fresh(reader, _thread(tmp_path, WEB_THREAD, f"{WEB_ID}.json"))
    session = index.sessions[WEB_ID]
    assert session.project == "/home/dev/api"
    assert session.resume_command == f"cd /home/dev/api && amp threads continue {WEB_ID}"
    assert session.title == "What changed in Python 3.13?"
    assert index.turns[(WEB_ID, "0")].timestamp == 1750000001.0


def test_text_after_a_web_page_read_is_tainted_until_next_prompt(tmp_path: Path) -> None:
    index = read_fresh(reader, _thread(tmp_path, WEB_THREAD, f"{WEB_ID}.json"))
    assert role_counts(index) == {"user": 2, "assistant": 3}
    assert {t.text for t in index.turns.values() if t.tainted} == {
        "3.13 adds a free-threaded build."
    }
    text = "\n".join(index.texts())
    assert "ruminatrix" not in text and "webblurb" not in text


def test_rewrite_appending_one_message_adds_exactly_one_key(tmp_path: Path) -> None:
    doc = json.loads(fixture("amp", SAMPLE).read_text())
    path = _thread(tmp_path, {**doc, "messages": doc["messages"][:-1]})
    index = MemoryIndex()
    old = {t.key for t in index.read(reader, path).turns}
    _thread(tmp_path, doc)
    new = {t.key for t in index.read(reader, path).turns}
    assert old < new and new - old == {"6"}
    assert index.comparable() == read_fresh(reader, path).comparable()


def test_truncated_document_raises_value_error(tmp_path: Path) -> None:
    path = _thread(tmp_path)
    path.write_bytes(path.read_bytes()[:1000])
    with pytest.raises(ValueError):
        reader.read(path, None, ReaderOptions())


def test_malformed_message_is_reported_and_the_rest_indexed(tmp_path: Path) -> None:
    doc = json.loads(fixture("amp", SAMPLE).read_text())
    path = _thread(tmp_path, {**doc, "messages": [None, *doc["messages"]]})
    result = reader.read(path, None, ReaderOptions())
    assert [p.message for p in result.problems] == ["malformed message #0: no user/assistant role"]
    assert len(result.turns) == 6


def test_document_without_messages_is_unsupported(tmp_path: Path) -> None:
    result = reader.read(_thread(tmp_path, {"id": "x", "v": 99}), None, ReaderOptions())
    assert result.unsupported is not None and not result.turns


def test_source_for_claims_thread_files_only(tmp_path: Path) -> None:
    threads = tmp_path / "amp" / "threads"
    assert reader.source_for(threads / "T-1.json") == threads / "T-1.json"
    assert reader.source_for(threads / "T-1.json.tmp") is None
    assert reader.source_for(tmp_path / "amp" / "settings.json") is None
    assert reader.source_for(tmp_path / "other" / "threads" / "T-1.json") is None


def test_roots_honour_xdg_data_home_and_platform_dirs(tmp_path: Path) -> None:
    linux = reader.roots(HostEnv(home=tmp_path, platform="linux"))
    assert linux == [tmp_path / ".local" / "share" / "amp" / "threads"]
    moved = reader.roots(HostEnv(home=tmp_path, environ={"XDG_DATA_HOME": "/xdg"}))
    assert moved == [Path("/xdg/amp/threads")]
    mac = reader.roots(HostEnv(home=tmp_path, platform="darwin"))
    assert tmp_path / "Library" / "Application Support" / "amp" / "threads" in mac
    win = reader.roots(HostEnv(home=tmp_path, environ={"APPDATA": "C:/R"}, platform="win32"))
    assert Path("C:/R/amp/threads") in win


def test_messages_without_their_own_time_take_the_time_before_them(tmp_path: Path) -> None:
    index = read_fresh(reader, _thread(tmp_path, WEB_THREAD, f"{WEB_ID}.json"))
    times = {t.key: t.timestamp for t in index.turns.values()}
    assert times["0"] == 1750000001.0  # its own meta.sentAt
    assert times["3"] == 1750000001.0 and times["5"] == 1750000001.0  # carried forward


def test_thread_without_any_message_time_uses_its_creation_time(tmp_path: Path) -> None:
    doc = {**WEB_THREAD, "messages": [{**m, "meta": {}} for m in WEB_THREAD["messages"]]}
    index = read_fresh(reader, _thread(tmp_path, doc, f"{WEB_ID}.json"))
    assert {t.timestamp for t in index.turns.values()} == {1750000000.0}
