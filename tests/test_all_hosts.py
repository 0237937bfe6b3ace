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
from tests.readers.vscode_state import v1_chat, v3_chat, write_state_db

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
    "goose": [
        ("goose/sessions.db", ".local/share/goose/sessions/sessions.db"),
        ("goose/legacy_session.jsonl", ".goose/sessions/legacy_session.jsonl"),
    ],
    "hermes": [
        ("hermes/state.db", ".hermes/state.db"),
        (
            "hermes/session_20260102_090000_c0ffee.json",
            ".hermes/sessions/session_20260102_090000_c0ffee.json",
        ),
        (
            "hermes/20260103_140000_5eed01ab.jsonl",
            ".hermes/sessions/20260103_140000_5eed01ab.jsonl",
        ),
    ],
    "zed": [("zed/threads.db", ".local/share/zed/threads/threads.db")],
    "claude-desktop-cowork": [
        (
            "claude-desktop-cowork/local_6d2f0a41-93c8-4b7e-a5d1-2e8f7c3b9a60.json",
            ".config/Claude/local-agent-mode-sessions/org-1/ws-1/local_6d2f0a41-93c8-4b7e-a5d1-2e8f7c3b9a60.json",
        ),
        (
            "claude-desktop-cowork/c71e4b2a-0d9f-4e36-8a15-b4c9d2e7f031.jsonl",
            ".config/Claude/local-agent-mode-sessions/org-1/ws-1/local_6d2f0a41-93c8-4b7e-a5d1-2e8f7c3b9a60/.claude/projects/-sessions-brave-otter-outputs/c71e4b2a-0d9f-4e36-8a15-b4c9d2e7f031.jsonl",
        ),
    ],
    "antigravity": [
        (
            "antigravity/cass-transcript.jsonl",
            ".gemini/antigravity-cli/brain/aaaa1111-bbbb-2222-cccc-333344445555/.system_generated/logs/transcript.jsonl",
        )
    ],
    "kimi-cli": [
        (
            "kimi-cli/constructed-wire.jsonl",
            ".kimi/sessions/fcfa19e37c9d6520c81afdca5fc8af94/0c9d7a52-6e1b-4f3a-8d24-51b7e0a9c6f3/wire.jsonl",
        ),
        (
            # A session from before session directories, read from its context alone.
            "kimi-cli/constructed-context.jsonl",
            ".kimi/sessions/fcfa19e37c9d6520c81afdca5fc8af94/11111111-2222-4333-8444-555555555555.jsonl",
        ),
        ("kimi-cli/constructed-kimi.json", ".kimi/kimi.json"),
    ],
    "grok": [
        (
            "grok/constructed-updates.jsonl",
            ".grok/sessions/%2Fhome%2Fdev%2Frepo/019f7a10-3c2e-7d41-9b5a-6e0f2c8d4a17/updates.jsonl",
        )
    ],
    "mistral-vibe": [
        (
            "mistral-vibe/constructed-session_20260730_093000_b41e7d09-messages.jsonl",
            ".vibe/logs/session/session_20260730_093000_b41e7d09/messages.jsonl",
        ),
        (
            "mistral-vibe/constructed-session_20260730_093000_b41e7d09-meta.json",
            ".vibe/logs/session/session_20260730_093000_b41e7d09/meta.json",
        ),
    ],
    "trae-cli": [
        (
            "trae-cli/handmade-rollout-main.jsonl",
            ".trae/cli/sessions/2026/08/01/rollout-2026-08-01T18-07-03-019fbcca-9fd4-7d20-83dc-0762b2f839b3.jsonl",
        )
    ],
    "zoo-code": [
        (
            "zoo-code/ui_messages.json",
            ".config/Code/User/globalStorage/zoocodeorganization.zoo-code/tasks/1700000000003/ui_messages.json",
        )
    ],
    "vscode-copilot-chat": [
        (
            "vscode-copilot-chat/constructed-log-3f6c2a8e.jsonl",
            ".config/Code/User/workspaceStorage/9f1e0c2b7a/chatSessions/3f6c2a8e-5b1d-4c7e-9a20-6d8e1f4b7c95.jsonl",
        ),
        (
            "vscode-copilot-chat/constructed-flat-a41d6e0b.json",
            ".config/Code/User/globalStorage/emptyWindowChatSessions/a41d6e0b-2c8f-4e57-9b13-f0e6c2d8a7b4.json",
        ),
    ],
    "openhands": [
        (
            f"openhands/constructed-conversation-5c3e9a1f7b2d4e6c8a0f1b3d5e7c9a2b/{name}",
            f".openhands/conversations/5c3e9a1f7b2d4e6c8a0f1b3d5e7c9a2b/{name}",
        )
        for name in (
            "base_state.json",
            "events/event-00000-0d1c2b3a-4f5e-4d6c-9b8a-7f6e5d4c3b2a.json",
            "events/event-00003-3a4b5c6d-7e8f-4a9b-8c0d-2e3f4a5b6c7d.json",
        )
    ],
    "amazon-q": [("amazon-q/constructed-data.sqlite3", ".local/share/amazon-q/data.sqlite3")],
    "iflow-cli": [
        (
            "iflow-cli/agentsview-session-5de701fc-7454-4858-a249-95cac4fd3b51.jsonl",
            ".iflow/projects/C--exp-docker-image-retagger/session-5de701fc-7454-4858-a249-95cac4fd3b51.jsonl",
        )
    ],
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
    # VS Code before March 2025: chats kept only in a workspace's state.vscdb,
    # built from the flat sample (tests/readers/vscode_state.py).
    workspace = home / ".config" / "Code" / "User" / "workspaceStorage" / "5e1a7c3d90"
    write_state_db(workspace / "state.vscdb", [v3_chat(), v1_chat()])


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
    assert hosts["hermes"]["sessions"] == 3  # state.db, a session log, a gateway transcript


def test_first_index_finds_aider_history_in_a_project_another_host_names(
    isolated_home: Path,
) -> None:
    from tests.daemon.harness import claude_user_line

    project = isolated_home.parent / "work" / "named-by-claude"
    project.mkdir(parents=True)
    shutil.copy(
        FIXTURES / "aider" / "real.aider.chat.history.md", project / ".aider.chat.history.md"
    )
    sessions = isolated_home / ".claude" / "projects" / "-work-named-by-claude"
    sessions.mkdir(parents=True)
    sid = "0b7c2a10-0000-4000-8000-00000000a1de"
    line = claude_user_line(sid, "u-1", "a prompt in the project", cwd=str(project))
    (sessions / f"{sid}.jsonl").write_text(line, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "backscroll", "index", "--json"],
        capture_output=True,
        text=True,
        check=True,
    )
    hosts = json.loads(done.stdout)["hosts"]
    assert hosts["aider"]["turns"] > 0, "the first index missed the project's Aider history"


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
    first: dict[str, str] = {}
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
