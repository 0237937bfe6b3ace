"""VS Code chat sessions reader against the samples in ``tests/fixtures/vscode-copilot-chat``.

``constructed-log-3f6c2a8e.jsonl`` and ``constructed-flat-a41d6e0b.json`` are
CONSTRUCTED from the VS Code source (see SOURCES.md there);
``real-header-fragment-5be07351.jsonl`` is three real lines. The log exercises
every entry kind: a push that cuts (``i``) to replace a tool part and to grow
streamed markdown, a cancelled request replaced by a resend, deletes of
``inputState``.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from backscroll.config import Config
from backscroll.model import ReaderOptions
from backscroll.readers import vscode_chat_log as chatlog
from backscroll.readers.base import HostEnv
from backscroll.readers.vscode_copilot_chat import VsCodeCopilotChatReader, state_db
from tests.daemon.harness import dump_turns
from tests.readers.util import (
    MemoryIndex,
    append_lines,
    fixture,
    grow_file_incrementally,
    index_home,
    line_cuts,
    read_fresh,
    role_counts,
)

reader = VsCodeCopilotChatReader()
HOST = "vscode-copilot-chat"
LOG = "constructed-log-3f6c2a8e.jsonl"
FLAT = "constructed-flat-a41d6e0b.json"
HEADER = "real-header-fragment-5be07351.jsonl"
LOG_SID = "3f6c2a8e-5b1d-4c7e-9a20-6d8e1f4b7c95"
FINAL_ANSWER = (
    "Let me look at how the loader builds its search path.\n\n"
    "The loader never reads `XDG_CONFIG_HOME`. It joins the home directory with `.config` "
    "directly, so the variable has no effect. Read the variable first and fall back to "
    "`~/.config` only when it is unset."
)


def full_replay(lines: list[bytes]) -> Any:
    """Reference replay of the whole log, no pruning (objectMutationLog.ts ``read``)."""
    state: Any = None
    for raw in lines:
        if not raw.strip():
            continue
        entry = json.loads(raw)
        if entry["kind"] == 0:
            state = entry["v"]
            continue
        path = entry["k"]
        if not path:
            continue
        current = state
        for key in path[:-1]:
            current = current[key]
        last = path[-1]
        if entry["kind"] == 2:
            array = current.get(last) if isinstance(current, dict) else current[last]
            array = array or []
            if "i" in entry:
                del array[entry["i"] :]
            array.extend(entry.get("v") or [])
            current[last] = array
        elif entry["kind"] == 1 and "v" in entry:
            current[last] = entry["v"]
        elif isinstance(current, dict):
            current.pop(last, None)
        else:
            current[last] = None
    return state


def _lines(name: str) -> list[bytes]:
    return fixture(HOST, name).read_bytes().splitlines(keepends=True)


def _workspace(home: Path, ws: str = "9f1e0c2b7a") -> Path:
    chats = home / ".config" / "Code" / "User" / "workspaceStorage" / ws / "chatSessions"
    chats.mkdir(parents=True, exist_ok=True)
    return chats


# --------------------------------------------------------------------------- prose


def test_log_replay_indexes_the_final_prompts_and_answers(tmp_path: Path) -> None:
    index = read_fresh(reader, fixture(HOST, LOG))
    assert role_counts(index) == {"user": 2, "assistant": 2}
    assert index.texts("user") == [
        "Why does the config loader ignore XDG_CONFIG_HOME?",
        "Patch it, and keep the ~/.config fallback",
    ]
    assert index.texts("assistant") == [
        FINAL_ANSWER,
        "Done: the loader now prefers `XDG_CONFIG_HOME` and falls back to `~/.config`.",
    ]


def test_thinking_tool_calls_and_the_cancelled_request_stay_out() -> None:
    text = "\n".join(read_fresh(reader, fixture(HOST, LOG)).texts())
    assert "path resolution" not in text  # thinking part
    assert "grep -n" not in text and "(no matches)" not in text  # tool call and its output
    assert "promptTokens" not in text  # result.metadata
    assert "Patch it\n" not in text + "\n"  # cancelled request, replaced by the resend


def test_session_title_start_and_no_resume_command() -> None:
    session = read_fresh(reader, fixture(HOST, LOG)).sessions[LOG_SID]
    assert session.title == "Config loader ignores XDG_CONFIG_HOME"
    assert session.started_at == 1785000000.0
    assert session.resume_command is None


def test_flat_json_document_is_read_whole() -> None:
    index = read_fresh(reader, fixture(HOST, FLAT))
    assert index.texts("user") == [
        "How do I read an env var with a default in Node?",
        "And in Python?",
    ]
    answers = index.texts("assistant")
    assert answers[0].endswith("not when it is an empty string.")  # two parts joined
    assert answers[1] == "`os.environ.get('XDG_CONFIG_HOME', os.path.expanduser('~/.config'))`"
    session = index.sessions["a41d6e0b-2c8f-4e57-9b13-f0e6c2d8a7b4"]
    assert session.title == "Env var defaults in Node and Python"


def test_real_header_only_log_gives_a_titled_session_with_no_turns() -> None:
    index = read_fresh(reader, fixture(HOST, HEADER))
    assert index.turns == {}
    session = index.sessions["5be07351-9322-44d2-bc14-8445d65b1b3c"]
    assert session.title == "制定Copilot memory文件加载计划"


def test_system_initiated_hidden_and_confirmation_prompts_are_not_prompts(tmp_path: Path) -> None:
    doc = json.loads(fixture(HOST, FLAT).read_text())
    first, second = doc["requests"]
    first["isSystemInitiated"] = True
    second["confirmation"] = "Continue"
    path = tmp_path / "chatSessions" / FLAT
    path.parent.mkdir()
    path.write_text(json.dumps(doc))
    index = read_fresh(reader, path)
    assert index.texts("user") == []
    assert len(index.texts("assistant")) == 2  # the answers were still shown


def test_an_untitled_chat_takes_its_first_prompts_first_line_up_to_200_characters(
    tmp_path: Path,
) -> None:
    # (VS Code's getDefaultTitle: the first line, 200 characters.)
    doc = json.loads(fixture(HOST, FLAT).read_text())
    doc.pop("customTitle", None)
    doc.pop("computedTitle", None)
    prompt = "Explain why " + "the cache misses " * 10 + "on startup\nand then fix it"
    doc["requests"][0]["message"] = {"text": prompt, "parts": []}
    path = tmp_path / "chatSessions" / FLAT
    path.parent.mkdir()
    path.write_text(json.dumps(doc))
    title = read_fresh(reader, path).sessions[doc["sessionId"]].title
    assert title == prompt.splitlines()[0]  # 192 characters: whole, not cut at 80


def test_adjacent_answer_parts_join_as_one_text_around_an_inline_file_reference(
    tmp_path: Path,
) -> None:
    # The format notes: concatenate adjacent parts in order; an inlineReference
    # may read as its file name. A tool call between two runs ends the first.
    doc = json.loads(fixture(HOST, FLAT).read_text())
    first = doc["requests"][0]
    first["response"] = [
        {"value": "The fix is in "},
        {"kind": "inlineReference", "inlineReference": {"$mid": 1, "path": "/src/config.ts"}},
        {"value": ", which rea"},
        {"value": "ds XDG_CONFIG_HOME first."},
        {"kind": "toolInvocationSerialized", "toolId": "copilot_readFile", "isComplete": True},
        {"value": "Nothing else reads it."},
    ]
    path = tmp_path / "chatSessions" / FLAT
    path.parent.mkdir()
    path.write_text(json.dumps(doc))
    index = read_fresh(reader, path)
    assert index.texts("assistant")[0] == (
        "The fix is in config.ts, which reads XDG_CONFIG_HOME first.\n\nNothing else reads it."
    )


# --------------------------------------------------------------------------- replay


def test_skeleton_equals_the_full_replay_after_every_line() -> None:
    lines = _lines(LOG)
    doc: dict[str, Any] | None = None
    for n, line in enumerate(lines, 1):
        doc = chatlog.apply(doc, json.loads(line))
        assert doc == chatlog.prune("root", full_replay(lines[:n])), f"after line {n}"


def test_a_push_with_an_index_cuts_before_it_appends() -> None:
    doc = chatlog.apply(None, {"kind": 0, "v": {"requests": [{"requestId": "a", "response": []}]}})
    parts = [{"value": "one"}, {"value": "two"}, {"value": "three"}]
    doc = chatlog.apply(doc, {"kind": 2, "k": ["requests", 0, "response"], "v": parts})
    doc = chatlog.apply(doc, {"kind": 2, "k": ["requests", 0, "response"], "v": [{"value": "2"}],
                              "i": 1})  # fmt: skip
    assert doc["requests"][0]["response"] == [{"value": "one"}, {"value": "2"}]
    doc = chatlog.apply(doc, {"kind": 2, "k": ["requests"], "i": 0})
    assert doc["requests"] == []
    doc = chatlog.apply(doc, {"kind": 3, "k": ["requests"]})
    assert "requests" not in doc


def test_reading_at_every_cut_equals_a_fresh_read(tmp_path: Path) -> None:
    source = fixture(HOST, LOG)
    fresh = read_fresh(reader, source)
    grown = grow_file_incrementally(
        reader, source, _workspace(tmp_path) / LOG, line_cuts(source.read_bytes())
    )
    assert grown.comparable() == fresh.comparable()


def test_after_every_line_the_incremental_index_equals_a_fresh_read(tmp_path: Path) -> None:
    """Appended entries re-derive only the requests they touch; the index must
    still equal a fresh read of the same prefix after every line."""
    lines = _lines(LOG)
    live_path = _workspace(tmp_path) / LOG
    fresh_path = tmp_path / "fresh" / "chatSessions" / LOG
    fresh_path.parent.mkdir(parents=True)
    live = MemoryIndex()
    live_path.write_bytes(b"")
    for n, line in enumerate(lines, 1):
        with open(live_path, "ab") as fh:
            fh.write(line)
        live.read(reader, live_path)
        fresh_path.write_bytes(b"".join(lines[:n]))
        assert live.comparable() == read_fresh(reader, fresh_path).comparable(), f"line {n}"


def test_an_answer_cut_away_or_a_request_replaced_leaves_the_index(tmp_path: Path) -> None:
    path = _workspace(tmp_path) / LOG
    shutil.copyfile(fixture(HOST, LOG), path)
    live = MemoryIndex()
    live.read(reader, path)
    # clearToPreviousToolInvocation: the second answer's markdown is cut away.
    append_lines(path, {"kind": 2, "k": ["requests", 1, "response"], "i": 0})
    live.read(reader, path)
    assert live.texts("assistant") == [FINAL_ANSWER]
    # The first request is replaced whole (a new request id at its position).
    request = full_replay(_lines(LOG))["requests"][0]
    request = {**request, "requestId": "request_new", "message": {"text": "Replaced prompt"}}
    append_lines(path, {"kind": 1, "k": ["requests", 0], "v": request})
    live.read(reader, path)
    assert live.comparable() == read_fresh(reader, path).comparable()
    assert "Why does the config loader ignore XDG_CONFIG_HOME?" not in live.texts("user")
    assert "Replaced prompt" in live.texts("user")


def test_an_unknown_entry_is_reported_and_the_rest_applied(tmp_path: Path) -> None:
    path = _workspace(tmp_path) / LOG
    lines = _lines(LOG)
    path.write_bytes(lines[0] + b'{"kind":9,"k":[]}\n{"kind":1,"k":["requests",7,"x"],"v":1}\n'
                     + b"".join(lines[1:]))  # fmt: skip
    result = reader.read(path, None, ReaderOptions())
    assert [p.line for p in result.problems] == [2, 3]
    assert "unknown entry kind 9" in result.problems[0].message
    assert len(result.turns) == 4


# --------------------------------------------------------------------------- layout


def test_roots_cover_products_platforms_and_overrides(tmp_path: Path) -> None:
    home = tmp_path
    linux = reader.roots(HostEnv(home=home, environ={}, platform="linux"))
    assert home / ".config/Code/User/workspaceStorage" in linux
    assert home / ".config/Positron/User/globalStorage/emptyWindowChatSessions" in linux
    assert home / ".config/VSCodium/User/globalStorage/transferredChatSessions" in linux
    mac = reader.roots(HostEnv(home=home, environ={}, platform="darwin"))
    assert home / "Library/Application Support/Code - Insiders/User/workspaceStorage" in mac
    win = reader.roots(HostEnv(home=home, environ={"APPDATA": "C:/AppData"}, platform="win32"))
    assert Path("C:/AppData/Code/User/workspaceStorage") in win
    moved = reader.roots(
        HostEnv(home=home, environ={"VSCODE_PORTABLE": "/p", "VSCODE_APPDATA": "/a"})
    )
    assert Path("/p/user-data/User/workspaceStorage") in moved
    assert Path("/a/Code/User/workspaceStorage") in moved
    assert home / ".vscode-server/data/User/workspaceStorage" in linux


def test_the_workspace_databases_it_reads_titles_from_are_its_database_dirs(
    tmp_path: Path,
) -> None:
    """The systemd unit makes these writable: a WAL state.vscdb needs its -shm."""
    env = HostEnv(home=tmp_path, environ={}, platform="linux")
    dirs = reader.database_dirs(env)
    for root in reader.roots(env):
        if root.name == "workspaceStorage":
            session = root / "1a2b3c" / "chatSessions" / "abc.jsonl"
            state = state_db(session)  # where titles are read
            assert any(state.is_relative_to(d) for d in dirs), state
    # Only the workspace databases: the global chat folders hold no database.
    assert all(d.name == "workspaceStorage" for d in dirs)


def test_flat_file_beside_a_log_of_the_same_id_is_left_alone(tmp_path: Path) -> None:
    chats = _workspace(tmp_path)
    (chats / "abc.json").write_text("{}")
    assert reader.source_for(chats / "abc.json") == chats / "abc.json"
    (chats / "abc.jsonl").write_text("")
    assert reader.source_for(chats / "abc.json") is None
    assert reader.source_for(chats.parent / "state.vscdb") is None
    assert reader.source_for(chats.parent / "workspace.json") is None


def test_project_from_workspace_json_and_title_from_the_session_index(tmp_path: Path) -> None:
    chats = _workspace(tmp_path)
    (chats.parent / "workspace.json").write_text(json.dumps({"folder": "file:///home/dev/api"}))
    doc = json.loads(fixture(HOST, FLAT).read_text())
    del doc["customTitle"]
    (chats / FLAT).write_text(json.dumps(doc))
    conn = sqlite3.connect(chats.parent / "state.vscdb")
    conn.execute("CREATE TABLE ItemTable (key TEXT UNIQUE ON CONFLICT REPLACE, value BLOB)")
    entries = {doc["sessionId"]: {"sessionId": doc["sessionId"], "title": "From the index"}}
    conn.execute(
        "INSERT INTO ItemTable VALUES (?, ?)",
        ("chat.ChatSessionStore.index", json.dumps({"version": 1, "entries": entries})),
    )
    conn.commit()
    conn.close()
    session = read_fresh(reader, chats / FLAT).sessions[doc["sessionId"]]
    assert session.project == "/home/dev/api"
    assert session.title == "From the index"
    os.remove(chats.parent / "state.vscdb")
    assert read_fresh(reader, chats / FLAT).sessions[doc["sessionId"]].title == (
        "How do I read an env var with a default in Node?"
    )


# --------------------------------------------------------------------------- rewrites


def _index(home: Path, db: Path) -> None:
    index_home(home, db)


def _initial(state: Any) -> bytes:
    return json.dumps({"kind": 0, "v": state}, ensure_ascii=False).encode() + b"\n"


def _settle(path: Path, step: int) -> None:
    """Move the mtime on: a coarse clock must not hide a rewrite."""
    t = 1_800_000_000_000_000_000 + step * 1_000_000_000
    os.utime(path, ns=(t, t))


def _our_turns(db: Path) -> list[tuple[str, str, str, str, str]]:
    return [row for row in dump_turns(db) if row[0] == HOST]


def test_whole_file_rewrite_that_shrinks_the_log_is_replayed(isolated_home: Path) -> None:
    lines = _lines(LOG)
    path = _workspace(isolated_home) / f"{LOG_SID}.jsonl"
    db = isolated_home.parent / "index.db"
    path.write_bytes(b"".join(lines))
    _index(isolated_home, db)
    assert len(_our_turns(db)) == 4
    # VS Code compacts: one fresh kind-0 line of the state, after the user
    # undid the last request (it is gone from the state).
    state = full_replay(lines)
    state["requests"] = state["requests"][:1]
    path.write_bytes(_initial(state))
    _settle(path, 1)
    _index(isolated_home, db)
    texts = sorted(row[4] for row in _our_turns(db))
    assert texts == sorted(["Why does the config loader ignore XDG_CONFIG_HOME?", FINAL_ANSWER])


def test_rewrite_behind_an_unchanged_head_is_replayed_from_the_start(
    isolated_home: Path,
) -> None:
    """A log that began from a loaded ``.json`` starts with a kind-0 line already
    holding a request; its compacted rewrite keeps the same first kilobyte and
    is longer than the old log, so only the bytes before the saved position
    tell the indexer that the file was rewritten."""
    lines = _lines(LOG)
    path = _workspace(isolated_home) / f"{LOG_SID}.jsonl"
    db = isolated_home.parent / "index.db"
    opening = _initial(full_replay(lines[:14]))
    path.write_bytes(opening + b"".join(lines[14:16]))  # the second request, not answered
    _index(isolated_home, db)
    assert "Patch it" in [row[4] for row in _our_turns(db)]
    final = full_replay(lines)
    final["requests"][1]["message"]["text"] += " " + "(and say why) " * 200
    rewritten = _initial(final)
    assert rewritten[:1024] == opening[:1024] and len(rewritten) > path.stat().st_size
    path.write_bytes(rewritten)
    _settle(path, 2)
    _index(isolated_home, db)
    fresh = isolated_home.parent / "fresh.db"
    _index(isolated_home, fresh)
    assert _our_turns(db) == _our_turns(fresh)
    assert "Patch it" not in [row[4] for row in _our_turns(db)]
    assert len(_our_turns(db)) == 4


def test_copies_in_two_workspaces_index_one_session(isolated_home: Path) -> None:
    db = isolated_home.parent / "index.db"
    for ws in ("aaaa", "bbbb"):
        shutil.copyfile(fixture(HOST, LOG), _workspace(isolated_home, ws) / f"{LOG_SID}.jsonl")
    _index(isolated_home, db)
    assert len(_our_turns(db)) == 4


#: A resend in the copy VS Code went on with: request 1 is cut away and replaced,
#: and the chat is renamed.
_RESEND = [
    {"kind": 2, "k": ["requests"], "i": 1, "v": [{
        "requestId": "request_c0ffee00-1111-4222-8333-444455556666",
        "timestamp": 1785000200000,
        "message": {"text": "Actually, drop the ~/.config fallback entirely", "parts": []},
        "response": [{"value": "Removed the fallback; only XDG_CONFIG_HOME is read now."}],
        "modelState": {"value": 1, "completedAt": 1785000201000},
    }]},
    {"kind": 1, "k": ["customTitle"], "v": "XDG-only config loader"},
]  # fmt: skip
_REPLACED = "Patch it, and keep the ~/.config fallback"


def _two_copies(home: Path, old_ws: str, new_ws: str) -> tuple[Path, Path]:
    """The sample chat in two workspaces, as after "Save Workspace As": the old
    copy left behind, the new one (newer mtime) gone on with a resend."""
    old = _workspace(home, old_ws) / f"{LOG_SID}.jsonl"
    new = _workspace(home, new_ws) / f"{LOG_SID}.jsonl"
    shutil.copyfile(fixture(HOST, LOG), old)
    shutil.copyfile(fixture(HOST, LOG), new)
    append_lines(new, *_RESEND)
    _settle(old, 1)
    _settle(new, 2)
    return old, new


def _titles(db: Path, column: str = "title") -> list[str]:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        rows = conn.execute(f"SELECT {column} FROM sessions WHERE host = ?", (HOST,)).fetchall()
    finally:
        conn.close()
    return [str(r[0]) for r in rows]


@pytest.mark.parametrize(("old_ws", "new_ws"), [("aaa111", "bbb222"), ("bbb222", "000new")])
def test_only_the_newest_copy_of_a_chat_is_indexed(
    isolated_home: Path, old_ws: str, new_ws: str
) -> None:
    """Whichever copy is read first, the text the newer copy replaced is not
    searchable and the title is the newer copy's (format notes: dedupe by
    session id, prefer the newest mtime)."""
    _two_copies(isolated_home, old_ws, new_ws)
    db = isolated_home.parent / "index.db"
    _index(isolated_home, db)
    texts = [row[4] for row in _our_turns(db)]
    assert _REPLACED not in texts
    assert "Actually, drop the ~/.config fallback entirely" in texts
    assert len(texts) == 4
    assert _titles(db) == ["XDG-only config loader"]


def test_a_newer_copy_found_later_drops_what_only_the_old_copy_said(
    isolated_home: Path,
) -> None:
    """The old copy indexed alone; then the new copy appears, already gone on:
    the index ends as a fresh index of both files does."""
    old = _workspace(isolated_home, "aaa111") / f"{LOG_SID}.jsonl"
    shutil.copyfile(fixture(HOST, LOG), old)
    _settle(old, 1)
    db = isolated_home.parent / "index.db"
    _index(isolated_home, db)
    assert _REPLACED in [row[4] for row in _our_turns(db)]
    new = _workspace(isolated_home, "bbb222") / f"{LOG_SID}.jsonl"
    shutil.copyfile(fixture(HOST, LOG), new)
    append_lines(new, *_RESEND)
    _settle(new, 2)
    _index(isolated_home, db)
    fresh = isolated_home.parent / "fresh.db"
    _index(isolated_home, fresh)
    assert _our_turns(db) == _our_turns(fresh)
    assert _REPLACED not in [row[4] for row in _our_turns(db)]
    assert _titles(db) == _titles(fresh) == ["XDG-only config loader"]
    assert _titles(db, "source_path") == _titles(fresh, "source_path") == [str(new)]


def test_explain_says_an_older_copy_is_not_indexed(isolated_home: Path) -> None:
    from backscroll.explain import explain

    old, new = _two_copies(isolated_home, "aaa111", "bbb222")
    cfg = Config()  # (the index in $BACKSCROLL_HOME, the transcripts under $HOME)
    _index(isolated_home, cfg.db_path())
    notes = explain(cfg, str(old))["notes"]
    assert any("older copy" in n and str(new) in n for n in notes), notes
    assert explain(cfg, str(new))["notes"] == ["up to date"]


def test_an_old_flat_file_without_request_times_is_dated_by_its_last_message(
    tmp_path: Path,
) -> None:
    """Old flat files carry ``lastMessageDate``; their requests may have no time."""
    doc = json.loads(fixture(HOST, FLAT).read_text())
    for request in doc["requests"]:
        request.pop("timestamp", None)
        request.pop("modelState", None)
    path = tmp_path / FLAT
    path.write_text(json.dumps(doc))
    session = next(iter(read_fresh(reader, path).sessions.values()))
    assert session.updated_at == doc["lastMessageDate"] / 1000
    assert session.started_at == doc["creationDate"] / 1000


def test_a_remote_windows_working_directory_is_its_path_on_the_remote(tmp_path: Path) -> None:
    doc = json.loads(fixture(HOST, FLAT).read_text())
    doc["workingDirectory"] = "vscode-remote://ssh-remote%2Bbox/home/dev/proj"
    path = tmp_path / FLAT
    path.write_text(json.dumps(doc))
    session = next(iter(read_fresh(reader, path).sessions.values()))
    assert session.project == "/home/dev/proj"


def test_a_chat_in_flight_between_windows_never_takes_over_the_windows_copy(
    isolated_home: Path,
) -> None:
    """``transferredChatSessions`` holds a passing copy, newer than the window's
    file, that VS Code deletes once another window has taken the chat. With
    ``on_delete: forget`` the chat lost every turn when the passing copy went,
    though the window's file was still there."""
    import dataclasses

    from backscroll.indexing.indexer import Indexer, build_hosts
    from backscroll.readers.base import HostEnv
    from backscroll.store import open_writer

    cfg = Config()
    cfg = dataclasses.replace(cfg, index=dataclasses.replace(cfg.index, on_delete="forget"))

    def index(db: Path) -> None:
        writer = open_writer(db)
        try:
            Indexer(writer, build_hosts(cfg, HostEnv(home=isolated_home)), cfg).reconcile()
        finally:
            writer.close()

    own = _workspace(isolated_home, "aaa111") / f"{LOG_SID}.jsonl"
    shutil.copyfile(fixture(HOST, LOG), own)
    _settle(own, 1)
    db = isolated_home.parent / "index.db"
    index(db)
    before = _our_turns(db)
    passing = isolated_home / ".config/Code/User/globalStorage/transferredChatSessions"
    passing.mkdir(parents=True)
    flat = passing / f"{LOG_SID}.json"
    flat.write_text(json.dumps(full_replay(_lines(LOG))))
    _settle(flat, 2)
    index(db)
    assert _our_turns(db) == before
    flat.unlink()
    index(db)
    assert _our_turns(db) == before and len(before) == 4
    assert _titles(db, "source_path") == [str(own)]
