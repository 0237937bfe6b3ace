"""Exit codes a script can rely on: ``search`` exits 1 only when nothing matched
and 2 on any error, also one nobody foresaw; a socket that answers something
other than a reply is passed over like a daemon that is gone."""

from __future__ import annotations

import json
import os
import socketserver
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.daemon.harness import claude_user_line, run_cli, session_uuid


def test_an_unexpected_error_in_search_exits_2_not_1_the_no_match_status(
    isolated_home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # An error nothing in backscroll names is not "no match" either.
    from backscroll import cli, direct

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("something nobody foresaw")

    monkeypatch.setattr(direct, "query", broken)
    assert cli.main(["search", "anything", "--json"]) == 2
    error = json.loads(capsys.readouterr().out)["error"]
    assert error["exit_code"] == 2 and "unexpected error" in error["message"]
    assert cli.main(["search", "anything"]) == 2


def test_a_directory_in_the_indexs_place_is_named_with_the_fix_and_exits_2(
    tmp_path: Path,
) -> None:
    (tmp_path / "data" / "index.db").mkdir(parents=True)
    for command in (("search", "anything"), ("status",), ("index",)):
        done = run_cli(tmp_path, *command, "--json")
        assert done.returncode == 2, done.stderr
        error = json.loads(done.stdout)["error"]
        assert "unexpected error" not in error["message"], command
        assert (
            f"{tmp_path / 'data' / 'index.db'} is a directory, not an index; move it aside"
            in (error["message"])
        ), command


class _Garbler(socketserver.StreamRequestHandler):
    """Answers every request line with a line that is not JSON."""

    def handle(self) -> None:
        while self.rfile.readline():
            self.wfile.write(b"<html>not a JSON-RPC reply</html>\n")


@pytest.fixture
def garbling_socket(tmp_path: Path) -> Iterator[Path]:
    """A peer of this user's on the socket path that answers garbage."""
    directory = tmp_path / "run" / "backscroll"
    directory.mkdir(parents=True, mode=0o700)
    path = directory / "backscroll.sock"
    old = os.umask(0o177)
    try:
        server = socketserver.ThreadingUnixStreamServer(str(path), _Garbler)
    finally:
        os.umask(old)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield path
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def test_a_socket_answering_garbage_is_passed_over_and_the_index_answers(
    tmp_path: Path, isolated_home: Path, garbling_socket: Path
) -> None:
    project = isolated_home / ".claude" / "projects" / "-p"
    project.mkdir(parents=True)
    line = claude_user_line(session_uuid(1), "u-1", "find the quokkagarble please")
    (project / f"{session_uuid(1)}.jsonl").write_text(line)
    assert run_cli(tmp_path, "index").returncode == 0
    done = run_cli(tmp_path, "search", "quokkagarble", "--json")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["hits"] and result["daemon"] is False
    assert "unexpected error" not in done.stderr
