"""``backscroll index`` on a HOME holding every host's samples, each in its
default location, finds every host (issue: readers for every host)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from backscroll.hosts import HOST_NAMES

FIXTURES = Path(__file__).parent / "fixtures"

LAYOUT = {
    "claude-code": [
        (
            "claude-code/spotter-tool_heavy.jsonl",
            ".claude/projects/-home-marco-projects-spotter/d6e0bada-1959-4eec-a9d2-0bfade768d8f.jsonl",
        )
    ],
    "codex": [
        (
            "codex/rollout-2026-05-11T11-26-55-019e1625-789d-76c0-80ab-3724b5ddb799.lines1-77.jsonl",
            ".codex/sessions/2026/05/11/rollout-2026-05-11T11-26-55-019e1625-789d-76c0-80ab-3724b5ddb799.jsonl",
        )
    ],
    "gemini-cli": [
        (
            "gemini-cli/session-2025-12-01T21-45-5b959dae.json",
            ".gemini/tmp/myproj/chats/session-2025-12-01T21-45-5b959dae.json",
        )
    ],
    "copilot-cli": [
        (
            "copilot-cli/049410b4-events.jsonl",
            ".copilot/session-state/049410b4-0000-4000-8000-000000000000/events.jsonl",
        ),
        (
            "copilot-cli/049410b4-workspace.yaml",
            ".copilot/session-state/049410b4-0000-4000-8000-000000000000/workspace.yaml",
        ),
    ],
    "qwen-code": [
        (
            "qwen-code/7c1e2f4a-5b6d-4e8f-9a0b-1c2d3e4f5a6b.jsonl",
            ".qwen/projects/-home-u-proj/chats/7c1e2f4a-5b6d-4e8f-9a0b-1c2d3e4f5a6b.jsonl",
        )
    ],
    "pi": [
        (
            "pi/2024-01-15T10-30-00-000Z_abc12345-1234-5678-9abc-def012345678.jsonl",
            ".pi/agent/sessions/--home-u-proj--/2024-01-15T10-30-00-000Z_abc12345-1234-5678-9abc-def012345678.jsonl",
        )
    ],
    "factory-droid": [
        (
            "factory-droid/3f2a9c1e-7b4d-4e2a-9f61-0c8d5e4b7a21.jsonl",
            ".factory/sessions/-home-u-proj/3f2a9c1e-7b4d-4e2a-9f61-0c8d5e4b7a21.jsonl",
        )
    ],
    "cursor-agent": [
        (
            "cursor-agent/cursor-agent-transcript.jsonl",
            ".cursor/projects/home-u-proj/agent-transcripts/0b1c2d3e-0000-4000-8000-000000000000.jsonl",
        )
    ],
    "kiro": [
        (
            "kiro/5c1d7e2a-8b3f-4a6e-9d0c-2f4b6a8c0e13.jsonl",
            ".kiro/sessions/cli/5c1d7e2a-8b3f-4a6e-9d0c-2f4b6a8c0e13.jsonl",
        ),
        (
            "kiro/5c1d7e2a-8b3f-4a6e-9d0c-2f4b6a8c0e13.json",
            ".kiro/sessions/cli/5c1d7e2a-8b3f-4a6e-9d0c-2f4b6a8c0e13.json",
        ),
    ],
    "kiro-ide": [
        (
            "kiro/ide-workspace-session.json",
            ".config/Kiro/User/globalStorage/kiro.kiroagent/workspace-sessions/L2hvbWUvdS9wcm9q/ide-workspace-session.json",
        )
    ],
    "cline": [
        (
            "cline/ui_messages.json",
            ".config/Code/User/globalStorage/saoudrizwan.claude-dev/tasks/1700000000000/ui_messages.json",
        )
    ],
    "roo-code": [
        (
            "roo-code/ui_messages.json",
            ".config/Code/User/globalStorage/rooveterinaryinc.roo-cline/tasks/1700000000001/ui_messages.json",
        )
    ],
    "kilo-code": [
        (
            "kilo-code/ui_messages.json",
            ".config/Code/User/globalStorage/kilocode.kilo-code/tasks/1700000000002/ui_messages.json",
        )
    ],
    "continue": [
        (
            "continue/5f1c2a3b-4d5e-4f60-8a7b-9c0d1e2f3a4b.json",
            ".continue/sessions/5f1c2a3b-4d5e-4f60-8a7b-9c0d1e2f3a4b.json",
        ),
        ("continue/sessions.json", ".continue/sessions/sessions.json"),
    ],
    "amp": [("amp/test-thread-1.json", ".local/share/amp/threads/T-test-thread-1.json")],
    "opencode": [("opencode/opencode.db", ".local/share/opencode/opencode.db")],
    "kilo-cli": [("opencode/opencode.db", ".local/share/kilo/kilo.db")],
    "cursor": [("cursor/state.vscdb", ".config/Cursor/User/globalStorage/state.vscdb")],
    "goose": [("goose/sessions.db", ".local/share/goose/sessions/sessions.db")],
    "hermes": [("hermes/state.db", ".hermes/state.db")],
    "zed": [("zed/threads.db", ".local/share/zed/threads/threads.db")],
}


def _populate(home: Path, project: Path) -> None:
    for items in LAYOUT.values():
        for src, dst in items:
            target = home / dst
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(FIXTURES / src, target)
    crush = project / ".crush"
    crush.mkdir(parents=True)
    shutil.copy(FIXTURES / "crush" / "crush.db", crush / "crush.db")
    registry = home / ".local" / "share" / "crush"
    registry.mkdir(parents=True)
    (registry / "projects.json").write_text(
        json.dumps({"projects": [{"path": str(project), "data_dir": str(crush)}]})
    )
    shutil.copy(
        FIXTURES / "aider" / "real.aider.chat.history.md", project / ".aider.chat.history.md"
    )


def test_index_finds_every_host_in_its_default_location(isolated_home: Path) -> None:
    project = isolated_home.parent / "work" / "app"
    _populate(isolated_home, project)
    config = isolated_home / ".config" / "backscroll" / "config.yaml"
    config.parent.mkdir(parents=True)
    config.write_text(f"index:\n  project_roots: [{json.dumps(str(project))}]\n")
    done = subprocess.run(
        [sys.executable, "-m", "backscroll", "index", "--json"],
        capture_output=True,
        text=True,
        check=True,
    )
    summary = json.loads(done.stdout)
    assert summary["errors"] == 0
    found = {host for host, counts in summary["hosts"].items() if counts["turns"] > 0}
    assert found == set(HOST_NAMES), f"hosts with no turns: {set(HOST_NAMES) - found}"
    status = subprocess.run(
        [sys.executable, "-m", "backscroll", "status", "--json"],
        capture_output=True,
        text=True,
        check=True,
    )
    hosts = json.loads(status.stdout)["hosts"]
    assert all(hosts[h]["files"] >= 1 and hosts[h]["sessions"] >= 1 for h in HOST_NAMES)


def test_every_hosts_hits_name_their_session_and_turn_and_open_there(
    isolated_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import re

    from backscroll import cli

    project = isolated_home.parent / "work" / "app"
    _populate(isolated_home, project)
    config = isolated_home / ".config" / "backscroll" / "config.yaml"
    config.parent.mkdir(parents=True)
    config.write_text(f"index:\n  project_roots: [{json.dumps(str(project))}]\n")
    assert cli.main(["index", "--json"]) == 0
    capsys.readouterr()

    def run(*argv: str) -> str:
        assert cli.main(list(argv)) in (0, 1)
        return capsys.readouterr().out

    sessions = json.loads(run("sessions", "--json", "--limit", "1000"))["sessions"]
    first = {}
    for s in sessions:
        first.setdefault(s["host"], s["session_id"])
    assert set(first) == set(HOST_NAMES)
    for host, sid in sorted(first.items()):
        turns = json.loads(run("show", sid, "--host", host, "--json"))["turns"]
        words = sorted(re.findall(r"[^\W\d_]{5,}", turns[-1]["text"]), key=len)
        assert words, (host, turns[-1])
        word = words[-1]
        text = run("search", word, "--host", host, "--session", sid, "--limit", "1")
        opening = rf"session {re.escape(sid)} turn (\d+): backscroll show (\S+) --host (\S+)"
        found = re.search(opening, text)
        assert found, (host, text)
        n = int(found.group(1))
        assert found.group(2, 3) == (sid, host)
        shown = json.loads(
            run("show", sid, "--host", host, "--around", str(n), "--window", "1", "--json")
        )
        assert [t["n"] for t in shown["turns"]] == [n]
        assert word.lower() in shown["turns"][0]["text"].lower(), (host, word)
