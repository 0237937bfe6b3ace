"""Goose readers against ``fixtures/goose/``.

``sessions.db`` is hand-made (see ``fixtures/goose/SOURCES.md``): schema v13, one
session, four messages (prompt; thinking + text + toolRequest; toolResponse;
text). The writes these tests make follow block/goose ``session_manager.rs``
(``add_message`` inserts and bumps ``updated_at``; ``replace_conversation``
deletes and re-inserts keeping ``message_id``) and ``context_mgmt/mod.rs``
(compaction's agent-only summary and continuation messages).

``legacy_session.jsonl`` is HAND-MADE from the README's "Legacy JSONL" section
(line 1 session metadata, then one ``Message`` per line); no public legacy
fixture was found.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import time
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from backscroll.errors import SourceBusy
from backscroll.model import ReaderOptions
from backscroll.readers.base import HostEnv
from backscroll.readers.goose import GooseJsonlReader, GooseReader
from backscroll.readers.hostdb import goose as goose_sql
from backscroll.readers.hostdb import open_readonly
from tests.readers.util import MemoryIndex, copy_fixture, fixture, read_fresh

READER = GooseReader()
JSONL = GooseJsonlReader()
SID = "20260101_1"
VISIBLE = {"userVisible": True, "agentVisible": True}
AGENT_ONLY = {"userVisible": False, "agentVisible": True}


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return copy_fixture("goose", "sessions.db", tmp_path / "goose" / "sessions")


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def tool_request(name: str, arg: str) -> dict[str, Any]:
    return {
        "type": "toolRequest",
        "id": f"call-{name}",
        "toolCall": {"status": "success", "value": {"name": name, "arguments": {"q": arg}}},
    }


def add_message(
    db: Path,
    role: str,
    content: list[Any],
    created: int,
    *,
    session: str = SID,
    metadata: dict[str, Any] | None = None,
    message_id: str | None = None,
) -> None:
    """Goose's add_message: one INSERT, then bump the session's updated_at."""
    with closing(sqlite3.connect(db)) as conn, conn:
        mid = message_id or f"msg_{session}_{created}_{role}"
        conn.execute(
            "INSERT INTO messages (message_id, session_id, role, content_json, "
            "created_timestamp, metadata_json) VALUES (?, ?, ?, ?, ?, ?)",
            (mid, session, role, json.dumps(content), created, json.dumps(metadata or VISIBLE)),
        )
        conn.execute("UPDATE sessions SET updated_at = datetime('now') WHERE id = ?", (session,))


def conversation(db: Path, session: str = SID) -> list[tuple[Any, ...]]:
    with closing(sqlite3.connect(db)) as conn:
        return conn.execute(
            "SELECT message_id, role, content_json, created_timestamp, metadata_json "
            "FROM messages WHERE session_id = ? ORDER BY id",
            (session,),
        ).fetchall()


def replace_conversation(db: Path, rows: list[tuple[Any, ...]], session: str = SID) -> None:
    """Goose's replace_conversation: delete every row, re-insert (new row ids)."""
    with closing(sqlite3.connect(db)) as conn, conn:
        conn.execute("DELETE FROM messages WHERE session_id = ?", (session,))
        conn.executemany(
            "INSERT INTO messages (message_id, session_id, role, content_json, "
            "created_timestamp, metadata_json) VALUES (?, ?, ?, ?, ?, ?)",
            [(r[0], session, r[1], r[2], r[3], r[4]) for r in rows],
        )


def compact(db: Path) -> None:
    """What compact_messages + replace_conversation leave behind."""
    rows = []
    for mid, role, content, created, meta in conversation(db):
        flags = json.loads(meta) if meta else dict(VISIBLE)
        flags["agentVisible"] = False
        rows.append((mid, role, content, created, json.dumps(flags)))
    rows.append(
        (
            "msg_sum",
            "user",
            json.dumps([text("Summary: keys are now sorted.")]),
            1767262000,
            json.dumps(AGENT_ONLY),
        )
    )
    rows.append(
        (
            "msg_cont",
            "assistant",
            json.dumps(
                [
                    text(
                        "The previous message contains a summary that was prepared because "
                        "a context limit was reached."
                    )
                ]
            ),
            1767262000,
            json.dumps(AGENT_ONLY),
        )
    )
    replace_conversation(db, rows)


def test_sample_turn_counts_per_role(db: Path) -> None:
    index = read_fresh(READER, db)
    assert index.texts("user") == ["The test_parse test is flaky, can you look?"]
    assert index.texts("assistant") == [
        "Let me read the test.",
        "The test depends on dict ordering; I sorted the keys.",
    ]
    assert index.texts("summary") == []


