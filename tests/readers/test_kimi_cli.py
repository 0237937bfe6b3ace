"""Kimi CLI / Kimi Code reader against ``tests/fixtures/kimi-cli`` (see SOURCES.md).

The Kimi CLI files (``constructed-*``) are hand-made from kimi-cli's source; the
Kimi Code wires are peer fixtures (``deja-vu-*`` synthetic, ``agent-sessions-*``
trimmed from a real run) with the matching ``state.json``.
"""

from __future__ import annotations

import json
import re
import shutil
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO

import pytest

from backscroll.model import ReaderOptions
from backscroll.protocol import SessionParams
from backscroll.readers.base import HostEnv, Line, Tail
from backscroll.readers.kimi_cli import KimiCliReader
from backscroll.store import open_writer
from backscroll.store.queries import run_sync
from backscroll.store.queries import session as session_query
from tests.daemon.harness import dump_turns
from tests.readers.util import (
    MemoryIndex,
    append_lines,
    fixture,
    grow_file_incrementally,
    index_home,
    line_cuts,
    read_fresh,
    role_counts,
)

reader = KimiCliReader()
WORK_HASH = "fcfa19e37c9d6520c81afdca5fc8af94"  # md5("/home/dev/src/widget")
SID = "0c9d7a52-6e1b-4f3a-8d24-51b7e0a9c6f3"


def _cli_session(home: Path) -> Path:
    session = home / ".kimi" / "sessions" / WORK_HASH / SID
    session.mkdir(parents=True)
    shutil.copy(fixture("kimi-cli", "constructed-wire.jsonl"), session / "wire.jsonl")
    return session / "wire.jsonl"


def _code_session(home: Path, sample: str, name: str = "session_fixture01") -> Path:
    agent = home / ".kimi-code" / "sessions" / "wd_demo_0123456789ab" / name / "agents" / "main"
    agent.mkdir(parents=True)
    shutil.copy(fixture("kimi-cli", sample), agent / "wire.jsonl")
    return agent / "wire.jsonl"


def test_kimi_cli_prompts_steering_and_joined_replies(isolated_home: Path) -> None:
    index = read_fresh(reader, _cli_session(isolated_home))
    assert index.texts("user") == [
        "Why does `make test` fail on a clean checkout?",
        "ok, add a check that prints a hint",
        "and keep it POSIX sh",  # SteerInput
    ]
    assert index.texts("assistant")[0] == "Let me read the Makefile first."
    assert len(index.texts("assistant")) == 3
    text = "\n".join(index.texts())
    assert "Probably a missing generated file" not in text  # think part
    assert "go test ./..." not in text  # tool result


def test_kimi_cli_project_from_kimi_json_title_from_state_json(isolated_home: Path) -> None:
    path = _cli_session(isolated_home)
    shutil.copy(fixture("kimi-cli", "constructed-kimi.json"), isolated_home / ".kimi" / "kimi.json")
    session = read_fresh(reader, path).sessions[SID]
    assert session.project == "/home/dev/src/widget"
    assert session.title == "Why does `make test` fail on a clean checkout?"
    assert session.resume_command == f"cd /home/dev/src/widget && kimi -r {SID}"
    assert session.started_at == 1785300000.0
    state = json.loads(fixture("kimi-cli", "constructed-state.json").read_text())
    state["custom_title"] = "protoc hint"
    (path.parent / "state.json").write_text(json.dumps(state))
    assert read_fresh(reader, path).sessions[SID].title == "protoc hint"


def test_kimi_cli_title_from_a_long_first_prompt_is_cut_to_50_characters(
    isolated_home: Path,
) -> None:
    # (The format notes: the first TurnBegin input, shortened to 50 characters,
    # what Kimi itself shows.)
    path = _cli_session(isolated_home)
    short = "Why does `make test` fail on a clean checkout?"
    long = "Why does `make test` fail on a clean checkout of the release branch today?"
    path.write_text(path.read_text().replace(short, long))
    title = read_fresh(reader, path).sessions[SID].title
    assert title == long[:49].rstrip() + "…" and len(title) <= 50
    assert read_fresh(reader, path).texts("user")[0] == long  # the prompt itself is whole


