"""GitHub Copilot Chat in VS Code before about March 2025: chats kept in ``state.vscdb``.

Until VS Code stored each chat in a file of its own
(:mod:`~backscroll.readers.vscode_copilot_chat`), it kept a workspace's chats in
its ``workspaceStorage/<id>/state.vscdb``: table ``ItemTable``, key
``interactive.sessions``, a JSON array of at most the 25 newest chats, each a
serialized session in the flat format (versions 1-3; the oldest keep a prompt as
a plain string and an answer as one markdown string). Each chat is indexed as
the flat ``.json`` file of the same session would be (the same keys, titles,
times, and project from ``workspace.json``), by the same functions.

VS Code moves that array into ``chatSessions/<sessionId>.json`` once, the first
time a window opens the workspace with no ``chat.ChatSessionStore.index`` key,
and sets the index; it never deletes the old key. So a chat is left to the
files, and what this database gave of it is dropped from it, when
``chatSessions/`` holds a file of its id, or when the index key is set (the
workspace was moved to files: a chat of the old key with no file was deleted
since, and stays deleted). Only workspaces not opened since keep chats here.

VS Code rewrites ``state.vscdb`` for many unrelated keys. A workspace already
moved to files whose database gave nothing is not read further (its chat index
key is looked up, nothing else). Otherwise a read fetches the one key (never the
others: the table also holds auth tokens) and compares a hash of its bytes with
the one it saved; unchanged, nothing is parsed and nothing is
written but the check of which chats gained a file. When it changed, only the
chats whose prose, title or times changed are yielded again, each replacing
what it gave before. A chat gone from the key is kept, as the turns of a
deleted transcript are (``index.on_delete: keep``): VS Code drops the oldest
chat once the workspace has 25, so a chat leaving the key is mostly the host
pruning it, not the user deleting it.

Only workspace databases are read. Chats of windows with no folder lived under
the same key in ``globalStorage/state.vscdb``, which is not read.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

from backscroll.digests import blake2b
from backscroll.model import (
    SKIPPED,
    Cursor,
    Kind,
    Problem,
    ReaderOptions,
    ReadResult,
    Session,
    Turn,
)
from backscroll.readers.base import BaseReader, HostEnv, loads
from backscroll.readers.hostdb import open_readonly, snapshot
from backscroll.readers.hostdb import vscode_chat as vscode_sql
from backscroll.readers.vscode_copilot_chat import describe, flat_turns, user_dirs

DB_NAME = "state.vscdb"
STATE_VERSION = 1
KEY = vscode_sql.SESSIONS_KEY


class VsCodeChatDbReader(BaseReader):
    host: ClassVar[str] = "vscode-copilot-chat"
    name: ClassVar[str] = "GitHub Copilot Chat (VS Code before 2025: state.vscdb)"
    version: ClassVar[int] = 1
    kind: ClassVar[Kind] = "database"

    def roots(self, env: HostEnv) -> list[Path]:
        # The same roots as the chat files' reader (watched recursively there too).
        return [user / "workspaceStorage" for user in user_dirs(env)]

    def source_for(self, path: Path) -> Path | None:
        if path.name not in (DB_NAME, DB_NAME + "-wal"):
            return None
        db = path.with_name(DB_NAME)
        return db if db.parent.parent.name == "workspaceStorage" else None

    def discover(self, root: Path) -> Iterator[Path]:
        # One database per workspace, at its top; nothing below is looked at.
        try:
            workspaces = sorted(p for p in root.iterdir() if p.is_dir())
        except OSError:
            return
        for workspace in workspaces:
            db = workspace / DB_NAME
            if db.is_file():
                yield db

    def read(self, path: Path, prev: Cursor | None, opts: ReaderOptions) -> ReadResult:
        old = prev.state if prev and prev.state.get("v") == STATE_VERSION else None
        with open_readonly(path) as conn, snapshot(conn):
            moved = vscode_sql.has_chat_index(conn)
            if moved and old is not None and old.get("moved") and not old.get("own"):
                # Moved to files before, nothing of its own: the key (up to 25
                # chats) is not fetched again at each of VS Code's writes.
                return _result(dict(old), [], [], set(), [])
            raw = vscode_sql.persisted_sessions(conn)
        digest = _digest(raw) if raw is not None else None
        saved = old.get("own") if old is not None else None
        #: Sessions whose turns this database holds -> a hash of what they were made of.
        own: dict[str, str] = dict(saved) if isinstance(saved, dict) else {}
        chats = path.parent / "chatSessions"
        if old is not None and (old.get("digest"), old.get("moved")) == (digest, moved):
            # The key did not change: only a chat that gained a file changes hands.
            handed = {sid for sid in own if _has_file(chats, sid)}
            for sid in handed:
                del own[sid]
            count = int(old.get("left") or 0) + len(handed)
            return _result(_state(digest, moved, own, count), [], [], handed, [])
        if raw is not None and len(raw) > opts.max_document_bytes:
            problem = Problem(f"{KEY} is {len(raw)} bytes, over index.max_document_bytes: "
                              "raise it to read these chats")  # fmt: skip
            # (no hash saved: the next read tries again)
            return _result(_state(None, moved, own, 0, problem.message), [], [], set(), [problem])
        listed, problems = _parse(raw)
        turns: list[Turn] = []
        sessions: list[Session] = []
        replaced: set[str] = set()
        left: set[str] = set()
        for sid, doc in listed:
            if moved or _has_file(chats, sid):
                left.add(sid)  # the files hold it (and this database gives it no more)
                own.pop(sid, None)
                continue
            skeleton, found = flat_turns(doc, sid)
            mark = _digest(json.dumps(skeleton, sort_keys=True).encode())
            if own.get(sid) == mark:
                continue  # unchanged: not yielded again
            own[sid] = mark
            replaced.add(sid)
            turns += found
            sessions.append(describe(skeleton, sid, found, index=None, workspace=path.parent))
        ids = {sid for sid, _doc in listed}
        for sid in [s for s in own if s not in ids and _has_file(chats, s)]:
            left.add(sid)  # gone from the key, and a file holds it now
            del own[sid]
        # (Sessions gone from the key otherwise stay in ``own``: their turns are kept.)
        state = _state(digest, moved, own, len(left))
        return _result(state, turns, sessions, replaced | left, problems)


def _parse(raw: bytes | None) -> tuple[list[tuple[str, dict[str, Any]]], list[Problem]]:
    """The chats of the key's value, by session id, and what could not be used."""
    if raw is None:
        return [], []
    try:
        value = loads(raw)
    except (ValueError, RecursionError) as exc:
        return [], [Problem(f"{KEY} is not valid JSON: {exc}")]
    if not isinstance(value, list):
        return [], [Problem(f"{KEY} is not a JSON array")]
    out: dict[str, dict[str, Any]] = {}
    problems: list[Problem] = []
    for n, doc in enumerate(value):
        sid = doc.get("sessionId") if isinstance(doc, dict) else None
        if not isinstance(sid, str) or not sid:
            problems.append(Problem(f"chat {n} of {KEY}: no sessionId"))
        elif not isinstance(doc, dict) or not isinstance(doc.get("requests"), list):
            problems.append(Problem(f"chat {sid} of {KEY}: no requests array"))
        else:
            out.setdefault(sid, doc)  # (VS Code keys them by id: a repeat is not another chat)
    return list(out.items()), problems


