"""TRAE CLI reader (the Codex reader on TRAE's roots) against
``tests/fixtures/trae-cli`` (a de-identified real sub-agent rollout, see SOURCES.md)."""

from __future__ import annotations

import shutil
from pathlib import Path

from backscroll.model import ReaderOptions
from backscroll.readers.base import HostEnv
from backscroll.readers.codex import CodexReader
from backscroll.readers.trae_cli import TraeCliReader
from tests.readers.util import fixture, read_fresh

reader = TraeCliReader()
SID = "019fbcca-9fd4-7d20-83dc-0762b2f839b3"
NAME = f"rollout-2026-08-01T18-07-03-{SID}.jsonl"


PARENT = "019fbc4a-48b9-7472-a0da-6d92901383db"


def _rollout(home: Path, sample: str = "handmade-rollout-main.jsonl") -> Path:
    day = home / ".trae" / "cli" / "sessions" / "2026" / "08" / "01"
    day.mkdir(parents=True, exist_ok=True)
    shutil.copy(fixture("trae-cli", sample), day / NAME)
    return day / NAME


def test_spawned_sub_agent_rollout_joins_its_parent_when_sub_agents_are_included(
    isolated_home: Path,
) -> None:
    path = _rollout(isolated_home, "agentsview-traex-rollout_subagent.jsonl")
    assert read_fresh(reader, path).turns == {}
    index = read_fresh(reader, path, ReaderOptions(include_subagents=True))
    assert {t.session_id for t in index.turns.values()} == {PARENT}
    assert index.texts("assistant") == ["The provider facade owns discovery and parsing."]


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
