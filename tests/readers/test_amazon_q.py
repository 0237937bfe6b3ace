"""Amazon Q Developer CLI reader against the CONSTRUCTED ``data.sqlite3`` in
``tests/fixtures/amazon-q`` (no real one is public; see SOURCES.md there): one
``conversations`` row (a prompt, a tool-use reply, a tool result, a final
reply). Changes are written with ``sqlite3`` as Q writes them: the whole
``ConversationState`` JSON replaces the row of its directory."""

from __future__ import annotations

import copy
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from backscroll.model import ReaderOptions
from backscroll.readers.amazon_q import AmazonQReader
from backscroll.readers.base import HostEnv
from tests.daemon.harness import dump_turns
from tests.readers.util import (
    MemoryIndex,
    copy_fixture,
    host_connection,
    index_home,
    read_fresh,
    role_counts,
)

reader = AmazonQReader()
DIR = "/home/dev/src/infra"
CID = "3e9f2b7c-1a4d-4c58-9e06-7b2d5f8a1c34"
PROMPT = "Why does terraform plan want to recreate the bucket?"


def _db(home: Path) -> Path:
    return copy_fixture("amazon-q", "constructed-data.sqlite3", home / ".local/share/amazon-q",
                        "data.sqlite3")  # fmt: skip


def _row(db: Path, key: str = DIR) -> dict[str, Any]:
    conn = host_connection(db)
    try:
        value = conn.execute("SELECT value FROM conversations WHERE key = ?", (key,)).fetchone()
    finally:
        conn.close()
    return dict(json.loads(value[0]))


def _write(db: Path, state: dict[str, Any], key: str = DIR) -> None:
    conn = host_connection(db)
    try:
        conn.execute(
            "INSERT OR REPLACE INTO conversations (key, value) VALUES (?, ?)",
            (key, json.dumps(state, separators=(",", ":"))),
        )
    finally:
        conn.close()


def _entry(prompt: str, answer: str, when: str, mid: str) -> dict[str, Any]:
    return {
        "user": {"additional_context": "", "env_context": {"env_state": None},
                 "content": {"Prompt": {"prompt": prompt}}, "timestamp": when, "images": None},
        "assistant": {"Response": {"message_id": mid, "content": answer}},
        "request_metadata": None,
    }  # fmt: skip


def _index(home: Path, db: Path) -> list[tuple[str, str, str, str, str]]:
    index_home(home, db)
    return [row for row in dump_turns(db) if row[0] == "amazon-q"]


def test_prompt_tool_use_prose_and_reply_from_the_sample(tmp_path: Path) -> None:
    index = read_fresh(reader, _db(tmp_path))
    assert role_counts(index) == {"user": 1, "assistant": 2}
    assert index.texts("user") == [PROMPT]
    assert index.texts("assistant")[0] == "Let me look at the bucket resource."
    assert index.texts("assistant")[1].startswith("The bucket name depends on `var.env`")
    text = "\n".join(index.texts())
    assert "aws_s3_bucket" not in text and "fs_read" not in text  # tool result and call


def test_session_is_the_conversation_with_directory_title_and_resume(tmp_path: Path) -> None:
    session = read_fresh(reader, _db(tmp_path)).sessions[CID]
    assert session.project == DIR
    assert session.title == PROMPT
    assert session.started_at == 1772446504.12
    assert session.resume_command == f"cd {DIR} && q chat --resume"


def test_an_unchanged_row_is_not_parsed_again(tmp_path: Path) -> None:
    db = _db(tmp_path)
    index = MemoryIndex()
    assert len(index.read(reader, db).turns) == 3
    assert index.read(reader, db).turns == ()
    state = _row(db)
    state["history"].append(_entry("And the logs bucket?", "Same cause.",
                                   "2026-03-02T10:20:00.000+00:00", "a1b2c3d4-0003"))  # fmt: skip
    _write(db, state)
    again = index.read(reader, db)
    assert len(again.turns) == 5 and len(index.turns) == 5  # same keys: no duplicates


