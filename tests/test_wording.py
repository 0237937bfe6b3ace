"""Reason codes from the store, worded per client; hints never repeat what was given."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from backscroll.wording import CODES, message, worded
from tests.test_all_hosts import FIXTURES, LAYOUT

PACKAGE = Path(__file__).resolve().parents[1] / "backscroll"


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "backscroll", *args],
        capture_output=True, text=True, check=False, timeout=60,
    )  # fmt: skip


@pytest.fixture
def indexed_cli(isolated_home: Path) -> Path:
    """The Kiro IDE sample ("Add a dark mode toggle to the app header"), indexed."""
    for src, dst in LAYOUT["kiro-ide"]:
        target = isolated_home / dst
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(FIXTURES / src, target)
    assert _cli("index").returncode == 0
    return isolated_home


def test_no_match_suggests_any_only_when_it_was_not_given() -> None:
    reason = {"code": "no_match", "words": "walrus"}
    assert "--any" in message(reason, "cli", {})
    assert "--any" not in message(reason, "cli", {"any": True})


def test_a_missed_phrase_says_it_was_searched_as_a_phrase(indexed_cli: Path) -> None:
    # `backscroll search "dark toggle"`: quoted in the shell, so a phrase.
    out = _cli("search", "dark toggle", "--json")
    reason = json.loads(out.stdout)["reason"]
    assert reason == {"code": "no_match", "words": "dark toggle", "phrase": True}
    assert "drop the quotes" in message(reason, "cli", {})
    assert "drop the quotes" in message(reason, "mcp", {})
    assert _cli("search", "dark", "toggle").returncode == 0  # the words, apart: found
    plain = json.loads(_cli("search", "walrus", "--json").stdout)["reason"]
    assert "phrase" not in plain and "quotes" not in message(plain, "cli", {})


def test_a_filtered_miss_names_the_filters_in_each_clients_terms() -> None:
    reason = {"code": "no_match_with_filters", "words": "w", "filters": ["host", "since_days"]}
    cli = message(reason, "cli", {"host": "codex"})
    assert "--host, --since-days" in cli and "--any" in cli
    mcp = message(reason, "mcp", {})
    assert "with host, days;" in mcp and "--" not in mcp and "any" not in mcp.split(";")[1]
    assert "the days filter" in message(reason, "viewer", {})


def test_nothing_indexed_says_start_the_daemon_only_when_it_did_not_answer() -> None:
    reason = {"code": "nothing_indexed"}
    assert "start the daemon" in message(reason, "cli", {}, daemon=False)
    running = message(reason, "cli", {}, daemon=True)
    assert "start the daemon" not in running and "daemon is running" in running


def test_worded_fills_message_from_reason_and_keeps_the_reason() -> None:
    result = {"hits": [], "daemon": True, "reason": {"code": "some_words_only", "some": 3}}
    out = worded(result, "cli", {})
    assert out["reason"] == result["reason"]
    assert out["message"] == "no turn has all of the words, but 3 have some of them; try --any"
    assert "message" not in result  # the store's answer is not changed in place
    assert worded({"hits": [1], "reason": None})["message"] is None


def test_every_code_has_a_one_line_sentence_in_every_client() -> None:
    fields = {"words": "w", "filters": ["host"], "some": 2, "shown": 1, "total": 3, "days": 7,
              "older": 1, "host": "h", "enabled": ["codex"], "session": "s", "key": "k",
              "candidates": [{"session_id": "s1", "host": "codex"}], "around": 9,
              "until": "x", "excluded": ["test"], "count": 4}  # fmt: skip
    for code in CODES:
        for client in ("cli", "mcp", "viewer"):
            text = message({"code": code, **fields}, client, {})
            assert text and "\n" not in text and "None" not in text, (code, client, text)


def test_no_client_rewrites_another_clients_message_with_a_regex() -> None:
    for name in ("mcp_server.py", "recall.py", "hook.py", "ui/app.py", "ui/pages.py"):
        source = (PACKAGE / name).read_text()
        assert not re.search(r"re\.sub\([^)]*message", source), name
        assert 'replace("--' not in source, name
