"""Chats of VS Code before March 2025, kept only in a workspace's ``state.vscdb``.

The database is CONSTRUCTED by tests/readers/vscode_state.py from the flat
sample (``constructed-flat-a41d6e0b.json``): the sample under another id, and
its first request in the oldest shape. Changes are written with ``sqlite3`` as
VS Code writes them: the whole ``interactive.sessions`` array replaces the row.
"""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from backscroll.config import Config
from backscroll.indexing.indexer import Indexer, Summary, build_hosts
from backscroll.model import Cursor, ReaderOptions
from backscroll.readers import READERS
from backscroll.readers.base import HostEnv, Reader
from backscroll.readers.vscode_copilot_chat import VsCodeCopilotChatReader
from backscroll.store import open_writer
from tests.daemon.harness import dump_turns
from tests.readers.util import MemoryIndex, index_home, read_fresh
from tests.readers.vscode_state import (
    INDEX_KEY,
    SESSIONS_KEY,
    TOKEN,
    V1_SID,
    V3_SID,
    flat_sample,
    set_item,
    v1_chat,
    v3_chat,
    write_state_db,
)

HOST = "vscode-copilot-chat"
FIRST_PROMPT = "How do I read an env var with a default in Node?"
SECOND_PROMPT = "And in Python?"


def _db_reader() -> Reader:
    """The reader of the workspace databases (found as the daemon finds it)."""
    found = [r for r in READERS if r.host == HOST and r.kind == "database"]
    assert len(found) == 1, "no reader of VS Code's state.vscdb chats is registered"
    return found[0]


def _workspace(home: Path, ws: str = "5e1a7c3d90") -> Path:
    return home / ".config" / "Code" / "User" / "workspaceStorage" / ws


def _index(home: Path, db: Path) -> Summary:
    return index_home(home, db)


def _ours(db: Path) -> list[tuple[str, str, str, str, str]]:
    return sorted(row for row in dump_turns(db) if row[0] == HOST)


def _turns_by_file(db: Path) -> dict[str, int]:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        rows = conn.execute(
            "SELECT f.path, count(*) FROM turns t JOIN files f ON f.id = t.file GROUP BY f.path"
        ).fetchall()
    finally:
        conn.close()
    return {str(path): int(n) for path, n in rows}


def _settle(path: Path, step: int) -> None:
    """Move the mtime on: a coarse clock must not hide a write."""
    t = 1_800_000_000_000_000_000 + step * 1_000_000_000
    os.utime(path, ns=(t, t))


# --------------------------------------------------------------------------- reading


def test_chats_kept_only_in_the_workspace_database_are_indexed(isolated_home: Path) -> None:
    write_state_db(_workspace(isolated_home) / "state.vscdb", [v3_chat(), v1_chat()])
    index_db = isolated_home.parent / "index.db"
    summary = _index(isolated_home, index_db)
    assert summary.files_seen == 1 and summary.turns_added == 6
    rows = _ours(index_db)
    assert {(sid, role, text) for _h, sid, _k, role, text in rows if role == "user"} == {
        (V3_SID, "user", FIRST_PROMPT),
        (V3_SID, "user", SECOND_PROMPT),
        (V1_SID, "user", FIRST_PROMPT),
    }


def test_a_chat_in_the_database_is_read_as_its_flat_file_would_be(tmp_path: Path) -> None:
    """The same keys, texts, times, title and project as the file reader gives
    the same chat written as ``chatSessions/<id>.json``."""
    db = write_state_db(_workspace(tmp_path, "aaaa") / "state.vscdb", [v3_chat()])
    flat = _workspace(tmp_path, "bbbb") / "chatSessions" / f"{V3_SID}.json"
    flat.parent.mkdir(parents=True)
    (flat.parent.parent / "workspace.json").write_text((db.parent / "workspace.json").read_text())
    flat.write_text(json.dumps(v3_chat()))
    from_db = read_fresh(_db_reader(), db)
    from_file = read_fresh(VsCodeCopilotChatReader(), flat)
    assert from_db.comparable() == from_file.comparable()
    assert {k for _sid, k in from_db.turns} == {
        f"{r['requestId']}:{end}" for r in v3_chat()["requests"] for end in ("q", "a")
    }
    assert from_db.sessions == from_file.sessions
    session = from_db.sessions[V3_SID]
    assert session.title == "Env var defaults in Node and Python"
    assert session.project == "/home/dev/legacy-app"


def test_the_oldest_chats_plain_prompt_and_answer_strings_are_read(tmp_path: Path) -> None:
    db = write_state_db(_workspace(tmp_path) / "state.vscdb", [v1_chat()])
    index = read_fresh(_db_reader(), db)
    assert index.texts("user") == [FIRST_PROMPT]
    answer = "".join(part["value"] for part in flat_sample()["requests"][0]["response"])
    assert index.texts("assistant") == [answer.strip()]
    session = index.sessions[V1_SID]
    assert session.title == FIRST_PROMPT  # no title of its own: the first prompt's line
    assert session.started_at == flat_sample()["creationDate"] / 1000


