"""Hermes Agent readers against tests/fixtures/hermes (hand-made; see its
SOURCES.md): ``state.db`` (subset schema), changed with ``sqlite3`` here the way
Hermes writes it (one insert per message, epoch-second REAL times); and the
per-session logs in ``sessions/`` (a ``session_<id>.json`` log, a gateway
``<id>.jsonl`` transcript), rewritten here the way Hermes rewrites them.
"""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path

import pytest

from backscroll.errors import SourceBusy
from backscroll.model import ReaderOptions
from backscroll.readers.base import HostEnv
from backscroll.readers.hermes import HermesReader
from tests.readers.util import (
    copy_fixture,
    host_connection,
    read_fresh,
    reading_in_background,
)

SID = "20260101_100000_ab12cd"
NOW = 1767261800.0


@pytest.fixture
def reader() -> HermesReader:
    return HermesReader()


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return copy_fixture("hermes", "state.db", tmp_path / ".hermes")


def add(
    conn: sqlite3.Connection,
    role: str,
    content: str | None,
    sid: str = SID,
    tool_calls: list[dict[str, object]] | None = None,
    tool_name: str | None = None,
) -> int:
    cur = conn.execute(
        "INSERT INTO messages (session_id, role, content, tool_calls, tool_name, timestamp)"
        " VALUES (?, ?, ?, ?, ?, ?)",
        (sid, role, content, json.dumps(tool_calls) if tool_calls else None, tool_name, NOW),
    )
    return int(cur.lastrowid or 0)


def add_session(conn: sqlite3.Connection, sid: str, parent: str | None = None) -> None:
    conn.execute(
        "INSERT INTO sessions (id, source, parent_session_id, started_at) VALUES (?, 'cli', ?, ?)",
        (sid, parent, NOW),
    )


def call(name: str, **arguments: object) -> dict[str, object]:
    return {
        "id": "c",
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(arguments)},
    }


# ---------------------------------------------------------------------- the sample


def test_sample_turns_by_role(reader: HermesReader, db: Path) -> None:
    index = read_fresh(reader, db)
    assert index.texts("user") == ["How full is my home disk?"]
    assert index.texts("assistant") == ["Your home filesystem is 42% full (58 GB free)."]
    assert index.texts("summary") == []
    assert set(index.turns) == {(SID, "1"), (SID, "4")}


def test_tool_and_reasoning_words_are_not_searchable(reader: HermesReader, db: Path) -> None:
    joined = "\n".join(read_fresh(reader, db).texts())
    assert "/dev/sda1" not in joined  # tool result
    assert "df -h" not in joined  # tool call arguments
    assert "Use df." not in joined  # reasoning


def test_session_metadata(reader: HermesReader, db: Path) -> None:
    session = read_fresh(reader, db).sessions[SID]
    assert session.title == "Disk usage check"
    assert session.project is None  # no tool call names a working directory
    assert session.started_at == 1767261600.0
    assert session.updated_at == 1767261700.5
    assert session.resume_command == f"hermes --resume {SID}"
    assert read_fresh(reader, db).turns[(SID, "1")].timestamp == pytest.approx(1767261600.1)


def test_workdir_from_tool_calls_is_the_project(reader: HermesReader, db: Path) -> None:
    conn = host_connection(db)
    add(conn, "assistant", None, tool_calls=[call("terminal", command="ls", workdir="/srv/app")])
    conn.close()
    assert read_fresh(reader, db).sessions[SID].project == "/srv/app"


# ---------------------------------------------------------------------- incremental


