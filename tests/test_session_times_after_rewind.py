"""A transcript that loses lines (Copilot CLI's rewind truncates events.jsonl; a
host rewriting a session shorter): the session's last activity comes from the
turns it still has, not from the turns that were removed."""

from __future__ import annotations

import shutil
from pathlib import Path

from backscroll import config, direct

FIXTURES = Path(__file__).parent / "fixtures"
SID = "049410b4-c1df-44ee-87a5-caa1c349091e"


def _session(cfg: config.Config) -> dict[str, object]:
    listed = direct.query(cfg, "sessions", {"session": SID[:8]})["sessions"]
    assert len(listed) == 1
    return dict(listed[0])


def test_a_rewound_copilot_session_keeps_the_last_activity_of_its_remaining_turns(
    isolated_home: Path,
) -> None:
    session = isolated_home / ".copilot" / "session-state" / SID
    session.mkdir(parents=True)
    events = session / "events.jsonl"
    shutil.copy(FIXTURES / "copilot-cli" / "049410b4-events.jsonl", events)
    cfg = config.load()
    direct.index(cfg)
    before = _session(cfg)
    assert str(before["last_activity"]).startswith("2026-08-05T20:41:27")
    lines = events.read_bytes().splitlines(keepends=True)
    events.write_bytes(b"".join(lines[:11]))  # rewound to before the second answer
    direct.index(cfg)
    after = _session(cfg)
    assert int(str(after["turns"])) < int(str(before["turns"]))
    shown = direct.query(cfg, "session", {"session": SID[:8], "window": 50})["turns"]
    last_turn = max(str(t["timestamp"]) for t in shown if t["timestamp"])
    assert str(after["last_activity"]) <= "2026-08-05T20:40:49.176000Z"  # the last line kept
    assert str(after["last_activity"]) >= last_turn
    assert after["started"] == before["started"]