def test_thinking_tool_calls_and_tool_results_are_not_searchable(db: Path) -> None:
    words = " ".join(read_fresh(READER, db).texts())
    assert "Check the test file" not in words  # thinking
    assert "developer__text_editor" not in words and "tests/test_parse.py" not in words
    assert "def test_parse()" not in words  # tool result


def test_session_title_project_start_and_resume_command(db: Path) -> None:
    session = read_fresh(READER, db).sessions[SID]
    assert session.title == "Fix flaky test"
    assert session.project == "/home/user/demo"
    assert session.started_at == 1767261600.0  # created_at 2026-01-01 10:00:00 UTC
    assert session.resume_command == (
        "cd /home/user/demo && goose session --resume --session-id 20260101_1"
    )


def test_turn_keys_are_goose_message_ids_with_times(db: Path) -> None:
    index = read_fresh(READER, db)
    assert {k for _, k in index.turns} == {
        "msg_20260101_1_1",
        "msg_20260101_1_2",
        "msg_20260101_1_4",
    }
    assert index.turns[(SID, "msg_20260101_1_1")].timestamp == 1767261600.0


def test_incremental_reads_equal_fresh_through_insert_edit_compaction_and_delete(
    db: Path,
) -> None:
    index = MemoryIndex()
    index.read(READER, db)

    add_message(db, "user", [text("Now make it deterministic")], 1767261700)
    result = index.read(READER, db)
    assert result.replaced_sessions == {SID}
    assert index.comparable() == read_fresh(READER, db).comparable()

    # A message rewritten in place (with the session's updated_at moving).
    with closing(sqlite3.connect(db)) as conn, conn:
        conn.execute(
            "UPDATE messages SET content_json = ? WHERE message_id = 'msg_20260101_1_4'",
            (json.dumps([text("The test depends on set ordering; fixed.")]),),
        )
        conn.execute("UPDATE sessions SET updated_at = '2026-01-01 11:00:00' WHERE id = ?", (SID,))
    index.read(READER, db)
    assert "The test depends on set ordering; fixed." in index.texts("assistant")
    assert index.comparable() == read_fresh(READER, db).comparable()

    # Compaction: delete and re-insert every row (new row ids, same message ids),
    # plus the summary and the continuation note; updated_at does not move.
    compact(db)
    index.read(READER, db)
    assert index.comparable() == read_fresh(READER, db).comparable()
    assert index.texts("summary") == ["Summary: keys are now sorted."]
    assert not any("previous message contains a summary" in t for t in index.texts())
    assert index.texts("user").count("Now make it deterministic") == 1  # no duplicates

    # Truncation (edit from an earlier message): rows deleted, nothing inserted.
    with closing(sqlite3.connect(db)) as conn, conn:
        conn.execute("DELETE FROM messages WHERE created_timestamp >= 1767261700")
    index.read(READER, db)
    assert "Now make it deterministic" not in index.texts()
    assert index.comparable() == read_fresh(READER, db).comparable()

    # The session deleted.
    with closing(sqlite3.connect(db)) as conn, conn:
        conn.execute("DELETE FROM messages WHERE session_id = ?", (SID,))
        conn.execute("DELETE FROM sessions WHERE id = ?", (SID,))
    result = index.read(READER, db)
    assert result.removed_sessions == {SID}
    assert index.turns == {} and index.sessions == {}


def test_rows_without_message_ids_keep_their_keys_through_reinsertion(db: Path) -> None:
    # A schema from before v7 (no messages.message_id).
    with closing(sqlite3.connect(db)) as conn, conn:
        conn.execute("DROP INDEX idx_messages_message_id")
        conn.execute("ALTER TABLE messages DROP COLUMN message_id")
        conn.execute(
            "INSERT INTO messages (session_id, role, content_json, created_timestamp, "
            "metadata_json) VALUES (?, 'user', ?, 1767261800, ?)",
            (SID, json.dumps([text("again")]), json.dumps(VISIBLE)),
        )
        conn.execute(
            "INSERT INTO messages (session_id, role, content_json, created_timestamp, "
            "metadata_json) VALUES (?, 'user', ?, 1767261800, ?)",
            (SID, json.dumps([text("again")]), json.dumps(VISIBLE)),
        )
    index = MemoryIndex()
    index.read(READER, db)
    keys_before = set(index.turns)
    with closing(sqlite3.connect(db)) as conn, conn:
        rows = conn.execute(
            "SELECT role, content_json, created_timestamp, metadata_json FROM messages ORDER BY id"
        ).fetchall()
        conn.execute("DELETE FROM messages")
        conn.executemany(
            "INSERT INTO messages (session_id, role, content_json, created_timestamp, "
            "metadata_json) VALUES (?, ?, ?, ?, ?)",
            [(SID, *r) for r in rows],
        )
    index.read(READER, db)
    assert set(index.turns) == keys_before
    assert index.texts("user").count("again") == 2
    assert index.comparable() == read_fresh(READER, db).comparable()


