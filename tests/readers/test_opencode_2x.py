"""OpenCode 2.x: messages in ``session_message``, read beside (or without) 1.x's
``message``/``part``.

No real 2.x database small enough to commit was found, so the database is built
here from upstream's own definitions (tests/fixtures/opencode/SOURCES.md names the
files and commits): the tables of ``packages/core/src/session/sql.ts`` and rows
encoded the way ``packages/core/src/session/projector.ts`` stores a
``SessionMessage`` (``data`` is the message without its ``id`` and ``type``; times
are epoch milliseconds).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from backscroll.model import ReaderOptions
from backscroll.readers.opencode import OpenCodeReader
from tests.readers.util import host_connection, read_fresh

T0 = 1788000000000  # ms
SID = "ses_2a"
FORK = "ses_2fork"
CHILD = "ses_2child"

_SESSION_DDL = """CREATE TABLE {name} (
    id TEXT PRIMARY KEY, project_id TEXT NOT NULL, workspace_id TEXT, parent_id TEXT,
    fork_session_id TEXT, fork_message_id TEXT, slug TEXT NOT NULL, directory TEXT NOT NULL,
    path TEXT, title TEXT, version TEXT NOT NULL, share_url TEXT, metadata TEXT,
    cost REAL NOT NULL DEFAULT 0, agent TEXT, model TEXT,
    time_created INTEGER NOT NULL, time_updated INTEGER NOT NULL,
    time_compacting INTEGER, time_archived INTEGER, time_idle INTEGER)"""
_MESSAGE_DDL = """CREATE TABLE session_message (
    id TEXT PRIMARY KEY, session_id TEXT NOT NULL, type TEXT NOT NULL, seq INTEGER NOT NULL,
    time_created INTEGER NOT NULL, time_updated INTEGER NOT NULL, data TEXT NOT NULL)"""
_V1_DDL = (
    "CREATE TABLE message (id TEXT PRIMARY KEY, session_id TEXT NOT NULL,"
    " time_created INTEGER NOT NULL, time_updated INTEGER NOT NULL, data TEXT NOT NULL)",
    "CREATE TABLE part (id TEXT PRIMARY KEY, message_id TEXT NOT NULL, session_id TEXT NOT NULL,"
    " time_created INTEGER NOT NULL, time_updated INTEGER NOT NULL, data TEXT NOT NULL)",
)


def user(text: str, at: int) -> dict[str, object]:
    return {"time": {"created": at}, "text": text, "files": [], "agents": [], "references": []}


def assistant(*content: dict[str, object], at: int, done: bool = True) -> dict[str, object]:
    time = {"created": at, "completed": at + 500} if done else {"created": at}
    return {
        "agent": "build",
        "model": {"id": "claude-sonnet", "providerID": "anthropic"},
        "content": list(content),
        "finish": "stop" if done else None,
        "time": time,
    }


def said(item_id: str, text: str, **extra: object) -> dict[str, object]:
    return {"type": "text", "id": item_id, "text": text, **extra}


def tool(item_id: str, name: str, output: str) -> dict[str, object]:
    return {
        "type": "tool",
        "id": item_id,
        "name": name,
        "state": {
            "status": "completed",
            "input": {"filePath": "lexer.py"},
            "content": [{"type": "text", "text": output}],
            "structured": {},
        },
        "time": {"created": T0},
    }


def add_session(
    conn: sqlite3.Connection,
    sid: str,
    *,
    table: str = "session",
    title: str | None = "Port the tokenizer",
    directory: str = "/home/user/tok",
    parent: str | None = None,
    fork_of: str | None = None,
    at: int = T0,
) -> None:
    conn.execute(
        f"INSERT INTO {table} (id, project_id, parent_id, fork_session_id, slug, directory,"
        " title, version, time_created, time_updated) VALUES (?, 'prj', ?, ?, 'calm-owl', ?, ?,"
        " '2.0.3', ?, ?)",
        (sid, parent, fork_of, directory, title, at, at),
    )


def add_row(
    conn: sqlite3.Connection, sid: str, seq: int, kind: str, data: Mapping[str, Any], rid: str = ""
) -> str:
    rid = rid or f"msg_{sid}_{seq}"
    at = int(data.get("time", {}).get("created", T0))
    conn.execute(
        "INSERT INTO session_message VALUES (?, ?, ?, ?, ?, ?, ?)",
        (rid, sid, kind, seq, at, at, json.dumps(data)),
    )
    return rid


def build(path: Path, *, v1: bool = False, session_table: str = "session") -> Path:
    """A 2.x database: one session with every message type, a fork of it that
    copied its first exchange, and a sub-agent session."""
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = host_connection(path)
    conn.execute(_SESSION_DDL.format(name=session_table))
    conn.execute(_MESSAGE_DDL)
    for ddl in _V1_DDL if v1 else ():
        conn.execute(ddl)
    add_session(conn, SID, table=session_table)
    add_row(conn, SID, 1, "model-switched", {"time": {"created": T0}, "model": {"id": "m"}})
    add_row(conn, SID, 2, "user", user("How do I port the tokenizer to the new lexer?", T0 + 1))
    add_row(conn, SID, 3, "system", {"time": {"created": T0 + 2}, "text": "AGENTS.md changed"})
    add_row(
        conn,
        SID,
        4,
        "assistant",
        assistant(
            {"type": "reasoning", "id": "c1", "text": "weigh the token classes first"},
            tool("c2", "read", "def tokenize(): pass  # lexer internals"),
            said("c3", "Split on whitespace first, then map each token to a class."),
            said("c4", "Using the fallback model.", fallbackNotice="using"),
            at=T0 + 3,
        ),
    )
    shell = {"callID": "s1", "command": "ls src", "output": "lexer.py", "time": {"created": T0 + 4}}
    add_row(conn, SID, 5, "shell", shell)
    synthetic = {"sessionID": SID, "text": "inline review comment", "time": {"created": T0 + 5}}
    add_row(conn, SID, 6, "synthetic", synthetic)
    add_row(
        conn,
        SID,
        7,
        "compaction",
        {
            "reason": "auto",
            "summary": "Summary: porting the tokenizer to the lexer.",
            "recent": "",
            "time": {"created": T0 + 6},
        },
    )
    # A fork of the first exchange: verbatim copies (new ids, same seq and data), then its own.
    add_session(conn, FORK, table=session_table, title="Port the tokenizer (fork #1)", fork_of=SID)
    for seq, kind, data in conn.execute(
        "SELECT seq, type, data FROM session_message WHERE session_id = ? AND seq <= 4", (SID,)
    ).fetchall():
        conn.execute(
            "INSERT INTO session_message VALUES (?, ?, ?, ?, ?, ?, ?)",
            (f"evt_fork_{seq}", FORK, kind, seq, T0, T0, data),
        )
    add_row(conn, FORK, 8, "user", user("Now port the parser the same way.", T0 + 10))
    add_session(conn, CHILD, table=session_table, title=None, parent=SID)
    add_row(conn, CHILD, 1, "user", user("Sub-agent: list the lexer's token classes.", T0 + 7))
    conn.close()
    return path


@pytest.fixture
def reader() -> OpenCodeReader:
    return OpenCodeReader()


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return build(tmp_path / "opencode" / "opencode.db")


def test_a_2x_database_without_1x_tables_is_read(reader: OpenCodeReader, db: Path) -> None:
    result = reader.read(db, None, ReaderOptions())
    assert result.unsupported is None
    assert {t.session_id for t in result.turns} == {SID, FORK}


def test_2x_user_assistant_text_and_finished_compaction_are_indexed(
    reader: OpenCodeReader, db: Path
) -> None:
    index = read_fresh(reader, db)
    mine = {key: turn for (sid, key), turn in index.turns.items() if sid == SID}
    assert [(t.role, t.text) for t in sorted(mine.values(), key=lambda t: t.seq)] == [
        ("user", "How do I port the tokenizer to the new lexer?"),
        ("assistant", "Split on whitespace first, then map each token to a class."),
        ("summary", "Summary: porting the tokenizer to the lexer."),
    ]
    assert set(mine) == {f"msg_{SID}_2", f"msg_{SID}_4#c3", f"msg_{SID}_7"}
    assert mine[f"msg_{SID}_2"].timestamp == (T0 + 1) / 1000


def test_2x_reasoning_tool_system_shell_synthetic_and_notices_stay_out(
    reader: OpenCodeReader, db: Path
) -> None:
    joined = "\n".join(read_fresh(reader, db).texts())
    for absent in (
        "weigh the token classes",  # reasoning
        "lexer internals",  # tool output
        "filePath",  # tool input
        "AGENTS.md changed",  # system
        "ls src",  # shell
        "inline review comment",  # synthetic
        "fallback model",  # a fallback notice
    ):
        assert absent not in joined


def test_2x_session_metadata(reader: OpenCodeReader, db: Path) -> None:
    session = read_fresh(reader, db).sessions[SID]
    assert session.title == "Port the tokenizer"
    assert session.project == "/home/user/tok"
    assert session.started_at == T0 / 1000
    assert session.resume_command == f"cd /home/user/tok && opencode -s {SID}"


def test_a_fork_leaves_out_the_rows_it_copied_from_its_parent(
    reader: OpenCodeReader, db: Path
) -> None:
    index = read_fresh(reader, db)
    fork = [t.text for (sid, _), t in index.turns.items() if sid == FORK]
    assert fork == ["Now port the parser the same way."]
    assert index.texts("user").count("How do I port the tokenizer to the new lexer?") == 1


def test_2x_subagent_sessions_only_when_asked(reader: OpenCodeReader, db: Path) -> None:
    assert CHILD not in {t.session_id for t in reader.read(db, None, ReaderOptions()).turns}
    index = read_fresh(reader, db, ReaderOptions(include_subagents=True))
    child = [t for (sid, _), t in index.turns.items() if sid == CHILD]
    assert [t.text for t in child] == ["Sub-agent: list the lexer's token classes."]
    assert all(t.subagent for t in child)
    assert index.sessions[CHILD].parent_session_id == SID


def test_a_running_compaction_is_not_indexed(reader: OpenCodeReader, db: Path) -> None:
    conn = host_connection(db)
    data: dict[str, object] = {
        "reason": "auto",
        "summary": "half-written summ",
        "recent": "",
        "status": "running",
        "time": {"created": T0 + 20},
    }
    add_row(conn, SID, 9, "compaction", data)
    conn.close()
    assert "half-written summ" not in read_fresh(reader, db).texts()


def test_a_session_copied_into_session_message_is_read_from_it_alone(
    reader: OpenCodeReader, tmp_path: Path
) -> None:
    """An upgraded database keeps its 1.x rows; 2.x's backfill copies the session's
    messages into ``session_message``. The session is read once, from 2.x's rows."""
    db = build(tmp_path / "opencode.db", v1=True)
    conn = host_connection(db)
    add_session(conn, "ses_old", title="Old one", at=T0 - 9000)
    conn.execute(
        "INSERT INTO message VALUES ('msg_old', 'ses_old', ?, ?, ?)",
        (T0 - 9000, T0 - 9000, json.dumps({"role": "user", "time": {"created": T0 - 9000}})),
    )
    conn.execute(
        "INSERT INTO part VALUES ('prt_old', 'msg_old', 'ses_old', ?, ?, ?)",
        (T0 - 9000, T0 - 9000, json.dumps({"type": "text", "text": "an old 1.x prompt"})),
    )
    conn.execute(
        "INSERT INTO session (id, project_id, slug, directory, title, version, time_created,"
        " time_updated) VALUES ('ses_v1only', 'prj', 's', '/home/user/v1', 'v1', '1.2', 1, 1)"
    )
    conn.execute(
        "INSERT INTO message VALUES ('msg_v1', 'ses_v1only', 1, 1, ?)",
        (json.dumps({"role": "user", "time": {"created": 1000}}),),
    )
    conn.execute(
        "INSERT INTO part VALUES ('prt_v1', 'msg_v1', 'ses_v1only', 1, 1, ?)",
        (json.dumps({"type": "text", "text": "a prompt only 1.x holds"}),),
    )
    conn.close()
    before = read_fresh(reader, db)
    assert before.turns[("ses_old", "msg_old#prt_old")].text == "an old 1.x prompt"

    conn = host_connection(db)
    add_row(conn, "ses_old", 1, "user", user("an old 1.x prompt", T0 - 9000), "evt_bf_m_1")
    conn.close()
    after = read_fresh(reader, db)
    old = {key: t.text for (sid, key), t in after.turns.items() if sid == "ses_old"}
    assert old == {"evt_bf_m_1": "an old 1.x prompt"}
    assert after.turns[("ses_v1only", "msg_v1#prt_v1")].text == "a prompt only 1.x holds"


