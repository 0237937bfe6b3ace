"""Cursor IDE reader against ``fixtures/cursor/``.

``state.vscdb`` is hand-made (see ``fixtures/cursor/SOURCES.md``): one
``composerData:`` row and its two ``bubbleId:`` rows. ``composerData_bubbles_fixture.json``
is a byte-exact third-party test envelope (real key and field names) that these
tests load into a fresh ``state.vscdb``. Further rows these tests write (tool
steps, Lexical ``richText``, summaries, workspace databases, the legacy chat
panel) follow the field names in the README's "Cursor IDE" sections.
"""

from __future__ import annotations

import json
import sqlite3
import time
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from backscroll.errors import SourceBusy
from backscroll.model import ReaderOptions
from backscroll.readers.base import HostEnv
from backscroll.readers.cursor_ide import CursorReader
from backscroll.readers.hostdb import cursor as cursor_sql
from backscroll.readers.hostdb import open_readonly
from tests.readers.util import MemoryIndex, copy_fixture, fixture, read_fresh

READER = CursorReader()
CID = "6a1f0e2b-0000-4000-8000-000000000001"
USER_BUBBLE = "0b1e0000-0000-4000-8000-00000000000a"
REPLY_BUBBLE = "0b1e0000-0000-4000-8000-00000000000b"


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return copy_fixture("cursor", "state.vscdb", tmp_path / "Cursor" / "User" / "globalStorage")


