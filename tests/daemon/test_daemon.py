"""The daemon as a real subprocess: readiness, live indexing, signals, socket
hygiene and bad clients. Every wait is on a condition (READY=1, a reply, a
search hit) bounded by a deadline, never a sleep."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import stat
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from backscroll import protocol
from backscroll.client import RemoteError
from tests.daemon.conftest import DaemonFactory
from tests.daemon.harness import (
    CLAUDE_FIXTURES,
    CODEX_FIXTURES,
    DaemonProcess,
    claude_user_line,
    dump_turns,
    fresh_index,
    populate,
    session_uuid,
)

DEADLINE = 30.0


def wait_for(cond: Callable[[], Any], what: str, timeout: float = DEADLINE) -> Any:
    """Poll ``cond`` until it returns something truthy; fail naming ``what``."""
    deadline = time.monotonic() + timeout
    while True:
        value = cond()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(0.05)  # polling interval of a condition, not a readiness signal


def hits(d: DaemonProcess, query: str) -> list[dict[str, Any]]:
    return list(d.call("search", {"query": query, "fallback": False})["hits"])


def claude_session(home: Path, n: int = 1, project: str = "-p") -> Path:
    directory = home / ".claude" / "projects" / project
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{session_uuid(n)}.jsonl"
    shutil.copyfile(CLAUDE_FIXTURES[0], path)
    return path


def append(path: Path, text: str) -> None:
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(text)


# --------------------------------------------------------------------------- live indexing


def test_an_appended_line_is_searchable_after_sync(daemon_factory: DaemonFactory) -> None:
    d = daemon_factory()
    path = claude_session(d.home)
    d.sync()
    assert hits(d, "quokkazanzibar") == []
    append(path, claude_user_line(session_uuid(1), "u-appended-1", "find quokkazanzibar now"))
    d.sync()
    found = hits(d, "quokkazanzibar")
    assert [h["session_id"] for h in found] == [session_uuid(1)]


def test_an_appended_line_becomes_searchable_without_sync(daemon_factory: DaemonFactory) -> None:
    d = daemon_factory()
    path = claude_session(d.home)
    d.sync()
    append(path, claude_user_line(session_uuid(1), "u-appended-2", "the wombatfjord plan"))
    found = wait_for(lambda: hits(d, "wombatfjord"), "the appended turn to be searchable")
    assert found[0]["session_id"] == session_uuid(1)


def test_a_session_under_a_symlinked_projects_directory_becomes_searchable(
    daemon_factory: DaemonFactory, tmp_path: Path
) -> None:
    # ~/.claude/projects moved to another disk and linked back before the
    # daemon starts; then a session starts in a new project.
    moved = tmp_path / "disk" / "claude-projects"
    moved.mkdir(parents=True)
    home = tmp_path / "home"
    (home / ".claude").mkdir(parents=True)
    (home / ".claude" / "projects").symlink_to(moved)
    claude_session(home)
    d = daemon_factory()
    d.sync()
    path = claude_session(home, n=2, project="-new")
    append(path, claude_user_line(session_uuid(2), "u-appended-3", "the okapilantern plan"))
    found = wait_for(lambda: hits(d, "okapilantern"), "the new session to be searchable")
    assert found[0]["session_id"] == session_uuid(2)


def test_a_projects_directory_made_anew_under_the_daemon_is_watched_again(
    daemon_factory: DaemonFactory,
) -> None:
    # ~/.claude/projects moved aside (a backup, a clean-up) and made anew: the
    # watch followed the old directory. It is placed again within a minute,
    # and at a SIGHUP; new sessions are then found without waiting for the rescan.
    d = daemon_factory(config="log_level: info\n")
    claude_session(d.home)
    d.sync()
    projects = d.home / ".claude" / "projects"
    projects.rename(projects.with_name("projects.old"))
    projects.mkdir()
    d.send_signal(signal.SIGHUP)

    def replaced() -> list[dict[str, Any]]:
        records = [json.loads(ln) for ln in d.stderr_text().splitlines() if ln.strip()]
        return [r for r in records if r.get("event") == "root_replaced"]

    assert wait_for(replaced, "the replaced root to be logged")[0]["path"] == str(projects)
    path = claude_session(d.home, n=2, project="-new")
    append(path, claude_user_line(session_uuid(2), "u-anew-1", "the narwhalquarry plan"))
    found = wait_for(lambda: hits(d, "narwhalquarry"), "the new session to be searchable")
    assert found[0]["session_id"] == session_uuid(2)


def test_a_last_line_without_its_newline_is_searchable_once_the_file_is_quiet(
    daemon_factory: DaemonFactory,
) -> None:
    d = daemon_factory()
    path = claude_session(d.home)
    d.sync()
    line = claude_user_line(session_uuid(1), "u-unterminated", "the ibexmarimba plan")
    append(path, line.rstrip("\n"))  # a writer that never ends its last line
    d.sync()
    assert hits(d, "ibexmarimba") == []  # it may still be mid-write: not yet
    found = wait_for(lambda: hits(d, "ibexmarimba"), "the quiet file's last line")
    assert found[0]["session_id"] == session_uuid(1)
    append(path, "\n" + claude_user_line(session_uuid(1), "u-next", "then the okapiviola step"))
    wait_for(lambda: hits(d, "okapiviola"), "the line appended after it")
    assert len(hits(d, "ibexmarimba")) == 1


def test_a_project_directory_created_after_start_is_indexed(
    daemon_factory: DaemonFactory,
) -> None:
    d = daemon_factory()
    claude_session(d.home, 1, "-existing")
    d.sync()
    path = claude_session(d.home, 2, "-created-later")
    append(path, claude_user_line(session_uuid(2), "u-late", "latecomer narwhalquartz"))
    found = wait_for(lambda: hits(d, "narwhalquartz"), "the new project's session")
    assert found[0]["session_id"] == session_uuid(2)


def test_a_host_root_that_appears_after_start_is_indexed(daemon_factory: DaemonFactory) -> None:
    d = daemon_factory()
    assert not (d.home / ".codex").exists()
    roots = d.call("status", {})["roots"]
    assert any(r["host"] == "codex" and r["mode"] == "waiting" for r in roots)
    day = d.home / ".codex" / "sessions" / "2026" / "05" / "11"
    day.mkdir(parents=True)
    src = CODEX_FIXTURES[-1]
    shutil.copyfile(src, day / src.name)

    def codex_turns() -> int:
        hosts = d.call("status", {}).get("hosts", {})
        return int(hosts.get("codex", {}).get("turns", 0))

    assert wait_for(codex_turns, "the Codex rollout to be indexed") > 0


# --------------------------------------------------------------------------- signals and crashes


def test_sigterm_during_a_cold_index_exits_zero_and_restart_matches_a_fresh_index(
    tmp_path: Path, daemon_factory: DaemonFactory
) -> None:
    populate(tmp_path / "home", copies=60)
    d = daemon_factory()
    assert d.call("status", {})["daemon"]["cold_index_done"] is False
    assert d.stop(signal.SIGTERM) == 0, d.stderr_text()
    again = daemon_factory()
    again.sync()
    assert again.stop() == 0
    fresh = fresh_index(tmp_path, tmp_path / "fresh")
    assert dump_turns(again.db_path) == fresh
    assert len(fresh) > 1000


def test_a_second_daemon_on_the_same_data_dir_is_refused_naming_pid_and_socket(
    tmp_path: Path, daemon_factory: DaemonFactory
) -> None:
    first = daemon_factory()
    other_socket = tmp_path / "s" / "other.sock"
    second = daemon_factory(env={"BACKSCROLL_SOCKET": str(other_socket)}, wait_ready=False)
    assert second.wait(DEADLINE) != 0
    err = second.stderr_text()
    assert f"pid {first.pid}" in err
    assert str(first.socket_path) in err
    assert first.call("status", {})["daemon"]["pid"] == first.pid


def test_a_daemon_started_during_a_rebuild_says_to_wait_for_the_rebuild(
    tmp_path: Path, daemon_factory: DaemonFactory
) -> None:
    import fcntl

    data = tmp_path / "data"
    data.mkdir(mode=0o700)
    fd = os.open(data / "daemon.lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # what `index --rebuild` holds
        os.write(fd, json.dumps({"rebuild": 4242}).encode())
        d = daemon_factory(wait_ready=False)
        assert d.wait(DEADLINE) != 0
        err = d.stderr_text()
    finally:
        os.close(fd)
    assert "index --rebuild` (pid 4242) is rebuilding" in err
    assert "another backscroll daemon" not in err


def test_a_stale_socket_left_by_a_kill_is_replaced_on_restart(
    daemon_factory: DaemonFactory,
) -> None:
    first = daemon_factory()
    first.kill()
    assert first.socket_path.exists()  # a crash leaves it behind
    second = daemon_factory()
    assert second.call("status", {})["daemon"]["pid"] == second.pid
    assert any(
        json.loads(line).get("event") == "stale_socket"
        for line in second.stderr_text().splitlines()
        if line.startswith("{")
    )


# --------------------------------------------------------------------------- bad clients


def read_reply(sock: socket.socket) -> dict[str, Any]:
    buf = b""
    while b"\n" not in buf:
        chunk = sock.recv(65536)
        if not chunk:
            break
        buf += chunk
    assert buf, "the daemon closed the connection without a reply"
    reply: dict[str, Any] = json.loads(buf.split(b"\n", 1)[0])
    return reply


def test_garbage_gets_a_parse_error_and_the_daemon_keeps_serving(
    daemon_factory: DaemonFactory,
) -> None:
    d = daemon_factory()
    with d.raw_connect() as sock:
        sock.sendall(b"this is not json\n")
        assert read_reply(sock)["error"]["code"] == protocol.PARSE_ERROR
        sock.sendall(b'{"jsonrpc": "2.0", "id": 7, "method": "nope"}\n')
        assert read_reply(sock)["error"]["code"] == protocol.METHOD_NOT_FOUND
    assert d.call("status", {})["daemon"]["pid"] == d.pid


def test_an_oversized_request_is_refused_and_the_daemon_keeps_serving(
    daemon_factory: DaemonFactory,
) -> None:
    d = daemon_factory(config="server:\n  max_request_bytes: 4096\n")
    with d.raw_connect() as sock:
        try:
            sock.sendall(b'{"jsonrpc": "2.0", "id": 1, "method": "search", "params": {"query": "')
            sock.sendall(b"x" * 20000)
        except BrokenPipeError:
            pass  # the daemon may close before we finish: the reply is still there
        reply = read_reply(sock)
    assert reply["error"]["code"] == protocol.REQUEST_TOO_LARGE
    assert "4096" in reply["error"]["message"]
    assert d.call("status", {})["daemon"]["pid"] == d.pid


def test_a_half_sent_request_times_out_and_the_daemon_keeps_serving(
    daemon_factory: DaemonFactory,
) -> None:
    d = daemon_factory(config="server:\n  request_timeout_s: 0.5\n")
    stalled = d.raw_connect()
    closed = d.raw_connect()
    try:
        stalled.sendall(b'{"jsonrpc": "2.0", "id": 1, "meth')
        closed.sendall(b'{"jsonrpc": "2.0", "id": 2, "meth')
        closed.shutdown(socket.SHUT_WR)  # a client that hangs up mid-request
        assert d.call("status", {})["daemon"]["pid"] == d.pid  # served meanwhile
        reply = read_reply(stalled)
        assert reply["error"]["code"] == protocol.TIMEOUT
        assert stalled.recv(1) == b""  # and the stalled connection is closed
    finally:
        stalled.close()
        closed.close()
    assert d.call("status", {})["daemon"]["pid"] == d.pid


def test_a_last_request_without_its_newline_is_answered_when_the_client_shuts_down(
    daemon_factory: DaemonFactory,
) -> None:
    d = daemon_factory()
    with d.raw_connect() as whole, d.raw_connect() as cut:
        whole.sendall(b'{"jsonrpc": "2.0", "id": 3, "method": "status", "params": {}}')
        whole.shutdown(socket.SHUT_WR)  # (`printf '...' | nc -U` does this)
        reply = read_reply(whole)
        assert reply["id"] == 3 and reply["result"]["daemon"]["pid"] == d.pid
        cut.sendall(b'{"jsonrpc": "2.0", "id": 4, "meth')
        cut.shutdown(socket.SHUT_WR)
        error = read_reply(cut)["error"]
        assert error["code"] == protocol.PARSE_ERROR
        assert "ended before the request's newline" in error["message"]


def test_a_protocol_version_mismatch_names_both_versions(daemon_factory: DaemonFactory) -> None:
    d = daemon_factory()
    with pytest.raises(RemoteError) as caught:
        d.call("hello", {"protocol": protocol.PROTOCOL_VERSION + 98})
    message = caught.value.message
    assert caught.value.code == protocol.VERSION_MISMATCH
    assert str(protocol.PROTOCOL_VERSION + 98) in message
    assert str(protocol.PROTOCOL_VERSION) in message.replace(
        str(protocol.PROTOCOL_VERSION + 98), ""
    )


# --------------------------------------------------------------------------- config reload


def test_sighup_with_a_host_disabled_drops_its_roots_from_status(
    daemon_factory: DaemonFactory,
) -> None:
    d = daemon_factory(config="log_level: info\n")
    assert d.config_path is not None

    def codex_roots() -> list[str]:
        return [r["path"] for r in d.call("status", {})["roots"] if r["host"] == "codex"]

    assert codex_roots()
    d.config_path.write_text("hosts:\n  codex:\n    enabled: false\n", encoding="utf-8")
    d.send_signal(signal.SIGHUP)
    wait_for(lambda: not codex_roots(), "codex roots to leave status.roots")
    assert any(r["host"] == "claude-code" for r in d.call("status", {})["roots"])


def test_sighup_applies_a_new_log_level(daemon_factory: DaemonFactory) -> None:
    d = daemon_factory(config="log_level: info\n")
    assert d.config_path is not None
    path = claude_session(d.home)
    d.sync()

    def events(name: str) -> list[dict[str, Any]]:
        records = [json.loads(ln) for ln in d.stderr_text().splitlines() if ln.strip()]
        return [r for r in records if r.get("event") == name]

    assert not events("indexed")  # a debug line: not at info
    d.config_path.write_text("log_level: debug\n", encoding="utf-8")
    d.send_signal(signal.SIGHUP)
    wait_for(lambda: events("reloaded"), "the reload to be logged")
    append(path, claude_user_line(session_uuid(1), "u-after-reload", "after the reload"))
    d.sync()
    wait_for(lambda: events("indexed"), "a debug line after the reload to debug")


@pytest.mark.parametrize("gone", ["socket", "index"])
def test_a_daemon_whose_socket_or_index_was_removed_says_so_and_stops_with_1(
    daemon_factory: DaemonFactory, gone: str
) -> None:
    # A temp cleaner removing the socket, or `rm -rf` of the data directory:
    # serving on would leave clients unable to reach it, or write into a
    # deleted file. It is noticed every minute, and at a SIGHUP.
    d = daemon_factory(config="log_level: info\n")
    victim = d.socket_path if gone == "socket" else d.db_path
    victim.unlink()
    d.send_signal(signal.SIGHUP)
    assert d.wait() == 1
    records = [json.loads(ln) for ln in d.stderr_text().splitlines() if ln.strip()]
    said = [r for r in records if r.get("event") == "own_file_gone"]
    assert said and said[0]["path"] == str(victim)


def test_sighup_with_a_broken_config_keeps_the_old_one_and_says_why(
    daemon_factory: DaemonFactory,
) -> None:
    d = daemon_factory(config="log_level: info\n")
    assert d.config_path is not None
    before = d.call("status", {})["roots"]
    d.config_path.write_text("hosts:\n  codex: [not, a, mapping\n", encoding="utf-8")
    d.send_signal(signal.SIGHUP)

    def reload_error() -> list[dict[str, Any]]:
        records = [json.loads(ln) for ln in d.stderr_text().splitlines() if ln.strip()]
        return [r for r in records if r.get("event") == "reload_error"]

    errors = wait_for(reload_error, "the reload error to be logged")
    assert str(d.config_path) in errors[0]["error"]
    assert d.call("status", {})["roots"] == before  # still serving, old config kept


# --------------------------------------------------------------------------- hygiene


def test_the_socket_is_0600_in_a_0700_directory(daemon_factory: DaemonFactory) -> None:
    d = daemon_factory()
    assert stat.S_ISSOCK(os.stat(d.socket_path).st_mode)
    assert stat.S_IMODE(os.stat(d.socket_path).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(d.socket_path.parent).st_mode) == 0o700


def test_logs_on_stderr_are_json_lines_with_an_event(daemon_factory: DaemonFactory) -> None:
    d = daemon_factory()
    d.sync()
    assert d.stop() == 0
    lines = [line for line in d.stderr_text().splitlines() if line.strip()]
    records = [json.loads(line) for line in lines]
    assert all(isinstance(r.get("event"), str) and r["event"] for r in records)
    events = {r["event"] for r in records}
    assert {"ready", "stopping", "stopped"} <= events


def test_a_daemon_with_a_redaction_pattern_matching_empty_text_refuses_to_start(
    daemon_factory: DaemonFactory,
) -> None:
    d = daemon_factory(config='redaction:\n  patterns:\n    empty: "x*"\n', wait_ready=False)
    assert d.wait(DEADLINE) != 0
    err = d.stderr_text()
    assert "redaction.patterns.empty" in err and "matches empty text" in err, err


def test_sighup_with_a_redaction_pattern_matching_empty_text_keeps_the_old_config_indexing(
    daemon_factory: DaemonFactory,
) -> None:
    d = daemon_factory(config="log_level: info\n")
    path = claude_session(d.home)
    d.sync()
    assert d.config_path is not None
    d.config_path.write_text('redaction:\n  patterns:\n    empty: "x*"\n', encoding="utf-8")
    d.send_signal(signal.SIGHUP)

    def reload_error() -> list[dict[str, Any]]:
        records = [json.loads(ln) for ln in d.stderr_text().splitlines() if ln.strip()]
        return [r for r in records if r.get("event") == "reload_error"]

    errors = wait_for(reload_error, "the reload error to be logged")
    assert "redaction.patterns.empty" in errors[0]["error"]
    assert "matches empty text" in errors[0]["error"]
    append(path, claude_user_line(session_uuid(1), "u-after-reload", "the narwhalquince plan"))
    d.sync()
    assert hits(d, "narwhalquince")  # the old config still indexes
    assert d.call("status", {})["daemon"]["last_error"] is None
