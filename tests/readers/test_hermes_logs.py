"""Hermes per-session JSON logs and gateway transcripts (``$HERMES_HOME/sessions/``);
the shared helpers and fixtures come from ``test_hermes``."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from backscroll.errors import SourceBusy
from backscroll.model import ReaderOptions
from backscroll.readers.base import HostEnv
from backscroll.readers.hermes_logs import HermesLogReader
from tests.readers.test_hermes import add_session
from tests.readers.util import (
    append_lines,
    copy_fixture,
    host_connection,
    read_fresh,
)

LOG_SID = "20260102_090000_c0ffee"
LOG_NAME = f"session_{LOG_SID}.json"
GATEWAY_SID = "20260103_140000_5eed01ab"
GATEWAY_NAME = f"{GATEWAY_SID}.jsonl"


@pytest.fixture
def log_reader() -> HermesLogReader:
    return HermesLogReader()


@pytest.fixture
def log(tmp_path: Path) -> Path:
    return copy_fixture("hermes", LOG_NAME, tmp_path / ".hermes" / "sessions")


@pytest.fixture
def transcript(tmp_path: Path) -> Path:
    return copy_fixture("hermes", GATEWAY_NAME, tmp_path / ".hermes" / "sessions")


def rewrite(path: Path, change: Callable[[list[dict[str, Any]]], None]) -> None:
    """Rewrite a session log whole, as Hermes does after every turn."""
    doc = json.loads(path.read_text(encoding="utf-8"))
    change(doc["messages"])
    doc["message_count"] = len(doc["messages"])
    path.write_text(json.dumps(doc, indent=2), encoding="utf-8")


def local(stamp: str) -> float:
    return datetime.fromisoformat(stamp).timestamp()


def test_session_log_indexes_prompts_and_replies_only(
    log_reader: HermesLogReader, log: Path
) -> None:
    index = read_fresh(log_reader, log)
    assert index.texts("user") == [
        "Why does the nightly backup job fail on the build server?",
        "What does upstream say about snapshot retention?",
    ]
    assert index.texts("assistant") == [
        "Let me look at the cron log.",
        "The backup volume is full: rsync stops with ENOSPC. Prune the old snapshots.",
        "Upstream suggests keeping seven daily and four weekly snapshots.",
    ]
    assert {sid for sid, _ in index.turns} == {LOG_SID}
    assert sorted(t.seq for t in index.turns.values()) == [0, 1, 3, 6, 9]


def test_session_log_leaves_out_tools_reasoning_think_blocks_and_harness(
    log_reader: HermesLogReader, log: Path
) -> None:
    joined = "\n".join(read_fresh(log_reader, log).texts())
    for hidden in (
        "No space left on device",  # tool result
        "tail -n 50",  # tool call arguments
        "Start from the cron log.",  # reasoning
        "The cron log should say.",  # <think> block
        "Review the conversation above",  # background-review prompt ...
        "Saved: the build server",  # ... and its reply
        "Todo list snapshot",  # system message
        "You are Hermes Agent",  # system prompt
    ):
        assert hidden not in joined


def test_session_log_metadata(log_reader: HermesLogReader, log: Path) -> None:
    session = read_fresh(log_reader, log).sessions[LOG_SID]
    assert session.title == "Why does the nightly backup job fail on the build server?"
    assert session.project == "/srv/backup"  # the workdir of the first tool call
    # Naive ISO times from Python's datetime.now(): the machine's local time.
    assert session.started_at == pytest.approx(local("2026-01-02T09:00:00.123456"))
    assert session.updated_at == pytest.approx(local("2026-01-02T09:04:30.654321"))
    assert session.resume_command == f"hermes --resume {LOG_SID}"


def test_session_log_cwd_is_the_project_when_present(
    log_reader: HermesLogReader, log: Path
) -> None:
    doc = json.loads(log.read_text(encoding="utf-8"))
    doc["cwd"] = "/home/u/infra"
    log.write_text(json.dumps(doc), encoding="utf-8")
    assert read_fresh(log_reader, log).sessions[LOG_SID].project == "/home/u/infra"


def test_session_log_web_tool_taints_the_replies_after_it(
    log_reader: HermesLogReader, log: Path
) -> None:
    by_seq = {t.seq: t for t in read_fresh(log_reader, log).turns.values()}
    assert not by_seq[3].tainted
    assert by_seq[9].tainted


def test_session_log_rewrites_keep_keys_and_match_a_fresh_read(
    log_reader: HermesLogReader, log: Path
) -> None:
    index = read_fresh(log_reader, log)
    before = set(index.turns)
    rewrite(log, lambda messages: None)  # the same messages, written again
    index.read(log_reader, log)
    assert set(index.turns) == before

    rewrite(
        log,
        lambda messages: messages.extend(
            [
                {"role": "user", "content": "Prune them now"},
                {"role": "assistant", "content": "Pruned 23 snapshots."},
            ]
        ),
    )
    index.read(log_reader, log)
    assert set(index.turns) > before
    assert "Pruned 23 snapshots." in index.texts("assistant")

    # /undo: the last exchange is gone from the next rewrite.
    rewrite(log, lambda messages: messages.__delitem__(slice(-2, None)))
    index.read(log_reader, log)
    assert set(index.turns) == before
    assert index.comparable() == read_fresh(log_reader, log).comparable()


def test_gateway_transcript_is_indexed_with_message_times(
    log_reader: HermesLogReader, transcript: Path
) -> None:
    index = read_fresh(log_reader, transcript)
    assert index.texts() == [
        "Remind me which port the staging proxy listens on",
        "The staging proxy listens on port 8443.",
    ]
    turns = sorted(index.turns.values(), key=lambda t: t.seq)
    assert turns[1].timestamp == pytest.approx(local("2026-01-03T14:00:07.250000"))
    session = index.sessions[GATEWAY_SID]
    assert session.title == "Remind me which port the staging proxy listens on"
    assert session.started_at == pytest.approx(local("2026-01-03T14:00:00.500000"))
    assert session.updated_at == pytest.approx(local("2026-01-03T14:00:07.250000"))
    assert session.project is None


def test_gateway_transcript_appends_match_a_fresh_read(
    log_reader: HermesLogReader, transcript: Path
) -> None:
    index = read_fresh(log_reader, transcript)
    append_lines(transcript, {"role": "user", "content": "And production?"})
    append_lines(transcript, {"role": "assistant", "content": "Production uses 443."})
    index.read(log_reader, transcript)
    assert index.texts()[-2:] == ["And production?", "Production uses 443."]
    assert index.comparable() == read_fresh(log_reader, transcript).comparable()


def test_log_of_a_session_in_state_db_yields_nothing(
    log_reader: HermesLogReader, log: Path
) -> None:
    index = read_fresh(log_reader, log)
    assert index.turns
    db = copy_fixture("hermes", "state.db", log.parent.parent)
    conn = host_connection(db)
    add_session(conn, LOG_SID)
    conn.close()
    rewrite(log, lambda messages: None)
    result = index.read(log_reader, log)
    assert result.replace and result.turns == () and result.sessions == ()
    assert index.turns == {}  # what the log gave before is dropped: state.db wins


def test_log_of_a_session_not_in_state_db_is_indexed(
    log_reader: HermesLogReader, log: Path
) -> None:
    copy_fixture("hermes", "state.db", log.parent.parent)  # holds another session
    assert len(read_fresh(log_reader, log).turns) == 5


def test_locked_state_db_makes_the_log_wait(log_reader: HermesLogReader, log: Path) -> None:
    db = copy_fixture("hermes", "state.db", log.parent.parent)
    conn = host_connection(db)
    conn.execute("BEGIN EXCLUSIVE")
    with pytest.raises(SourceBusy):
        log_reader.read(log, None, ReaderOptions())
    conn.execute("ROLLBACK")
    conn.close()


def test_unreadable_state_db_is_reported_and_the_log_indexed(
    log_reader: HermesLogReader, log: Path
) -> None:
    (log.parent.parent / "state.db").write_bytes(b"this is not a database" * 100)
    result = log_reader.read(log, None, ReaderOptions())
    assert len(result.turns) == 5
    assert any("state.db" in p.message and LOG_SID in p.message for p in result.problems)


def test_log_caught_mid_write_raises_for_a_retry(
    log_reader: HermesLogReader, log: Path, transcript: Path
) -> None:
    log.write_bytes(log.read_bytes()[:200])
    with pytest.raises(ValueError):
        log_reader.read(log, None, ReaderOptions())
    transcript.write_bytes(transcript.read_bytes() + b'{"role": "user", "cont')
    with pytest.raises(ValueError, match="partial line"):
        log_reader.read(transcript, None, ReaderOptions())


def test_malformed_transcript_line_is_reported_and_the_rest_indexed(
    log_reader: HermesLogReader, transcript: Path
) -> None:
    lines = transcript.read_bytes().split(b"\n")
    transcript.write_bytes(b"\n".join([lines[0], b"{not json", *lines[1:]]))
    result = log_reader.read(transcript, None, ReaderOptions())
    assert [p.line for p in result.problems] == [2]
    assert len(result.turns) == 2


def test_log_without_messages_is_unsupported(log_reader: HermesLogReader, log: Path) -> None:
    log.write_text(json.dumps({"session_id": LOG_SID, "history": []}), encoding="utf-8")
    result = log_reader.read(log, None, ReaderOptions())
    assert result.unsupported and "no messages array" in result.unsupported


def test_log_roots_follow_hermes_home(log_reader: HermesLogReader) -> None:
    home = Path("/home/u")
    for platform in ("linux", "darwin", "win32"):
        env = HostEnv(home=home, platform=platform)
        assert log_reader.roots(env) == [home / ".hermes" / "sessions"]
    moved = HostEnv(home=home, environ={"HERMES_HOME": "/opt/hermes"})
    assert log_reader.roots(moved) == [Path("/opt/hermes/sessions")]


def test_log_source_for_takes_session_logs_and_transcripts_only(
    log_reader: HermesLogReader, log: Path, transcript: Path
) -> None:
    sessions = log.parent
    for other in (
        "sessions.json",  # the gateway's routing index
        f"request_dump_{LOG_SID}_20260102_090102_000001.json",  # a debug dump
        "session_notes.json",
        "notes.jsonl",
    ):
        (sessions / other).write_text("{}", encoding="utf-8")
        assert log_reader.source_for(sessions / other) is None
    assert log_reader.source_for(sessions.parent / LOG_NAME) is None  # not in sessions/
    assert sorted(log_reader.discover(sessions)) == sorted([log, transcript])
