"""OpenHands CLI reader against the CONSTRUCTED conversation in
``tests/fixtures/openhands`` (no real one is public; see SOURCES.md there):
``base_state.json`` and five event files — a user message, an action with a
``thought``, its observation, an assistant message and a condensation."""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from backscroll.config import Config
from backscroll.indexing.indexer import Indexer, build_hosts
from backscroll.model import ReaderOptions
from backscroll.readers.base import HostEnv
from backscroll.readers.openhands import OpenHandsReader
from backscroll.store import open_writer
from tests.daemon.harness import dump_turns
from tests.readers.util import FIXTURES, MemoryIndex, role_counts

reader = OpenHandsReader()
CID = "5c3e9a1f7b2d4e6c8a0f1b3d5e7c9a2b"
SAMPLE = FIXTURES / "openhands" / f"constructed-conversation-{CID}"


def _conversation(home: Path) -> Path:
    dest = home / ".openhands" / "conversations" / CID
    shutil.copytree(SAMPLE, dest)
    return dest


def _read_all(conversation: Path) -> MemoryIndex:
    """Every event file read once, in the order discovery gives, as the indexer would."""
    index = MemoryIndex()
    turns = {}
    for path in reader.discover(conversation.parent):
        index.cursor = None
        index.read(reader, path)
        turns.update(index.turns)
    index.turns = turns
    return index


def _event(conversation: Path, number: int, event: dict[str, Any]) -> Path:
    path = conversation / "events" / f"event-{number:05d}-{event['id']}.json"
    path.write_text(json.dumps(event, indent=2))
    return path


FINISH = "Set DATABASE_URL in the unit file."


def _message(eid: str, clock: str, source: str, text: str) -> dict[str, Any]:
    role = "user" if source == "user" else "assistant"
    return {"id": eid, "timestamp": f"2026-07-30T{clock}", "source": source,
            "kind": "MessageEvent",
            "llm_message": {"role": role, "content": [{"type": "text", "text": text}]}}  # fmt: skip


def _action(eid: str, clock: str, tool: str, **action: str) -> dict[str, Any]:
    return {"id": eid, "timestamp": f"2026-07-30T{clock}", "source": "agent",
            "kind": "ActionEvent", "tool_name": tool, "thought": [], "action": action}  # fmt: skip


def test_prompt_thought_answer_and_condensation_summary(isolated_home: Path) -> None:
    index = _read_all(_conversation(isolated_home))
    assert role_counts(index) == {"user": 1, "assistant": 2, "summary": 1}
    assert index.texts("user") == [
        "The /health endpoint returns 500 after the last deploy. Find out why."
    ]
    assert index.texts("assistant") == [
        "I'll check the server log first.",
        "The handler reads DATABASE_URL, which the new deploy no longer sets. Add it to the "
        "service environment or give the handler a default.",
    ]
    assert index.texts("summary") == [
        "User reported /health 500 after deploy; cause is the missing DATABASE_URL env var."
    ]


def test_reasoning_tool_calls_and_observations_stay_out(isolated_home: Path) -> None:
    text = "\n".join(_read_all(_conversation(isolated_home)).texts())
    assert "usually means" not in text  # reasoning_content
    assert "tail -20" not in text  # the action's command
    assert "latest api log lines" not in text  # the action's summary
    assert "KeyError" not in text  # the observation


def test_session_title_project_and_resume(isolated_home: Path) -> None:
    session = _read_all(_conversation(isolated_home)).sessions[CID]
    assert session.title == "The /health endpoint returns 500 after the last deploy. Find out why."
    assert session.project == "/home/dev/src/api"
    assert session.resume_command == f"openhands --resume {CID}"


def test_finish_message_is_the_answer_and_a_web_tool_taints_what_follows(
    isolated_home: Path,
) -> None:
    conversation = _conversation(isolated_home)
    prompt = _message("e5", "10:10:00", "user", "Check the docs online")
    prompt["extended_content"] = [{"type": "text", "text": "skill text the SDK appended"}]
    _event(conversation, 5, prompt)
    _event(conversation, 6, _action("e6", "10:10:05", "browser_navigate", url="https://x.y"))
    _event(conversation, 7, _message("e7", "10:10:09", "agent", "The docs say to set it."))
    _event(conversation, 8, _action("e8", "10:10:12", "finish", message=FINISH))
    index = _read_all(conversation)
    turns = {t.text: t for t in index.turns.values()}
    assert turns["The docs say to set it."].tainted
    first_answer = index.texts("assistant")[1]
    assert first_answer.startswith("The handler reads") and not turns[first_answer].tainted
    assert FINISH in turns
    assert "skill text the SDK appended" not in "\n".join(turns)
    # A later prompt does not take the title from the first one.
    assert index.sessions[CID].title.startswith("The /health endpoint")  # type: ignore[union-attr]