def _compacted_session(home: Path) -> Path:
    """The wire with the context it restarted at its compaction, the one before
    rotated away (format notes A3, A5)."""
    path = _cli_session(home)
    context = path.parent / "context.jsonl"
    shutil.copy(fixture("kimi-cli", "constructed-context-after-compaction.jsonl"), context)
    shutil.copy(fixture("kimi-cli", "constructed-context.jsonl"), path.parent / "context_1.jsonl")
    return path


SUMMARY = (
    "The user asked why `make test` fails on a clean checkout; cause: the `gen` target "
    "needs `protoc`. Now adding a hint target, POSIX sh only."
)


def test_kimi_cli_compaction_summary_comes_from_the_restarted_context(
    isolated_home: Path,
) -> None:
    path = _compacted_session(isolated_home)
    context = path.parent / "context.jsonl"
    assert reader.source_for(context) == context
    assert set(reader.discover(isolated_home / ".kimi" / "sessions")) == {
        path,
        context,
        path.parent / "context_1.jsonl",
    }
    index = read_fresh(reader, path)
    assert index.texts("summary") == [SUMMARY]
    assert role_counts(index)["summary"] == 1  # the context's own messages stay out
    for name in ("context.jsonl", "context_1.jsonl"):  # (the wire's read takes them)
        assert read_fresh(reader, path.parent / name).texts() == []


def test_a_compaction_summary_is_timed_and_placed_where_the_wire_compacted(
    isolated_home: Path, tmp_path: Path
) -> None:
    # The summary was written when the wire says CompactionEnd, after the turns
    # it summarises and before the reply that followed; the session opens its
    # wire however the files are read.
    path = _compacted_session(isolated_home)
    (summary,) = [t for t in read_fresh(reader, path).turns.values() if t.role == "summary"]
    assert summary.timestamp == 1785300038.0  # CompactionEnd's
    db = tmp_path / "index.db"
    _index(isolated_home, db)
    writer = open_writer(db)
    try:
        shown = run_sync(writer.conn, session_query(SessionParams(session=SID)))
    finally:
        writer.close()
    assert shown["session"]["source_path"] == str(path)
    assert [t["text"] for t in shown["turns"]][-3:] == [
        "and keep it POSIX sh",
        SUMMARY,
        "Added a `check-protoc` target that prints an install hint; it uses only POSIX sh.",
    ]
    grown = grow_file_incrementally(
        reader, fixture("kimi-cli", "constructed-wire.jsonl"), path, line_cuts(path.read_bytes())
    )
    assert grown.comparable() == read_fresh(reader, path).comparable()


def test_kimi_code_typed_messages_and_joined_text_parts(isolated_home: Path) -> None:
    index = read_fresh(reader, _code_session(isolated_home, "deja-vu-kimi-code-wire.jsonl"))
    assert index.texts("user") == [
        "why does the jwks cache go stale after rotation?",
        "and the mid-stream needle?",
    ]
    assert index.texts("assistant") == [
        "The cache keeps serving the old kid after rotateKey; reload the jwks cache on "
        "rotation and add a clock-skew test.",
        "torn-tail mid-stream answer survives",
    ]
    assert "reasoning to be skipped" not in "\n".join(index.texts())


def test_kimi_code_real_wire_indexes_each_typed_message_once(isolated_home: Path) -> None:
    path = _code_session(isolated_home, "agent-sessions-kimi-code-small.wire.jsonl")
    shutil.copy(
        fixture("kimi-cli", "agent-sessions-kimi-code-state.json"),
        path.parent.parent.parent / "state.json",
    )
    index = read_fresh(reader, path)
    # turn.prompt / turn.steer repeat the typed input; only context.append_message counts.
    assert index.texts("user") == ["hi", "hi", "stop"]
    session = index.sessions["session_fixture01"]
    assert session.project == "/private/tmp/as-agent-lab/kimi/project"
    assert session.title == "hi"
    assert session.resume_command == (
        "cd /private/tmp/as-agent-lab/kimi/project && kimi --session session_fixture01"
    )


