"""A daemon that hangs or goes away in the middle of a request: the MCP server
(and the CLI) read the index instead, within a bounded time.

The daemon is real; between it and the client sits a relay on a real socket
that passes the ``hello`` exchange through and then, on the request after it,
either never answers (a hung daemon) or closes the connection (a crash).
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from backscroll import mcp_server
from tests.daemon.harness import DaemonProcess, run_cli, start_daemon
from tests.test_mcp_server import PHOENIX, McpProcess, build_index, text_of

#: The daemon's own limit on one query: a tool call waits this plus the grace.
QUERY_TIMEOUT = 1.0
CONFIG = f"server:\n  query_timeout_s: {QUERY_TIMEOUT}\n"


class Relay:
    """A socket in front of ``daemon`` that passes ``hello`` through, then
    ``hang``s (reads the request, never answers) or ``drop``s the connection."""

    def __init__(self, daemon: DaemonProcess, mode: str) -> None:
        self.daemon = daemon
        self.mode = mode
        self.path = daemon.sock_dir / "relay.sock"  # (a private 0700 directory)
        self.stop = threading.Event()
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(str(self.path))
        os.chmod(self.path, 0o600)
        self.listener.listen(8)
        self.listener.settimeout(0.2)
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def _accept(self) -> None:
        while not self.stop.is_set():
            try:
                conn, _ = self.listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        up = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        with conn, up:
            up.connect(str(self.daemon.socket_path))
            down_r, up_r = conn.makefile("rb"), up.makefile("rb")
            up.sendall(down_r.readline())  # hello, to the real daemon
            conn.sendall(up_r.readline())  # and its answer back
            if not down_r.readline():  # the request
                return
            if self.mode == "hang":
                self.stop.wait(120)

    def close(self) -> None:
        self.stop.set()
        self.listener.close()
        self.thread.join(5)
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()


@pytest.fixture
def daemon(tmp_path: Path) -> Iterator[DaemonProcess]:
    env = build_index(tmp_path, config=CONFIG)
    with start_daemon(tmp_path, env=env) as d:
        yield d


def through(relay: Relay) -> dict[str, str]:
    """The environment of a client that reaches the daemon through ``relay``."""
    return {
        "BACKSCROLL_SOCKET": str(relay.path),
        "BACKSCROLL_CONFIG": str(relay.daemon.config_path),
    }


@pytest.mark.parametrize("mode", ["hang", "drop"])
def test_a_daemon_that_hangs_or_drops_mid_request_is_passed_over_for_the_index(
    tmp_path: Path, daemon: DaemonProcess, mode: str
) -> None:
    relay = Relay(daemon, mode)
    mcp = McpProcess(tmp_path, through(relay))
    try:
        started = time.monotonic()
        result = mcp.call("search_history", {"query": "phoenix"})
        took = time.monotonic() - started
        listed = mcp.call("list_sessions", {})
    finally:
        mcp.close()
        relay.close()
    assert result["isError"] is False, text_of(result)
    data = result["structuredContent"]
    assert data["daemon"] is False and data["hits"]
    assert PHOENIX in {h["session_id"] for h in data["hits"]}
    assert "did not answer within" in data["daemon_skipped"]
    assert "(daemon not used: the daemon at " in text_of(result)
    assert listed["isError"] is False and listed["structuredContent"]["sessions"]
    bound = QUERY_TIMEOUT + mcp_server.DAEMON_GRACE
    if mode == "hang":
        assert bound - 0.5 <= took < bound + 10  # waited for the daemon, but not 60 s
    else:
        assert took < bound  # a dropped connection is not waited on


def test_the_cli_reads_the_index_when_the_daemon_drops_mid_request(
    tmp_path: Path, daemon: DaemonProcess
) -> None:
    relay = Relay(daemon, "drop")
    try:
        done = run_cli(tmp_path, "search", "phoenix", "--json", env=through(relay))
    finally:
        relay.close()
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    assert found["daemon"] is False and found["hits"]
    assert "did not answer within" in found["daemon_skipped"]