def test_event_files_are_ordered_numerically_past_five_digits(tmp_path: Path) -> None:
    events = tmp_path / "conversations" / "abc" / "events"
    events.mkdir(parents=True)
    for name in ("event-100000-b.json", "event-99999-a.json", "event-00002-c.json", "notes.txt"):
        (events / name).write_text("{}")
    found = [p.name for p in reader.discover(tmp_path / "conversations")]
    assert found == ["event-00002-c.json", "event-99999-a.json", "event-100000-b.json"]
    assert reader.source_for(events.parent / "base_state.json") is None


def test_roots_follow_the_openhands_variables(tmp_path: Path) -> None:
    home = tmp_path
    assert reader.roots(HostEnv(home=home)) == [home / ".openhands" / "conversations"]
    persist = HostEnv(home=home, environ={"OPENHANDS_PERSISTENCE_DIR": "/data/oh"})
    assert reader.roots(persist) == [Path("/data/oh/conversations")]
    moved = HostEnv(
        home=home,
        environ={"OPENHANDS_PERSISTENCE_DIR": "/data/oh", "OPENHANDS_CONVERSATIONS_DIR": "/c"},
    )
    assert reader.roots(moved) == [Path("/c")]


def test_a_new_event_file_is_indexed_without_touching_the_others(isolated_home: Path) -> None:
    conversation = _conversation(isolated_home)
    db = isolated_home.parent / "index.db"
    writer = open_writer(db)
    try:
        indexer = Indexer(writer, build_hosts(Config(), HostEnv(home=isolated_home)), Config())
        first = indexer.reconcile()
        assert first.files_changed == 5
        _event(conversation, 5, _message("e5", "10:11:00", "agent", "Restart the service."))
        second = indexer.reconcile()
    finally:
        writer.close()
    assert second.files_changed == 1
    texts = [row[4] for row in dump_turns(db) if row[0] == "openhands"]
    assert len(texts) == 5 and "Restart the service." in texts


def test_sdk_nudges_and_other_agents_messages_are_not_prompts(isolated_home: Path) -> None:
    conversation = _conversation(isolated_home)
    nudge = "Your last response did not include a function call or a message. Use a tool."
    _event(conversation, 5, _message("e5", "10:12:00", "user", nudge))
    relayed = _message("e6", "10:12:01", "user", "Relayed from the planner agent")
    relayed["sender"] = "planner"
    _event(conversation, 6, relayed)
    assert _read_all(conversation).texts("user") == [
        "The /health endpoint returns 500 after the last deploy. Find out why."
    ]


def test_subagent_events_join_the_parent_only_when_asked(isolated_home: Path) -> None:
    conversation = _conversation(isolated_home)
    sub = conversation / "subagents" / "ab12" / "events"
    sub.mkdir(parents=True)
    path = sub / "event-00000-s1.json"
    path.write_text(
        json.dumps(_message("s1", "10:13:00", "agent", "Sub-agent found the env file."))
    )
    assert path in list(reader.discover(conversation.parent))
    assert reader.read(path, None, ReaderOptions()).turns == ()
    turns = reader.read(path, None, ReaderOptions(include_subagents=True)).turns
    assert [(t.session_id, t.key, t.subagent) for t in turns] == [(CID, "ab12:s1", True)]


@pytest.fixture
def in_tokyo(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """This process in UTC+9 (the writer and the reader share the machine's zone)."""
    monkeypatch.setenv("TZ", "Asia/Tokyo")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


def test_event_times_without_a_zone_are_the_machines_local_time(
    isolated_home: Path, in_tokyo: None
) -> None:
    # The SDK writes datetime.now().isoformat(): local time, no zone.
    conversation = _conversation(isolated_home)
    _event(conversation, 90, _message("m90", "10:00:00.000000", "user", "tokyo prompt"))
    (turn,) = [t for t in _read_all(conversation).turns.values() if t.text == "tokyo prompt"]
    assert turn.timestamp == datetime(2026, 7, 30, 1, 0, tzinfo=UTC).timestamp()
