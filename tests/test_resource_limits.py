"""Nothing a file or a client does can hang the daemon or take its memory.

Side files (``workspace.yaml``, ``.project_root``) are opened non-blocking and
read only when regular and small; whole JSON documents are capped by
``index.max_document_bytes``; floods of blank lines and empty ``.jsonl.zst``
files are passed over quickly. On the socket: a client that does not read its
replies is dropped after ``server.write_timeout_s``, replies are capped by
``server.max_reply_bytes`` and queries by ``server.max_query_chars``.
(Idle and busy connections at the connection cap: tests/test_socket_security.py.)
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import time
from pathlib import Path
from typing import Any

import pytest

from backscroll import protocol
from backscroll.client import Client, RemoteError
from backscroll.readers.base import TooLarge, read_json_document, read_side_file
from backscroll.readers.stream import stream_members
from tests.conftest import DaemonFactory
from tests.daemon.harness import DaemonProcess, claude_user_line, run_cli, session_uuid
from tests.test_socket_security import (
    DEADLINE,
    MARKER,
    normal_search,
    plant_corpus,
    read_reply,
)

FIXTURES = Path(__file__).parent / "fixtures"
COPILOT_EVENTS = FIXTURES / "copilot-cli" / "049410b4-events.jsonl"
GEMINI_DOC = FIXTURES / "gemini-cli" / "session-2025-12-01T21-45-5b959dae.json"
COPILOT_SID = "049410b4-c1df-44ee-87a5-caa1c349091e"
CODEX_ROLLOUT = (
    FIXTURES
    / "codex"
    / ("rollout-2026-05-11T11-26-55-019e1625-789d-76c0-80ab-3724b5ddb799.lines1-77.jsonl")
)


def log_records(d: DaemonProcess) -> list[dict[str, Any]]:
    return [json.loads(line) for line in d.stderr_text().splitlines() if line.strip()]


def copilot_session(home: Path) -> Path:
    """A real Copilot CLI session directory; returns where its workspace.yaml goes."""
    session = home / ".copilot" / "session-state" / COPILOT_SID
    session.mkdir(parents=True)
    shutil.copyfile(COPILOT_EVENTS, session / "events.jsonl")
    return session / "workspace.yaml"


def gemini_project(home: Path, slug: str = "proj") -> Path:
    """A Gemini CLI project directory (``tmp/<slug>``) holding the sample session."""
    project = home / ".gemini" / "tmp" / slug
    (project / "chats").mkdir(parents=True)
    shutil.copyfile(GEMINI_DOC, project / "chats" / GEMINI_DOC.name)
    return project


def codex_home(home: Path) -> Path:
    """A real Codex rollout; returns where its ``session_index.jsonl`` (titles) goes."""
    day = home / ".codex" / "sessions" / "2026" / "05" / "11"
    day.mkdir(parents=True)
    shutil.copyfile(CODEX_ROLLOUT, day / CODEX_ROLLOUT.name.replace(".lines1-77", ""))
    return home / ".codex" / "session_index.jsonl"


def hosts_with_turns(d: DaemonProcess) -> set[str]:
    hosts = d.call("status", {})["hosts"]
    return {h for h, entry in hosts.items() if entry["turns"] > 0}


# --------------------------------------------------------------------------- side files


def test_fifos_as_side_files_do_not_hang_indexing(
    daemon_factory: DaemonFactory, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    plant_corpus(home)
    os.mkfifo(copilot_session(home))  # opening it to read would block forever
    os.mkfifo(gemini_project(home) / ".project_root")
    os.mkfifo(codex_home(home))
    d = daemon_factory()
    d.sync()  # a hung writer would never answer (the client gives up after DEADLINE)
    assert {"claude-code", "copilot-cli", "gemini-cli", "codex"} <= hosts_with_turns(d)
    status = d.call("status", {})["daemon"]
    assert status["writer_alive"] and status["queue_depth"] == 0 and status["indexing"] is None
    normal_search(d)
    done = run_cli(tmp_path, "index", "--json", timeout=120)  # the direct path too
    assert done.returncode == 0, done.stderr


def test_side_files_linked_to_dev_zero_are_refused_not_read(
    daemon_factory: DaemonFactory, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    plant_corpus(home)
    copilot_session(home).symlink_to("/dev/zero")  # read_text() would never end
    (gemini_project(home) / ".project_root").symlink_to("/dev/zero")
    codex_home(home).symlink_to("/dev/zero")
    d = daemon_factory()
    d.sync()
    assert {"copilot-cli", "gemini-cli", "codex"} <= hosts_with_turns(d)
    rss = d.rss_kb()
    assert rss is None or rss < 400 * 1024, f"the daemon holds {rss} kB"
    with pytest.raises(OSError, match="not a regular file"):
        read_side_file(home / ".gemini" / "tmp" / "proj" / ".project_root")


def test_a_side_file_over_its_limit_is_not_read(tmp_path: Path) -> None:
    big = tmp_path / "workspace.yaml"
    big.write_bytes(b"name: x\n" + b"#" * (2 << 20))
    with pytest.raises(TooLarge, match=f"{big}: side file of"):
        read_side_file(big)
    assert read_side_file(big, max_bytes=4 << 20).startswith(b"name: x")


# --------------------------------------------------------------------------- documents


def cline_task(home: Path, task_id: str) -> Path:
    """Where a Cline extension task's ``ui_messages.json`` goes (its directory made)."""
    task = home / ".config/Code/User/globalStorage/saoudrizwan.claude-dev/tasks" / task_id
    task.mkdir(parents=True)
    return task / "ui_messages.json"


