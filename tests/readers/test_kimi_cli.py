"""Kimi CLI / Kimi Code reader against ``tests/fixtures/kimi-cli`` (see SOURCES.md).

The Kimi CLI files (``constructed-*``) are hand-made from kimi-cli's source; the
Kimi Code wires are peer fixtures (``deja-vu-*`` synthetic, ``agent-sessions-*``
trimmed from a real run) with the matching ``state.json``.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

from backscroll.model import ReaderOptions
from backscroll.protocol import SessionParams
from backscroll.readers.base import HostEnv
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
