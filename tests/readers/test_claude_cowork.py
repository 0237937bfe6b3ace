"""Claude Desktop Cowork reader against ``tests/fixtures/claude-desktop-cowork``
(see SOURCES.md: both files are synthetic, shaped after peer readers)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from backscroll import config, direct
from backscroll.readers.base import HostEnv
from backscroll.readers.claude_cowork import CoworkReader
from tests.readers.util import fixture, read_fresh

reader = CoworkReader()
LOCAL = "local_6d2f0a41-93c8-4b7e-a5d1-2e8f7c3b9a60"
CLI = "c71e4b2a-0d9f-4e36-8a15-b4c9d2e7f031"


def _layout(home: Path) -> tuple[Path, Path]:
    workspace = home / ".config" / "Claude" / "local-agent-mode-sessions" / "org-1" / "ws-1"
    projects = workspace / LOCAL / ".claude" / "projects" / "-sessions-brave-otter-outputs"
    projects.mkdir(parents=True)
    transcript = projects / f"{CLI}.jsonl"
    shutil.copy(fixture("claude-desktop-cowork", f"{CLI}.jsonl"), transcript)
    sidecar = workspace / f"{LOCAL}.json"
    shutil.copy(fixture("claude-desktop-cowork", f"{LOCAL}.json"), sidecar)
    return transcript, sidecar


def test_transcript_read_as_claude_code_with_the_sidecars_metadata(isolated_home: Path) -> None:
    transcript, _ = _layout(isolated_home)
    index = read_fresh(reader, transcript)
    assert index.texts("user") == ["Summarize the Q3 planning notes in planning/ into one page."]
    assert index.texts("assistant") == [
        "I read the three files in planning/ and wrote a one-page summary to outputs/q3-summary.md."
    ]
    session = index.sessions[CLI]
    assert session.title == "Summarize the Q3 planning notes"  # the app's, over the ai-title
    assert session.project == "/Users/alex/Documents/planning"  # not the sandbox cwd
    assert session.started_at == 1785400000.0  # createdAt (ms)
    assert session.resume_command is None


def test_without_a_sidecar_the_transcripts_own_metadata_stands(isolated_home: Path) -> None:
    transcript, sidecar = _layout(isolated_home)
    sidecar.unlink()
    session = read_fresh(reader, transcript).sessions[CLI]
    assert session.title == "Q3 planning summary"
    assert session.project == "/sessions/brave-otter/outputs"


def test_the_sidecar_maps_to_its_transcript_and_uploads_are_not_walked(isolated_home: Path) -> None:
    transcript, sidecar = _layout(isolated_home)
    assert reader.sidecars(transcript) == [sidecar]
    assert reader.source_for(sidecar) == transcript
    outputs = sidecar.with_suffix("") / "outputs"
    outputs.mkdir()
    (outputs / "notes.jsonl").write_text("{}\n")
    assert reader.source_for(outputs / "notes.jsonl") is None
    root = isolated_home / ".config" / "Claude" / "local-agent-mode-sessions"
    assert list(reader.discover(root)) == [transcript]
    assert reader.source_for(isolated_home / ".claude" / "projects" / "p" / f"{CLI}.jsonl") is None


def test_a_rename_in_the_sidecar_is_seen_on_the_next_pass(isolated_home: Path) -> None:
    transcript, sidecar = _layout(isolated_home)
    cfg = config.load()
    direct.index(cfg)
    sessions = direct.query(cfg, "sessions", {"host": "claude-desktop-cowork"})["sessions"]
    assert [s["title"] for s in sessions] == ["Summarize the Q3 planning notes"]
    meta = json.loads(sidecar.read_text())
    meta["title"] = "Q3 one-pager"
    sidecar.write_text(json.dumps(meta))
    later = transcript.stat().st_mtime_ns + 5_000_000_000
    os.utime(sidecar, ns=(later, later))
    summary, _ = direct.index(cfg)
    assert summary.files_changed == 1
    sessions = direct.query(cfg, "sessions", {"host": "claude-desktop-cowork"})["sessions"]
    assert [s["title"] for s in sessions] == ["Q3 one-pager"]


def test_default_roots_per_platform(tmp_path: Path) -> None:
    sessions = "local-agent-mode-sessions"
    assert reader.roots(HostEnv(home=tmp_path)) == [tmp_path / ".config" / "Claude" / sessions]
    mac = reader.roots(HostEnv(home=tmp_path, platform="darwin"))
    assert mac == [tmp_path / "Library" / "Application Support" / "Claude" / sessions]
    win = reader.roots(
        HostEnv(
            home=tmp_path,
            environ={"LOCALAPPDATA": str(tmp_path / "L"), "APPDATA": str(tmp_path / "R")},
            platform="win32",
        )
    )
    msix = tmp_path / "L" / "Packages" / "Claude_pzs8sxrjxfjjc" / "LocalCache" / "Roaming"
    assert win == [msix / "Claude" / sessions, tmp_path / "R" / "Claude" / sessions]