def test_kimi_code_injections_are_not_prompts_and_compaction_is_a_summary(
    isolated_home: Path,
) -> None:
    path = _code_session(isolated_home, "deja-vu-kimi-code-wire.jsonl")
    append_lines(
        path,
        {
            "type": "context.append_message",
            "time": 1782295300000,
            "message": {
                "role": "user",
                "content": [{"type": "text", "text": "<system>reminder</system>"}],
                "origin": {"kind": "injection"},
            },
        },
        {
            "type": "context.apply_compaction",
            "time": 1782295301000,
            "summary": "Diagnosed the stale jwks cache.",
        },
    )
    index = read_fresh(reader, path)
    assert "<system>reminder</system>" not in index.texts("user")
    assert index.texts("summary") == ["Diagnosed the stale jwks cache."]


def test_reading_as_the_wire_grows_equals_reading_it_whole(tmp_path: Path) -> None:
    for sample, dest in (
        ("constructed-wire.jsonl", tmp_path / ".kimi" / "sessions" / "h" / SID / "wire.jsonl"),
        (
            "deja-vu-kimi-code-wire.jsonl",
            tmp_path / ".kimi-code" / "sessions" / "wd_x" / "s1" / "agents" / "main" / "wire.jsonl",
        ),
    ):
        source = fixture("kimi-cli", sample)
        grown = grow_file_incrementally(reader, source, dest, line_cuts(source.read_bytes()))
        assert grown.comparable() == read_fresh(reader, dest).comparable(), sample


def test_sub_agent_wires_are_read_only_with_include_subagents(isolated_home: Path) -> None:
    path = _cli_session(isolated_home)
    sub = path.parent / "subagents" / "agent-7" / "wire.jsonl"
    sub.parent.mkdir(parents=True)
    shutil.copy(path, sub)
    assert reader.source_for(sub) == sub
    assert read_fresh(reader, sub).texts() == []
    index = MemoryIndex()
    index.read(reader, sub, ReaderOptions(include_subagents=True))
    assert index.turns and all(t.subagent and t.session_id == SID for t in index.turns.values())
    assert all(key.startswith("agent-7:") for _, key in index.turns)


def test_kimi_work_internal_sessions_are_not_ours(isolated_home: Path) -> None:
    path = _code_session(isolated_home, "deja-vu-kimi-code-wire.jsonl", name="ctitle-abc")
    assert reader.source_for(path) is None


def test_default_roots_and_env_overrides(tmp_path: Path) -> None:
    home = tmp_path / "h"
    assert reader.roots(HostEnv(home=home)) == [
        home / ".kimi" / "sessions",
        home / ".kimi-code" / "sessions",
    ]
    env = HostEnv(
        home=home,
        environ={"KIMI_SHARE_DIR": str(tmp_path / "s"), "KIMI_CODE_HOME": str(tmp_path / "c")},
        platform="darwin",
    )
    assert reader.roots(env) == [tmp_path / "s" / "sessions", tmp_path / "c" / "sessions"]


def _index(home: Path, db: Path) -> None:
    """One pass of the indexer over ``home`` into ``db``, as ``backscroll index`` does."""
    index_home(home, db)


def _work_dir(home: Path) -> Path:
    work = home / ".kimi" / "sessions" / WORK_HASH
    work.mkdir(parents=True, exist_ok=True)
    shutil.copy(fixture("kimi-cli", "constructed-kimi.json"), home / ".kimi" / "kimi.json")
    return work


def test_a_session_without_a_wire_is_read_from_its_context_and_from_the_flat_file(
    isolated_home: Path,
) -> None:
    # A session kimi-cli lists and resumes from its context alone (session.py):
    # the flat <id>.jsonl from before session directories, or <id>/context.jsonl.
    work = _work_dir(isolated_home)
    flat = work / f"{SID}.jsonl"
    shutil.copy(fixture("kimi-cli", "constructed-context.jsonl"), flat)
    other = "11111111-2222-4333-8444-555555555555"
    (work / other).mkdir()
    context = work / other / "context.jsonl"
    shutil.copy(fixture("kimi-cli", "constructed-context.jsonl"), context)
    assert set(reader.discover(isolated_home / ".kimi" / "sessions")) == {flat, context}
    for path, sid in ((flat, SID), (context, other)):
        index = read_fresh(reader, path)
        assert index.texts("user") == ["Why does `make test` fail on a clean checkout?"]
        assert index.texts("assistant") == [
            "Let me read the Makefile first.",
            "`test` depends on the `gen` target, which needs `protoc` on the PATH. On a clean "
            "checkout the generated files are missing, so the build stops before any test runs. "
            "Install `protoc` or commit the generated files.",
        ]
        text = "\n".join(index.texts())
        assert "Probably a missing generated file" not in text  # think part
        assert "go test ./..." not in text and "Kimi Code CLI" not in text  # tool, system prompt
        session = index.sessions[sid]
        assert session.project == "/home/dev/src/widget"
        assert session.title == "Why does `make test` fail on a clean checkout?"
        assert session.resume_command == f"cd /home/dev/src/widget && kimi -r {sid}"