def padded_gemini_session(path: Path, session_id: str, pads: int) -> dict[str, Any]:
    """The real Gemini sample under ``session_id`` with ``pads`` ~8 KB user messages
    appended (each naming its number), written to ``path``; returns the document."""
    doc: dict[str, Any] = json.loads(GEMINI_DOC.read_text(encoding="utf-8"))
    doc["sessionId"] = session_id
    pad = {"timestamp": "2025-12-02T10:00:00Z", "type": "user", "content": "padding " * 1000}
    doc["messages"] += [
        {"id": f"pad-{n}", **pad, "content": f"padmark{n} {pad['content']}"} for n in range(pads)
    ]
    path.write_text(json.dumps(doc), encoding="utf-8")
    return doc


def test_an_oversized_json_document_is_skipped_with_a_warning_naming_it_and_the_option(
    daemon_factory: DaemonFactory, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    plant_corpus(home)
    small = cline_task(home, "1740000000001")
    shutil.copyfile(FIXTURES / "cline" / "ui_messages.json", small)
    big = cline_task(home, "1740000000002")
    rows = json.loads(small.read_text(encoding="utf-8"))
    pad = {"ts": 1740470500000, "type": "say", "say": "text", "text": "padding " * 1000}
    big.write_text(json.dumps(rows + [pad] * 300), encoding="utf-8")
    assert big.stat().st_size > 2_000_000
    d = daemon_factory(config="index:\n  max_document_bytes: 1000000\n")
    d.sync()
    sessions = {s["session_id"] for s in d.call("sessions", {"host": "cline"})["sessions"]}
    assert "1740000000001" in sessions
    assert "1740000000002" not in sessions
    normal_search(d)
    d.stop()
    logged = [r for r in log_records(d) if r.get("path") == str(big)]
    assert [r["event"] for r in logged] == ["read_error"]
    error = logged[0]["error"]
    assert f"JSON document of {big.stat().st_size} bytes" in error
    assert "over the 1000000-byte limit" in error and "index.max_document_bytes" in error


def test_a_gemini_session_over_the_document_cap_is_streamed_and_indexed_not_skipped(
    daemon_factory: DaemonFactory, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    plant_corpus(home)
    big = gemini_project(home, "big") / "chats" / "session-2025-12-02T10-00-0badf00d.json"
    doc = padded_gemini_session(big, "0badf00d-0000-4000-8000-000000000000", 300)
    assert big.stat().st_size > 2_000_000
    config = "index:\n  max_document_bytes: 1000000\n  stream_document_bytes: 500000\n"
    d = daemon_factory(config=config)
    d.sync()
    sessions = {s["session_id"] for s in d.call("sessions", {"host": "gemini-cli"})["sessions"]}
    assert doc["sessionId"] in sessions
    hits = d.call("search", {"query": "padmark299", "host": "gemini-cli"})["hits"]
    assert [h["session_id"] for h in hits] == [doc["sessionId"]]
    normal_search(d)
    d.stop()
    assert not [r for r in log_records(d) if r.get("path") == str(big)]


def test_read_json_document_never_reads_past_its_limit(tmp_path: Path) -> None:
    link = tmp_path / "session.json"
    link.symlink_to("/dev/zero")
    with pytest.raises(OSError, match="not a regular file"):
        read_json_document(link)
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)
    with pytest.raises(OSError, match="not a regular file"):
        read_json_document(fifo)


def test_a_streamed_read_refuses_a_fifo_or_device_in_the_documents_place(tmp_path: Path) -> None:
    link = tmp_path / "session.json"
    link.symlink_to("/dev/zero")
    with pytest.raises(OSError, match="not a regular file"):
        list(stream_members(link, "messages"))
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)
    with pytest.raises(OSError, match="not a regular file"):
        list(stream_members(fifo, "messages"))


# --------------------------------------------------------------------------- floods