def test_a_session_v2_row_is_preferred_to_a_session_row(
    reader: OpenCodeReader, tmp_path: Path
) -> None:
    db = build(tmp_path / "opencode.db", session_table="session_v2")
    conn = host_connection(db)
    conn.execute(_SESSION_DDL.format(name="session"))
    add_session(conn, SID, title="stale 1.x title", directory="/old/place")
    conn.close()
    index = read_fresh(reader, db)
    assert index.sessions[SID].title == "Port the tokenizer"
    assert index.sessions[SID].project == "/home/user/tok"
    assert len([k for (sid, k) in index.turns if sid == SID]) == 3


def test_2x_new_rows_and_a_reply_finished_in_place_match_a_fresh_read(
    reader: OpenCodeReader, db: Path
) -> None:
    """A new row is found by its rowid; an assistant row rewritten in place while
    it streams is found when the run ends and marks its session (``time_idle``)."""
    index = read_fresh(reader, db)
    conn = host_connection(db)
    add_row(conn, SID, 10, "user", user("And the error messages?", T0 + 30))
    rid = add_row(conn, SID, 11, "assistant", assistant(said("d1", "Keep"), at=T0 + 31, done=False))
    index.read(reader, db)
    assert index.turns[(SID, f"{rid}#d1")].text == "Keep"

    done = assistant(said("d1", "Keep each message next to the token it names."), at=T0 + 31)
    conn.execute(
        "UPDATE session_message SET data = ?, time_updated = ? WHERE id = ?",
        (json.dumps(done), T0 + 40, rid),
    )
    conn.execute("UPDATE session SET time_idle = ? WHERE id = ?", (T0 + 41, SID))
    conn.close()
    result = index.read(reader, db)
    assert SID in result.replaced_sessions
    assert index.turns[(SID, f"{rid}#d1")].text == "Keep each message next to the token it names."
    assert index.comparable() == read_fresh(reader, db).comparable()