def test_a_wireless_session_keeps_each_message_once_through_rotations_and_gives_way_to_its_wire(
    isolated_home: Path, tmp_path: Path
) -> None:
    """Indexed after every step as the daemon would, and fresh after each:
    kimi-cli moves the flat file into the session's directory, a turn is added,
    undo-to-checkpoint and compaction rotate the context (README A5), and at last
    a wire appears; each message stays once, and the wire's turns replace the
    context's prose."""
    work = _work_dir(isolated_home)
    context = work / SID / "context.jsonl"
    steer = b'{"role":"user","content":[{"type":"text","text":"and keep it POSIX sh"}]}\n'

    def moved() -> None:
        context.parent.mkdir()
        (work / f"{SID}.jsonl").rename(context)

    def second_turn() -> None:
        with open(context, "ab") as fh:
            fh.write(b'{"role": "_checkpoint", "id": 1}\n')
            fh.write(b'{"role":"user","content":[{"type":"text","text":"ok, add a check"}]}\n')

    def undo_to_checkpoint_1() -> None:
        old = context.with_name("context_1.jsonl")
        context.rename(old)
        kept = old.read_bytes().split(b'{"role": "_checkpoint", "id": 1}\n')[0]
        context.write_bytes(kept + b'{"role": "_checkpoint", "id": 1}\n' + steer)

    def compaction() -> None:
        context.rename(context.with_name("context_2.jsonl"))
        shutil.copy(fixture("kimi-cli", "constructed-context-after-compaction.jsonl"), context)

    def wire_appears() -> None:
        shutil.copy(fixture("kimi-cli", "constructed-wire.jsonl"), context.with_name("wire.jsonl"))

    shutil.copy(fixture("kimi-cli", "constructed-context.jsonl"), work / f"{SID}.jsonl")
    live = tmp_path / "live.db"
    steps = (None, moved, second_turn, undo_to_checkpoint_1, compaction, wire_appears)
    texts: list[list[str]] = []
    for n, step in enumerate(steps):
        if step is not None:
            step()
        _index(isolated_home, live)
        _index(isolated_home, fresh := tmp_path / f"fresh{n}.db")
        turns = dump_turns(live)
        assert turns == dump_turns(fresh), step
        texts.append([text for *_, text in turns])
        assert len(texts[-1]) == len(set(texts[-1])), (step, texts[-1])
    assert len(texts[0]) == 3 and texts[1] == texts[0]
    assert {"ok, add a check", "and keep it POSIX sh"} <= set(texts[3])  # (undone, yet said)
    assert len(texts[4]) == len(texts[3]) + 1  # the summary; the message it kept is read once
    wire = read_fresh(reader, context.with_name("wire.jsonl"))
    assert sorted(texts[5]) == sorted([*wire.texts(), *read_fresh(reader, context).texts()])
    assert not any(re.match(r"c\d+:", key) for _, _, key, *_ in turns)  # no context prose


# A session resumed with a wire (kimi-cli's Session.find keeps context.jsonl; the
# wire file is created by the first record it appends, and records only what
# comes after): the context keeps the history before the resume and receives the
# new messages too.

HISTORY = [
    "Why does `make test` fail on a clean checkout?",
    "Let me read the Makefile first.",
    "`test` depends on the `gen` target, which needs `protoc` on the PATH. On a clean "
    "checkout the generated files are missing, so the build stops before any test runs. "
    "Install `protoc` or commit the generated files.",
]
SYSTEM_PROMPT = {"role": "_system_prompt", "content": "You are Kimi Code CLI."}


