"""``backscroll search`` and ``show`` as typed at a shell: the query language's
words arrive as the shell splits them, and hits say how to open them."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from backscroll import cli
from tests.daemon.harness import claude_user_line

SESSION = "0000abcd-0000-4000-8000-000000000001"
TEXTS = [
    "the parser crashed on unit test input",
    "we rewrote the parser tokenizer",
    "the quick brown fox jumps",
    "brown dog and a fox",
]


@pytest.fixture
def indexed(isolated_home: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    folder = isolated_home / ".claude" / "projects" / "-p"
    folder.mkdir(parents=True)
    lines = [claude_user_line(SESSION, f"u{i}", t) for i, t in enumerate(TEXTS)]
    (folder / f"{SESSION}.jsonl").write_text("".join(lines), encoding="utf-8")
    assert cli.main(["index"]) == 0
    capsys.readouterr()
    return isolated_home


def search(capsys: pytest.CaptureFixture[str], *argv: str) -> list[str]:
    assert cli.main(["search", *argv, "--json"]) == 0
    return [h["excerpt"] for h in json.loads(capsys.readouterr().out)["hits"]]


def test_a_leading_dash_word_excludes_without_a_double_dash(
    indexed: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert search(capsys, "-unit", "parser") == ["we rewrote the parser tokenizer"]
    assert search(capsys, "parser", "NOT", "tokenizer") == ["the parser crashed on unit test input"]
    assert search(capsys, "fox", '-"brown dog"') == ["the quick brown fox jumps"]


def test_a_phrase_quoted_in_the_shell_stays_a_phrase(
    indexed: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert search(capsys, "brown fox") == ["the quick brown fox jumps"]
    assert search(capsys, "-brown dog", "fox") == ["the quick brown fox jumps"]
    assert sorted(search(capsys, "brown", "fox")) == sorted(TEXTS[2:])


def test_a_global_config_option_keeps_the_fast_path_and_the_dash_word(
    indexed: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    config = tmp_path / "config.yaml"
    config.write_text("{}\n", encoding="utf-8")
    assert cli.main(["--config", str(config), "search", "parser", "-unit", "--json"]) == 0
    hits = json.loads(capsys.readouterr().out)["hits"]
    assert [h["excerpt"] for h in hits] == ["we rewrote the parser tokenizer"]


def test_text_hits_name_the_session_and_turn_and_show_opens_there(
    indexed: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["search", "tokenizer"]) == 0
    text = capsys.readouterr().out
    pattern = r"session (\S+) turn (\d+): backscroll show (\S+) --host (\S+) --around (\d+)"
    opening = re.search(pattern, text)
    assert opening and opening.group(1) == opening.group(3) == SESSION
    assert opening.group(2) == opening.group(5) == "2"
    assert cli.main(["show", SESSION, "--around", "2", "--window", "1"]) == 0
    shown = capsys.readouterr().out
    assert "#2 " in shown and "we rewrote the parser tokenizer" in shown


def test_show_around_past_the_end_says_so_and_shows_the_last_turns(
    indexed: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["show", SESSION, "--around", "40", "--window", "2"]) == 0
    out = capsys.readouterr().out
    assert "turn 40 is past the end: this session has 4 turn(s); showing the last 2" in out
    assert "#3 " in out and "#4 " in out and "#2 " not in out