def test_the_database_is_opened_read_only_and_only_its_chat_keys_are_read(
    tmp_path: Path,
) -> None:
    db = write_state_db(_workspace(tmp_path) / "state.vscdb", [v3_chat()])
    set_item(db, "workbench.panel.chat", json.dumps({TOKEN: True}))  # another key
    before = {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in db.parent.iterdir()}
    result = _db_reader().read(db, None, ReaderOptions())
    after = {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in db.parent.iterdir()}
    assert after == before  # no byte, mtime, journal or -wal of its own
    seen = json.dumps([[t.text for t in result.turns], [str(s) for s in result.sessions],
                       result.state])  # fmt: skip
    assert result.turns and TOKEN not in seen


# --------------------------------------------------------------------------- changes


def test_a_chat_vs_code_moved_to_a_file_is_indexed_once_by_the_file(isolated_home: Path) -> None:
    db = write_state_db(_workspace(isolated_home) / "state.vscdb", [v3_chat(), v1_chat()])
    index_db = isolated_home.parent / "index.db"
    _index(isolated_home, index_db)
    assert _turns_by_file(index_db) == {str(db): 6}
    before = _ours(index_db)
    # VS Code opens the workspace: every chat of the key becomes a file, the
    # index key is set, the old key stays.
    chats = db.parent / "chatSessions"
    chats.mkdir()
    for chat in (v3_chat(), v1_chat()):
        (chats / f"{chat['sessionId']}.json").write_text(json.dumps(chat, indent=2))
    set_item(db, INDEX_KEY, json.dumps({"version": 1, "entries": {}}))
    _settle(db, 1)
    for _ in range(2):  # and again: no turn changes hands back
        _index(isolated_home, index_db)
        assert _ours(index_db) == before
        owners = _turns_by_file(index_db)
        assert owners == {str(chats / f"{V3_SID}.json"): 4, str(chats / f"{V1_SID}.json"): 2}
    fresh = isolated_home.parent / "fresh.db"
    _index(isolated_home, fresh)
    assert _ours(fresh) == before and _turns_by_file(fresh) == owners
    # Each session is named after the file that holds it now, as a fresh index names it.
    assert _source_paths(index_db) == _source_paths(fresh) == set(owners)


def _source_paths(db: Path) -> set[str]:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        rows = conn.execute("SELECT source_path FROM sessions WHERE host = ?", (HOST,))
        return {str(r[0]) for r in rows.fetchall()}
    finally:
        conn.close()


def test_a_chat_with_a_file_is_left_to_it_before_the_workspace_is_marked_moved(
    tmp_path: Path,
) -> None:
    db = write_state_db(_workspace(tmp_path) / "state.vscdb", [v3_chat(), v1_chat()])
    index = MemoryIndex()
    index.read(_db_reader(), db)
    chats = db.parent / "chatSessions"
    chats.mkdir()
    (chats / f"{V1_SID}.json").write_text(json.dumps(v1_chat()))
    result = index.read(_db_reader(), db)  # the key did not change
    assert result.turns == () and result.replaced_sessions == {V1_SID}
    assert {sid for sid, _key in index.turns} == {V3_SID}


