"""Copilot CLI reader, against the samples in ``tests/fixtures/copilot-cli``.

``049410b4-*`` is a real 1.0.78 session; ``agent-sessions-stage0-small-synthetic``
is a hand-authored schema-coverage file. The queued/steering, injected-source,
compaction, web-tool, ``session.snapshot_rewind`` and legacy-layout events below
are hand-made from ``shared/formats/copilot-cli/README.md`` §1 (layouts), §4
(what to index) and §5 (rewind): no public sample shows them.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from backscroll.model import ReaderOptions
from backscroll.readers.base import HostEnv
from backscroll.readers.copilot_cli import CopilotCliReader
from tests.readers.util import MemoryIndex, fixture, grow_file_incrementally, line_cuts, read_fresh

HOST = "copilot-cli"
SID = "049410b4-c1df-44ee-87a5-caa1c349091e"
PROMPT = "In src/orders.py make average_item_price return 0 when the cart has no items."
SYNTHETIC = "agent-sessions-stage0-small-synthetic.jsonl"

reader = CopilotCliReader()


def session_dir(home: Path, sid: str = SID) -> Path:
    d = home / ".copilot" / "session-state" / sid
    d.mkdir(parents=True, exist_ok=True)
    return d


def real_session(home: Path) -> Path:
    d = session_dir(home)
    shutil.copyfile(fixture(HOST, "049410b4-events.jsonl"), d / "events.jsonl")
    shutil.copyfile(fixture(HOST, "049410b4-workspace.yaml"), d / "workspace.yaml")
    return d / "events.jsonl"


def event(eid: str, kind: str, data: dict[str, object], **extra: object) -> dict[str, object]:
    return {
        "type": kind,
        "data": data,
        "id": eid,
        "timestamp": "2026-03-01T09:00:00.000Z",
        "parentId": None,
        **extra,
    }


def start(sid: str = "s-1", version: int = 1) -> dict[str, object]:
    return event(
        "e0",
        "session.start",
        {
            "sessionId": sid,
            "version": version,
            "startTime": "2026-03-01T09:00:00.000Z",
            "context": {"cwd": "/srv/shop"},
        },
    )


def write_events(path: Path, events: list[dict[str, object]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(e) + "\n" for e in events))
    return path


# --------------------------------------------------------------------------- real sample


def test_real_session_indexes_prompt_and_answer(isolated_home: Path) -> None:
    index = read_fresh(reader, real_session(isolated_home))
    assert index.texts("user") == [PROMPT]
    assert len(index.texts("assistant")) == 1
    assert index.texts("assistant")[0].startswith("The error indicates that the **`paths`** field")
    assert index.texts("summary") == []
    assert ("049410b4-c1df-44ee-87a5-caa1c349091e", "f18b1a9d-941d-45d5-b52f-81f4d2ed4a17") in (
        index.turns
    )


def test_reasoning_system_prompt_and_injected_context_are_not_searchable(
    isolated_home: Path,
) -> None:
    everything = "\n".join(read_fresh(reader, real_session(isolated_home)).texts())
    assert "Alternatively" not in everything  # only in reasoningText
    assert "sql_tables" not in everything  # only in transformedContent
    assert "BACKGROUND" not in everything  # only in the system prompt
    assert "intentionSummary" not in everything and "view file" not in everything


def test_real_session_metadata(isolated_home: Path) -> None:
    session = read_fresh(reader, real_session(isolated_home)).sessions[SID]
    assert session.title == PROMPT  # workspace.yaml `name`
    assert session.project == "/work"  # the cwd recorded in the sample itself
    assert session.started_at == pytest.approx(1785962413.471)  # 2026-08-05T20:40:13.471Z
    assert session.resume_command == f"copilot --resume={SID}"


def test_incremental_equals_fresh(isolated_home: Path) -> None:
    source = fixture(HOST, "049410b4-events.jsonl")
    d = session_dir(isolated_home)
    shutil.copyfile(fixture(HOST, "049410b4-workspace.yaml"), d / "workspace.yaml")
    grown = grow_file_incrementally(
        reader, source, d / "events.jsonl", line_cuts(source.read_bytes())
    )
    fresh = read_fresh(reader, d / "events.jsonl")
    assert grown.comparable() == fresh.comparable()
    assert grown.sessions == fresh.sessions


def test_renaming_in_workspace_yaml_rereads_the_title(isolated_home: Path) -> None:
    events = real_session(isolated_home)
    workspace = events.with_name("workspace.yaml")
    assert reader.source_for(workspace) == events
    index = MemoryIndex()
    index.read(reader, events)
    workspace.write_text(workspace.read_text().replace(f"name: {PROMPT}", "name: Empty carts"))
    result = index.read(reader, events)
    assert result.turns == ()
    assert index.sessions[SID].title == "Empty carts"


def test_rewind_truncation_then_whole_reread_drops_the_rewound_turns(isolated_home: Path) -> None:
    events = real_session(isolated_home)
    index = MemoryIndex()
    index.read(reader, events)
    assert len(index.turns) == 2
    lines = events.read_bytes().splitlines(keepends=True)
    events.write_bytes(b"".join(lines[:5]))  # /rewind keeps up to the prompt
    index.cursor = None  # the indexer re-reads a shorter file whole
    result = index.read(reader, events)
    assert result.replace
    assert index.texts() == [PROMPT]
    assert index.comparable() == read_fresh(reader, events).comparable()


def test_snapshot_rewind_event_met_while_tailing_rereads_whole(isolated_home: Path) -> None:
    path = session_dir(isolated_home, "s-1") / "events.jsonl"
    head = [
        start(),
        event("e1", "user.message", {"content": "Add a discount code field"}),
        event("e2", "assistant.message", {"content": "Added the field to checkout."}),
        event("e3", "user.message", {"content": "Now remove it again"}),
        event("e4", "assistant.message", {"content": "Removed."}),
    ]
    write_events(path, head)
    index = MemoryIndex()
    index.read(reader, path)
    with open(path, "a") as fh:
        rewind = event("e5", "session.snapshot_rewind", {"upToEventId": "e3", "eventsRemoved": 2})
        fh.write(json.dumps(rewind) + "\n")
        fh.write(json.dumps(event("e6", "user.message", {"content": "Keep it"})) + "\n")
    result = index.read(reader, path)
    assert result.replace
    assert index.texts() == [
        "Add a discount code field",
        "Added the field to checkout.",
        "Keep it",
    ]
    assert index.comparable() == read_fresh(reader, path).comparable()


# --------------------------------------------------------------------------- synthetic sample


def test_synthetic_sample_leaves_sub_agent_events_out_by_default(isolated_home: Path) -> None:
    path = session_dir(isolated_home, "copilot_stage0_small") / "events.jsonl"
    shutil.copyfile(fixture(HOST, SYNTHETIC), path)
    index = read_fresh(reader, path)
    assert len(index.texts("user")) == 2
    assert len(index.texts("assistant")) == 4
    assert index.texts("user")[0] == "List the files"
    assert index.texts("assistant")[:2] == ["Listing the files.", "Done"]
    everything = "\n".join(index.texts())
    assert "a.txt" not in everything  # only in the shell tool's result
    assert "Example model error" not in everything  # a session.error
    assert not any(t.subagent for t in index.turns.values())

    with_sub = read_fresh(reader, path, ReaderOptions(include_subagents=True))
    assert [t.subagent for t in with_sub.turns.values()].count(True) == 1
    assert len(with_sub.turns) == len(index.turns) + 1
    grown = grow_file_incrementally(
        reader, path, path.with_name("copy.jsonl"), line_cuts(path.read_bytes())
    )
    assert grown.comparable() == index.comparable()


def test_queued_and_steering_prompts_count_injected_ones_do_not(isolated_home: Path) -> None:
    path = session_dir(isolated_home, "s-1") / "events.jsonl"
    write_events(
        path,
        [
            start(),
            event("e1", "user.message", {"content": "Fix the tax rounding", "delivery": "idle"}),
            event("e2", "user.message", {"content": "Use banker's rounding", "delivery": "queued"}),
            event("e3", "user.message", {"content": "Also the VAT", "delivery": "steering"}),
            event("e4", "user.message", {"content": "Skill text", "source": "skill-pdf"}),
            event("e5", "user.message", {"content": "From a peer", "source": "agent-12"}),
            event("e6", "user.message", {"content": "Go on", "isAutopilotContinuation": True}),
        ],
    )
    assert read_fresh(reader, path).texts("user") == [
        "Fix the tax rounding",
        "Use banker's rounding",
        "Also the VAT",
    ]


def test_compaction_summary_is_indexed_when_it_succeeded(isolated_home: Path) -> None:
    path = session_dir(isolated_home, "s-1") / "events.jsonl"
    write_events(
        path,
        [
            start(),
            event(
                "e1",
                "session.compaction_complete",
                {"success": True, "summaryContent": "We moved tax rules to rules.py."},
            ),
            event("e2", "session.compaction_complete", {"success": False, "error": "boom"}),
        ],
    )
    assert read_fresh(reader, path).texts("summary") == ["We moved tax rules to rules.py."]


def test_web_fetch_taints_the_answers_until_the_next_prompt(isolated_home: Path) -> None:
    path = session_dir(isolated_home, "s-1") / "events.jsonl"
    write_events(
        path,
        [
            start(),
            event("e1", "user.message", {"content": "What does the RFC say?"}),
            event(
                "e2",
                "assistant.message",
                {"content": "Fetching it.", "toolRequests": [{"name": "web_fetch"}]},
            ),
            event("e3", "tool.execution_complete", {"result": {"content": "RFC text"}}),
            event("e4", "assistant.message", {"content": "It says MUST."}),
            event("e5", "user.message", {"content": "Thanks"}),
            event("e6", "assistant.message", {"content": "You're welcome."}),
        ],
    )
    fresh = read_fresh(reader, path)
    assert {t.text: t.tainted for t in fresh.turns.values() if t.role == "assistant"} == {
        "Fetching it.": False,
        "It says MUST.": True,
        "You're welcome.": False,
    }
    grown = grow_file_incrementally(
        reader, path, path.with_name("copy.jsonl"), line_cuts(path.read_bytes())
    )
    assert grown.comparable() == fresh.comparable()


def test_malformed_line_is_reported_and_the_rest_indexed(isolated_home: Path) -> None:
    events = real_session(isolated_home)
    lines = events.read_bytes().splitlines(keepends=True)
    lines.insert(4, b'{"type": "user.message", "data": {"content": "half\n')
    events.write_bytes(b"".join(lines))
    result = reader.read(events, None, ReaderOptions())
    assert [p.line for p in result.problems] == [5]
    assert len(result.turns) == 2


def test_unknown_schema_version_is_unsupported(isolated_home: Path) -> None:
    path = write_events(
        session_dir(isolated_home, "s-1") / "events.jsonl",
        [start(version=2), event("e1", "user.message", {"content": "hi"})],
    )
    result = reader.read(path, None, ReaderOptions())
    assert result.unsupported == "unknown format version 2 in events.jsonl"
    assert result.turns == ()


# --------------------------------------------------------------------------- layouts


def test_flat_legacy_stream_and_history_documents(isolated_home: Path) -> None:
    state = isolated_home / ".copilot" / "session-state"
    flat = write_events(
        state / "s-2.jsonl", [start("s-2"), event("e1", "user.message", {"content": "Old one"})]
    )
    assert reader.source_for(flat) == flat
    assert read_fresh(reader, flat).texts() == ["Old one"]

    history = isolated_home / ".copilot" / "history-session-state" / "h-1.json"
    history.parent.mkdir(parents=True)
    history.write_text(
        json.dumps(
            {
                "sessionId": "h-1",
                "startTime": "2025-10-08T21:10:16.398Z",
                "chatMessages": [
                    {"role": "user", "content": "please add mcp servers"},
                    {"role": "assistant", "content": "sure"},
                    {"role": "tool", "content": "tool output stays out"},
                ],
            }
        )
    )
    assert reader.source_for(history) == history
    index = read_fresh(reader, history)
    assert index.texts() == ["please add mcp servers", "sure"]
    assert index.sessions["h-1"].resume_command == "copilot --resume=h-1"


def test_source_for_ignores_sidecars_and_databases(isolated_home: Path) -> None:
    base = isolated_home / ".copilot"
    assert reader.source_for(base / "session-state" / SID / "plan.md") is None
    assert reader.source_for(base / "session-state" / SID / "checkpoints" / "index.md") is None
    assert reader.source_for(base / "session-store.db") is None


def test_roots_honour_copilot_home_and_old_xdg_state(tmp_path: Path) -> None:
    home = tmp_path / "h"
    default = [home / ".copilot" / "session-state", home / ".copilot" / "history-session-state"]
    assert reader.roots(HostEnv(home=home, environ={})) == default
    assert reader.roots(HostEnv(home=home, environ={}, platform="win32")) == default
    env = HostEnv(
        home=home,
        environ={"COPILOT_HOME": str(tmp_path / "c"), "XDG_STATE_HOME": str(tmp_path / "s")},
    )
    assert reader.roots(env) == [
        tmp_path / "c" / "session-state",
        tmp_path / "c" / "history-session-state",
        *default,
        tmp_path / "s" / ".copilot" / "session-state",
        tmp_path / "s" / ".copilot" / "history-session-state",
    ]


def test_workspace_yaml_is_parsed_by_libyaml_where_present_with_the_same_result() -> None:
    """workspace.yaml is read again at every change to its session: the C loader
    (7x faster) where PyYAML has it, reading exactly what the Python one reads."""
    import yaml

    from backscroll.readers import copilot_cli

    if yaml.__with_libyaml__:
        assert copilot_cli.yaml_loader() is yaml.CSafeLoader
    samples = sorted(Path(__file__).parents[1].joinpath("fixtures", "copilot-cli").rglob("*.yaml"))
    assert samples
    for sample in samples:
        text = sample.read_text()
        assert yaml.load(text, Loader=copilot_cli.yaml_loader()) == yaml.safe_load(text), sample
