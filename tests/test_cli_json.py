"""Every command's ``--json`` output is versioned and pinned by golden files.

Run with ``BACKSCROLL_UPDATE_GOLDEN=1`` to rewrite the golden files after an
intended change of shape (and say so in the commit).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

FIXTURES = Path(__file__).parent / "fixtures"
GOLDEN = Path(__file__).parent / "golden"
CLAUDE_SID = "d6e0bada-1959-4eec-a9d2-0bfade768d8f"
CODEX = "rollout-2026-05-11T11-26-55-019e1625-789d-76c0-80ab-3724b5ddb799.lines1-77.jsonl"
VOLATILE = {"seconds", "last_indexed", "database", "uptime_s", "bytes_read"}


@pytest.fixture
def home(isolated_home: Path) -> Path:
    claude = isolated_home / ".claude" / "projects" / "-home-marco-projects-spotter"
    claude.mkdir(parents=True)
    shutil.copy(
        FIXTURES / "claude-code" / "spotter-tool_heavy.jsonl", claude / f"{CLAUDE_SID}.jsonl"
    )
    codex = isolated_home / ".codex" / "sessions" / "2026" / "05" / "11"
    codex.mkdir(parents=True)
    shutil.copy(FIXTURES / "codex" / CODEX, codex / CODEX.replace(".lines1-77", ""))
    return isolated_home


def _run(*args: str) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-m", "backscroll", *args, "--json"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode in (0, 1), done.stderr
    return dict(json.loads(done.stdout))


def _normalise(value: Any, home: Path) -> Any:
    if isinstance(value, dict):
        return {k: _normalise(v, home) for k, v in value.items() if k not in VOLATILE}
    if isinstance(value, list):
        return [_normalise(v, home) for v in value]
    if isinstance(value, str):
        return re.sub(re.escape(str(home)), "$HOME", value)
    return value


def _check(name: str, data: dict[str, Any], home: Path, golden: Path = GOLDEN) -> None:
    """``data`` equals ``golden/<name>.json``. A missing golden file fails: it is
    written only when ``BACKSCROLL_UPDATE_GOLDEN=1`` asks for it."""
    data = _normalise(data, home)
    path = golden / f"{name}.json"
    if os.environ.get("BACKSCROLL_UPDATE_GOLDEN") == "1":
        path.parent.mkdir(exist_ok=True)
        path.write_text(json.dumps(data, indent=2, ensure_ascii=False, sort_keys=True) + "\n")
    if not path.exists():
        pytest.fail(
            f"golden file {path.name} is missing; run with BACKSCROLL_UPDATE_GOLDEN=1 "
            "to write it, check it, and commit it"
        )
    expected = json.loads(path.read_text())
    assert data == expected, f"{name} --json changed shape or content; see {path}"


def test_a_missing_golden_file_fails_instead_of_being_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("BACKSCROLL_UPDATE_GOLDEN", raising=False)
    golden = tmp_path / "golden"
    with pytest.raises(pytest.fail.Exception, match="BACKSCROLL_UPDATE_GOLDEN=1"):
        _check("nothing_yet", {"schema": 1}, tmp_path, golden)
    assert not (golden / "nothing_yet.json").exists()
    monkeypatch.setenv("BACKSCROLL_UPDATE_GOLDEN", "1")
    _check("nothing_yet", {"schema": 1}, tmp_path, golden)
    assert json.loads((golden / "nothing_yet.json").read_text()) == {"schema": 1}


def test_every_golden_file_is_checked_by_a_test() -> None:
    """A golden file no test names is dead weight that looks like coverage."""
    source = Path(__file__).read_text(encoding="utf-8")
    unused = [p.name for p in sorted(GOLDEN.glob("*.json")) if f'"{p.stem}"' not in source]
    assert not unused, unused


def test_index_json_is_pinned(home: Path) -> None:
    _check("index", _run("index"), home)


def test_search_json_is_pinned(home: Path) -> None:
    _run("index")
    result = _run("search", "phoenix", "--context", "1")
    assert result["schema"] == 1 and result["daemon"] is False
    _check("search", result, home)


def test_search_no_match_json_says_why(home: Path) -> None:
    _run("index")
    _check("search_no_match", _run("search", "zzzunheardofword"), home)


def test_search_all_words_falls_back_to_any_flagged(home: Path) -> None:
    _run("index")
    result = _run("search", "phoenix", "zzzunheardofword")
    assert result["fallback"] == "any" and result["hits"]
    _check("search_fallback", result, home)


def test_search_on_an_empty_index_says_nothing_is_indexed(isolated_home: Path) -> None:
    result = _run("search", "anything")
    assert result["hits"] == [] and "nothing indexed yet" in result["message"]
    _check("search_empty_index", result, isolated_home)


def test_sessions_json_is_pinned(home: Path) -> None:
    _run("index")
    _check("sessions", _run("sessions"), home)


def test_show_json_is_pinned(home: Path) -> None:
    _run("index")
    _check("show", _run("show", CLAUDE_SID[:8]), home)


def test_status_json_is_pinned(home: Path) -> None:
    _run("index")
    _check("status", _run("status"), home)


def test_forget_dry_run_json_is_pinned(home: Path) -> None:
    _run("index")
    _check("forget_dry_run", _run("forget", "--host", "codex", "--dry-run"), home)


def _error(code: int, *args: str, env: dict[str, str] | None = None) -> dict[str, Any]:
    """The one JSON object an error prints with ``--json``; the exit status is ``code``."""
    done = subprocess.run(
        [sys.executable, "-m", "backscroll", *args, "--json"], capture_output=True,
        env={**os.environ, **(env or {})}, check=False,
    )  # fmt: skip
    assert done.returncode == code, done.stderr
    assert done.stderr.startswith(b"backscroll: ") or b"problem" in done.stderr, done.stderr
    data = dict(json.loads(done.stdout))
    assert data["schema"] == 1
    return data


def test_errors_of_forget_and_exclusions_are_json_with_json(home: Path) -> None:
    _run("index")
    unknown = _error(1, "forget", "--session", "1700")
    assert unknown["error"]["exit_code"] == 1 and "1700" in unknown["error"]["message"]
    assert _error(2, "forget", "--host", "claudecode")["error"]["exit_code"] == 2
    assert _error(1, "exclusions", "remove", "--session", "zzz")["error"]["exit_code"] == 1


def test_an_undecodable_argument_is_a_json_error_with_json(isolated_home: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "backscroll", "search", os.fsdecode(b"\xff"), "--json"],
        capture_output=True, check=False,
    )  # fmt: skip
    assert done.returncode == 2
    error = json.loads(done.stdout)["error"]
    assert "not valid UTF-8" in error["message"] and error["exit_code"] == 2


def test_config_check_and_show_answer_in_json_good_or_broken(
    isolated_home: Path, tmp_path: Path
) -> None:
    broken = tmp_path / "broken.yaml"
    broken.write_text("limits:\n  max_hits: [\n")
    env = {"BACKSCROLL_CONFIG": str(broken)}
    for action in ("check", "show"):
        data = _error(2, "config", action, env=env)
        assert data["ok"] is False and data["problems"] and data["error"]["exit_code"] == 2
    assert _run("config", "check")["ok"] is True
    shown = _run("config", "show")
    assert shown["schema"] == 1 and "effective" in shown
