"""A CONSTRUCTED ``state.vscdb`` of VS Code before March 2025, built from the flat sample.

No real workspace database is public (it holds auth tokens). Its shape is
VS Code's: table ``ItemTable (key TEXT UNIQUE ON CONFLICT REPLACE, value BLOB)``,
key ``interactive.sessions`` holding ``JSON.stringify`` of an array of
serialized chats (microsoft/vscode ``chatServiceImpl.ts``, ``saveState``). The
chats are made from ``constructed-flat-a41d6e0b.json`` (see
tests/fixtures/vscode-copilot-chat/SOURCES.md): the sample itself under
another session id, and its first request in the oldest shape (version 1: no
``version``, no title, the prompt as a plain string, the answer as one markdown
string, no request time). A ``secret://`` row stands for the auth tokens the
same table holds.
"""

from __future__ import annotations

import copy
import json
import sqlite3
from pathlib import Path
from typing import Any

from tests.readers.util import fixture

SESSIONS_KEY = "interactive.sessions"
INDEX_KEY = "chat.ChatSessionStore.index"
TOKEN_KEY = 'secret://{"extensionId":"vscode.github-authentication","key":"github.auth"}'
#: An invented token: it must never reach the index.
TOKEN = "gho_InventedTokenThatMustStayInTheDatabase0001"
V3_SID = "7b2e4f90-1c3d-4a5e-8f60-2d4c6e8a0b13"
V1_SID = "0c9a8b7d-6e5f-4d3c-9b2a-1f0e9d8c7b6a"
FOLDER = "file:///home/dev/legacy-app"


FLAT = "constructed-flat-a41d6e0b.json"


def flat_sample() -> dict[str, Any]:
    return dict(json.loads(fixture("vscode-copilot-chat", FLAT).read_text()))


def v3_chat(sid: str = V3_SID) -> dict[str, Any]:
    """The flat sample as the key held it, under ``sid``."""
    return {**flat_sample(), "sessionId": sid}


def v1_chat(sid: str = V1_SID) -> dict[str, Any]:
    """The sample's first request in the oldest shape."""
    sample = flat_sample()
    first = copy.deepcopy(sample["requests"][0])
    request = {
        "requestId": first["requestId"],
        "message": first["message"]["text"],
        "response": "".join(part["value"] for part in first["response"]),
        "followups": [],
        "isCanceled": False,
    }
    return {
        "requesterUsername": sample["requesterUsername"],
        "responderUsername": sample["responderUsername"],
        "sessionId": sid,
        "creationDate": sample["creationDate"],
        "isImported": False,
        "requests": [request],
    }


def write_state_db(db: Path, chats: list[dict[str, Any]] | None) -> Path:
    """A workspace's ``state.vscdb`` holding ``chats`` (no key when None), the
    token row and ``workspace.json`` beside it."""
    db.parent.mkdir(parents=True, exist_ok=True)
    (db.parent / "workspace.json").write_text(json.dumps({"folder": FOLDER}))
    conn = sqlite3.connect(db, isolation_level=None)
    try:
        conn.execute(
            "CREATE TABLE IF NOT EXISTS ItemTable (key TEXT UNIQUE ON CONFLICT REPLACE, value BLOB)"
        )
        conn.execute("INSERT INTO ItemTable VALUES (?, ?)", (TOKEN_KEY, json.dumps([TOKEN])))
    finally:
        conn.close()
    if chats is not None:
        set_item(db, SESSIONS_KEY, json.dumps(chats))
    return db


def set_item(db: Path, key: str, value: str) -> None:
    """Store one key as VS Code does (the row is replaced)."""
    conn = sqlite3.connect(db, isolation_level=None)
    try:
        conn.execute("INSERT INTO ItemTable VALUES (?, ?)", (key, value))
    finally:
        conn.close()
