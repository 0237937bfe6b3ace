"""Zed reader against ``fixtures/zed/threads.db``.

The sample is hand-made (see ``fixtures/zed/SOURCES.md``): row 1 is a zstd
``DbThread`` 0.3.0, row 2 the same JSON stored with ``data_type='json'``. The
extra threads these tests write (tool use, mention, sub-agent, legacy 0.2.0)
follow the shapes in zed-industries/zed ``crates/agent/src/db.rs`` and
``thread.rs`` and are written the way ``save_thread_sync`` writes them.
"""

from __future__ import annotations

import json
import sqlite3
import time
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
import zstandard

from backscroll.errors import SourceBusy
from backscroll.model import ReaderOptions
from backscroll.readers.base import HostEnv
from backscroll.readers.hostdb import open_readonly
from backscroll.readers.hostdb import zed as zed_sql
from backscroll.readers.zed import ZedReader
from tests.readers.util import MemoryIndex, copy_fixture, read_fresh

READER = ZedReader()
SAMPLE_ID = "b6f3c1de-0000-4000-8000-000000000001"
LEGACY_ROW_ID = "b6f3c1de-0000-4000-8000-000000000002"


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return copy_fixture("zed", "threads.db", tmp_path / "threads")


def save_thread(
    db: Path,
    thread_id: str,
    messages: list[Any],
    updated_at: str,
    *,
    title: str = "A thread",
    parent_id: str | None = None,
    folders: str | None = None,
    extra: dict[str, Any] | None = None,
) -> None:
    """Write a thread as Zed's save_thread_sync does (zstd, upsert keeping created_at)."""
    doc = {"title": title, "messages": messages, "updated_at": updated_at, "version": "0.3.0"}
    doc.update(extra or {})
    blob = zstandard.ZstdCompressor(level=3).compress(json.dumps(doc).encode())
    with closing(sqlite3.connect(db)) as conn, conn:
        conn.execute(
            "INSERT INTO threads (id, parent_id, folder_paths, folder_paths_order, summary, "
            "updated_at, data_type, data, created_at) VALUES (?, ?, ?, ?, ?, ?, 'zstd', ?, ?) "
            "ON CONFLICT(id) DO UPDATE SET parent_id = excluded.parent_id, "
            "folder_paths = excluded.folder_paths, summary = excluded.summary, "
            "updated_at = excluded.updated_at, data_type = excluded.data_type, "
            "data = excluded.data",
            (
                thread_id,
                parent_id,
                folders,
                "0" if folders else None,
                title,
                updated_at,
                blob,
                updated_at,
            ),
        )


def user(uid: str, *items: Any) -> dict[str, Any]:
    return {"User": {"id": uid, "content": list(items)}}


def agent(*items: Any) -> dict[str, Any]:
    return {"Agent": {"content": list(items), "tool_results": {}}}


def tool_use(name: str, words: str) -> dict[str, Any]:
    return {
        "ToolUse": {
            "id": f"tool-{name}",
            "name": name,
            "raw_input": json.dumps({"q": words}),
            "input": {"q": words},
            "is_input_complete": True,
        }
    }


def test_sample_turn_counts_per_role(db: Path) -> None:
    index = read_fresh(READER, db)
    by_session: dict[str, list[str]] = {}
    for (sid, _key), turn in index.turns.items():
        by_session.setdefault(sid, []).append(turn.role)
    assert sorted(by_session[SAMPLE_ID]) == ["assistant", "user"]
    assert sorted(by_session[LEGACY_ROW_ID]) == ["assistant", "user"]
    assert index.texts("user") == ["What does the default target in the Makefile do?"] * 2
    assert index.texts("assistant") == ["The default target builds the release binary."] * 2
    assert index.texts("summary") == []


def test_thinking_text_is_not_searchable(db: Path) -> None:
    index = read_fresh(READER, db)
    assert not any("Read the Makefile." in t for t in index.texts())


