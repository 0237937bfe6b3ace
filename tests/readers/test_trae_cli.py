"""TRAE CLI reader (the Codex reader on TRAE's roots) against
``tests/fixtures/trae-cli`` (a de-identified real sub-agent rollout, see SOURCES.md)."""

from __future__ import annotations

import shutil
from pathlib import Path

from backscroll.readers.base import HostEnv
from backscroll.readers.codex import CodexReader
from backscroll.readers.trae_cli import TraeCliReader
from tests.readers.util import fixture, read_fresh

reader = TraeCliReader()
SID = "019fbcca-9fd4-7d20-83dc-0762b2f839b3"
NAME = f"rollout-2026-08-01T18-07-03-{SID}.jsonl"


def _rollout(home: Path) -> Path:
    day = home / ".trae" / "cli" / "sessions" / "2026" / "08" / "01"
    day.mkdir(parents=True)
    shutil.copy(fixture("trae-cli", "agentsview-traex-rollout_subagent.jsonl"), day / NAME)
    return day / NAME


def test_rollout_prompt_reply_and_traex_resume(isolated_home: Path) -> None:
    index = read_fresh(reader, _rollout(isolated_home))
    assert index.texts("user") == ["Explore the parser package."]
    assert len(index.texts("assistant")) == 1
    assert "Plan the exploration." not in "\n".join(index.texts())  # reasoning
    session = index.sessions[SID]
    assert session.project == "/home/user/code/api"
    assert session.title == "Explore the parser package."
    assert session.resume_command == f"traex resume {SID}"


def test_trae_and_codex_keep_their_own_roots(tmp_path: Path) -> None:
    env = HostEnv(home=tmp_path, environ={"CODEX_HOME": str(tmp_path / "codex")})
    trae = tmp_path / ".trae" / "cli"
    assert reader.roots(env) == [trae / "sessions", trae / "archived_sessions"]
    assert not set(reader.roots(env)) & set(CodexReader().roots(env))
    archived = trae / "archived_sessions" / NAME
    assert reader.source_for(archived) == archived
