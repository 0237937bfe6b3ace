"""A sidecar that changed while nothing watched it (the daemon was down) is
seen by the next stat-only pass: the transcript is read again."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from backscroll import config, direct
from backscroll.readers.kimi_cli import KimiCliReader

FIXTURES = Path(__file__).parent / "fixtures"
SID = "049410b4-c1df-44ee-87a5-caa1c349091e"


def _title(cfg: config.Config, host: str = "copilot-cli") -> str | None:
    sessions = direct.query(cfg, "sessions", {"host": host})["sessions"]
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
    assert summary.bytes_read == 0, "events.jsonl is read on from its end, not again whole"
    assert _title(cfg) == "Empty-cart pricing fix"
    again, _ = direct.index(cfg)
    assert again.files_changed == 0, "an unchanged sidecar must not force a re-read"


KIMI_HASH = "fcfa19e37c9d6520c81afdca5fc8af94"
KIMI_SID = "0c9d7a52-6e1b-4f3a-8d24-51b7e0a9c6f3"


def _kimi_session(home: Path, store: str) -> tuple[Path, Path, str]:
    """A Kimi CLI or Kimi Code session: (its wire, its state.json, the title key)."""
    kimi = FIXTURES / "kimi-cli"
    if store == "cli":
        session = home / ".kimi" / "sessions" / KIMI_HASH / KIMI_SID
        wire = session / "wire.jsonl"
        wire.parent.mkdir(parents=True)
        shutil.copy(kimi / "constructed-wire.jsonl", wire)
        shutil.copy(kimi / "constructed-state.json", session / "state.json")
        return wire, session / "state.json", "custom_title"
    session = home / ".kimi-code" / "sessions" / "wd_demo_0123456789ab" / "session_fixture01"
    wire = session / "agents" / "main" / "wire.jsonl"
    wire.parent.mkdir(parents=True)
    shutil.copy(kimi / "agent-sessions-kimi-code-small.wire.jsonl", wire)
    shutil.copy(kimi / "agent-sessions-kimi-code-state.json", session / "state.json")
    return wire, session / "state.json", "title"


@pytest.mark.parametrize("store", ["cli", "code"])
def test_a_renamed_kimi_session_gets_its_new_title_on_the_next_pass(
    isolated_home: Path, store: str
) -> None:
    wire, state_file, key = _kimi_session(isolated_home, store)
    cfg = config.load()
    direct.index(cfg)
    assert _title(cfg, "kimi-cli") != "Protoc hint"
    turns = direct.query(cfg, "status", {})["hosts"]["kimi-cli"]["turns"]
    state = json.loads(state_file.read_text())
    state[key] = "Protoc hint"
    state_file.write_text(json.dumps(state))
    later = wire.stat().st_mtime_ns + 5_000_000_000
    os.utime(state_file, ns=(later, later))
    summary, _totals = direct.index(cfg)
    assert summary.files_changed == 1
    assert summary.bytes_read == 0, "the wire is read on from its end, not again whole"
    assert _title(cfg, "kimi-cli") == "Protoc hint"
    assert direct.query(cfg, "status", {})["hosts"]["kimi-cli"]["turns"] == turns
    again, _ = direct.index(cfg)
    assert again.files_changed == 0, "an unchanged state.json must not force a re-read"
    line = wire.read_bytes().splitlines(keepends=True)[-1]
    with wire.open("ab") as fh:  # and an append still costs only its own bytes
        fh.write(line)
    grown, _ = direct.index(cfg)
    assert grown.bytes_read == len(line)
    assert _title(cfg, "kimi-cli") == "Protoc hint"


def test_a_kimi_state_json_change_maps_to_its_sessions_main_wire(isolated_home: Path) -> None:
    reader = KimiCliReader()
    for store in ("cli", "code"):
        wire, state_file, _key = _kimi_session(isolated_home, store)
        assert reader.source_for(state_file) == wire  # what a watch event resolves to
        assert reader.sidecars(wire) == [state_file]
    internal = isolated_home / ".kimi-code" / "sessions" / "wd_demo_0123456789ab" / "ctitle-abc"
    assert reader.source_for(internal / "state.json") is None
    sub = wire.parent.parent / "agent-7" / "wire.jsonl"
    assert reader.sidecars(sub) == []
    fresh = isolated_home / ".kimi-code" / "sessions" / "wd_demo_0123456789ab" / "session_new"
    fresh.mkdir()
    assert reader.source_for(fresh / "state.json") is None  # no wire yet: nothing to read