def test_session_title_project_times_and_no_resume_command(db: Path) -> None:
    index = read_fresh(READER, db)
    session = index.sessions[SAMPLE_ID]
    assert session.title == "Explain the Makefile"
    assert session.project == "/home/user/demo"
    assert session.started_at == 1767261600.0  # 2026-01-01T10:00:00Z
    assert session.updated_at == 1767261605.0
    # Zed has no resume command: the thread is reopened from the agent panel's history.
    assert session.resume_command is None
    legacy = index.sessions[LEGACY_ROW_ID]
    assert legacy.title == "Legacy uncompressed row"
    assert legacy.project is None


def test_tool_calls_results_and_mention_payloads_are_not_searchable(db: Path) -> None:
    save_thread(
        db,
        "t-tools",
        [
            user(
                "u-a",
                {"Text": "Compare "},
                {"Mention": {"uri": "file:///x.rs", "content": "zebrafishcontent"}},
                {"Text": " with upstream"},
            ),
            {
                "Agent": {
                    "content": [
                        {"Thinking": {"text": "ponderwhale", "signature": None}},
                        {"RedactedThinking": "secretwalrus"},
                        tool_use("grep", "toolargumentword"),
                        {"Text": "They differ in one line."},
                    ],
                    "tool_results": {
                        "tool-grep": {
                            "tool_use_id": "tool-grep",
                            "tool_name": "grep",
                            "is_error": False,
                            "content": {"Text": "toolresultword"},
                            "output": None,
                        }
                    },
                }
            },
            "Resume",
        ],
        "2026-01-02T00:00:00+00:00",
    )
    index = read_fresh(READER, db)
    text = " ".join(index.texts())
    for word in (
        "zebrafishcontent",
        "ponderwhale",
        "secretwalrus",
        "toolargumentword",
        "toolresultword",
    ):
        assert word not in text
    assert "Compare  with upstream" in index.texts("user")
    assert "They differ in one line." in index.texts("assistant")


def test_text_after_fetch_is_tainted_until_the_next_prompt(db: Path) -> None:
    save_thread(
        db,
        "t-fetch",
        [
            user("u-1", {"Text": "What does the spec say?"}),
            agent(
                {"Text": "Let me look."},
                tool_use("fetch", "https://example.com"),
                {"Text": "The spec says X."},
            ),
            agent({"Text": "Also Y."}),
            user("u-2", {"Text": "Thanks"}),
            agent({"Text": "You are welcome."}),
        ],
        "2026-01-02T00:00:00+00:00",
    )
    index = read_fresh(READER, db)
    flags = {t.text: t.tainted for (sid, _), t in index.turns.items() if sid == "t-fetch"}
    assert flags == {
        "What does the spec say?": False,
        "Let me look.": False,
        "The spec says X.": True,
        "Also Y.": True,
        "Thanks": False,
        "You are welcome.": False,
    }


def test_detailed_summary_is_a_summary_turn(db: Path) -> None:
    save_thread(
        db,
        "t-sum",
        [user("u-1", {"Text": "Start"})],
        "2026-01-02T00:00:00+00:00",
        extra={"detailed_summary": "We agreed to rename the crate."},
    )
    index = read_fresh(READER, db)
    assert index.texts("summary") == ["We agreed to rename the crate."]


def test_legacy_agent1_thread_is_indexed(db: Path) -> None:
    doc = {
        "version": "0.2.0",
        "summary": "Old thread",
        "updated_at": "2025-05-01T00:00:00Z",
        "messages": [
            {
                "id": 0,
                "role": "user",
                "segments": [{"type": "text", "text": "Old question"}],
                "context": "injectedcontextword",
            },
            {
                "id": 1,
                "role": "assistant",
                "segments": [
                    {"type": "thinking", "text": "oldthinkingword"},
                    {"type": "text", "text": "Old answer"},
                ],
                "tool_uses": [{"id": "t", "name": "web_search", "input": {}}],
            },
            {"id": 2, "role": "assistant", "segments": [{"type": "text", "text": "After search"}]},
        ],
        "detailed_summary_state": {"Generated": {"text": "Old summary"}},
    }
    with closing(sqlite3.connect(db)) as conn, conn:
        conn.execute(
            "INSERT INTO threads (id, summary, updated_at, data_type, data) "
            "VALUES ('t-old', 'Old thread', '2025-05-01T00:00:00Z', 'json', ?)",
            (json.dumps(doc),),
        )
    index = read_fresh(READER, db)
    turns = {t.key: t for (sid, _), t in index.turns.items() if sid == "t-old"}
    assert turns["id:0"].text == "Old question"
    assert turns["id:1"].text == "Old answer" and not turns["id:1"].tainted
    assert turns["id:2"].text == "After search" and turns["id:2"].tainted
    assert turns["detailed_summary"].role == "summary"
    assert "injectedcontextword" not in " ".join(index.texts())
    assert "oldthinkingword" not in " ".join(index.texts())