def _said(role: str, text: str) -> dict[str, object]:
    return {"role": role, "content": [{"type": "text", "text": text}]}


def _wire(kind: str, at: float, **payload: object) -> dict[str, object]:
    return {"timestamp": at, "message": {"type": kind, "payload": payload}}


def _wire_turn(at: float, prompt: str, reply: str | None = None) -> list[dict[str, object]]:
    records = [_wire("TurnBegin", at, user_input=prompt), _wire("StepBegin", at + 0.1, n=1)]
    if reply is not None:
        records.append(_wire("ContentPart", at + 1, type="text", text=reply))
    return [*records, _wire("TurnEnd", at + 2)]


def _context_turn(checkpoint: int, prompt: str, reply: str) -> list[dict[str, object]]:
    return [
        {"role": "_checkpoint", "id": checkpoint},
        _said("user", prompt),
        _said("assistant", reply),
    ]


def _legacy_context(home: Path, *messages: dict[str, object]) -> Path:
    """A session from before wires: its context alone, without the system prompt
    line kimi-cli now writes first."""
    context = _work_dir(home) / SID / "context.jsonl"
    context.parent.mkdir()
    append_lines(context, *messages)
    return context


def _resume(context: Path) -> None:
    """``kimi -r``: a context without a system prompt gets one put first (a new
    file in its place, ``Context.write_system_prompt``), and the wire starts."""
    fresh = context.with_suffix(".tmp")
    fresh.write_bytes((json.dumps(SYSTEM_PROMPT) + "\n").encode() + context.read_bytes())
    fresh.replace(context)
    append_lines(context.with_name("wire.jsonl"), {"type": "metadata", "protocol_version": "1.10"})


def _compact(context: Path, summary: str, *kept: dict[str, object]) -> None:
    """Compaction: context.jsonl rotated, a new one opened with the summary and
    the messages it keeps (``KimiSoul.compact_context``)."""
    rotated = sorted(context.parent.glob("context_*.jsonl"))
    context.rename(context.with_name(f"context_{len(rotated) + 1}.jsonl"))
    marker = "<system>Previous context has been compacted. Here is the compaction output:</system>"
    opening = {
        "role": "user",
        "content": [{"type": "text", "text": marker}, {"type": "text", "text": summary}],
    }
    append_lines(context, SYSTEM_PROMPT, {"role": "_checkpoint", "id": 0}, opening, *kept)


def _titles(db: Path) -> list[tuple[str, str | None]]:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return sorted(conn.execute("SELECT session_id, title FROM sessions").fetchall())
    finally:
        conn.close()


def _index_each_step(home: Path, tmp_path: Path, *steps: Callable[[], None]) -> list[list[str]]:
    """Apply each step and index after it, as the daemon would, and fresh beside:
    both hold the same turns and titles. Returns each step's texts."""
    live = tmp_path / "live.db"
    texts: list[list[str]] = []
    for n, step in enumerate(steps):
        step()
        _index(home, live)
        _index(home, fresh := tmp_path / f"fresh{n}.db")
        turns = dump_turns(live)
        assert turns == dump_turns(fresh), step.__name__
        assert _titles(live) == _titles(fresh), step.__name__
        texts.append([text for *_, text in turns])
    return texts


def _session_context(home: Path) -> Path:
    """The test session's context file (its wire lies beside it)."""
    return home / ".kimi" / "sessions" / WORK_HASH / SID / "context.jsonl"


def _wire_keys(db: Path, *texts: str) -> bool:
    """Every turn with one of ``texts`` was read from the wire (its key names no
    context file: ``o:<offset>``, ``compaction:<hash>``)."""
    turns = dump_turns(db)
    return all(not re.match(r"c\d+:", key) for _, _, key, _, text in turns if text in texts)


