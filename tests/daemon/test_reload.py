"""SIGHUP: what a config reload applies, what it refuses, and what it says needs a
restart. A real daemon; every wait is on a logged event or a reply, never a sleep."""

from __future__ import annotations

import json
import signal
from pathlib import Path
from typing import Any

from backscroll import render
from backscroll.client import Client
from tests.daemon.conftest import DaemonFactory
from tests.daemon.harness import DaemonProcess, _short_dir
from tests.daemon.test_daemon import wait_for


def events(d: DaemonProcess, name: str) -> list[dict[str, Any]]:
    records = [json.loads(ln) for ln in d.stderr_text().splitlines() if ln.startswith("{")]
    return [r for r in records if r.get("event") == name]


def reload(d: DaemonProcess) -> dict[str, Any]:
    """SIGHUP, and the record of its outcome (``reloaded`` or ``reload_error``)."""
    before = len(events(d, "reloaded")) + len(events(d, "reload_error"))
    d.send_signal(signal.SIGHUP)

    def outcome() -> dict[str, Any] | None:
        done = events(d, "reloaded") + events(d, "reload_error")
        return sorted(done, key=lambda r: str(r["ts"]))[-1] if len(done) > before else None

    record: dict[str, Any] = wait_for(outcome, "the reload to be logged")
    return record


def test_a_reload_to_a_nan_idle_timeout_is_refused_and_new_clients_are_served(
    daemon_factory: DaemonFactory,
) -> None:
    d = daemon_factory(config="log_level: info\n")
    assert d.config_path is not None
    d.config_path.write_text("server:\n  idle_timeout_s: .nan\n", encoding="utf-8")
    record = reload(d)
    assert record["event"] == "reload_error"
    assert "server.idle_timeout_s" in record["error"] and "finite" in record["error"]
    fresh = d.client()  # (a connection made after the reload: its limits are the new ones)
    assert fresh.call("status", {})["daemon"]["pid"] == d.pid


def test_a_default_config_file_deleted_before_a_reload_means_the_defaults(
    daemon_factory: DaemonFactory, tmp_path: Path
) -> None:
    # As for the CLI: a missing file at the default location is the defaults, not
    # an error (the file read at start was taken as one named explicitly).
    default = tmp_path / "home" / ".config" / "backscroll" / "config.yaml"
    default.parent.mkdir(parents=True)
    default.write_text("hosts:\n  codex:\n    enabled: false\n", encoding="utf-8")
    d = daemon_factory()
    assert d.config_path is None  # (no BACKSCROLL_CONFIG: the default location)

    def codex_roots() -> list[str]:
        return [r["path"] for r in d.call("status", {})["roots"] if r["host"] == "codex"]

    assert not codex_roots()
    default.write_text("hosts:\n  codex:\n    enabled: false\nlog_level: info\n")
    assert reload(d)["event"] == "reloaded"
    default.unlink()
    record = reload(d)
    assert record["event"] == "reloaded", record
    assert codex_roots()  # the defaults: every host on


def test_a_reload_that_moves_data_dir_or_socket_keeps_both_and_says_to_restart(
    daemon_factory: DaemonFactory, tmp_path: Path
) -> None:
    # (no BACKSCROLL_HOME / BACKSCROLL_SOCKET: the config file places both)
    sock_dir, _ = _short_dir(tmp_path)
    data, sock = tmp_path / "data-a", sock_dir / "a.sock"
    d = daemon_factory(
        env={"BACKSCROLL_HOME": "", "BACKSCROLL_SOCKET": ""},
        config=f"data_dir: {data}\nsocket: {sock}\n",
    )
    assert d.config_path is not None
    client = Client(sock)
    client.connect()
    try:
        assert client.call("status", {})["daemon"]["restart_needed"] == []
        moved_data, moved_sock = tmp_path / "data-b", sock_dir / "b.sock"
        d.config_path.write_text(f"data_dir: {moved_data}\nsocket: {moved_sock}\n")
        record = reload(d)
        assert record["event"] == "reloaded" and len(record["restart_needed"]) == 2
        warned = [r for r in events(d, "restart_needed") if r["level"] == "warning"]
        assert len(warned) == 2 and all("restart" in r["fix"] for r in warned)
        status = client.call("status", {})  # still served where it started
    finally:
        client.close()
    needed = status["daemon"]["restart_needed"]
    assert any(f"data_dir changed to {moved_data}" in n and str(data) in n for n in needed)
    assert any(f"socket changed to {moved_sock}" in n and str(sock) in n for n in needed)
    assert status["daemon"]["socket"] == str(sock)
    assert not moved_sock.exists() and not (moved_data / "index.db").exists()
    assert "restart needed: data_dir changed to" in render.status(status)


def test_a_reload_applies_new_debounce_waits_to_the_next_changes(
    daemon_factory: DaemonFactory, tmp_path: Path
) -> None:
    """index.debounce_ms and max_wait_ms were read at start only: a reload that
    shortened a ten-minute wait left appends waiting ten minutes."""
    from tests.daemon.harness import claude_user_line
    from tests.daemon.test_daemon import append, claude_session, hits

    # (The transcript is there before the daemon: a root that appears is scanned
    # again a second later, which would find the second append whatever the wait.)
    path = claude_session(tmp_path / "home")
    slow = "index:\n  debounce_ms: 600000\n  max_wait_ms: 600000\n"
    d = daemon_factory(config="log_level: info\n" + slow)
    assert d.config_path is not None and d.home == tmp_path / "home"
    d.sync()
    d.config_path.write_text("log_level: info\nindex:\n  debounce_ms: 50\n  max_wait_ms: 200\n")
    assert reload(d)["event"] == "reloaded"
    sid = path.stem
    append(path, claude_user_line(sid, "u-first", "first quokkareload line"))
    wait_for(lambda: hits(d, "quokkareload"), "the first append (a quiet file: at once)")
    # The second change comes while the first one's wait runs: it waits the new 50 ms.
    append(path, claude_user_line(sid, "u-second", "second zebrareload line"))
    wait_for(lambda: hits(d, "zebrareload"), "the second append after the new short wait")
