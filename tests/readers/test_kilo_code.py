"""Kilo Code (legacy extension) reader against ``tests/fixtures/kilo-code`` (see SOURCES.md).

The sample is a structural ``ui_messages.json`` from cli-continues, in the
Roo-shaped legacy task store.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from backscroll.model import ReaderOptions
from backscroll.readers.base import HostEnv
from backscroll.readers.kilo_code import KiloCodeReader
from tests.readers.util import MemoryIndex, fixture, read_fresh, role_counts

reader = KiloCodeReader()
EXT = Path("Code") / "User" / "globalStorage" / "kilocode.kilo-code"
TASK_ID = "7d1e2f3a-0000-4000-8000-000000000001"


def _sample_doc() -> list[dict[str, Any]]:
    doc: list[dict[str, Any]] = json.loads(fixture("kilo-code", "ui_messages.json").read_text())
    return doc


def _task(tmp_path: Path, doc: Any) -> Path:
    path = tmp_path / EXT / "tasks" / TASK_ID / "ui_messages.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=2))
    return path


def test_sample_turns_by_role(tmp_path: Path) -> None:
    index = read_fresh(reader, _task(tmp_path, _sample_doc()))
    assert role_counts(index) == {"user": 2, "assistant": 2}
    assert index.texts("user") == [
        "Implement rate limiting middleware for our Express API",
        "Add separate limits for authenticated and anonymous users",
    ]
    assert index.texts("assistant") == [
        "I'll implement rate limiting using a sliding window algorithm with Redis as the "
        "backing store...",
        "Rate limiting middleware created at src/middleware/rateLimit.ts with tiered limits.",
    ]


def test_reasoning_words_are_not_searchable(tmp_path: Path) -> None:
    text = "\n".join(read_fresh(reader, _task(tmp_path, _sample_doc())).texts())
    assert "anonymous users get 30 req/min" not in text
    assert "tokensIn" not in text


def test_session_id_title_start_and_no_resume(tmp_path: Path) -> None:
    index = read_fresh(reader, _task(tmp_path, _sample_doc()))
    session = index.sessions[TASK_ID]
    assert session.title == "Implement rate limiting middleware for our Express API"
    # started_at + the first user prompt identify a chat migrated into kilo.db.
    assert session.started_at == 1740472000.0
    assert session.project is None
    assert session.resume_command is None  # reopened from the History view
    assert index.turns[(TASK_ID, "1740472005000")].timestamp == 1740472005.0


def test_rewrite_appending_one_message_adds_exactly_one_key(tmp_path: Path) -> None:
    doc = _sample_doc()
    path = _task(tmp_path, doc[:-1])
    index = MemoryIndex()
    old = {t.key for t in index.read(reader, path).turns}
    _task(tmp_path, doc)
    new = {t.key for t in index.read(reader, path).turns}
    assert old < new and new - old == {"1740472008000"}
    assert index.comparable() == read_fresh(reader, path).comparable()


def test_truncated_document_raises_value_error(tmp_path: Path) -> None:
    path = _task(tmp_path, _sample_doc())
    path.write_bytes(path.read_bytes()[:100])
    with pytest.raises(ValueError):
        reader.read(path, None, ReaderOptions())


def test_malformed_message_is_reported_and_the_rest_indexed(tmp_path: Path) -> None:
    path = _task(tmp_path, [*_sample_doc(), "garbage"])
    result = reader.read(path, None, ReaderOptions())
    assert len(result.problems) == 1 and len(result.turns) == 4


def test_document_that_is_not_a_message_array_is_unsupported(tmp_path: Path) -> None:
    result = reader.read(_task(tmp_path, {"format": 7}), None, ReaderOptions())
    assert result.unsupported is not None and not result.turns


def test_source_for_claims_only_kilo_tasks(tmp_path: Path) -> None:
    task = tmp_path / EXT / "tasks" / TASK_ID
    assert reader.source_for(task / "ui_messages.json") == task / "ui_messages.json"
    assert reader.source_for(task / "task_metadata.json") is None
    roo = tmp_path / "rooveterinaryinc.roo-cline" / "tasks" / "1" / "ui_messages.json"
    assert reader.source_for(roo) is None
    assert reader.source_for(tmp_path / "kilo" / "kilo.db") is None


def test_roots_cover_every_editor_on_each_platform(tmp_path: Path) -> None:
    linux = reader.roots(HostEnv(home=tmp_path, environ={}, platform="linux"))
    assert tmp_path / ".config" / EXT in linux
    mac = reader.roots(HostEnv(home=tmp_path, environ={}, platform="darwin"))
    assert tmp_path / "Library/Application Support/Windsurf/User/globalStorage" / EXT.name in mac
    win = reader.roots(HostEnv(home=tmp_path, environ={"APPDATA": "C:/R"}, platform="win32"))
    assert Path("C:/R") / EXT in win
