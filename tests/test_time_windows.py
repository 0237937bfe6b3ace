"""A time window that can hold no turn (or every one) is refused the same way
everywhere: by ``search`` and ``sessions`` on the command line, by the direct
path, and by the daemon itself, whoever sends it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from backscroll import protocol
from backscroll.client import RemoteError
from tests.conftest import DaemonFactory
from tests.daemon.harness import run_cli


def test_since_days_below_zero_or_not_finite_is_refused_by_search_and_sessions(
    tmp_path: Path,
) -> None:
    for command in ("sessions", "search"):
        for days in ("-1", "nan", "inf"):
            words = ["anything"] if command == "search" else []
            done = run_cli(tmp_path, command, *words, "--since-days", days, "--json")
            assert done.returncode == 2, (command, days, done.stdout, done.stderr)
            error = json.loads(done.stdout)["error"]
            assert "--since-days must be a number of days ≥ 0" in error["message"], error


def test_the_daemon_refuses_a_since_days_below_zero_or_not_finite(
    daemon_factory: DaemonFactory,
) -> None:
    d = daemon_factory()
    for days in (-1, float("nan"), float("inf")):
        for method, params in (
            ("sessions", {"since_days": days}),
            ("search", {"query": "anything", "since_days": days}),
            ("search", {"query": "anything", "until": days}),
        ):
            with pytest.raises(RemoteError) as caught:
                d.call(method, params)
            assert caught.value.code == protocol.INVALID_PARAMS, (method, params)
            assert "must be a finite number ≥ 0" in caught.value.message, (method, params)
    assert d.call("sessions", {"since_days": 1.5})["sessions"] == []
