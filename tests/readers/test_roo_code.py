"""Roo Code reader against the sample in ``tests/fixtures/roo-code`` (see SOURCES.md).

The sample is a structural ``ui_messages.json`` from cli-continues. The
``history_item.json`` and the ``condense_context`` row below are hand-made from
the Roo Code README ("Files per task", "What to index"): title = ``task``,
project = ``workspace``, summary = ``contextCondense.summary``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from backscroll.model import ReaderOptions
from backscroll.readers.base import HostEnv
from backscroll.readers.roo_code import RooCodeReader
from tests.readers.util import MemoryIndex, fixture, read_fresh, role_counts

reader = RooCodeReader()
EXT = Path("Code") / "User" / "globalStorage" / "rooveterinaryinc.roo-cline"
TASK_ID = "0b3c9c1e-2f7a-4d8e-9a41-5e6f7a8b9c0d"
HISTORY_ITEM = {
    "id": TASK_ID,
    "number": 3,
    "ts": 1740471008000,
    "task": "Set up a CI/CD pipeline with GitHub Actions",
    "workspace": "/home/dev/node-app",
    "mode": "code",
    "parentTaskId": "parent-task-1",
}


def _sample_doc() -> list[dict[str, Any]]:
    doc: list[dict[str, Any]] = json.loads(fixture("roo-code", "ui_messages.json").read_text())
    return doc


def _task(tmp_path: Path, doc: Any, item: dict[str, Any] | None = None) -> Path:
    task_dir = tmp_path / EXT / "tasks" / TASK_ID
    task_dir.mkdir(parents=True, exist_ok=True)
    if item is not None:
        (task_dir / "history_item.json").write_text(json.dumps(item))
    path = task_dir / "ui_messages.json"
    path.write_text(json.dumps(doc, indent=2))
    return path


def test_sample_turns_by_role(tmp_path: Path) -> None:
    index = read_fresh(reader, _task(tmp_path, _sample_doc()))
    assert role_counts(index) == {"user": 2, "assistant": 2}
    assert index.texts("user") == [
        "Set up a CI/CD pipeline with GitHub Actions for our Node.js project",
        "Add a matrix strategy to test on Node 18 and 20",
    ]
    assert index.texts("assistant")[1] == (
        "CI/CD pipeline created at .github/workflows/ci.yml with matrix testing on Node 18 and 20."
    )
    assert index.texts("assistant")[0].endswith("on push to main and on pull requests.")


def test_api_request_blobs_are_not_searchable(tmp_path: Path) -> None:
    text = "\n".join(read_fresh(reader, _task(tmp_path, _sample_doc())).texts())
    assert "cacheWrites" not in text and "POST /v1/messages" not in text


def test_history_item_gives_title_project_and_parent(tmp_path: Path) -> None:
    index = read_fresh(reader, _task(tmp_path, _sample_doc(), HISTORY_ITEM))
    session = index.sessions[TASK_ID]
    assert session.title == "Set up a CI/CD pipeline with GitHub Actions"
    assert session.project == "/home/dev/node-app"
    assert session.parent_session_id == "parent-task-1"
    assert session.started_at == 1740471000.0
    assert session.resume_command is None  # reopened from the History view


def test_without_history_item_the_first_prompt_is_the_title(tmp_path: Path) -> None:
    session = read_fresh(reader, _task(tmp_path, _sample_doc())).sessions[TASK_ID]
    assert session.title == "Set up a CI/CD pipeline with GitHub Actions for our Node.js project"
    assert session.project is None


def test_condense_context_summary_is_a_summary_turn(tmp_path: Path) -> None:
    doc = [
        *_sample_doc(),
        {"ts": 1740471009000, "type": "say", "say": "reasoning", "text": "blorptangle"},
        {
            "ts": 1740471010000,
            "type": "say",
            "say": "condense_context",
            "contextCondense": {
                "cost": 0.01,
                "prevContextTokens": 9000,
                "newContextTokens": 900,
                "summary": "Pipeline set up; matrix added for Node 18 and 20.",
            },
        },
    ]
    index = read_fresh(reader, _task(tmp_path, doc))
    assert index.texts("summary") == ["Pipeline set up; matrix added for Node 18 and 20."]
    assert "blorptangle" not in "\n".join(index.texts())


def test_rewrite_appending_one_message_adds_exactly_one_key(tmp_path: Path) -> None:
    doc = _sample_doc()
    path = _task(tmp_path, doc[:-1])
    index = MemoryIndex()
    old = {t.key for t in index.read(reader, path).turns}
    _task(tmp_path, doc)
    new = {t.key for t in index.read(reader, path).turns}
    assert old < new and new - old == {"1740471008000"}
    assert index.comparable() == read_fresh(reader, path).comparable()


def test_truncated_document_raises_value_error(tmp_path: Path) -> None:
    path = _task(tmp_path, _sample_doc())
    path.write_bytes(path.read_bytes()[:-40])
    with pytest.raises(ValueError):
        reader.read(path, None, ReaderOptions())


def test_malformed_message_is_reported_and_the_rest_indexed(tmp_path: Path) -> None:
    doc = _sample_doc()
    path = _task(tmp_path, [*doc[:2], {"ts": 5, "type": "shout"}, *doc[2:]])
    result = reader.read(path, None, ReaderOptions())
    assert len(result.problems) == 1 and "#2" in result.problems[0].message
    assert len(result.turns) == 4


def test_document_that_is_not_a_message_array_is_unsupported(tmp_path: Path) -> None:
    result = reader.read(_task(tmp_path, {"v": 2}), None, ReaderOptions())
    assert result.unsupported is not None and not result.turns


def test_source_for_maps_history_item_to_its_task(tmp_path: Path) -> None:
    task = tmp_path / EXT / "tasks" / TASK_ID
    assert reader.source_for(task / "history_item.json") == task / "ui_messages.json"
    assert reader.source_for(task / "ui_messages.json") == task / "ui_messages.json"
    assert reader.source_for(task / "api_conversation_history.json") is None
    assert reader.source_for(tmp_path / EXT / "tasks" / "_index.json") is None
    cline = tmp_path / "saoudrizwan.claude-dev" / "tasks" / "1" / "ui_messages.json"
    assert reader.source_for(cline) is None


def test_roots_cover_every_editor_on_each_platform(tmp_path: Path) -> None:
    linux = reader.roots(HostEnv(home=tmp_path, environ={}, platform="linux"))
    assert tmp_path / ".config" / EXT in linux
    assert tmp_path / ".config" / "VSCodium/User/globalStorage/rooveterinaryinc.roo-cline" in linux
    moved = reader.roots(HostEnv(home=tmp_path, environ={"XDG_CONFIG_HOME": "/cfg"}))
    assert Path("/cfg") / EXT in moved
    mac = reader.roots(HostEnv(home=tmp_path, environ={}, platform="darwin"))
    assert tmp_path / "Library" / "Application Support" / EXT in mac
    win = reader.roots(HostEnv(home=tmp_path, environ={"APPDATA": "C:/R"}, platform="win32"))
    assert Path("C:/R") / EXT in win


def test_custom_storage_path_from_the_editor_settings_is_a_root(tmp_path: Path) -> None:
    home = tmp_path / "home"
    custom = tmp_path / "roo store"
    settings = home / ".config" / "Code" / "User" / "settings.json"
    settings.parent.mkdir(parents=True)
    settings.write_text(
        '{\n  // where Roo keeps its tasks\n  "editor.fontSize": 13,\n'
        f'  "roo-cline.customStoragePath": {json.dumps(str(custom))},\n}}\n'
    )
    own = RooCodeReader()
    roots = own.roots(HostEnv(home=home, environ={}, platform="linux"))
    assert custom in roots
    task = custom / "tasks" / TASK_ID / "ui_messages.json"
    task.parent.mkdir(parents=True)
    task.write_text(fixture("roo-code", "ui_messages.json").read_text())
    assert list(own.discover(custom)) == [task]
    assert own.source_for(task.parent / "history_item.json") == task
    assert own.source_for(tmp_path / "elsewhere" / "tasks" / "x" / "ui_messages.json") is None
    assert role_counts(read_fresh(own, task))["user"] >= 1