def test_incremental_reads_equal_a_fresh_read_through_saves_and_deletes(db: Path) -> None:
    index = MemoryIndex()
    index.read(READER, db)
    assert index.comparable() == read_fresh(READER, db).comparable()

    # A new thread, then the assistant reply streaming into it (the row is replaced).
    save_thread(db, "t-new", [user("u-1", {"Text": "First prompt"})], "2026-02-01T00:00:00Z")
    result = index.read(READER, db)
    assert result.replaced_sessions == {"t-new"}  # the untouched sample rows are not re-read
    save_thread(
        db,
        "t-new",
        [user("u-1", {"Text": "First prompt"}), agent({"Text": "Partial ans"})],
        "2026-02-01T00:00:01Z",
    )
    index.read(READER, db)
    save_thread(
        db,
        "t-new",
        [user("u-1", {"Text": "First prompt"}), agent({"Text": "Partial answer, done."})],
        "2026-02-01T00:00:02Z",
    )
    index.read(READER, db)
    assert index.comparable() == read_fresh(READER, db).comparable()
    assert "Partial ans" not in index.texts()

    # The user edits the first prompt: Zed truncates and saves the thread again.
    save_thread(db, "t-new", [user("u-9", {"Text": "Edited prompt"})], "2026-02-01T00:00:03Z")
    index.read(READER, db)
    assert index.comparable() == read_fresh(READER, db).comparable()
    assert "First prompt" not in index.texts()

    # Deleting a thread removes its turns and session.
    with closing(sqlite3.connect(db)) as conn, conn:
        conn.execute("DELETE FROM threads WHERE id = ?", (SAMPLE_ID,))
    result = index.read(READER, db)
    assert result.removed_sessions == {SAMPLE_ID}
    assert SAMPLE_ID not in index.sessions
    assert index.comparable() == read_fresh(READER, db).comparable()

    # Nothing changed: nothing re-read.
    result = index.read(READER, db)
    assert result.turns == () and result.replaced_sessions == frozenset()


def test_subagent_threads_are_left_out_unless_asked_for(db: Path) -> None:
    save_thread(
        db,
        "t-sub",
        [user("u-1", {"Text": "Sub task"}), agent({"Text": "Sub done"})],
        "2026-01-03T00:00:00Z",
        parent_id=SAMPLE_ID,
    )
    assert "Sub done" not in read_fresh(READER, db).texts()
    index = read_fresh(READER, db, ReaderOptions(include_subagents=True))
    sub = [t for (sid, _), t in index.turns.items() if sid == "t-sub"]
    assert {t.text for t in sub} == {"Sub task", "Sub done"}
    assert all(t.subagent for t in sub)
    assert index.sessions["t-sub"].parent_session_id == SAMPLE_ID


def test_project_is_the_first_folder_the_user_opened(db: Path) -> None:
    save_thread(
        db,
        "t-multi",
        [user("u-1", {"Text": "hi"})],
        "2026-01-03T00:00:00Z",
        folders="/a/lib\n/b/app",
    )
    with closing(sqlite3.connect(db)) as conn, conn:
        conn.execute("UPDATE threads SET folder_paths_order = '1,0' WHERE id = 't-multi'")
    assert read_fresh(READER, db).sessions["t-multi"].project == "/b/app"


