"""Qwen Code reader.

Both fixtures are HAND-MADE (no public sample of Qwen Code's files exists; see
``tests/fixtures/qwen-code/HANDMADE.md``): the JSONL session follows
``shared/formats/qwen-code/README.md`` sections "Storage kind", "What to index" and
"Identity, project, title, time"; the ``session-*.json`` document follows its
"Locations" section (the older Gemini-style layout).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from backscroll.model import ReaderOptions
from backscroll.readers.base import HostEnv
from backscroll.readers.qwen_code import QwenCodeReader
from tests.readers.util import MemoryIndex, fixture, grow_file_incrementally, line_cuts, read_fresh

HOST = "qwen-code"
SID = "7c1e2f4a-5b6d-4e8f-9a0b-1c2d3e4f5a6b"
JSONL = f"{SID}.jsonl"
LEGACY = "session-2025-09-01T10-00-3f9a8b7c.json"
LEGACY_SID = "3f9a8b7c-0000-4d1e-8f2a-5b6c7d8e9f01"

reader = QwenCodeReader()


def chats(home: Path) -> Path:
    d = home / ".qwen" / "projects" / "-home-dev-shop" / "chats"
    d.mkdir(parents=True, exist_ok=True)
    return d


def placed(home: Path) -> Path:
    dest = chats(home) / JSONL
    shutil.copyfile(fixture(HOST, JSONL), dest)
    return dest


def test_prompts_answers_and_compression_summary(isolated_home: Path) -> None:
    index = read_fresh(reader, placed(isolated_home))
    assert index.texts("user") == [
        "Why does the checkout total drift by a cent?",
        "Do it in cart.py",
        "and keep the tests green",  # sent mid-turn: still typed by the person
    ]
    assert index.texts("assistant") == [
        "Let me check the current rounding guidance.",
        "Totals are summed as floats; switch to Decimal and quantize to cents.",
        "Done: cart.py now uses Decimal; the tests pass.",
    ]
    assert index.texts("summary") == [
        "<state_snapshot>Checkout totals now use Decimal in cart.py.</state_snapshot>"
    ]
    assert (SID, "u-1") in index.turns  # keyed by the record's uuid


def test_thoughts_tool_results_and_notices_are_not_searchable(isolated_home: Path) -> None:
    everything = "\n".join(read_fresh(reader, placed(isolated_home)).texts())
    assert "Weighing float" not in everything  # a thought part
    assert "zygomorphic" not in everything  # only in a tool result
    assert "quantize with" not in everything and "bankers" not in everything  # tool call args
    assert "Background task" not in everything  # a notification record
    assert "Got it." not in everything and "/stats" not in everything


def test_session_metadata(isolated_home: Path) -> None:
    session = read_fresh(reader, placed(isolated_home)).sessions[SID]
    assert session.project == "/home/dev/shop"
    assert session.title == "Checkout totals in Decimal"  # the last custom_title record
    assert session.started_at == pytest.approx(1770710400.0)  # 2026-02-10T08:00:00Z
    assert session.resume_command == f"cd /home/dev/shop && qwen --resume {SID}"


def test_web_search_taints_the_following_answer(isolated_home: Path) -> None:
    index = read_fresh(reader, placed(isolated_home))
    assert {t.key: t.tainted for t in index.turns.values() if t.role == "assistant"} == {
        "a-1": False,
        "a-2": True,
        "a-3": False,
    }


def test_sub_agent_records_only_when_asked(isolated_home: Path) -> None:
    path = placed(isolated_home)
    assert (SID, "x-1") not in read_fresh(reader, path).turns
    turn = read_fresh(reader, path, ReaderOptions(include_subagents=True)).turns[(SID, "x-1")]
    assert turn.subagent and turn.text == "Sub-agent found cart.py imports float helpers."


def test_incremental_equals_fresh(isolated_home: Path) -> None:
    source = fixture(HOST, JSONL)
    dest = chats(isolated_home) / "grown.jsonl"
    grown = grow_file_incrementally(reader, source, dest, line_cuts(source.read_bytes()))
    fresh = read_fresh(reader, dest)
    assert grown.comparable() == fresh.comparable()
    assert grown.sessions == fresh.sessions


def test_malformed_line_is_reported_and_the_rest_indexed(isolated_home: Path) -> None:
    path = placed(isolated_home)
    lines = path.read_bytes().splitlines(keepends=True)
    lines.insert(3, b'{"uuid": "bad", "type": "user", "message": \n')
    path.write_bytes(b"".join(lines))
    result = reader.read(path, None, ReaderOptions())
    assert [p.line for p in result.problems] == [4]
    assert len(result.turns) == 7


def test_file_that_is_not_a_chat_record_log_is_unsupported(isolated_home: Path) -> None:
    path = chats(isolated_home) / "other.jsonl"
    path.write_text(json.dumps({"formatVersion": 3, "events": []}) + "\n")
    result = reader.read(path, None, ReaderOptions())
    assert result.unsupported and result.turns == ()


def test_older_gemini_style_document(isolated_home: Path) -> None:
    d = isolated_home / ".qwen" / "tmp" / ("9" * 64) / "chats"
    d.mkdir(parents=True)
    path = d / LEGACY
    shutil.copyfile(fixture(HOST, LEGACY), path)
    assert reader.source_for(path) == path
    index = read_fresh(reader, path)
    assert index.texts("user") == ["List the migrations"]
    assert index.texts("assistant") == ["There is one migration, 0001_init."]
    assert "quixotic" not in "\n".join(index.texts())  # a thought
    session = index.sessions[LEGACY_SID]
    assert session.title == "List the migrations"
    assert session.resume_command == f"qwen --resume {LEGACY_SID}"  # hash dir: cwd unknown

    rewritten = MemoryIndex()
    doc = json.loads(fixture(HOST, LEGACY).read_bytes())
    for n in (1, 3):
        path.write_text(json.dumps({**doc, "messages": doc["messages"][:n]}))
        assert rewritten.read(reader, path).replace
    assert rewritten.comparable() == index.comparable()


def test_source_for_skips_side_files(isolated_home: Path) -> None:
    d = chats(isolated_home)
    assert reader.source_for(d / JSONL) == d / JSONL
    assert reader.source_for(d / f"{SID}.ledger.jsonl") is None
    assert reader.source_for(isolated_home / ".qwen" / "settings.json") is None


def test_roots_honour_qwen_runtime_dir(tmp_path: Path) -> None:
    home = tmp_path / "h"
    default = [home / ".qwen" / "projects", home / ".qwen" / "tmp"]
    assert reader.roots(HostEnv(home=home, environ={})) == default
    assert reader.roots(HostEnv(home=home, environ={}, platform="win32")) == default
    env = HostEnv(home=home, environ={"QWEN_RUNTIME_DIR": str(tmp_path / "rt")})
    assert reader.roots(env) == [tmp_path / "rt" / "projects", tmp_path / "rt" / "tmp", *default]


def test_two_records_glued_on_one_line_are_both_indexed_and_reported(isolated_home: Path) -> None:
    path = placed(isolated_home)
    lines = path.read_bytes().splitlines(keepends=True)
    glued = lines[0].rstrip(b"\n") + lines[1]
    path.write_bytes(glued + b"".join(lines[2:]))
    fresh = reader.read(path, None, ReaderOptions())
    assert [p.line for p in fresh.problems] == [1]
    assert "glued" in fresh.problems[0].message
    assert {t.key for t in fresh.turns} >= {"u-1", "a-1"}
    assert len(fresh.turns) == 7


def test_problems_are_reported_even_when_nothing_in_the_file_parsed(isolated_home: Path) -> None:
    path = chats(isolated_home) / "broken.jsonl"
    path.write_bytes(b'{"uuid": "x", "type": \n')
    result = reader.read(path, None, ReaderOptions())
    assert [p.line for p in result.problems] == [1]


def test_session_id_is_the_file_name_the_resume_command_needs(isolated_home: Path) -> None:
    path = chats(isolated_home) / "5d0c0a51-0000-4000-8000-000000000001.jsonl"
    path.write_bytes(fixture(HOST, JSONL).read_bytes())  # records name another session
    index = read_fresh(reader, path)
    assert set(index.sessions) == {path.stem}
    resume = index.sessions[path.stem].resume_command
    assert resume is not None and resume.endswith(f"qwen --resume {path.stem}")


def test_project_is_the_first_records_cwd(isolated_home: Path) -> None:
    path = placed(isolated_home)
    lines = path.read_bytes().splitlines(keepends=True)
    moved = [lines[0]] + [
        ln.replace(b'"/home/dev/shop"', b'"/home/dev/shop/sub"') for ln in lines[1:]
    ]
    path.write_bytes(b"".join(moved))
    assert read_fresh(reader, path).sessions[SID].project == "/home/dev/shop"


def test_older_gemini_style_document_streamed_reads_the_same(isolated_home: Path) -> None:
    d = isolated_home / ".qwen" / "tmp" / ("9" * 64) / "chats"
    d.mkdir(parents=True)
    path = d / LEGACY
    shutil.copyfile(fixture(HOST, LEGACY), path)
    whole = reader.read(path, None, ReaderOptions())
    assert [t.text for t in whole.turns] == [
        "List the migrations",
        "There is one migration, 0001_init.",
    ]
    assert reader.read(path, None, ReaderOptions(stream_document_bytes=0)) == whole