def test_new_messages_rewind_and_reinsert_match_a_fresh_read(
    reader: HermesReader, db: Path
) -> None:
    index = read_fresh(reader, db)
    conn = host_connection(db)
    add(conn, "user", "And the /var partition?")
    index.read(reader, db)
    wrong = add(conn, "assistant", "It is 90% full.")
    index.read(reader, db)
    assert index.turns[(SID, str(wrong))].text == "It is 90% full."

    # Rewind: the last reply is deleted and written again under a new id.
    conn.execute("DELETE FROM messages WHERE id = ?", (wrong,))
    right = add(conn, "assistant", "/var is 12% full.")
    index.read(reader, db)
    conn.close()
    assert (SID, str(wrong)) not in index.turns
    assert index.turns[(SID, str(right))].text == "/var is 12% full."
    assert index.comparable() == read_fresh(reader, db).comparable()


def test_compression_continues_in_a_linked_session(reader: HermesReader, db: Path) -> None:
    index = read_fresh(reader, db)
    conn = host_connection(db)
    conn.execute("UPDATE sessions SET end_reason = 'compression', ended_at = ?", (NOW,))
    add_session(conn, "20260101_110000_ef34ab", parent=SID)
    add(conn, "user", "Now check /home/u/Downloads", sid="20260101_110000_ef34ab")
    conn.close()
    result = index.read(reader, db)
    assert result.replaced_sessions == {SID, "20260101_110000_ef34ab"}
    child = index.sessions["20260101_110000_ef34ab"]
    assert child.parent_session_id == SID
    assert child.title == "Now check /home/u/Downloads"
    assert not index.turns[("20260101_110000_ef34ab", "5")].subagent


def test_deleted_session_is_removed(reader: HermesReader, db: Path) -> None:
    index = read_fresh(reader, db)
    conn = host_connection(db)
    conn.execute("DELETE FROM messages")
    conn.execute("DELETE FROM sessions")
    conn.close()
    assert index.read(reader, db).removed_sessions == {SID}
    assert index.turns == {}


def test_unchanged_database_rereads_only_the_newest_ended_session(
    reader: HermesReader, db: Path
) -> None:
    conn = host_connection(db)
    add_session(conn, "20250101_000000_old")
    conn.execute("UPDATE sessions SET ended_at = 5 WHERE id = '20250101_000000_old'")
    add_session(conn, "20260101_120000_new")
    conn.close()
    index = read_fresh(reader, db)
    assert index.read(reader, db).replaced_sessions == {SID}


# ---------------------------------------------------------------------- what counts as prose


def test_web_tools_taint_later_replies_until_the_next_prompt(
    reader: HermesReader, db: Path
) -> None:
    conn = host_connection(db)
    add(conn, "user", "What's the latest Python?")
    add(conn, "assistant", "Let me check.", tool_calls=[call("web_extract", urls=["x"])])
    add(conn, "tool", "Python 3.14 released", tool_name="web_extract")
    after = add(conn, "assistant", "Python 3.14 is the latest.")
    add(conn, "user", "thanks")
    later = add(conn, "assistant", "Glad to help.")
    conn.close()
    turns = read_fresh(reader, db).turns
    assert not turns[(SID, str(after - 2))].tainted
    assert turns[(SID, str(after))].tainted
    assert not turns[(SID, str(later))].tainted


def test_review_harness_prompts_and_their_replies_are_skipped(
    reader: HermesReader, db: Path
) -> None:
    conn = host_connection(db)
    add(conn, "user", "Review the conversation above and consider saving to memory anything")
    add(conn, "assistant", "Saving a memory about disk usage.")
    add(conn, "user", "Back to work: clean ~/tmp")
    add(conn, "assistant", "Cleaned ~/tmp.")
    add(conn, "user", "Review the conversation above and update two things: memory, skills")
    add(conn, "assistant", "Nothing to save.")
    conn.close()
    joined = "\n".join(read_fresh(reader, db).texts())
    assert "Review the conversation" not in joined
    assert "Saving a memory" not in joined and "Nothing to save." not in joined
    assert "Cleaned ~/tmp." in joined


