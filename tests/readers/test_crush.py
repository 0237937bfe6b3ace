"""Crush reader against tests/fixtures/crush/crush.db (hand-made to the schema of
all of crush's migrations; see its SOURCES.md). Changes are made with ``sqlite3``
here the way Crush writes them (seconds, parts JSON, session updated_at bumps).
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
from backscroll.readers.crush import CrushReader
from tests.readers.util import (
    copy_fixture,
    host_connection,
    read_fresh,
    reading_in_background,
)

SID = "3f2c9a0e-0000-4000-8000-000000000001"
NOW = 1767225700  # seconds, later than everything in the sample


@pytest.fixture
def reader() -> CrushReader:
    return CrushReader()


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return tmp_path / "app"


@pytest.fixture
def db(project: Path) -> Path:
    return copy_fixture("crush", "crush.db", project / ".crush")


def text(value: str) -> dict[str, object]:
    return {"type": "text", "data": {"text": value}}


def add_message(
    conn: sqlite3.Connection,
    mid: str,
    role: str,
    parts: list[dict[str, object]],
    at: int,
    sid: str = SID,
    summary: int = 0,
) -> None:
    conn.execute("BEGIN IMMEDIATE")
    conn.execute(
        "INSERT INTO messages (id, session_id, role, parts, created_at, updated_at,"
        " is_summary_message) VALUES (?, ?, ?, ?, ?, ?, ?)",
        (mid, sid, role, json.dumps(parts), at, at, summary),
    )
    conn.execute("UPDATE sessions SET updated_at = ? WHERE id = ?", (at, sid))
    conn.execute("COMMIT")


# ---------------------------------------------------------------------- the sample


def test_sample_turns_by_role(reader: CrushReader, db: Path) -> None:
    index = read_fresh(reader, db)
    assert index.texts("user") == ["Rename loadCfg to loadConfig everywhere."]
    assert index.texts("assistant") == ["I'll search for every call site first."]
    assert index.texts("summary") == [
        "Summary: user asked to rename loadCfg to loadConfig; one call site found in src/app.go."
    ]


def test_tool_reasoning_and_result_words_are_not_searchable(reader: CrushReader, db: Path) -> None:
    joined = "\n".join(read_fresh(reader, db).texts())
    assert "grep first" not in joined  # reasoning
    assert "src/app.go:12" not in joined  # tool result
    assert "pattern" not in joined  # tool call input


def test_session_metadata(reader: CrushReader, db: Path, project: Path) -> None:
    session = read_fresh(reader, db).sessions[SID]
    assert session.title == "Rename the config loader"
    assert session.project == str(project)
    assert session.started_at == 1767225600.0
    assert session.updated_at == 1767225640.0
    assert session.resume_command == f"cd {project} && crush -s {SID}"


def test_keys_are_message_ids_and_times_are_seconds(reader: CrushReader, db: Path) -> None:
    turn = read_fresh(reader, db).turns[(SID, "3f2c9a0e-0000-4000-8000-0000000000a1")]
    assert turn.timestamp == 1767225601.0


# ---------------------------------------------------------------------- incremental


def test_new_message_streaming_update_and_reinsert_match_a_fresh_read(
    reader: CrushReader, db: Path
) -> None:
    index = read_fresh(reader, db)
    conn = host_connection(db)
    add_message(conn, "m-u2", "user", [text("Also rename saveCfg")], NOW)
    index.read(reader, db)
    add_message(conn, "m-a2", "assistant", [], NOW)  # inserted when generation starts
    index.read(reader, db)
    assert (SID, "m-a2") not in index.turns

    # Streaming: the row's parts are rewritten, then the session is saved.
    conn.execute(
        "UPDATE messages SET parts = ?, updated_at = ? WHERE id = 'm-a2'",
        (json.dumps([text("Renaming saveCfg in src/app.go")]), NOW + 1),
    )
    conn.execute("UPDATE sessions SET updated_at = ? WHERE id = ?", (NOW + 1, SID))
    index.read(reader, db)
    assert index.turns[(SID, "m-a2")].text == "Renaming saveCfg in src/app.go"

    conn.execute("DELETE FROM messages WHERE id = 'm-a2'")
    add_message(conn, "m-a3", "assistant", [text("Renamed saveCfg to saveConfig.")], NOW + 2)
    index.read(reader, db)
    conn.close()

    assert index.comparable() == read_fresh(reader, db).comparable()
    assert (SID, "m-a2") not in index.turns


def test_deleted_session_is_removed(reader: CrushReader, db: Path) -> None:
    index = read_fresh(reader, db)
    conn = host_connection(db)
    conn.execute("DELETE FROM messages WHERE session_id = ?", (SID,))
    conn.execute("DELETE FROM sessions WHERE id = ?", (SID,))
    conn.close()
    result = index.read(reader, db)
    assert result.removed_sessions == {SID}
    assert index.turns == {}


def test_unchanged_database_rereads_only_the_newest_session(reader: CrushReader, db: Path) -> None:
    """Sessions updated in the same second as the last read are read again (a
    write may have landed in that second); older ones are not."""
    conn = host_connection(db)
    conn.execute(
        "INSERT INTO sessions (id, title, updated_at, created_at) VALUES ('old', 'Old', 5, 5)"
    )
    conn.close()
    index = read_fresh(reader, db)
    again = index.read(reader, db)
    assert again.replaced_sessions == {SID}
    assert again.removed_sessions == frozenset()


def test_fetch_taints_later_assistant_text(reader: CrushReader, db: Path) -> None:
    conn = host_connection(db)
    add_message(conn, "m-u5", "user", [text("What is new in Go 1.25?")], NOW)
    add_message(
        conn,
        "m-a5",
        "assistant",
        [text("Checking the notes."), {"type": "tool_call", "data": {"name": "fetch"}}],
        NOW,
    )
    add_message(conn, "m-t5", "tool", [{"type": "tool_result", "data": {"content": "notes"}}], NOW)
    add_message(conn, "m-a6", "assistant", [text("Go 1.25 adds a flight recorder.")], NOW)
    add_message(conn, "m-u7", "user", [text("ok")], NOW)
    add_message(conn, "m-a7", "assistant", [text("Anything else?")], NOW)
    conn.close()
    turns = read_fresh(reader, db).turns
    assert not turns[(SID, "m-a5")].tainted
    assert turns[(SID, "m-a6")].tainted
    assert not turns[(SID, "m-a7")].tainted


def test_subagent_sessions_only_when_asked(reader: CrushReader, db: Path) -> None:
    conn = host_connection(db)
    conn.execute(
        "INSERT INTO sessions (id, parent_session_id, title, updated_at, created_at)"
        " VALUES ('task-1', ?, 'Find call sites', ?, ?)",
        (SID, NOW, NOW),
    )
    add_message(conn, "m-s1", "assistant", [text("Found one call site.")], NOW, sid="task-1")
    conn.close()
    assert "Found one call site." not in read_fresh(reader, db).texts()
    index = read_fresh(reader, db, ReaderOptions(include_subagents=True))
    assert index.turns[("task-1", "m-s1")].subagent
    assert index.sessions["task-1"].parent_session_id == SID


# ---------------------------------------------------------------------- problems


def test_malformed_parts_are_reported_and_the_rest_indexed(reader: CrushReader, db: Path) -> None:
    conn = host_connection(db)
    conn.execute(
        'UPDATE messages SET parts = \'[{"type": "te\' WHERE id = ?',
        ("3f2c9a0e-0000-4000-8000-0000000000a2",),
    )
    conn.close()
    result = reader.read(db, None, ReaderOptions())
    assert len(result.problems) == 1
    assert [t.role for t in result.turns] == ["user", "summary"]


def test_unknown_schema_is_unsupported(reader: CrushReader, tmp_path: Path) -> None:
    path = tmp_path / ".crush" / "crush.db"
    path.parent.mkdir()
    conn = host_connection(path)
    conn.execute("CREATE TABLE sessions (id TEXT PRIMARY KEY)")
    conn.close()
    result = reader.read(path, None, ReaderOptions())
    assert result.unsupported and "unknown schema" in result.unsupported


def test_host_write_transaction_does_not_block_reading(reader: CrushReader, db: Path) -> None:
    conn = host_connection(db)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("BEGIN IMMEDIATE")
    conn.execute("UPDATE sessions SET title = 'uncommitted'")
    started = time.monotonic()
    assert read_fresh(reader, db).sessions[SID].title == "Rename the config loader"
    assert time.monotonic() - started < 1.0
    conn.execute("ROLLBACK")
    conn.close()


def test_locked_database_raises_source_busy_quickly(reader: CrushReader, db: Path) -> None:
    conn = host_connection(db)
    conn.execute("BEGIN EXCLUSIVE")
    started = time.monotonic()
    with pytest.raises(SourceBusy):
        reader.read(db, None, ReaderOptions())
    assert time.monotonic() - started < 1.0
    conn.execute("ROLLBACK")
    conn.close()


def test_reading_never_makes_a_host_write_fail(reader: CrushReader, db: Path) -> None:
    setup = host_connection(db)
    setup.execute("PRAGMA journal_mode = WAL")
    setup.close()
    with reading_in_background(reader, db) as reads:
        writer = host_connection(db, timeout=0.2)
        for i in range(40):
            add_message(writer, f"m-w{i:03}", "user", [text(f"prompt {i}")], NOW + i)
        writer.close()
    assert reads.count > 0
    assert len(read_fresh(reader, db).texts("user")) == 41


# ---------------------------------------------------------------------- locations


def test_roots_follow_crush_global_data_xdg_and_platform() -> None:
    reader = CrushReader()
    home = Path("/home/u")
    assert reader.roots(HostEnv(home=home)) == [home / ".local" / "share" / "crush"]
    assert reader.roots(HostEnv(home=home, platform="darwin")) == [
        home / ".local" / "share" / "crush"
    ]
    assert reader.roots(HostEnv(home=home, environ={"XDG_DATA_HOME": "/x"})) == [Path("/x/crush")]
    windows = HostEnv(home=home, platform="win32", environ={"LOCALAPPDATA": "/l"})
    assert reader.roots(windows) == [Path("/l/crush")]
    assert reader.roots(HostEnv(home=home, platform="win32")) == [
        home / "AppData" / "Local" / "crush"
    ]
    moved = HostEnv(home=home, environ={"CRUSH_GLOBAL_DATA": "/g", "XDG_DATA_HOME": "/x"})
    assert reader.roots(moved) == [Path("/g")]


def test_discover_reads_the_project_registry(reader: CrushReader, tmp_path: Path) -> None:
    root = tmp_path / "share" / "crush"
    root.mkdir(parents=True)
    app = tmp_path / "app"
    moved_data = tmp_path / "elsewhere" / "data"
    first = copy_fixture("crush", "crush.db", app / ".crush")
    second = copy_fixture("crush", "crush.db", moved_data)
    registry = {
        "projects": [
            {
                "path": str(app),
                "data_dir": str(app / ".crush"),
                "last_accessed": "2026-01-01T00:00:00Z",
            },
            {"path": str(tmp_path / "odd"), "data_dir": str(moved_data), "last_accessed": "x"},
            {"path": str(tmp_path / "gone"), "data_dir": str(tmp_path / "gone" / ".crush")},
        ]
    }
    (root / "projects.json").write_text(json.dumps(registry))
    assert list(reader.discover(root)) == [first, second]
    session = read_fresh(reader, second).sessions[SID]
    assert session.project == str(tmp_path / "odd")


def test_source_for_maps_the_database_and_its_wal(reader: CrushReader, db: Path) -> None:
    assert reader.source_for(db) == db
    assert reader.source_for(db.with_name("crush.db-wal")) == db
    assert reader.source_for(db.with_name("crush.db-shm")) is None
    # The registry changes nothing by itself: the periodic rescan re-runs discover().
    assert reader.source_for(Path("/home/u/.local/share/crush/projects.json")) is None