def test_a_session_resumed_from_before_wires_keeps_its_history_and_each_new_turn_once(
    isolated_home: Path, tmp_path: Path
) -> None:
    context = _session_context(isolated_home)
    wire = context.with_name("wire.jsonl")
    summary = "The user asked why `make test` fails; cause: `protoc` is missing."

    def before_wires() -> None:
        lines = fixture("kimi-cli", "constructed-context.jsonl").read_bytes().splitlines(True)
        _legacy_context(isolated_home, *(json.loads(line) for line in lines[1:]))

    def resumed_wire_still_empty() -> None:
        _resume(context)

    def new_turn_in_wire_and_context() -> None:
        append_lines(wire, *_wire_turn(1785400000.0, "follow-up after resume", "Done."))
        append_lines(context, *_context_turn(1, "follow-up after resume", "Done."))

    def compaction_after_resume() -> None:
        append_lines(
            wire, _wire("CompactionBegin", 1785400010.0), _wire("CompactionEnd", 1785400011.0)
        )
        _compact(context, summary, _said("user", "follow-up after resume"))

    def turn_after_compaction() -> None:
        append_lines(wire, *_wire_turn(1785400020.0, "and once more", "Once more."))
        append_lines(context, *_context_turn(1, "and once more", "Once more."))

    texts = _index_each_step(
        isolated_home,
        tmp_path,
        before_wires,
        resumed_wire_still_empty,
        new_turn_in_wire_and_context,
        compaction_after_resume,
        turn_after_compaction,
    )
    assert sorted(texts[0]) == sorted(texts[1]) == sorted(HISTORY)
    new = ["follow-up after resume", "Done.", summary, "and once more", "Once more."]
    assert sorted(texts[2]) == sorted([*HISTORY, *new[:2]])
    assert sorted(texts[3]) == sorted([*HISTORY, *new[:3]])
    assert sorted(texts[4]) == sorted([*HISTORY, *new])
    assert _wire_keys(tmp_path / "live.db", *new)  # (the context's copies stay out)
    assert _titles(tmp_path / "live.db") == [(SID, "follow-up after resume")]  # as kimi-cli's


def test_a_resumed_session_whose_history_said_the_new_prompt_before_keeps_that_history(
    isolated_home: Path, tmp_path: Path
) -> None:
    context = _session_context(isolated_home)
    wire = context.with_name("wire.jsonl")

    def before_wires() -> None:
        _legacy_context(
            isolated_home,
            *_context_turn(0, "start the migration", "Started."),
            *_context_turn(1, "continue", "Step two done."),
            *_context_turn(2, "now the rollback", "Rollback written."),
        )

    def resumed_with_continue() -> None:
        _resume(context)
        append_lines(wire, *_wire_turn(1785400000.0, "continue", "Step three done."))
        append_lines(context, *_context_turn(3, "continue", "Step three done."))

    def and_again() -> None:
        append_lines(wire, *_wire_turn(1785400100.0, "continue", "Step four done."))
        append_lines(context, *_context_turn(4, "continue", "Step four done."))

    texts = _index_each_step(
        isolated_home, tmp_path, before_wires, resumed_with_continue, and_again
    )
    said = ["start the migration", "Started.", "continue", "Step two done."]
    said += ["now the rollback", "Rollback written."]
    assert sorted(texts[1]) == sorted([*said, "continue", "Step three done."])
    assert sorted(texts[2]) == sorted(
        [*said, "continue", "Step three done.", "continue", "Step four done."]
    )


def test_a_resumed_session_compacted_before_its_first_new_prompt_has_each_summary_once(
    isolated_home: Path, tmp_path: Path
) -> None:
    # `/compact` leaves no prompt in the context, so the wire covers it only from
    # the next one: the summary stays the context's, and the wire does not add it.
    context = _session_context(isolated_home)
    wire = context.with_name("wire.jsonl")
    summary = "Earlier: a missing `protoc` broke `make test`."

    def before_wires() -> None:
        _legacy_context(isolated_home, *_context_turn(0, HISTORY[0], HISTORY[1]))

    def resumed_and_compacted() -> None:
        _resume(context)
        append_lines(
            wire,
            _wire("TurnBegin", 1785400000.0, user_input="/compact"),
            _wire("CompactionBegin", 1785400000.5),
            _wire("CompactionEnd", 1785400001.0),
            _wire("ContentPart", 1785400001.1, type="text", text="The context has been compacted."),
            _wire("TurnEnd", 1785400001.2),
        )
        _compact(context, summary)

    def next_prompt() -> None:
        append_lines(wire, *_wire_turn(1785400100.0, "go on", "Going on."))
        append_lines(context, *_context_turn(1, "go on", "Going on."))

    texts = _index_each_step(
        isolated_home, tmp_path, before_wires, resumed_and_compacted, next_prompt
    )
    for step in texts[1:]:
        assert step.count(summary) == 1 and {HISTORY[0], HISTORY[1]} <= set(step)
    wire_said = ["/compact", "The context has been compacted.", "go on", "Going on."]
    assert sorted(texts[2]) == sorted([HISTORY[0], HISTORY[1], summary, *wire_said])