def test_a_blank_line_flood_and_an_empty_jsonl_zst_do_not_stall_the_writer(
    daemon_factory: DaemonFactory, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    plant_corpus(home)
    project = home / ".claude" / "projects" / "-p"
    flood = project / f"{session_uuid(2)}.jsonl"
    with open(flood, "wb") as fh:
        fh.write(b"\n" * (40 << 20))  # 40 MB of empty lines
        fh.write(b" \t\r\n" * (1 << 20))  # and 4 MB of white-space ones
        line = claude_user_line(session_uuid(2), "after-flood", "pomelo after the flood")
        fh.write(line.encode())
    day = home / ".codex" / "sessions" / "2026" / "05" / "11"
    day.mkdir(parents=True)
    empty = day / "rollout-2026-05-11T11-26-55-019e1625-789d-76c0-80ab-3724b5ddb799.jsonl.zst"
    empty.write_bytes(b"")
    d = daemon_factory()
    d.sync()
    with Client(d.socket_path, timeout=DEADLINE) as c:
        hits = c.call("search", {"query": "pomelo", "fallback": False})["hits"]
    assert [h["turn_key"] for h in hits] == ["after-flood"]
    later = project / f"{session_uuid(3)}.jsonl"  # the writer goes on with new work
    later.write_text(claude_user_line(session_uuid(3), "later", "pomelo later"), encoding="utf-8")
    empty.write_bytes(b"")  # touched again: read again, still nothing
    d.sync()
    with Client(d.socket_path, timeout=DEADLINE) as c:
        hits = c.call("search", {"query": "pomelo", "fallback": False})["hits"]
    assert {h["turn_key"] for h in hits} == {"after-flood", "later"}
    status = d.call("status", {})["daemon"]
    assert status["writer_alive"] and status["queue_depth"] == 0
    d.stop()
    errors = [r for r in log_records(d) if r.get("path") == str(empty) and r["level"] != "debug"]
    assert errors == [], errors


# --------------------------------------------------------------------------- the socket


def test_a_client_that_never_reads_its_replies_is_dropped_while_others_are_served(
    daemon_factory: DaemonFactory, tmp_path: Path
) -> None:
    config = "server:\n  write_timeout_s: 1\n"
    plant_corpus(tmp_path / "home")
    d = daemon_factory(config=config)
    d.sync()
    slow = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    slow.connect(str(d.socket_path))
    slow.setblocking(False)
    params = {"query": MARKER, "max_turn_chars": 100000}
    line = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "search", "params": params}).encode()
    line += b"\n"
    sent = 0
    try:
        for _ in range(20000):  # replies pile up: the daemon's writes block on this client
            slow.send(line)
            sent += 1
    except BlockingIOError:
        pass
    assert sent > 100
    normal_search(d)  # served meanwhile
    deadline = time.monotonic() + DEADLINE
    while '"write_timeout"' not in d.stderr_text():
        assert time.monotonic() < deadline, "the non-reading client was never dropped"
        normal_search(d)
        time.sleep(0.05)  # polling interval of a condition, not a readiness wait
    slow.setblocking(True)
    slow.settimeout(DEADLINE)
    received = 0
    try:
        while chunk := slow.recv(1 << 20):  # what was buffered, then the end
            received += len(chunk)
    except ConnectionResetError:
        pass
    slow.close()
    assert received < sent * 10_000
    normal_search(d)


def test_an_over_long_query_gets_a_clear_error_from_the_daemon_and_the_direct_path(
    daemon_factory: DaemonFactory, tmp_path: Path
) -> None:
    plant_corpus(tmp_path / "home")
    d = daemon_factory()
    d.sync()
    words = ["quokka"] * 1000  # 6999 characters
    with Client(d.socket_path, timeout=DEADLINE) as c:
        with pytest.raises(RemoteError) as caught:
            c.call("search", {"query": " ".join(words)})
        assert caught.value.code == protocol.INVALID_PARAMS
        assert "6999 characters long, more than the 4096 allowed" in caught.value.message
        assert "server.max_query_chars" in caught.value.message
        assert c.call("search", {"query": MARKER})["hits"]  # the connection goes on
    env = {"BACKSCROLL_SOCKET": str(d.socket_path)}
    done = run_cli(tmp_path, "search", *words, env=env)
    assert done.returncode == 2 and "more than the 4096 allowed" in done.stderr
    d.stop()
    done = run_cli(tmp_path, "search", *words, env=env)  # no daemon: read directly
    assert done.returncode == 2 and "more than the 4096 allowed" in done.stderr


def test_a_reply_over_max_reply_bytes_is_refused_and_the_connection_goes_on(
    daemon_factory: DaemonFactory, tmp_path: Path
) -> None:
    plant_corpus(tmp_path / "home")
    d = daemon_factory(config="server:\n  max_reply_bytes: 400\n")
    d.sync()
    with d.raw_connect(timeout=DEADLINE) as sock:
        search = {"query": MARKER, "max_turn_chars": 100000, "fallback": False}
        sock.sendall(json.dumps({"jsonrpc": "2.0", "id": 7, "method": "search",
                                 "params": search}).encode() + b"\n")  # fmt: skip
        reply = read_reply(sock)
        assert reply is not None and reply["id"] == 7, reply
        assert reply["error"]["code"] == protocol.REPLY_TOO_LARGE
        message = reply["error"]["message"]
        assert "more than the 400 allowed (server.max_reply_bytes)" in message
        assert "ask for less" in message
        hello = {"protocol": protocol.PROTOCOL_VERSION}
        sock.sendall(json.dumps({"jsonrpc": "2.0", "id": 8, "method": "hello",
                                 "params": hello}).encode() + b"\n")  # fmt: skip
        reply = read_reply(sock)
        assert reply is not None and reply["result"]["protocol"] == protocol.PROTOCOL_VERSION
