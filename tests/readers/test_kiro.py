"""Kiro readers.

IDE: ``tests/fixtures/kiro/ide-workspace-session.json``, a real structural fixture
(see SOURCES.md). CLI: ``5c1d7e2a-....jsonl`` and its ``.json`` sidecar are HAND-MADE
from the "Kiro CLI" section of ``shared/formats/kiro/README.md`` (no public sample
exists; see HAND-MADE.md). Marker words sit only in content that must stay out.
"""

from __future__ import annotations

import base64
import json
import shutil
from pathlib import Path

import pytest

from backscroll.model import ReaderOptions
from backscroll.readers.base import HostEnv, parse_time
from backscroll.readers.kiro import PROMPT_TIME_NOTE, KiroCliReader, KiroIdeReader
from tests.readers.util import (
    MemoryIndex,
    copy_fixture,
    grow_file_incrementally,
    read_fresh,
    role_counts,
)

SID = "5c1d7e2a-8b3f-4a6e-9d0c-2f4b6a8c0e13"
LOG = f"{SID}.jsonl"
IDE = "ide-workspace-session.json"
cli = KiroCliReader()
ide = KiroIdeReader()


def _cli_dir(tmp_path: Path, sidecar: bool = True) -> Path:
    folder = tmp_path / ".kiro" / "sessions" / "cli"
    log = copy_fixture("kiro", LOG, folder)
    if sidecar:
        copy_fixture("kiro", f"{SID}.json", folder)
    return log


# --------------------------------------------------------------------------- CLI


def test_cli_turns_by_role_and_texts(tmp_path: Path) -> None:
    index = read_fresh(cli, _cli_dir(tmp_path))
    assert role_counts(index) == {"user": 2, "assistant": 3}
    assert index.texts("user") == [
        "Why does the nightly export job time out?",
        "Check the Postgres docs for partial indexes.",
    ]
    assert index.texts("assistant")[1] == (
        "The export scans the whole orders table; add an index on orders.updated_at."
    )
    assert {k for _, k in index.turns} == {"p1", "a1", "a2", "p2", "a4"}


def test_cli_thinking_tool_use_and_tool_results_are_not_searchable(tmp_path: Path) -> None:
    text = " ".join(read_fresh(cli, _cli_dir(tmp_path)).texts()).lower()
    for word in ("snorkack", "exportwombat", "gnarlbat", "blatherskite", "fs_read"):
        assert word not in text


def test_cli_replies_take_their_prompts_time(tmp_path: Path) -> None:
    index = read_fresh(cli, _cli_dir(tmp_path))
    assert index.turns[(SID, "p1")].timestamp == 1754470000
    assert index.turns[(SID, "p1")].note is None
    assert index.turns[(SID, "a2")].timestamp == 1754470000
    assert index.turns[(SID, "a2")].note == PROMPT_TIME_NOTE
    assert index.turns[(SID, "a4")].timestamp == 1754470300


def test_cli_session_metadata_comes_from_the_sidecar(tmp_path: Path) -> None:
    session = read_fresh(cli, _cli_dir(tmp_path)).sessions[SID]
    assert session.title == "Nightly export timeout"
    assert session.project == "/home/dev/billing"
    assert session.started_at == parse_time("2025-08-06T08:46:39.000000Z")
    assert session.resume_command == "cd /home/dev/billing && kiro-cli chat --resume"


def test_cli_without_sidecar_titles_by_first_prompt(tmp_path: Path) -> None:
    session = read_fresh(cli, _cli_dir(tmp_path, sidecar=False)).sessions[SID]
    assert session.title == "Why does the nightly export job time out?"
    assert session.project is None
    assert session.resume_command == "kiro-cli chat --resume"


def test_cli_reply_after_web_fetch_is_tainted(tmp_path: Path) -> None:
    index = read_fresh(cli, _cli_dir(tmp_path))
    assert {k for (_, k), t in index.turns.items() if t.tainted} == {"a4"}