def test_a_wire_from_the_start_keeps_the_context_prose_out(
    isolated_home: Path, tmp_path: Path
) -> None:
    # The modern case: wire and context written together from the first turn,
    # here opened by a skill (its text, not the command, is the context's prompt)
    # and with a prompt said twice.
    session = _work_dir(isolated_home) / SID
    context, wire = session / "context.jsonl", session / "wire.jsonl"

    def skill_turn() -> None:
        session.mkdir()
        append_lines(wire, {"type": "metadata", "protocol_version": "1.10"})
        append_lines(wire, *_wire_turn(1785300000.0, "/skill:review", "Reviewed: two nits."))
        append_lines(context, SYSTEM_PROMPT)
        append_lines(
            context, *_context_turn(0, "# Review\nRead the diff, list nits.", "Reviewed: two nits.")
        )

    def typed_turns() -> None:
        for n, (prompt, reply) in enumerate((("fix them", "Fixed."), ("and test", "Tested."))):
            append_lines(wire, *_wire_turn(1785300100.0 + n * 100, prompt, reply))
            append_lines(context, *_context_turn(1 + n, prompt, reply))

    def the_first_prompt_again() -> None:
        append_lines(wire, *_wire_turn(1785300300.0, "fix them", "Nothing left."))
        append_lines(context, *_context_turn(3, "fix them", "Nothing left."))

    texts = _index_each_step(
        isolated_home, tmp_path, skill_turn, typed_turns, the_first_prompt_again
    )
    assert sorted(texts[-1]) == sorted(read_fresh(reader, wire).texts())
    assert not any(re.match(r"c\d+:", key) for _, _, key, *_ in dump_turns(tmp_path / "live.db"))


def test_a_resumed_session_whose_history_repeats_its_new_prompts_keeps_all_of_it(
    isolated_home: Path, tmp_path: Path
) -> None:
    # The history said "continue" three times; after the resume the user says it
    # three times again. The wire's part is the context's last three prompts,
    # not the first "continue" the history said.
    context = _session_context(isolated_home)
    wire = context.with_name("wire.jsonl")
    history = [
        ("start the migration", "Started."),
        ("continue", "H-step two."),
        ("continue", "H-step three."),
        ("continue", "H-step four."),
        ("ship it", "H-shipped."),
    ]

    def before_wires() -> None:
        turns = [m for n, (p, r) in enumerate(history) for m in _context_turn(n, p, r)]
        _legacy_context(isolated_home, *turns)

    def resumed() -> None:
        _resume(context)

    def new_continue(n: int, reply: str) -> Callable[[], None]:
        def step() -> None:
            append_lines(wire, *_wire_turn(1785400000.0 + 100 * n, "continue", reply))
            append_lines(context, *_context_turn(5 + n, "continue", reply))

        step.__name__ = f"continue_{n}"
        return step

    replies = ["N-one.", "N-two.", "N-three."]
    steps = [new_continue(n, reply) for n, reply in enumerate(replies)]
    texts = _index_each_step(isolated_home, tmp_path, before_wires, resumed, *steps)
    said = [text for pair in history for text in pair]
    for n, step_texts in enumerate(texts[2:], 1):
        assert sorted(step_texts) == sorted([*said, *["continue"] * n, *replies[:n]])
    assert _wire_keys(tmp_path / "live.db", *replies)


