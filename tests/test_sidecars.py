"""A sidecar that changed while nothing watched it (the daemon was down) is
seen by the next stat-only pass: the transcript is read again."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from backscroll import config, direct

FIXTURES = Path(__file__).parent / "fixtures"
SID = "049410b4-c1df-44ee-87a5-caa1c349091e"


def _title(cfg: config.Config) -> str | None:
    sessions = direct.query(cfg, "sessions", {"host": "copilot-cli"})["sessions"]
    assert len(sessions) == 1
    title: str | None = sessions[0]["title"]
    return title


def test_a_renamed_copilot_session_gets_its_new_title_on_the_next_pass(
    isolated_home: Path,
) -> None:
    session = isolated_home / ".copilot" / "session-state" / SID
    session.mkdir(parents=True)
    shutil.copy(FIXTURES / "copilot-cli" / "049410b4-events.jsonl", session / "events.jsonl")
    workspace = session / "workspace.yaml"
    shutil.copy(FIXTURES / "copilot-cli" / "049410b4-workspace.yaml", workspace)
    cfg = config.load()
    direct.index(cfg)
    assert _title(cfg) == (
        "In src/orders.py make average_item_price return 0 when the cart has no items."
    )
    text = workspace.read_text().replace(
        "name: In src/orders.py make average_item_price return 0 when the cart has no items.",
        "name: Empty-cart pricing fix",
    )
    workspace.write_text(text.replace("user_named: false", "user_named: true"))
    later = (session / "events.jsonl").stat().st_mtime_ns + 5_000_000_000
    os.utime(workspace, ns=(later, later))
    summary, _totals = direct.index(cfg)
    assert summary.files_changed == 1
    assert _title(cfg) == "Empty-cart pricing fix"
    again, _ = direct.index(cfg)
    assert again.files_changed == 0, "an unchanged sidecar must not force a re-read"