def test_a_garbled_blob_is_reported_and_the_rest_indexed(db: Path) -> None:
    with closing(sqlite3.connect(db)) as conn, conn:
        conn.execute(
            "INSERT INTO threads (id, summary, updated_at, data_type, data) "
            "VALUES ('t-bad', 'x', '2026-01-04T00:00:00Z', 'zstd', ?)",
            (b"\x28\xb5\x2f\xfd not really zstd",),
        )
    result = READER.read(db, None, ReaderOptions())
    assert len(result.problems) == 1 and "t-bad" in result.problems[0].message
    assert {t.session_id for t in result.turns} == {SAMPLE_ID, LEGACY_ROW_ID}


def test_unknown_thread_version_is_unsupported(db: Path) -> None:
    save_thread(db, "t-future", [], "2026-01-05T00:00:00Z", extra={"version": "9.0.0"})
    result = READER.read(db, None, ReaderOptions())
    assert result.unsupported is not None and "9.0.0" in result.unsupported
    assert result.turns == ()


def test_unknown_schema_is_unsupported(tmp_path: Path) -> None:
    db = tmp_path / "threads" / "threads.db"
    db.parent.mkdir()
    with closing(sqlite3.connect(db)) as conn, conn:
        conn.execute("CREATE TABLE threads (id TEXT PRIMARY KEY, payload BLOB)")
    result = READER.read(db, None, ReaderOptions())
    assert result.unsupported is not None and "unknown schema" in result.unsupported


def test_roots_per_platform_and_flatpak_variable(tmp_path: Path) -> None:
    home = tmp_path
    linux = READER.roots(HostEnv(home=home, environ={}, platform="linux"))
    assert linux[0] == home / ".local" / "share" / "zed" / "threads"
    xdg = READER.roots(HostEnv(home=home, environ={"XDG_DATA_HOME": "/x"}, platform="linux"))
    assert xdg[0] == Path("/x/zed/threads")
    flat = READER.roots(
        HostEnv(home=home, environ={"FLATPAK_XDG_DATA_HOME": "/f"}, platform="linux")
    )
    assert flat[0] == Path("/f/zed/threads")
    mac = READER.roots(HostEnv(home=home, environ={}, platform="darwin"))
    assert mac == [home / "Library" / "Application Support" / "Zed" / "threads"]
    win = READER.roots(HostEnv(home=home, environ={"LOCALAPPDATA": "C:/L"}, platform="win32"))
    assert win == [Path("C:/L/Zed/threads")]


def test_source_for_maps_the_wal_and_ignores_shm(tmp_path: Path) -> None:
    base = tmp_path / "threads"
    assert READER.source_for(base / "threads.db") == base / "threads.db"
    assert READER.source_for(base / "threads.db-wal") == base / "threads.db"
    assert READER.source_for(base / "threads.db-shm") is None
    assert READER.source_for(tmp_path / "other" / "threads.db") is None


def test_reading_never_blocks_zeds_writes(db: Path) -> None:
    with closing(sqlite3.connect(db)) as host:
        host.execute("PRAGMA journal_mode=WAL")
        # Zed holds a write transaction while backscroll reads: WAL readers see the
        # last committed state without waiting.
        host.execute("BEGIN IMMEDIATE")
        host.execute("UPDATE threads SET summary = 'pending' WHERE id = ?", (SAMPLE_ID,))
        started = time.monotonic()
        result = READER.read(db, None, ReaderOptions())
        assert time.monotonic() - started < 2
        assert SAMPLE_ID in result.replaced_sessions
        host.execute("COMMIT")

        # A reader between statements holds no lock: Zed's next write with a short
        # busy timeout goes through.
        with open_readonly(db) as conn:
            zed_sql.thread_versions(conn)
            with closing(sqlite3.connect(db, timeout=0.05)) as writer:
                writer.execute("BEGIN IMMEDIATE")
                writer.execute("UPDATE threads SET summary = 'x' WHERE id = ?", (SAMPLE_ID,))
                writer.execute("COMMIT")


def test_a_locked_rollback_journal_database_raises_source_busy_quickly(db: Path) -> None:
    with closing(sqlite3.connect(db, isolation_level=None)) as host:
        host.execute("BEGIN EXCLUSIVE")
        started = time.monotonic()
        with pytest.raises(SourceBusy):
            READER.read(db, None, ReaderOptions())
        assert time.monotonic() - started < 2
        host.execute("ROLLBACK")