def test_a_wire_from_the_start_whose_first_prompt_is_an_image_keeps_the_context_prose_out(
    isolated_home: Path, tmp_path: Path
) -> None:
    # The image leaves no text in either file, yet it is the wire's first turn:
    # the context's first message is the wire's, and its reply is indexed once.
    session = _work_dir(isolated_home) / SID
    context, wire = session / "context.jsonl", session / "wire.jsonl"
    image = {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}

    def image_turn() -> None:
        session.mkdir()
        append_lines(
            wire,
            {"type": "metadata", "protocol_version": "1.10"},
            _wire("TurnBegin", 1785400000.0, user_input=[image]),
            _wire("ContentPart", 1785400001.0, type="text", text="It is a cat."),
            _wire("TurnEnd", 1785400002.0),
        )
        append_lines(
            context,
            SYSTEM_PROMPT,
            {"role": "_checkpoint", "id": 0},
            {"role": "user", "content": [image]},
            _said("assistant", "It is a cat."),
        )

    def typed_turn() -> None:
        append_lines(wire, *_wire_turn(1785400010.0, "make it a dog", "Done."))
        append_lines(context, *_context_turn(1, "make it a dog", "Done."))

    texts = _index_each_step(isolated_home, tmp_path, image_turn, typed_turn)
    assert texts[0] == ["It is a cat."]
    assert sorted(texts[1]) == sorted(["It is a cat.", "make it a dog", "Done."])
    assert not any(re.match(r"c\d+:", key) for _, _, key, *_ in dump_turns(tmp_path / "live.db"))


def _lines_read(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """From now on, the name of the file of every line a Tail reads, in order."""
    read: list[str] = []
    iter_stream = Tail.iter_stream

    def counted(self: Tail, fh: IO[bytes]) -> Iterator[Line]:
        for line in iter_stream(self, fh):
            read.append(self.path.name)
            yield line

    monkeypatch.setattr(Tail, "iter_stream", counted)
    return read


def test_a_wire_append_without_a_prompt_reads_no_context_file_again(
    isolated_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Each context file names the wire as its sidecar, so a wire append has them
    # read again: the memo of where the wire starts spares reading the history.
    context = _legacy_context(
        isolated_home, *[m for n in range(3) for m in _context_turn(n, f"old {n}", f"Old {n}.")]
    )
    _compact(context, "Earlier: old prompts.")
    append_lines(context, *_context_turn(1, "old 3", "Old 3."))
    wire = context.with_name("wire.jsonl")
    _resume(context)
    append_lines(wire, *_wire_turn(1785400000.0, "new prompt", "New reply."))
    append_lines(context, *_context_turn(2, "new prompt", "New reply."))
    live = tmp_path / "live.db"
    _index(isolated_home, live)

    read = _lines_read(monkeypatch)
    append_lines(wire, _wire("ContentPart", 1785400003.0, type="text", text="And more."))
    _index(isolated_home, live)
    assert [name for name in read if name != "wire.jsonl"] == []
    monkeypatch.undo()
    _index(isolated_home, fresh := tmp_path / "fresh.db")
    assert dump_turns(live) == dump_turns(fresh)
    texts = [text for *_, text in dump_turns(live)]
    assert {"old 0", "Old 3.", "new prompt", "New reply.", "And more."} <= set(texts)
    assert texts.count("new prompt") == 1


def test_a_context_append_without_a_prompt_reads_only_its_new_lines(
    isolated_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # kimi-cli appends to context.jsonl at every step: deciding again where the
    # wire starts read every context file from the start at each of them (the
    # cost grew with the session).
    context = _legacy_context(
        isolated_home, *[m for n in range(5) for m in _context_turn(n, f"old {n}", f"Old {n}.")]
    )
    wire = context.with_name("wire.jsonl")
    _resume(context)
    append_lines(wire, *_wire_turn(1785400000.0, "new prompt", "New reply."))
    append_lines(context, *_context_turn(5, "new prompt", "New reply."))
    live = tmp_path / "live.db"
    _index(isolated_home, live)

    read = _lines_read(monkeypatch)
    append_lines(context, _said("assistant", "A step more."))
    _index(isolated_home, live)
    assert read.count("context.jsonl") <= 1, read
    monkeypatch.undo()
    _index(isolated_home, fresh := tmp_path / "fresh.db")
    assert dump_turns(live) == dump_turns(fresh)