def _has_file(chats: Path, sid: str) -> bool:
    """Whether the workspace's ``chatSessions`` holds the chat (a flat file or a log)."""
    return (chats / f"{sid}.json").exists() or (chats / f"{sid}.jsonl").exists()


def _digest(data: bytes) -> str:
    return blake2b(data, digest_size=16).hexdigest()


def _state(
    digest: str | None, moved: bool, own: dict[str, str], left: int, note: str | None = None
) -> dict[str, Any]:
    """The memo: the key's hash, whether the chat index is set, the sessions this
    database holds turns of, how many chats of the key the files hold; and, when
    it holds none, why (``explain`` shows it)."""
    state: dict[str, Any] = {"v": STATE_VERSION, "digest": digest, "moved": moved, "own": own,
                             "left": left}  # fmt: skip
    if own:
        return state
    if note is not None:
        state[SKIPPED] = note
    elif digest is None:
        state[SKIPPED] = (
            f"no chat is kept in this database (no {KEY} key: VS Code keeps this "
            "workspace's chats in the files of its chatSessions folder)"
        )
    elif left:
        state[SKIPPED] = (
            f"the {left} chat(s) of its {KEY} key were moved by VS Code to the files of "
            "its chatSessions folder, which are indexed"
        )
    else:
        state[SKIPPED] = f"its {KEY} key holds no chat"
    return state


def _result(
    state: dict[str, Any],
    turns: list[Turn],
    sessions: list[Session],
    replaced: set[str],
    problems: list[Problem],
) -> ReadResult:
    return ReadResult(
        turns=tuple(turns),
        sessions=tuple(sessions),
        position=0,
        state=state,
        # The yielded sessions' turns replace theirs, and those the files hold
        # now go; every other turn of this database stays (a chat gone from
        # the key), even on a read from the start.
        replaced_sessions=frozenset(replaced),
        retain=True,
        problems=tuple(problems),
    )