def test_a_multimodal_message_indexes_its_text_parts_not_its_json_or_images(
    reader: HermesReader, db: Path
) -> None:
    # Hermes stores a list of parts behind a "\x00json:" sentinel (a photo sent
    # with its caption through a messaging gateway).
    image = {"url": "data:image/png;base64,iVBORw0KGgo"}
    parts = [{"type": "text", "text": "What is wrong in this screenshot?"},
             {"type": "image_url", "image_url": image}]  # fmt: skip
    conn = host_connection(db)
    add(conn, "user", "\x00json:" + json.dumps(parts))
    add(conn, "user", "\x00json:{not json")
    conn.close()
    index = read_fresh(reader, db)
    joined = "\n".join(index.texts())
    assert "What is wrong in this screenshot?" in joined.splitlines()
    assert "json:" not in joined and "iVBORw0KGgo" not in joined and "image_url" not in joined


# ---------------------------------------------------------------------- problems


def test_malformed_tool_calls_are_reported_and_the_rest_indexed(
    reader: HermesReader, db: Path
) -> None:
    conn = host_connection(db)
    conn.execute("UPDATE messages SET tool_calls = '[{\"id\": ' WHERE id = 2")
    conn.close()
    result = reader.read(db, None, ReaderOptions())
    assert any("message 2" in p.message for p in result.problems)
    assert len(result.turns) == 2


def test_unknown_schema_is_unsupported(reader: HermesReader, tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    conn = host_connection(path)
    conn.execute("CREATE TABLE sessions (id TEXT PRIMARY KEY)")
    conn.execute("CREATE TABLE messages (id INTEGER PRIMARY KEY, body TEXT)")
    conn.close()
    result = reader.read(path, None, ReaderOptions())
    assert result.unsupported and "unknown schema" in result.unsupported


def test_host_write_transaction_does_not_block_reading(reader: HermesReader, db: Path) -> None:
    conn = host_connection(db)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("BEGIN IMMEDIATE")
    add(conn, "user", "uncommitted prompt")
    started = time.monotonic()
    assert "uncommitted prompt" not in read_fresh(reader, db).texts()
    assert time.monotonic() - started < 1.0
    conn.execute("ROLLBACK")
    conn.close()


def test_locked_database_raises_source_busy_quickly(reader: HermesReader, db: Path) -> None:
    conn = host_connection(db)
    conn.execute("BEGIN EXCLUSIVE")
    started = time.monotonic()
    with pytest.raises(SourceBusy):
        reader.read(db, None, ReaderOptions())
    assert time.monotonic() - started < 1.0
    conn.execute("ROLLBACK")
    conn.close()


def test_reading_never_makes_a_host_write_fail(reader: HermesReader, db: Path) -> None:
    setup = host_connection(db)
    setup.execute("PRAGMA journal_mode = WAL")
    setup.close()
    with reading_in_background(reader, db) as reads:
        writer = host_connection(db, timeout=0.2)
        for i in range(40):
            writer.execute("BEGIN IMMEDIATE")
            add(writer, "user", f"prompt {i}")
            writer.execute("COMMIT")
        writer.close()
    assert reads.count > 0
    assert len(read_fresh(reader, db).texts("user")) == 41


# ---------------------------------------------------------------------- locations


def test_roots_follow_hermes_home_on_every_platform(reader: HermesReader) -> None:
    home = Path("/home/u")
    for platform in ("linux", "darwin", "win32"):
        assert reader.roots(HostEnv(home=home, platform=platform)) == [home / ".hermes"]
    moved = HostEnv(home=home, environ={"HERMES_HOME": "/opt/hermes"})
    assert reader.roots(moved) == [Path("/opt/hermes")]


def test_source_for_and_discover_see_only_state_db(reader: HermesReader, db: Path) -> None:
    root = db.parent
    assert reader.source_for(db.with_name("state.db-wal")) == db
    assert reader.source_for(db.with_name("state.db-shm")) is None
    checkout = root / "hermes-agent" / "tests"
    checkout.mkdir(parents=True)
    (checkout / "state.db").write_bytes(b"")
    assert list(reader.discover(root)) == [db]