def test_an_unchanged_2x_database_rereads_only_its_newest_sessions(
    reader: OpenCodeReader, db: Path
) -> None:
    """Sessions updated in the same millisecond as the last read are read again (a
    write may have landed in it); an older one is not."""
    conn = host_connection(db)
    add_session(conn, "ses_quiet", title="Quiet", at=T0 - 5000)
    add_row(conn, "ses_quiet", 1, "user", user("an older prompt", T0 - 5000))
    conn.close()
    index = read_fresh(reader, db)
    again = index.read(reader, db)
    assert again.replaced_sessions == {SID, FORK, CHILD}
    assert again.removed_sessions == frozenset()
    assert "an older prompt" in index.texts("user")


def test_malformed_2x_row_is_reported_and_the_rest_indexed(
    reader: OpenCodeReader, db: Path
) -> None:
    conn = host_connection(db)
    conn.execute(f"UPDATE session_message SET data = '{{\"text\": \"hal' WHERE id = 'msg_{SID}_2'")
    conn.close()
    result = reader.read(db, None, ReaderOptions())
    assert any(f"msg_{SID}_2" in p.message for p in result.problems)
    assert "Split on whitespace first, then map each token to a class." in {
        t.text for t in result.turns
    }


def test_a_session_message_table_without_seq_is_not_2x(
    reader: OpenCodeReader, tmp_path: Path
) -> None:
    """1.x builds have a ``session_message`` table without ``seq``: a database with
    only that and no ``message``/``part`` is named unsupported, with the reason."""
    path = tmp_path / "opencode.db"
    conn = host_connection(path)
    conn.execute(_SESSION_DDL.format(name="session"))
    conn.execute("CREATE TABLE session_message (id TEXT, session_id TEXT, type TEXT, data TEXT)")
    conn.close()
    result = reader.read(path, None, ReaderOptions())
    assert result.unsupported is not None
    assert "session_message lacks" in result.unsupported and "seq" in result.unsupported