def test_cli_incremental_reads_equal_a_fresh_read(tmp_path: Path) -> None:
    log = _cli_dir(tmp_path / "fresh")
    data = log.read_bytes()
    starts = [i + 1 for i, b in enumerate(data) if b == 0x0A]
    cuts = sorted({*starts, *(s - 9 for s in starts), 2, len(data) // 2})
    folder = tmp_path / "grown" / ".kiro" / "sessions" / "cli"
    copy_fixture("kiro", f"{SID}.json", folder)
    grown = grow_file_incrementally(cli, log, folder / LOG, cuts)
    fresh = read_fresh(cli, log)
    assert grown.comparable() == fresh.comparable()
    assert grown.sessions == fresh.sessions


def test_cli_malformed_line_is_reported_and_the_rest_indexed(tmp_path: Path) -> None:
    log = _cli_dir(tmp_path)
    lines = log.read_bytes().splitlines(keepends=True)
    log.write_bytes(b"".join([*lines[:3], b'{"version":"v1","kind":\n', *lines[3:]]))
    result = cli.read(log, None, ReaderOptions())
    assert [p.line for p in result.problems] == [4]
    assert len(result.turns) == 5


def test_cli_unknown_version_is_unsupported(tmp_path: Path) -> None:
    log = _cli_dir(tmp_path)
    log.write_text(log.read_text().replace('"version":"v1"', '"version":"v2"'))
    result = cli.read(log, None, ReaderOptions())
    assert result.unsupported is not None and "v2" in result.unsupported
    assert result.turns == ()


def test_cli_roots_and_sources(tmp_path: Path) -> None:
    assert cli.roots(HostEnv(home=Path("/h"))) == [Path("/h/.kiro/sessions/cli")]
    log = _cli_dir(tmp_path)
    assert cli.source_for(log) == log
    assert cli.source_for(log.with_suffix(".json")) == log  # sidecar -> its log
    assert cli.source_for(log.with_suffix(".lock")) is None
    assert cli.source_for(log.parent / "orphan.json") is None


# --------------------------------------------------------------------------- IDE


def _ide_place(tmp_path: Path) -> Path:
    folder = base64.urlsafe_b64encode(b"/Users/dev/my-app").decode().rstrip("=")
    return copy_fixture("kiro", IDE, tmp_path / "workspace-sessions" / folder)


def test_ide_turns_by_role_and_texts(tmp_path: Path) -> None:
    index = read_fresh(ide, _ide_place(tmp_path))
    assert role_counts(index) == {"user": 2, "assistant": 2}
    assert index.texts("user") == [
        "Add a dark mode toggle to the app header",
        "Make sure it persists the preference in localStorage",
    ]
    assert set(index.turns) == {("test-session-1", f"msg-{n}") for n in range(1, 5)}
    assert "claude-sonnet" not in " ".join(index.texts())  # selectedModel is metadata


def test_ide_session_metadata(tmp_path: Path) -> None:
    path = _ide_place(tmp_path)
    session = read_fresh(ide, path).sessions["test-session-1"]
    assert session.title == "Add dark mode toggle"
    assert session.project == "/Users/dev/my-app"
    # The document records no times: the file's mtime stands in, and says so.
    assert session.started_at == path.stat().st_mtime
    assert session.resume_command is None  # resumed from Kiro's session history panel


def test_ide_rewrite_replaces_turns(tmp_path: Path) -> None:
    path = _ide_place(tmp_path)
    index = MemoryIndex()
    index.read(ide, path)
    doc = json.loads(path.read_text())
    doc["history"][1]["message"]["content"] = [{"type": "text", "text": "Edited reply."}]
    doc["history"].append({"message": {"role": "user", "content": "One more thing", "id": "msg-5"}})
    doc["history"].pop(3)
    path.write_text(json.dumps(doc))
    result = index.read(ide, path)
    assert result.replace and result.position == path.stat().st_size
    assert index.comparable() == read_fresh(ide, path).comparable()
    assert {k for _, k in index.turns} == {"msg-1", "msg-2", "msg-3", "msg-5"}
    assert index.turns[("test-session-1", "msg-2")].text == "Edited reply."


def test_ide_truncated_document_raises_for_a_retry(tmp_path: Path) -> None:
    path = _ide_place(tmp_path)
    path.write_bytes(path.read_bytes()[:300])
    with pytest.raises(ValueError):
        ide.read(path, None, ReaderOptions())


def test_ide_bad_entry_is_reported_and_the_rest_indexed(tmp_path: Path) -> None:
    path = _ide_place(tmp_path)
    doc = json.loads(path.read_text())
    doc["history"].insert(1, "garbage")
    path.write_text(json.dumps(doc))
    result = ide.read(path, None, ReaderOptions())
    assert len(result.problems) == 1 and len(result.turns) == 4


def test_ide_unrecognised_document_is_unsupported(tmp_path: Path) -> None:
    path = _ide_place(tmp_path)
    path.write_text(json.dumps({"sessionId": "x", "conversation": {"turns": []}}))
    assert ide.read(path, None, ReaderOptions()).unsupported is not None


def test_ide_roots_per_platform_and_sources(tmp_path: Path) -> None:
    tail = Path("User/globalStorage/kiro.kiroagent/workspace-sessions")
    linux = HostEnv(home=Path("/h"), platform="linux")
    assert ide.roots(linux) == [Path("/h/.config/Kiro") / tail]
    xdg = HostEnv(home=Path("/h"), environ={"XDG_CONFIG_HOME": "/x"}, platform="linux")
    assert ide.roots(xdg) == [Path("/x/Kiro") / tail]
    mac = HostEnv(home=Path("/h"), platform="darwin")
    support = Path("/h/Library/Application Support/Kiro")
    assert ide.roots(mac) == [support / tail, support / "workspace-sessions"]
    win = HostEnv(home=Path("/h"), environ={"APPDATA": "/a"}, platform="win32")
    assert ide.roots(win) == [Path("/a/Kiro") / tail]
    path = _ide_place(tmp_path)
    assert ide.source_for(path) == path
    index_file = path.parent / "sessions.json"
    shutil.copyfile(path, index_file)
    assert ide.source_for(index_file) is None


def test_ide_project_falls_back_to_the_base64_workspace_folder(tmp_path: Path) -> None:
    path = _ide_place(tmp_path)
    doc = json.loads(path.read_text())
    del doc["workspacePath"], doc["title"]
    path.write_text(json.dumps(doc))
    session = read_fresh(ide, path).sessions["test-session-1"]
    assert session.project == "/Users/dev/my-app"
    assert session.title == "Add a dark mode toggle to the app header"


def test_ide_turns_without_times_take_the_documents_mtime_and_say_so(tmp_path: Path) -> None:
    import os

    path = _ide_place(tmp_path)
    os.utime(path, (1_760_000_000, 1_760_000_000))
    index = read_fresh(ide, path)
    assert {t.timestamp for t in index.turns.values()} == {1_760_000_000}
    assert {t.note for t in index.turns.values()} == {"timestamp is the file's modification time"}