def test_text_after_a_web_tool_is_tainted_until_the_next_prompt(db: Path) -> None:
    add_message(db, "user", [text("What is new upstream?")], 1767261700)
    add_message(
        db,
        "assistant",
        [text("Checking."), tool_request("computercontroller__web_scrape", "https://example.com")],
        1767261701,
    )
    add_message(
        db,
        "user",
        [
            {
                "type": "toolResponse",
                "id": "call-x",
                "toolResult": {"status": "success", "value": [text("scrapedpageword")]},
            }
        ],
        1767261702,
    )
    add_message(db, "assistant", [text("Upstream added a flag.")], 1767261703)
    add_message(db, "user", [text("Thanks")], 1767261704)
    add_message(db, "assistant", [text("Anytime.")], 1767261705)
    turns = {t.text: t.tainted for t in read_fresh(READER, db).turns.values()}
    assert turns["Checking."] is False
    assert turns["Upstream added a flag."] is True
    assert turns["Anytime."] is False
    assert "scrapedpageword" not in " ".join(turns)


def test_hidden_and_subagent_sessions(db: Path) -> None:
    with closing(sqlite3.connect(db)) as conn, conn:
        for sid, kind in (("20260101_2", "hidden"), ("20260101_3", "sub_agent")):
            conn.execute(
                "INSERT INTO sessions (id, name, session_type, working_dir) VALUES (?, ?, ?, '/w')",
                (sid, kind, kind),
            )
    add_message(db, "user", [text("hidden prompt")], 1, session="20260101_2")
    add_message(db, "user", [text("subagent prompt")], 2, session="20260101_3")
    assert set(read_fresh(READER, db).sessions) == {SID}
    index = read_fresh(READER, db, ReaderOptions(include_subagents=True))
    assert set(index.sessions) == {SID, "20260101_3"}
    sub = [t for (sid, _), t in index.turns.items() if sid == "20260101_3"]
    assert [t.subagent for t in sub] == [True]


def test_a_malformed_message_is_reported_and_the_rest_indexed(db: Path) -> None:
    with closing(sqlite3.connect(db)) as conn, conn:
        conn.execute(
            "INSERT INTO messages (message_id, session_id, role, content_json, "
            "created_timestamp) VALUES ('bad', ?, 'assistant', '[{\"type\": ', 5)",
            (SID,),
        )
    result = READER.read(db, None, ReaderOptions())
    assert len(result.problems) == 1 and "message" in result.problems[0].message
    assert len(result.turns) == 3


def test_unknown_schema_is_unsupported(tmp_path: Path) -> None:
    db = tmp_path / "sessions" / "sessions.db"
    db.parent.mkdir()
    with closing(sqlite3.connect(db)) as conn, conn:
        conn.execute("CREATE TABLE sessions (id TEXT PRIMARY KEY, working_dir TEXT)")
        conn.execute("CREATE TABLE messages (id INTEGER PRIMARY KEY, session_id TEXT, body TEXT)")
    result = READER.read(db, None, ReaderOptions())
    assert result.unsupported is not None and "messages.content_json" in result.unsupported


def test_roots_honour_goose_path_root_xdg_and_windows(tmp_path: Path) -> None:
    home = tmp_path
    assert READER.roots(HostEnv(home, {}, "linux")) == [home / ".local/share/goose/sessions"]
    assert READER.roots(HostEnv(home, {}, "darwin")) == [home / ".local/share/goose/sessions"]
    assert READER.roots(HostEnv(home, {"XDG_DATA_HOME": "/x"}, "linux")) == [
        Path("/x/goose/sessions")
    ]
    assert READER.roots(HostEnv(home, {"GOOSE_PATH_ROOT": "/g"}, "linux")) == [
        Path("/g/data/sessions")
    ]
    assert READER.roots(HostEnv(home, {"APPDATA": "C:/R"}, "win32")) == [
        Path("C:/R/Block/goose/data/sessions")
    ]
    legacy = JSONL.roots(HostEnv(home, {}, "linux"))
    assert home / ".config/goose/sessions" in legacy and home / ".goose/sessions" in legacy