def test_turns_survive_a_new_chat_and_compact_overwriting_the_row(isolated_home: Path) -> None:
    db = _db(isolated_home)
    index_db = isolated_home.parent / "index.db"
    assert len(_index(isolated_home, index_db)) == 3
    # /compact: history keeps the last entry; the summary arrives.
    state = _row(db)
    compacted = copy.deepcopy(state)
    compacted["history"] = compacted["history"][1:]
    compacted["latest_summary"] = ["The bucket is replaced because var.env changed.", {}]
    _write(db, compacted)
    rows = _index(isolated_home, index_db)
    assert sorted(r[3] for r in rows) == ["assistant", "assistant", "summary", "user"]
    # A new `q chat` in the same directory replaces the row.
    fresh = {**copy.deepcopy(state), "conversation_id": "9d8c7b6a-0000-4000-8000-000000000001",
             "history": [_entry("Rotate the access keys", "Rotated.",
                                "2026-03-03T09:00:00.000+00:00", "b0000000-0001")],
             "latest_summary": None}  # fmt: skip
    _write(db, fresh)
    rows = _index(isolated_home, index_db)
    texts = {r[4] for r in rows}
    assert {PROMPT, "Rotate the access keys", "Rotated."} <= texts
    assert len(rows) == 6
    assert {r[1] for r in rows} == {CID, "9d8c7b6a-0000-4000-8000-000000000001"}


def test_a_read_from_the_start_keeps_what_the_row_forgot(
    isolated_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = _db(isolated_home)
    index_db = isolated_home.parent / "index.db"
    _index(isolated_home, index_db)
    state = _row(db)
    state["history"] = []  # /clear
    _write(db, state)
    # A new reader version re-reads the database from the start.
    monkeypatch.setattr(AmazonQReader, "version", AmazonQReader.version + 1)
    rows = _index(isolated_home, index_db)
    assert len(rows) == 3 and PROMPT in {r[4] for r in rows}


def test_conversations_v2_rows_are_read_too(tmp_path: Path) -> None:
    db = _db(tmp_path)
    state = _row(db)
    state["conversation_id"] = "77777777-0000-4000-8000-000000000007"
    state["history"] = [_entry("Second chat here", "Yes.", "2026-03-04T08:00:00+00:00", "c-1")]
    conn = host_connection(db)
    try:
        conn.execute(
            "CREATE TABLE conversations_v2 (key TEXT NOT NULL, conversation_id TEXT NOT NULL,"
            " value TEXT NOT NULL, created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL,"
            " PRIMARY KEY (key, conversation_id))"
        )
        conn.execute(
            "INSERT INTO conversations_v2 VALUES (?, ?, ?, ?, ?)",
            (DIR, state["conversation_id"], json.dumps(state), 1772600000000, 1772600000000),
        )
    finally:
        conn.close()
    index = read_fresh(reader, db)
    assert "Second chat here" in index.texts("user")
    assert index.sessions[state["conversation_id"]].started_at == 1772600000.0


def test_malformed_row_is_reported_and_other_rows_are_read(tmp_path: Path) -> None:
    db = _db(tmp_path)
    conn = host_connection(db)
    try:
        conn.execute("INSERT INTO conversations VALUES ('/tmp/x', '{not json')")
    finally:
        conn.close()
    result = reader.read(db, None, ReaderOptions())
    assert len(result.turns) == 3
    assert any("/tmp/x" in p.message and "malformed JSON" in p.message for p in result.problems)


def test_a_database_without_conversation_tables_is_unsupported(tmp_path: Path) -> None:
    db = tmp_path / "amazon-q" / "data.sqlite3"
    db.parent.mkdir()
    sqlite3.connect(db).close()
    result = reader.read(db, None, ReaderOptions())
    assert result.unsupported is not None and "conversations" in result.unsupported


def test_roots_per_platform(tmp_path: Path) -> None:
    home = tmp_path
    assert reader.roots(HostEnv(home=home, platform="linux")) == [home / ".local/share/amazon-q"]
    assert reader.roots(
        HostEnv(home=home, environ={"XDG_DATA_HOME": "/xdg"}, platform="linux")
    ) == [Path("/xdg/amazon-q")]
    assert reader.roots(HostEnv(home=home, platform="darwin")) == [
        home / "Library/Application Support/amazon-q"
    ]
    assert reader.roots(
        HostEnv(home=home, environ={"LOCALAPPDATA": "C:/Local"}, platform="win32")
    ) == [Path("C:/Local/amazon-q")]
    assert reader.source_for(tmp_path / "data.sqlite3-wal") == tmp_path / "data.sqlite3"


def test_older_pair_history_and_string_summary_are_read(tmp_path: Path) -> None:
    db = _db(tmp_path)
    state = _row(db)
    state["history"] = [[entry["user"], entry["assistant"]] for entry in state["history"]]
    state["latest_summary"] = "Bucket replaced because var.env changed."
    _write(db, state)
    index = read_fresh(reader, db)
    assert role_counts(index) == {"user": 1, "assistant": 2, "summary": 1}
