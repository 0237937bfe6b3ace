"""A client and a daemon of different protocol versions (the daemon was not
restarted after an upgrade): the client says so and reads the index itself,
rather than an 'unexpected error' or answers that could mean something else."""

from __future__ import annotations

from pathlib import Path

import pytest

from backscroll import client as client_mod
from backscroll import wire
from tests.conftest import DaemonFactory


def test_a_daemon_of_another_protocol_is_named_and_not_used(
    daemon_factory: DaemonFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    d = daemon_factory()
    monkeypatch.setattr(wire, "PROTOCOL_VERSION", 99)  # this client: newer
    said: list[str] = []
    assert client_mod.try_connect(d.socket_path, 10, warn=said.append) is None
    assert said and "restart the daemon" in said[0]


def test_search_and_status_say_the_daemon_was_not_used_and_why(
    daemon_factory: DaemonFactory, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from backscroll import access, config, render

    d = daemon_factory()
    for key, value in d.env.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setattr(wire, "PROTOCOL_VERSION", 99)
    cfg = config.load()
    result = access.query(cfg, "search", {"query": "anything"})
    assert result["daemon"] is False and "restart the daemon" in result["daemon_skipped"]
    status = access.query(cfg, "status", {})
    assert "daemon: not used (" in render.status(status)