def test_source_for_maps_the_wal_and_ignores_shm(tmp_path: Path) -> None:
    base = tmp_path / "sessions"
    assert READER.source_for(base / "sessions.db-wal") == base / "sessions.db"
    assert READER.source_for(base / "sessions.db-shm") is None
    assert READER.source_for(base / "sessions.db-journal") is None
    assert READER.source_for(base / "old.jsonl") is None


def test_reading_never_blocks_gooses_writes(db: Path) -> None:
    with closing(sqlite3.connect(db)) as host:
        host.execute("PRAGMA journal_mode=WAL")  # sqlx's default for Goose's pool
        host.execute("BEGIN IMMEDIATE")
        host.execute("UPDATE sessions SET name = 'pending' WHERE id = ?", (SID,))
        started = time.monotonic()
        result = READER.read(db, None, ReaderOptions())
        assert time.monotonic() - started < 2 and len(result.turns) == 3
        host.execute("COMMIT")
        with open_readonly(db) as conn:
            goose_sql.session_fingerprints(conn, frozenset({"updated_at"}))
            with closing(sqlite3.connect(db, timeout=0.05)) as writer:
                writer.execute("BEGIN IMMEDIATE")
                writer.execute("UPDATE sessions SET name = 'x' WHERE id = ?", (SID,))
                writer.execute("COMMIT")


def test_a_locked_database_raises_source_busy_quickly(db: Path) -> None:
    with closing(sqlite3.connect(db, isolation_level=None)) as host:
        host.execute("BEGIN EXCLUSIVE")
        started = time.monotonic()
        with pytest.raises(SourceBusy):
            READER.read(db, None, ReaderOptions())
        assert time.monotonic() - started < 2
        host.execute("ROLLBACK")


# --------------------------------------------------------------------------- legacy JSONL


@pytest.fixture
def legacy(tmp_path: Path) -> Path:
    return copy_fixture("goose", "legacy_session.jsonl", tmp_path / "old" / "sessions")


def test_legacy_jsonl_turns_session_and_excluded_words(legacy: Path) -> None:
    index = read_fresh(JSONL, legacy)
    assert index.texts("user") == ["Port the tokenizer to Rust"]
    assert index.texts("assistant") == [
        "I will start with the lexer.",
        "The lexer is ported; tests pass.",
    ]
    words = " ".join(index.texts())
    for word in ("legacyargword", "legacyresultword", "legacythinkingword", "developer__shell"):
        assert word not in words
    session = index.sessions["legacy_session"]
    assert session.title == "Port the parser"
    assert session.project == "/home/user/oldproj"
    assert session.started_at == 1735689600.0
    assert session.resume_command == (
        "cd /home/user/oldproj && goose session --resume --session-id legacy_session"
    )
    assert ("legacy_session", "msg_legacy_1") in index.turns


def test_legacy_jsonl_rewrites_read_whole_equal_fresh(legacy: Path) -> None:
    index = MemoryIndex()
    lines = fixture("goose", "legacy_session.jsonl").read_bytes().splitlines(keepends=True)
    for n in range(1, len(lines) + 1):
        legacy.write_bytes(b"".join(lines[:n]))  # Goose rewrote the file whole
        result = index.read(JSONL, legacy)
        assert result.replace and result.position == legacy.stat().st_size
        assert index.comparable() == read_fresh(JSONL, legacy).comparable()


def test_legacy_jsonl_caught_mid_write_raises(legacy: Path) -> None:
    legacy.write_bytes(legacy.read_bytes() + b'{"role": "user", "cont')
    with pytest.raises(ValueError):
        JSONL.read(legacy, None, ReaderOptions())


def test_legacy_jsonl_malformed_line_is_reported_and_the_rest_indexed(legacy: Path) -> None:
    lines = legacy.read_bytes().splitlines(keepends=True)
    legacy.write_bytes(b"".join([*lines[:2], b"{not json\n", *lines[2:]]))
    result = JSONL.read(legacy, None, ReaderOptions())
    assert [p.line for p in result.problems] == [3]
    assert len(result.turns) == 3


def test_legacy_jsonl_next_to_sessions_db_is_left_to_the_database(legacy: Path) -> None:
    shutil.copyfile(fixture("goose", "sessions.db"), legacy.parent / "sessions.db")
    assert JSONL.source_for(legacy) is None
    result = JSONL.read(legacy, None, ReaderOptions())
    assert result.turns == () and result.replace