def test_an_unchanged_key_is_not_parsed_or_yielded_again(
    isolated_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = write_state_db(_workspace(isolated_home) / "state.vscdb", [v3_chat(), v1_chat()])
    index_db = isolated_home.parent / "index.db"
    assert _index(isolated_home, index_db).turns_added == 6
    reader = _db_reader()
    first = reader.read(db, None, ReaderOptions())
    # VS Code rewrites the database for another key.
    set_item(db, "workbench.explorer.treeViewState", json.dumps({"expanded": ["src"]}))
    _settle(db, 1)
    summary = _index(isolated_home, index_db)
    assert summary.files_changed == 1  # read (it changed) ...
    assert (summary.turns_added, summary.turns_deleted) == (0, 0)  # ... nothing rewritten

    def no_parse(raw: bytes | str) -> Any:
        raise AssertionError("the unchanged key was parsed")

    monkeypatch.setattr("backscroll.readers.vscode_chat_db.loads", no_parse)
    again = reader.read(db, Cursor(0, first.state), ReaderOptions())
    assert (again.turns, again.sessions, again.replaced_sessions) == ((), (), frozenset())


def test_a_changed_key_yields_only_the_chats_that_changed(tmp_path: Path) -> None:
    db = write_state_db(_workspace(tmp_path) / "state.vscdb", [v3_chat(), v1_chat()])
    reader = _db_reader()
    first = reader.read(db, None, ReaderOptions())
    renamed = {**v1_chat(), "customTitle": "Env var defaults, the short version"}
    set_item(db, SESSIONS_KEY, json.dumps([v3_chat(), renamed]))
    again = reader.read(db, Cursor(0, first.state), ReaderOptions())
    assert {t.session_id for t in again.turns} == {V1_SID}
    assert [s.title for s in again.sessions] == ["Env var defaults, the short version"]
    assert again.replaced_sessions == {V1_SID}


def test_after_the_key_changes_the_index_equals_a_fresh_one_and_keeps_a_dropped_chat(
    isolated_home: Path,
) -> None:
    """A chat added, one edited (its last request removed), one gone from the key
    (VS Code keeps the 25 newest): the index read on equals a fresh index of the
    new key, plus the turns of the chat that left it, kept as a deleted
    transcript's are."""
    db = write_state_db(_workspace(isolated_home) / "state.vscdb", [v3_chat(), v1_chat()])
    index_db = isolated_home.parent / "index.db"
    _index(isolated_home, index_db)
    dropped = [row for row in _ours(index_db) if row[1] == V1_SID]
    assert len(dropped) == 2
    edited = v3_chat()
    edited["requests"] = edited["requests"][:1]
    added_sid = "4d3c2b1a-0f9e-4d8c-b7a6-958473625140"
    added = {**v3_chat(added_sid), "customTitle": "Env defaults, asked again"}
    set_item(db, SESSIONS_KEY, json.dumps([added, edited]))
    _settle(db, 1)
    _index(isolated_home, index_db)
    fresh = isolated_home.parent / "fresh.db"
    _index(isolated_home, fresh)
    assert _ours(index_db) == sorted([*_ours(fresh), *dropped])
    texts = [row[4] for row in _ours(index_db) if row[1] == V3_SID]
    assert SECOND_PROMPT not in texts and FIRST_PROMPT in texts
    assert {row[1] for row in _ours(fresh)} == {V3_SID, added_sid}


def test_a_chat_gone_from_the_key_is_kept_on_a_read_from_the_start(
    isolated_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = write_state_db(_workspace(isolated_home) / "state.vscdb", [v3_chat(), v1_chat()])
    index_db = isolated_home.parent / "index.db"
    _index(isolated_home, index_db)
    set_item(db, SESSIONS_KEY, json.dumps([v3_chat()]))
    _settle(db, 1)
    # A new reader version reads the database from the start.
    reader = _db_reader()
    monkeypatch.setattr(type(reader), "version", reader.version + 1)
    _index(isolated_home, index_db)
    assert {row[1] for row in _ours(index_db)} == {V3_SID, V1_SID}


# --------------------------------------------------------------------------- finding it


def test_the_watcher_and_the_scan_take_the_workspace_database_as_its_file(
    isolated_home: Path,
) -> None:
    db = write_state_db(_workspace(isolated_home) / "state.vscdb", [v3_chat()])
    writer = open_writer(isolated_home.parent / "index.db")
    try:
        indexer = Indexer(writer, build_hosts(Config(), HostEnv(home=isolated_home)), Config())
        item = indexer.owner(db)
        assert item is not None and item.spec.reader is _db_reader() and item.path == db
        wal = indexer.owner(db.with_name("state.vscdb-wal"))
        assert wal is not None and wal.path == db and not wal.forced
        assert indexer.owner(db.with_name("state.vscdb.backup")) is None
        assert [i.path for i in indexer.scan() if i.spec.reader is _db_reader()] == [db]
    finally:
        writer.close()
    # (its directory is writable under the systemd unit: a WAL database needs its -shm)
    env = HostEnv(home=isolated_home, environ={}, platform="linux")
    assert any(db.is_relative_to(d) for d in _db_reader().database_dirs(env))


def test_explain_says_whose_the_database_is_and_why_it_may_hold_nothing(
    isolated_home: Path,
) -> None:
    from backscroll.explain import explain

    cfg = Config()
    kept = write_state_db(_workspace(isolated_home, "kept") / "state.vscdb", [v3_chat()])
    moved = write_state_db(_workspace(isolated_home, "moved") / "state.vscdb", [v3_chat()])
    set_item(moved, INDEX_KEY, json.dumps({"version": 1, "entries": {}}))
    newer = write_state_db(_workspace(isolated_home, "newer") / "state.vscdb", None)
    _index(isolated_home, cfg.db_path())
    report = explain(cfg, str(kept))
    assert report["owner"] == HOST and report["reader"]["kind"] == "database"
    assert report["row"]["turns"] == 4 and report["notes"] == ["up to date"]
    assert any("moved by VS Code" in n for n in explain(cfg, str(moved))["notes"])
    assert any("no chat is kept" in n for n in explain(cfg, str(newer))["notes"])


def test_a_workspace_moved_to_files_is_not_read_again_at_each_write(tmp_path: Path) -> None:
    """Today's workspaces all have the chat index key (VS Code moved them to
    files): their old key, up to 25 chats, is not fetched at each of the many
    writes VS Code makes to the database."""
    db = write_state_db(_workspace(tmp_path) / "state.vscdb", [v3_chat()])
    set_item(db, INDEX_KEY, json.dumps({"version": 1, "entries": {}}))
    reader = _db_reader()
    first = reader.read(db, None, ReaderOptions())
    assert (first.turns, first.sessions) == ((), ())
    set_item(db, SESSIONS_KEY, "not json: this key is not read again")
    again = reader.read(db, Cursor(0, first.state), ReaderOptions())
    assert (again.turns, again.problems) == ((), ())
    assert again.state == first.state