def empty_db(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with closing(sqlite3.connect(path)) as conn, conn:
        conn.execute("CREATE TABLE ItemTable (key TEXT UNIQUE ON CONFLICT REPLACE, value BLOB)")
        conn.execute("CREATE TABLE cursorDiskKV (key TEXT UNIQUE ON CONFLICT REPLACE, value BLOB)")
    return path


def put(db: Path, key: str, value: Any, table: str = "cursorDiskKV") -> None:
    with closing(sqlite3.connect(db)) as conn, conn:
        conn.execute(f"INSERT INTO {table} (key, value) VALUES (?, ?)", (key, json.dumps(value)))


def get(db: Path, key: str) -> Any:
    with closing(sqlite3.connect(db)) as conn:
        return json.loads(
            conn.execute("SELECT value FROM cursorDiskKV WHERE key = ?", (key,)).fetchone()[0]
        )


def composer(cid: str, bubbles: list[str], updated: int, **extra: Any) -> dict[str, Any]:
    doc = {
        "_v": 10,
        "composerId": cid,
        "name": extra.pop("name", "A chat"),
        "createdAt": 1767261600000,
        "lastUpdatedAt": updated,
        "status": extra.pop("status", "completed"),
        "fullConversationHeadersOnly": [{"bubbleId": b} for b in bubbles],
    }
    doc.update(extra)
    return doc


def add_chat(
    db: Path, cid: str, bubbles: list[tuple[str, dict[str, Any]]], updated: int, **extra: Any
) -> None:
    for bid, bubble in bubbles:
        put(db, f"bubbleId:{cid}:{bid}", {"bubbleId": bid, **bubble})
    put(db, f"composerData:{cid}", composer(cid, [b for b, _ in bubbles], updated, **extra))


def test_sample_turn_counts_per_role(db: Path) -> None:
    index = read_fresh(READER, db)
    assert index.texts("user") == ["Add a retry with backoff to fetchUser()"]
    assert index.texts("assistant") == [
        "I wrapped fetchUser() in a retry loop with exponential backoff."
    ]
    assert index.texts("summary") == []
    assert {k for _, k in index.turns} == {USER_BUBBLE, REPLY_BUBBLE}


def test_thinking_is_not_searchable(db: Path) -> None:
    assert not any("Look at fetchUser first" in t for t in read_fresh(READER, db).texts())


def test_session_title_project_start_and_no_resume_command(db: Path) -> None:
    session = read_fresh(READER, db).sessions[CID]
    assert session.title == "Add retry to fetch"
    assert session.project == "/home/user/demo"
    assert session.started_at == 1767261600.0
    assert session.updated_at == 1767261660.0
    # Cursor has no resume command: the chat is reopened from its chat history panel.
    assert session.resume_command is None


def test_third_party_fixture_bubble_fields(tmp_path: Path) -> None:
    envelope = json.loads(fixture("cursor", "composerData_bubbles_fixture.json").read_text())
    db = empty_db(tmp_path / "Cursor" / "User" / "globalStorage" / "state.vscdb")
    put(db, envelope["composer_key"], envelope["composer_data"])
    for row in envelope["bubble_rows"]:
        put(db, row["key"], row["value"])
    index = read_fresh(READER, db)
    assert index.texts("user") == ["User content from rawText"]
    assert index.texts("assistant") == ["Assistant content from content"]
    # Type 99 is neither a prompt nor a reply (a tool step): left out, unlike the
    # envelope's own reader, which files unknown types as assistant text.
    assert "Tool output from message field" not in index.texts()
    session = index.sessions["comp-fixture-headers"]
    assert session.title == envelope["expected_title"]
    assert session.project == envelope["expected_workspace"]
    assert session.started_at == 1700000000.0


def test_tool_steps_are_not_searchable_and_web_search_taints_replies(db: Path) -> None:
    add_chat(
        db,
        "c-tools",
        [
            ("b1", {"type": 1, "text": "Find the latest release notes"}),
            ("b2", {"type": 2, "text": "", "thinking": {"text": "thinkingword"}}),
            (
                "b3",
                {
                    "type": 2,
                    "text": "",
                    "toolFormerData": {
                        "name": "web_search",
                        "params": '{"q": "paramword"}',
                        "result": "resultword",
                        "status": "completed",
                    },
                },
            ),
            (
                "b4",
                {
                    "type": 2,
                    "text": "Version 2 shipped last week.",
                    "codeBlocks": [{"content": "codeblockword"}],
                },
            ),
            ("b5", {"type": 1, "text": "Thanks"}),
            ("b6", {"type": 2, "text": "Glad to help."}),
        ],
        1767262000000,
    )
    index = read_fresh(READER, db)
    words = " ".join(index.texts())
    for word in ("thinkingword", "paramword", "resultword", "codeblockword"):
        assert word not in words
    turns = {t.text: t.tainted for (sid, _), t in index.turns.items() if sid == "c-tools"}
    assert turns == {
        "Find the latest release notes": False,
        "Version 2 shipped last week.": True,
        "Thanks": False,
        "Glad to help.": False,
    }


def test_rich_text_only_prompt_inline_conversation_and_summary(db: Path) -> None:
    rich = {
        "root": {
            "children": [
                {"type": "paragraph", "children": [{"type": "text", "text": "Line one"}]},
                {
                    "type": "paragraph",
                    "children": [
                        {"type": "text", "text": "Line "},
                        {"type": "mention", "text": "@file.py"},
                    ],
                },
            ]
        }
    }
    put(
        db,
        "composerData:c-old",
        {
            "composerId": "c-old",
            "createdAt": 1767000000000,
            "lastUpdatedAt": 1767000001000,
            "conversation": [
                {"bubbleId": "o1", "type": 1, "text": "", "richText": json.dumps(rich)},
                {"bubbleId": "o2", "type": 2, "text": "Done."},
            ],
            "latestConversationSummary": {
                "lastBubbleId": "o2",
                "summary": {"summary": "We edited file.py."},
            },
        },
    )
    index = read_fresh(READER, db)
    assert "Line one\nLine @file.py" in index.texts("user")
    assert "Done." in index.texts("assistant")
    assert index.texts("summary") == ["We edited file.py."]
    assert index.sessions["c-old"].title == "Line one"


def test_incremental_reads_equal_fresh_through_new_turns_streaming_and_deletion(
    db: Path,
) -> None:
    index = MemoryIndex()
    index.read(READER, db)

    # A new turn: the bubbles are written, then composerData with a later lastUpdatedAt.
    doc = get(db, f"composerData:{CID}")
    put(db, f"bubbleId:{CID}:b3", {"bubbleId": "b3", "type": 1, "text": "Cap the retries at 5"})
    put(db, f"bubbleId:{CID}:b4", {"bubbleId": "b4", "type": 2, "text": "Cap"})
    doc["fullConversationHeadersOnly"] += [
        {"bubbleId": "b3", "type": 1},
        {"bubbleId": "b4", "type": 2},
    ]
    doc["lastUpdatedAt"] += 1000
    doc["status"] = "generating"
    put(db, f"composerData:{CID}", doc)
    index.read(READER, db)
    assert index.comparable() == read_fresh(READER, db).comparable()

    # The reply streams into the same bubble; composerData is untouched meanwhile.
    put(db, f"bubbleId:{CID}:b4", {"bubbleId": "b4", "type": 2, "text": "Capped at 5 retries."})
    index.read(READER, db)
    assert "Capped at 5 retries." in index.texts("assistant")
    doc["status"] = "completed"
    put(db, f"composerData:{CID}", doc)
    index.read(READER, db)
    assert index.comparable() == read_fresh(READER, db).comparable()
    assert "Cap" not in index.texts()

    # A second chat appears; the first is not re-read.
    add_chat(db, "c-two", [("x1", {"type": 1, "text": "Second chat"})], 1767263000000)
    result = index.read(READER, db)
    assert result.replaced_sessions == {"c-two"}
    assert index.comparable() == read_fresh(READER, db).comparable()

    # The first chat is deleted in the UI (its bubbles may linger as orphans).
    with closing(sqlite3.connect(db)) as conn, conn:
        conn.execute("DELETE FROM cursorDiskKV WHERE key = ?", (f"composerData:{CID}",))
    result = index.read(READER, db)
    assert result.removed_sessions == {CID}
    assert index.comparable() == read_fresh(READER, db).comparable()
    assert set(index.sessions) == {"c-two"}


def test_subagent_chats_are_left_out_unless_asked_for(db: Path) -> None:
    doc = get(db, f"composerData:{CID}")
    doc["subagentComposerIds"] = ["c-sub"]
    put(db, f"composerData:{CID}", doc)
    add_chat(db, "c-sub", [("s1", {"type": 2, "text": "Sub-agent report"})], 1767262000000)
    assert "Sub-agent report" not in read_fresh(READER, db).texts()
    index = read_fresh(READER, db, ReaderOptions(include_subagents=True))
    turn = next(t for (sid, _), t in index.turns.items() if sid == "c-sub")
    assert turn.subagent and index.sessions["c-sub"].parent_session_id == CID


def test_workspace_database_gives_projects_and_legacy_chat_tabs(tmp_path: Path) -> None:
    ws = tmp_path / "Cursor" / "User" / "workspaceStorage" / "abc123"
    db = empty_db(ws / "state.vscdb")
    (ws / "workspace.json").write_text(json.dumps({"folder": "file:///home/user/my%20app"}))
    put(
        db,
        "composer.composerData",
        {"allComposers": [{"composerId": CID, "name": "x"}]},
        table="ItemTable",
    )
    chat = {
        "tabs": [
            {
                "tabId": "tab-1",
                "chatTitle": "Old chat",
                "lastSendTime": 1700000000000,
                "bubbles": [
                    {"type": "user", "id": "u1", "text": "Explain this regex"},
                    {"type": "ai", "id": "a1", "text": "It matches dates."},
                ],
            }
        ]
    }
    put(db, "workbench.panel.aichat.view.aichat.chatdata", chat, table="ItemTable")
    index = MemoryIndex()
    index.read(READER, db)
    assert index.sessions[CID].project == "/home/user/my app"
    assert index.texts("user") == ["Explain this regex"]
    assert index.texts("assistant") == ["It matches dates."]
    tab = index.sessions["tab-1"]
    assert (tab.title, tab.project, tab.resume_command) == ("Old chat", "/home/user/my app", None)
    assert index.comparable() == read_fresh(READER, db).comparable()

    chat["tabs"] = []
    put(db, "workbench.panel.aichat.view.aichat.chatdata", chat, table="ItemTable")
    result = index.read(READER, db)
    assert result.removed_sessions == {"tab-1"} and index.turns == {}


def test_a_malformed_chat_is_reported_and_the_rest_indexed(db: Path) -> None:
    with closing(sqlite3.connect(db)) as conn, conn:
        conn.execute("INSERT INTO cursorDiskKV VALUES ('composerData:c-bad', '{\"name\": ')")
    result = READER.read(db, None, ReaderOptions())
    assert len(result.problems) == 1 and "c-bad" in result.problems[0].message
    assert len(result.turns) == 2


def test_unknown_schema_is_unsupported(tmp_path: Path) -> None:
    db = tmp_path / "Cursor" / "User" / "globalStorage" / "state.vscdb"
    db.parent.mkdir(parents=True)
    with closing(sqlite3.connect(db)) as conn, conn:
        conn.execute("CREATE TABLE kv2 (k TEXT, v BLOB)")
    result = READER.read(db, None, ReaderOptions())
    assert result.unsupported is not None and "unknown schema" in result.unsupported


def test_roots_per_platform(tmp_path: Path) -> None:
    home = tmp_path
    linux = READER.roots(HostEnv(home, {}, "linux"))
    assert linux == [
        home / ".config/Cursor/User/globalStorage",
        home / ".config/Cursor/User/workspaceStorage",
    ]
    mac = READER.roots(HostEnv(home, {}, "darwin"))
    assert mac[0] == home / "Library/Application Support/Cursor/User/globalStorage"
    win = READER.roots(HostEnv(home, {"APPDATA": "C:/R"}, "win32"))
    assert win[1] == Path("C:/R/Cursor/User/workspaceStorage")
    xdg = READER.roots(HostEnv(home, {"XDG_CONFIG_HOME": "/c"}, "linux"))
    assert xdg[0] == Path("/c/Cursor/User/globalStorage")


def test_under_wsl_cursors_windows_side_databases_are_roots_too(tmp_path: Path) -> None:
    """Cursor runs on Windows and keeps its databases in each Windows user's
    AppData, which WSL shows under /mnt/c/Users; shared profiles are no one's."""
    users = tmp_path / "Users"
    for name in ("alice", "Public", "Default", "All Users"):
        (users / name).mkdir(parents=True)
    (users / "desktop.ini").write_text("")
    roaming = users / "alice" / "AppData" / "Roaming"
    roots = READER.roots(HostEnv(tmp_path / "home", {}, "linux", wsl_users=users))
    assert roots == [
        tmp_path / "home/.config/Cursor/User/globalStorage",
        tmp_path / "home/.config/Cursor/User/workspaceStorage",
        roaming / "Cursor/User/globalStorage",
        roaming / "Cursor/User/workspaceStorage",
    ]
    assert READER.roots(HostEnv(tmp_path, {}, "linux", wsl_users=tmp_path / "absent")) == [
        tmp_path / ".config/Cursor/User/globalStorage",
        tmp_path / ".config/Cursor/User/workspaceStorage",
    ]


def test_under_wsl_the_windows_home_named_like_the_login_is_the_only_one_taken(
    tmp_path: Path,
) -> None:
    users = tmp_path / "Users"
    for name in ("Alice", "bob"):
        (users / name).mkdir(parents=True)
    env = HostEnv(tmp_path, {}, "linux", wsl_users=users, login="alice")
    assert env.windows_homes() == [users / "Alice"]
    other = HostEnv(tmp_path, {}, "linux", wsl_users=users, login="carol")
    assert other.windows_homes() == [users / "Alice", users / "bob"]


def test_wsl_is_recognised_by_its_kernel_its_interop_handler_or_its_variable(
    tmp_path: Path,
) -> None:
    from backscroll.readers.base import is_wsl

    proc = tmp_path / "proc"
    assert not is_wsl({}, "6.1.0-28-amd64", str(proc))
    assert is_wsl({}, "5.15.167.4-microsoft-standard-WSL2", str(proc))
    assert is_wsl({"WSL_DISTRO_NAME": "Debian"}, "6.6.36-custom", str(proc))
    (proc / "sys/fs/binfmt_misc").mkdir(parents=True)
    (proc / "sys/fs/binfmt_misc/WSLInterop-late").write_text("enabled\n")
    assert is_wsl({}, "6.6.36-custom", str(proc))


def test_a_chat_in_a_windows_side_database_is_indexed_under_wsl(tmp_path: Path) -> None:
    from backscroll.config import Config
    from backscroll.indexing.indexer import Indexer, build_hosts
    from backscroll.store import open_writer

    users = tmp_path / "Users"
    global_storage = users / "alice" / "AppData" / "Roaming" / "Cursor" / "User" / "globalStorage"
    copy_fixture("cursor", "state.vscdb", global_storage)
    env = HostEnv(tmp_path / "home", {}, "linux", wsl_users=users)
    config = Config(data_dir=str(tmp_path / "data"))
    writer = open_writer(tmp_path / "data" / "index.db")
    try:
        specs = [s for s in build_hosts(config, env) if s.reader.host == READER.host]
        Indexer(writer, specs, config).reconcile()
        rows = writer.conn.execute(
            "SELECT f.path, t.role FROM turns t JOIN files f ON f.id = t.file ORDER BY t.id"
        ).fetchall()
    finally:
        writer.close()
    assert rows and {role for _path, role in rows} == {"user", "assistant"}
    assert {path for path, _role in rows} == {str(global_storage / "state.vscdb")}


def test_source_for_claims_only_cursors_databases(tmp_path: Path) -> None:
    user = tmp_path / "Cursor" / "User"
    g = user / "globalStorage"
    assert READER.source_for(g / "state.vscdb-wal") == g / "state.vscdb"
    assert READER.source_for(g / "state.vscdb-shm") is None
    assert READER.source_for(g / "state.vscdb.backup") is None
    w = user / "workspaceStorage" / "abc"
    assert READER.source_for(w / "state.vscdb") == w / "state.vscdb"
    code = tmp_path / "Code" / "User" / "globalStorage" / "state.vscdb"
    assert READER.source_for(code) is None


def test_reading_never_blocks_cursors_writes(db: Path) -> None:
    with closing(sqlite3.connect(db)) as host:
        host.execute("PRAGMA journal_mode=WAL")
        host.execute("BEGIN IMMEDIATE")
        host.execute("INSERT INTO ItemTable VALUES ('some.editor.state', '{}')")
        started = time.monotonic()
        result = READER.read(db, None, ReaderOptions())
        assert time.monotonic() - started < 2 and len(result.turns) == 2
        host.execute("COMMIT")
        with open_readonly(db) as conn:
            cursor_sql.composer_prints(conn)
            with closing(sqlite3.connect(db, timeout=0.05)) as writer:
                writer.execute("BEGIN IMMEDIATE")
                writer.execute("INSERT INTO ItemTable VALUES ('other.state', '{}')")
                writer.execute("COMMIT")


def test_a_locked_database_raises_source_busy_quickly(db: Path) -> None:
    with closing(sqlite3.connect(db, isolation_level=None)) as host:
        host.execute("BEGIN EXCLUSIVE")
        started = time.monotonic()
        with pytest.raises(SourceBusy):
            READER.read(db, None, ReaderOptions())
        assert time.monotonic() - started < 2
        host.execute("ROLLBACK")


@pytest.mark.parametrize("workspace_first", [True, False])
def test_the_workspace_folder_wins_over_a_bubbles_directory_in_the_index(
    tmp_path: Path, db: Path, workspace_first: bool
) -> None:
    """The workspace database that lists a chat names its folder; the chat's own
    bubbles carry a directory too (a guess). Whichever is read last, the index
    keeps the workspace's folder, also after the chat changes and is read again."""
    from backscroll.store import open_writer
    from backscroll.store.writer import FileStat, Update

    ws = tmp_path / "Cursor" / "User" / "workspaceStorage" / "abc123"
    wdb = empty_db(ws / "state.vscdb")
    (ws / "workspace.json").write_text(json.dumps({"folder": "file:///home/user/the%20app"}))
    put(wdb, "composer.composerData", {"allComposers": [{"composerId": CID}]}, table="ItemTable")
    bubble = get(db, f"bubbleId:{CID}:{USER_BUBBLE}")
    bubble["workspaceProjectDir"] = "/elsewhere/checkout"
    put(db, f"bubbleId:{CID}:{USER_BUBBLE}", bubble)
    writer = open_writer(tmp_path / "index.db")
    saved: dict[Path, Any] = {}

    def read(path: Path) -> None:
        row = writer.file_row(str(path))
        result = READER.read(path, saved.get(path), ReaderOptions())
        writer.apply(Update(path=str(path), host="cursor", stat=FileStat(1, 1, 1),
                            reader_version=1, based_on=row.fingerprint if row else None,
                            fresh=row is None, result=result))  # fmt: skip
        row = writer.file_row(str(path))
        from backscroll.model import Cursor

        saved[path] = Cursor(row.position, row.state) if row else None

    def project() -> str:
        return str(writer.conn.execute(
            "SELECT project FROM sessions WHERE session_id = ?", (CID,)).fetchone()[0])  # fmt: skip

    for path in (wdb, db) if workspace_first else (db, wdb):
        read(path)
    assert project() == "/home/user/the app"
    doc = get(db, f"composerData:{CID}")
    doc["lastUpdatedAt"] += 1000  # the chat goes on: the global database is read again
    put(db, f"composerData:{CID}", doc)
    read(db)
    assert project() == "/home/user/the app"
    writer.close()


def test_a_reply_finished_in_its_bubble_after_the_chat_record_is_indexed(db: Path) -> None:
    """The last write of a streamed reply can land in its bubble after the chat's
    own record was written for the last time (status completed): the chat is
    read again for a while after its last update, so the final text is found."""
    import time

    now = int(time.time() * 1000)
    add_chat(db, "c-live", [("q1", {"type": 1, "text": "Rename the flag"}),
                            ("a1", {"type": 2, "text": "Renam"})], now - 1000)  # fmt: skip
    index = MemoryIndex()
    index.read(READER, db)
    put(db, "bubbleId:c-live:a1", {"bubbleId": "a1", "type": 2, "text": "Renamed it to --quiet."})
    index.read(READER, db)
    assert "Renamed it to --quiet." in index.texts("assistant")
    assert index.comparable() == read_fresh(READER, db).comparable()
    # Read again while it settles, with nothing changed: nothing is rewritten
    # (a rewrite makes the store look through every turn of the database).
    again = index.read(READER, db)
    assert "c-live" not in again.replaced_sessions and again.turns == ()


def test_a_settling_chat_whose_text_stayed_but_whose_bubbles_changed_is_read_again(
    db: Path,
) -> None:
    """What a late bubble write changes may not be text: a web tool's record
    (the reply after it is tainted), a time, a project. All of it counts."""
    import time

    now = int(time.time() * 1000)
    bubbles: list[tuple[str, dict[str, Any]]] = [
        ("q1", {"type": 1, "text": "Find notes"}),
        ("t1", {"type": 2, "text": ""}),
        ("a1", {"type": 2, "text": "Version 2 shipped."}),
    ]
    add_chat(db, "c-live", bubbles, now - 1000)
    index = MemoryIndex()
    index.read(READER, db)
    put(db, "bubbleId:c-live:t1", {"bubbleId": "t1", "type": 2, "text": "",
        "toolFormerData": {"name": "web_search", "status": "completed"}})  # fmt: skip
    put(db, "bubbleId:c-live:q1", {"bubbleId": "q1", "type": 1, "text": "Find notes",
        "createdAt": "2026-01-01T10:00:00Z", "workspaceProjectDir": "/home/u/app"})  # fmt: skip
    index.read(READER, db)
    assert index.comparable() == read_fresh(READER, db).comparable()
