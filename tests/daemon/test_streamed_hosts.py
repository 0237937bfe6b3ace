"""Hosts that stream a reply line by line (Grok Build), through a real daemon:
a reply grows into one searchable turn while the daemon watches, and a rewind
appended later takes the rewound turns out of search. Every wait is on a
condition (a search hit or its absence), never a sleep."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from tests.daemon.conftest import DaemonFactory
from tests.daemon.harness import DaemonProcess
from tests.daemon.test_daemon import wait_for

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
SID = "019f7a10-3c2e-7d41-9b5a-6e0f2c8d4a17"


def _hits(d: DaemonProcess, query: str) -> list[dict[str, Any]]:
    return list(d.call("search", {"query": query, "fallback": False})["hits"])


def _append(path: Path, *updates: dict[str, Any]) -> None:
    with open(path, "a", encoding="utf-8") as fh:
        for update in updates:
            envelope = {
                "timestamp": 1785400500,
                "method": "session/update",
                "params": {"sessionId": SID, "update": update},
            }
            fh.write(json.dumps(envelope, separators=(",", ":")) + "\n")


def _chunk(kind: str, text: str) -> dict[str, Any]:
    return {"sessionUpdate": kind, "content": {"type": "text", "text": text}}


def test_a_streamed_grok_reply_is_one_turn_and_a_rewind_removes_it(
    daemon_factory: DaemonFactory,
) -> None:
    d = daemon_factory()
    session = d.home / ".grok" / "sessions" / "%2Fhome%2Fdev%2Frepo" / SID
    session.mkdir(parents=True)
    updates = session / "updates.jsonl"
    shutil.copy(FIXTURES / "grok" / "constructed-updates.jsonl", updates)
    wait_for(lambda: _hits(d, "nightly"), "the sample session to be indexed")
    _append(updates, _chunk("user_message_chunk", "Where is the zebrafinch config?"))
    _append(updates, _chunk("agent_message_chunk", "The zebrafinch "))
    wait_for(lambda: _hits(d, "zebrafinch"), "the streamed prompt and reply start")
    _append(updates, _chunk("agent_message_chunk", "config lives in ospreyvalley.toml."))
    found = wait_for(lambda: _hits(d, "ospreyvalley"), "the rest of the streamed reply")
    assert [h["role"] for h in found] == ["assistant"]
    assert found[0]["session_id"] == SID
    assert "zebrafinch" in found[0]["excerpt"]  # one turn: both chunks joined
    rewind = {"sessionUpdate": "rewind_marker", "target_prompt_index": 1}
    with open(updates, "a", encoding="utf-8") as fh:
        envelope = {
            "timestamp": 1785400600,
            "method": "_x.ai/session/update",
            "params": {"sessionId": SID, "update": rewind},
        }
        fh.write(json.dumps(envelope, separators=(",", ":")) + "\n")
    wait_for(lambda: not _hits(d, "zebrafinch"), "the rewound exchange to leave the index")
    assert _hits(d, "nightly"), "turns before the rewind target stay"
