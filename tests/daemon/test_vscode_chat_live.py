"""A live daemon follows a VS Code chat mutation log: entries appended while it
runs become searchable, and a whole-file rewrite (VS Code's compaction to one
fresh kind-0 line) that drops a request takes its turns out of the index.
Every wait is on a search result, bounded by a deadline."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.daemon.conftest import DaemonFactory
from tests.daemon.test_daemon import hits, wait_for
from tests.readers.test_vscode_copilot_chat import LOG, LOG_SID, full_replay
from tests.readers.util import fixture

HOST = "vscode-copilot-chat"


def _chat(home: Path) -> Path:
    chats = home / ".config" / "Code" / "User" / "workspaceStorage" / "0f0f" / "chatSessions"
    chats.mkdir(parents=True)
    return chats / f"{LOG_SID}.jsonl"


def _line(entry: dict[str, Any]) -> bytes:
    return json.dumps(entry).encode() + b"\n"


def test_appended_entries_and_a_compacting_rewrite_reach_search(
    daemon_factory: DaemonFactory,
) -> None:
    d = daemon_factory()
    lines = fixture(HOST, LOG).read_bytes().splitlines(keepends=True)
    path = _chat(d.home)
    path.write_bytes(b"".join(lines[:14]))  # the first request, answered
    wait_for(lambda: hits(d, "XDG_CONFIG_HOME"), "the first answer to be searchable")
    with open(path, "ab") as fh:
        fh.write(b"".join(lines[14:]))
    found = wait_for(lambda: hits(d, "fallback"), "the resent request to be searchable")
    assert {h["session_id"] for h in found} == {LOG_SID}
    # VS Code compacts the log after the user undid the second request.
    state = full_replay(lines)
    state["requests"] = state["requests"][:1]
    path.write_bytes(_line({"kind": 0, "v": state}))
    wait_for(lambda: not hits(d, "fallback"), "the undone request to leave the index")
    assert hits(d, "XDG_CONFIG_HOME")
