"""OpenCode / Kilo CLI reader against the samples in tests/fixtures/opencode.

``opencode.db`` is hand-made to the v1.2 schema (see its SOURCES.md); the legacy
JSON tree is byte-exact from a third-party test suite. Changes are made with
``sqlite3`` here the way OpenCode writes them.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import time
from pathlib import Path

import pytest

from backscroll.errors import SourceBusy
from backscroll.model import ReaderOptions
from backscroll.readers.base import HostEnv
from backscroll.readers.opencode import KiloCliReader, OpenCodeReader
from tests.readers.util import (
    FIXTURES,
    copy_fixture,
    host_connection,
    read_fresh,
    reading_in_background,
)

SID = "ses_demo01"
NOW = 1767225700000  # ms, later than everything in the sample


@pytest.fixture
def reader() -> OpenCodeReader:
    return OpenCodeReader()


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return copy_fixture("opencode", "opencode.db", tmp_path / "opencode")


@pytest.fixture
def legacy(tmp_path: Path) -> Path:
    storage = tmp_path / "opencode" / "storage"
    shutil.copytree(FIXTURES / "opencode" / "legacy-storage", storage)
    return storage


def add_message(
    conn: sqlite3.Connection,
    mid: str,
    info: dict[str, object],
    parts: list[tuple[str, dict[str, object]]],
    at: int,
    sid: str = SID,
) -> None:
    """Insert a message with its parts and bump the session, as OpenCode does."""
    conn.execute("BEGIN IMMEDIATE")
    conn.execute("INSERT INTO message VALUES (?, ?, ?, ?, ?)", (mid, sid, at, at, json.dumps(info)))
    for pid, data in parts:
        conn.execute(
            "INSERT INTO part VALUES (?, ?, ?, ?, ?, ?)", (pid, mid, sid, at, at, json.dumps(data))
        )
    conn.execute("UPDATE session SET time_updated = ? WHERE id = ?", (at, sid))
    conn.execute("COMMIT")


def text(value: str, **extra: object) -> dict[str, object]:
    return {"type": "text", "text": value, **extra}


# ---------------------------------------------------------------------- the sample db


def test_sample_db_turns_by_role(reader: OpenCodeReader, db: Path) -> None:
    index = read_fresh(reader, db)
    assert len(index.texts("user")) == 1
    assert len(index.texts("assistant")) == 1
    assert len(index.texts("summary")) == 1
    assert index.texts("user") == ["What does scripts/build.sh do?"]
    assert index.texts("assistant") == ["It runs `make all` from the repository root."]
    assert index.texts("summary") == [
        "Summary: the user asked what scripts/build.sh does; it runs make all."
    ]


def test_keys_are_message_and_part_ids(reader: OpenCodeReader, db: Path) -> None:
    keys = set(read_fresh(reader, db).turns)
    assert keys == {(SID, "msg_u1#prt_u1a"), (SID, "msg_a1#prt_a1d"), (SID, "msg_a2")}


def test_reasoning_and_tool_words_are_not_searchable(reader: OpenCodeReader, db: Path) -> None:
    joined = "\n".join(read_fresh(reader, db).texts())
    assert "read the file first" not in joined  # reasoning part
    assert "#!/bin/sh" not in joined  # tool output
    assert "filePath" not in joined  # tool input


def test_session_metadata(reader: OpenCodeReader, db: Path) -> None:
    session = read_fresh(reader, db).sessions[SID]
    assert session.title == "Explain the build script"
    assert session.project == "/home/user/demo"
    assert session.started_at == 1767225600.0
    assert session.updated_at == 1767225609.0
    assert session.resume_command == "cd /home/user/demo && opencode -s ses_demo01"
    assert session.parent_session_id is None


def test_turn_timestamps_are_message_times_in_seconds(reader: OpenCodeReader, db: Path) -> None:
    index = read_fresh(reader, db)
    assert index.turns[(SID, "msg_u1#prt_u1a")].timestamp == 1767225601.0


# ---------------------------------------------------------------------- incremental


def test_new_message_streaming_update_and_reinsert_match_a_fresh_read(
    reader: OpenCodeReader, db: Path
) -> None:
    index = read_fresh(reader, db)
    conn = host_connection(db)
    add_message(
        conn,
        "msg_u3",
        {"role": "user", "time": {"created": NOW}},
        [("prt_u3a", text("Add a clean target too"))],
        NOW,
    )
    index.read(reader, db)
    add_message(
        conn,
        "msg_a3",
        {"role": "assistant", "time": {"created": NOW + 1}},
        [("prt_a3a", text("Adding"))],
        NOW + 1,
    )
    index.read(reader, db)
    assert index.turns[(SID, "msg_a3#prt_a3a")].text == "Adding"

    # The streaming text part is rewritten in place and the session bumped.
    conn.execute(
        "UPDATE part SET data = ?, time_updated = ? WHERE id = 'prt_a3a'",
        (json.dumps(text("Adding a clean target that removes build/")), NOW + 2),
    )
    conn.execute("UPDATE session SET time_updated = ? WHERE id = ?", (NOW + 2, SID))
    result = index.read(reader, db)
    assert result.replaced_sessions == {SID}
    assert index.turns[(SID, "msg_a3#prt_a3a")].text == "Adding a clean target that removes build/"

    # Delete and re-insert under new ids (the old turn must not linger).
    conn.execute("DELETE FROM part WHERE message_id = 'msg_a3'")
    conn.execute("DELETE FROM message WHERE id = 'msg_a3'")
    add_message(
        conn,
        "msg_a4",
        {"role": "assistant", "time": {"created": NOW + 3}},
        [("prt_a4a", text("Done: make clean removes build/"))],
        NOW + 3,
    )
    index.read(reader, db)
    conn.close()

    fresh = read_fresh(reader, db)
    assert index.comparable() == fresh.comparable()
    assert (SID, "msg_a3#prt_a3a") not in index.turns
    assert index.texts("assistant")[-1] == "Done: make clean removes build/"


def test_insert_is_found_without_a_session_bump(reader: OpenCodeReader, db: Path) -> None:
    index = read_fresh(reader, db)
    conn = host_connection(db)
    conn.execute(
        "INSERT INTO message VALUES ('msg_u9', ?, 1, 1, ?)",
        (SID, json.dumps({"role": "user", "time": {"created": NOW}})),
    )
    conn.execute(
        "INSERT INTO part VALUES ('prt_u9', 'msg_u9', ?, 1, 1, ?)",
        (SID, json.dumps(text("quietly inserted prompt"))),
    )
    conn.close()
    index.read(reader, db)
    assert "quietly inserted prompt" in index.texts("user")


def test_unchanged_database_rereads_only_the_newest_session(
    reader: OpenCodeReader, db: Path
) -> None:
    """Sessions updated in the same millisecond as the last read are read again (a
    write may have landed in it); older ones are not."""
    conn = host_connection(db)
    conn.execute(
        "INSERT INTO session (id, project_id, slug, directory, title, version, time_created,"
        " time_updated) VALUES ('ses_old', 'p_demo', 's', '/tmp', 't', '1', 1, 1)"
    )
    conn.close()
    index = read_fresh(reader, db)
    again = index.read(reader, db)
    assert again.replaced_sessions == {SID}
    assert again.removed_sessions == frozenset()


def test_new_session_is_picked_up_and_deleted_session_removed(
    reader: OpenCodeReader, db: Path
) -> None:
    index = read_fresh(reader, db)
    conn = host_connection(db)
    conn.execute(
        "INSERT INTO session (id, project_id, slug, directory, title, version, time_created,"
        " time_updated) VALUES ('ses_two', 'p_demo', 'calm-fox', '/home/user/other', 'Other',"
        " '1.2.10', ?, ?)",
        (NOW, NOW),
    )
    add_message(
        conn,
        "msg_x1",
        {"role": "user", "time": {"created": NOW}},
        [("prt_x1", text("second session prompt"))],
        NOW,
        sid="ses_two",
    )
    index.read(reader, db)
    assert index.sessions["ses_two"].project == "/home/user/other"
    assert "second session prompt" in index.texts("user")

    conn.execute("DELETE FROM part WHERE session_id = 'ses_two'")
    conn.execute("DELETE FROM message WHERE session_id = 'ses_two'")
    conn.execute("DELETE FROM session WHERE id = 'ses_two'")
    conn.close()
    result = index.read(reader, db)
    assert result.removed_sessions == {"ses_two"}
    assert "ses_two" not in index.sessions
    assert index.comparable() == read_fresh(reader, db).comparable()


# ---------------------------------------------------------------------- what counts as prose


def test_web_fetch_taints_later_assistant_text_until_next_prompt(
    reader: OpenCodeReader, db: Path
) -> None:
    conn = host_connection(db)
    add_message(
        conn,
        "msg_u5",
        {"role": "user", "time": {"created": NOW}},
        [("prt_u5", text("What does the make manual say?"))],
        NOW,
    )
    add_message(
        conn,
        "msg_a5",
        {"role": "assistant", "time": {"created": NOW + 1}},
        [
            ("prt_a5a", text("Let me look it up.")),
            ("prt_a5b", {"type": "tool", "tool": "webfetch", "state": {"output": "GNU make"}}),
            ("prt_a5c", text("The manual says make all builds everything.")),
        ],
        NOW + 1,
    )
    add_message(
        conn,
        "msg_u6",
        {"role": "user", "time": {"created": NOW + 2}},
        [("prt_u6", text("thanks"))],
        NOW + 2,
    )
    add_message(
        conn,
        "msg_a6",
        {"role": "assistant", "time": {"created": NOW + 3}},
        [("prt_a6", text("You're welcome."))],
        NOW + 3,
    )
    conn.close()
    turns = read_fresh(reader, db).turns
    assert not turns[(SID, "msg_a5#prt_a5a")].tainted
    assert turns[(SID, "msg_a5#prt_a5c")].tainted
    assert not turns[(SID, "msg_a6#prt_a6")].tainted
    assert "GNU make" not in "\n".join(t.text for t in turns.values())


def test_synthetic_and_ignored_text_parts_are_skipped(reader: OpenCodeReader, db: Path) -> None:
    conn = host_connection(db)
    add_message(
        conn,
        "msg_u7",
        {"role": "user", "time": {"created": NOW}},
        [
            ("prt_u7a", text("typed prompt")),
            ("prt_u7b", text("injected file contents", synthetic=True)),
            ("prt_u7c", text("system reminder", ignored=True)),
        ],
        NOW,
    )
    conn.close()
    joined = "\n".join(read_fresh(reader, db).texts())
    assert "typed prompt" in joined
    assert "injected file contents" not in joined
    assert "system reminder" not in joined


def test_unfinished_or_failed_summary_is_not_indexed(reader: OpenCodeReader, db: Path) -> None:
    conn = host_connection(db)
    add_message(
        conn,
        "msg_s1",
        {"role": "assistant", "summary": True, "time": {"created": NOW}},
        [("prt_s1", text("half a summary"))],
        NOW,
    )
    add_message(
        conn,
        "msg_s2",
        {
            "role": "assistant",
            "summary": True,
            "finish": "stop",
            "error": {"name": "Aborted"},
            "time": {"created": NOW + 1},
        },
        [("prt_s2", text("failed summary"))],
        NOW + 1,
    )
    conn.close()
    assert read_fresh(reader, db).texts("summary") == [
        "Summary: the user asked what scripts/build.sh does; it runs make all."
    ]


def test_subagent_sessions_only_when_asked(reader: OpenCodeReader, db: Path) -> None:
    conn = host_connection(db)
    conn.execute(
        "INSERT INTO session (id, project_id, parent_id, slug, directory, title, version,"
        " time_created, time_updated) VALUES ('ses_sub', 'p_demo', ?, 's', '/home/user/demo',"
        " 'Sub task', '1.2.10', ?, ?)",
        (SID, NOW, NOW),
    )
    add_message(
        conn,
        "msg_sub",
        {"role": "assistant", "time": {"created": NOW}},
        [("prt_sub", text("subagent findings"))],
        NOW,
        sid="ses_sub",
    )
    conn.close()
    assert "subagent findings" not in read_fresh(reader, db).texts()
    index = read_fresh(reader, db, ReaderOptions(include_subagents=True))
    turn = index.turns[("ses_sub", "msg_sub#prt_sub")]
    assert turn.subagent
    assert index.sessions["ses_sub"].parent_session_id == SID


# ---------------------------------------------------------------------- problems


def test_malformed_part_is_reported_and_the_rest_indexed(reader: OpenCodeReader, db: Path) -> None:
    conn = host_connection(db)
    conn.execute('UPDATE part SET data = \'{"type": "text", "te\' WHERE id = \'prt_a1d\'')
    conn.close()
    result = reader.read(db, None, ReaderOptions())
    assert any("prt_a1d" in p.message for p in result.problems)
    assert {t.role for t in result.turns} == {"user", "summary"}


def test_unknown_schema_is_unsupported(reader: OpenCodeReader, tmp_path: Path) -> None:
    path = tmp_path / "opencode.db"
    conn = host_connection(path)
    conn.execute("CREATE TABLE session_v2 (id TEXT PRIMARY KEY, directory TEXT)")
    conn.execute("CREATE TABLE session_message (id TEXT, session_id TEXT, seq INTEGER)")
    conn.close()
    result = reader.read(path, None, ReaderOptions())
    assert result.unsupported is not None
    assert "unknown schema" in result.unsupported
    assert result.turns == ()


# ---------------------------------------------------------------------- the host is never held up


def test_host_write_transaction_does_not_block_reading(reader: OpenCodeReader, db: Path) -> None:
    conn = host_connection(db)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("BEGIN IMMEDIATE")
    conn.execute("UPDATE session SET title = 'uncommitted' WHERE id = ?", (SID,))
    started = time.monotonic()
    index = read_fresh(reader, db)
    assert time.monotonic() - started < 1.0
    assert index.sessions[SID].title == "Explain the build script"
    conn.execute("ROLLBACK")
    conn.close()


def test_locked_database_raises_source_busy_quickly(reader: OpenCodeReader, db: Path) -> None:
    conn = host_connection(db)  # rollback-journal mode: an exclusive lock shuts readers out
    conn.execute("BEGIN EXCLUSIVE")
    started = time.monotonic()
    with pytest.raises(SourceBusy):
        reader.read(db, None, ReaderOptions())
    assert time.monotonic() - started < 1.0
    conn.execute("ROLLBACK")
    conn.close()


def test_reading_never_makes_a_host_write_fail(reader: OpenCodeReader, db: Path) -> None:
    setup = host_connection(db)
    setup.execute("PRAGMA journal_mode = WAL")
    setup.close()
    with reading_in_background(reader, db) as reads:
        writer = host_connection(db, timeout=0.2)
        for i in range(40):
            add_message(
                writer,
                f"msg_w{i:03}",
                {"role": "user", "time": {"created": NOW + i}},
                [(f"prt_w{i:03}", text(f"prompt {i}"))],
                NOW + i,
            )
        writer.close()
    assert reads.count > 0
    assert len(read_fresh(reader, db).texts("user")) == 41


# ---------------------------------------------------------------------- legacy JSON tree


def test_legacy_session_turns_and_metadata(reader: OpenCodeReader, legacy: Path) -> None:
    index = read_fresh(reader, legacy / "session" / "proj1" / "ses_test1.json")
    assert index.texts("user") == ["Hello, can you help me with Rust?"]
    assert index.texts("assistant") == [
        "Of course! I'd be happy to help you with Rust. What would you like to know?"
    ]
    assert set(index.turns) == {("ses_test1", "msg_test1#part1"), ("ses_test1", "msg_test2#part1")}
    session = index.sessions["ses_test1"]
    assert session.title == "OpenCode JSON Session"
    assert session.project == "/tmp/test-project"
    assert session.started_at == 1700000000.0
    assert session.resume_command == "cd /tmp/test-project && opencode -s ses_test1"


def test_legacy_message_and_part_files_map_to_their_session_file(
    reader: OpenCodeReader, legacy: Path
) -> None:
    session_file = legacy / "session" / "proj1" / "ses_test1.json"
    assert reader.source_for(session_file) == session_file
    assert reader.source_for(legacy / "message" / "ses_test1" / "msg_test2.json") == session_file
    assert reader.source_for(legacy / "part" / "msg_test2" / "part1.json") == session_file
    assert reader.source_for(legacy / "part" / "msg_gone" / "p.json") is None
    assert reader.source_for(legacy / "todo" / "ses_test1.json") is None


def test_legacy_and_database_copies_of_a_session_give_the_same_turns(
    reader: OpenCodeReader, legacy: Path, db: Path
) -> None:
    """A session the 1.2 migration imported is one session: same keys, same turns."""
    conn = host_connection(db)
    conn.execute(
        "INSERT INTO session (id, project_id, slug, directory, title, version, time_created,"
        " time_updated) VALUES ('ses_test1', 'p_demo', 's', '/tmp/test-project',"
        " 'OpenCode JSON Session', '1.1', 1700000000000, 1700000005000)"
    )
    for msg_file in sorted((legacy / "message" / "ses_test1").glob("*.json")):
        info = json.loads(msg_file.read_text())
        mid = info.pop("id")
        info.pop("sessionID")
        # Real part ids are unique across the database; the sample reuses "part1".
        part_file = legacy / "part" / mid / "part1.json"
        part = json.loads(part_file.read_text())
        pid = part["id"] = f"prt_{mid}"
        part_file.unlink()
        (part_file.parent / f"{pid}.json").write_text(json.dumps(part))
        del part["id"], part["messageID"]
        add_message(conn, mid, info, [(pid, part)], info["time"]["created"], sid="ses_test1")
    conn.close()
    from_db = read_fresh(reader, db)
    from_json = read_fresh(reader, legacy / "session" / "proj1" / "ses_test1.json")
    db_turns = {k: v for k, v in from_db.comparable().items() if k[0] == "ses_test1"}
    assert db_turns == from_json.comparable()


def test_legacy_part_garbled_mid_write_is_reported(reader: OpenCodeReader, legacy: Path) -> None:
    (legacy / "part" / "msg_test2" / "part1.json").write_text('{"id": "part1", "type": "te')
    result = reader.read(legacy / "session" / "proj1" / "ses_test1.json", None, ReaderOptions())
    assert len(result.problems) == 1
    assert [t.role for t in result.turns] == ["user"]


def test_legacy_session_file_mid_write_raises(reader: OpenCodeReader, legacy: Path) -> None:
    path = legacy / "session" / "proj1" / "ses_test1.json"
    path.write_text('{"id": "ses_test1", "title": "Open')
    with pytest.raises(ValueError):
        reader.read(path, None, ReaderOptions())


def test_legacy_document_without_session_id_is_unsupported(
    reader: OpenCodeReader, legacy: Path
) -> None:
    path = legacy / "session" / "proj1" / "ses_test1.json"
    path.write_text("[1, 2]")
    assert reader.read(path, None, ReaderOptions()).unsupported


# ---------------------------------------------------------------------- locations


def test_roots_follow_xdg_data_home_on_every_platform(reader: OpenCodeReader) -> None:
    home = Path("/home/u")
    for platform in ("linux", "darwin", "win32"):
        roots = reader.roots(HostEnv(home=home, platform=platform))
        assert roots[0] == home / ".local" / "share" / "opencode"
    env = HostEnv(home=home, environ={"XDG_DATA_HOME": "/data"})
    assert reader.roots(env)[0] == Path("/data/opencode")
    assert home / ".config" / "opencode" / "storage" in reader.roots(HostEnv(home=home))


def test_opencode_db_variable_names_the_database(reader: OpenCodeReader) -> None:
    home = Path("/home/u")
    roots = reader.roots(HostEnv(home=home, environ={"OPENCODE_DB": "/srv/my-chat.db"}))
    assert Path("/srv/my-chat.db") in roots
    assert reader.source_for(Path("/srv/my-chat.db-wal")) == Path("/srv/my-chat.db")
    relative = reader.roots(HostEnv(home=home, environ={"OPENCODE_DB": "alt.db"}))
    assert home / ".local" / "share" / "opencode" / "alt.db" in relative
    in_memory = reader.roots(HostEnv(home=home, environ={"OPENCODE_DB": ":memory:"}))
    assert len(in_memory) == 3  # the data dir, its legacy storage/ and the config-dir one


def test_source_for_maps_database_files(reader: OpenCodeReader) -> None:
    root = Path("/home/u/.local/share/opencode")
    assert reader.source_for(root / "opencode.db") == root / "opencode.db"
    assert reader.source_for(root / "opencode.db-wal") == root / "opencode.db"
    assert reader.source_for(root / "opencode-dev.db-wal") == root / "opencode-dev.db"
    assert reader.source_for(root / "opencode.db-shm") is None
    assert reader.source_for(root / "opencode.db-journal") is None
    assert reader.source_for(root / "kilo.db") is None
    assert reader.source_for(root / "log" / "2026.log") is None


def test_discover_finds_databases_and_legacy_sessions_only(
    reader: OpenCodeReader, db: Path, legacy: Path
) -> None:
    root = db.parent
    (root / "snapshot" / "abc").mkdir(parents=True)
    (root / "snapshot" / "abc" / "HEAD").write_text("ref")
    found = list(reader.discover(root))
    assert found == [db, legacy / "session" / "proj1" / "ses_test1.json"]


# ---------------------------------------------------------------------- Kilo CLI


def test_kilo_reads_kilo_db_and_resumes_with_kilo(tmp_path: Path) -> None:
    reader = KiloCliReader()
    db = copy_fixture("opencode", "opencode.db", tmp_path / "kilo", "kilo.db")
    assert reader.source_for(db.with_name("kilo.db-wal")) == db
    assert reader.source_for(db.with_name("opencode.db")) is None
    index = read_fresh(reader, db)
    assert len(index.turns) == 3
    assert index.sessions[SID].resume_command == "cd /home/user/demo && kilo -s ses_demo01"


def test_kilo_roots_and_kilo_db_variable() -> None:
    reader = KiloCliReader()
    home = Path("/home/u")
    assert reader.roots(HostEnv(home=home)) == [home / ".local" / "share" / "kilo"]
    roots = reader.roots(HostEnv(home=home, environ={"KILO_DB": "/x/k.db"}))
    assert roots == [home / ".local" / "share" / "kilo", Path("/x/k.db")]


def test_kilo_ignores_opencode_legacy_tree(legacy: Path) -> None:
    reader = KiloCliReader()
    assert reader.source_for(legacy / "session" / "proj1" / "ses_test1.json") is None


def test_the_data_dir_is_watched_shallowly_and_the_legacy_tree_deeply(tmp_path: Path) -> None:
    own = OpenCodeReader()
    roots = own.roots(HostEnv(home=tmp_path, environ={}, platform="linux"))
    data = tmp_path / ".local" / "share" / "opencode"
    assert data in roots and data / "storage" in roots
    assert own.watch_recursive(data) is False  # snapshot/ holds a git repo per project
    assert own.watch_recursive(data / "storage") is True
