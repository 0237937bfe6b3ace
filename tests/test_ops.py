"""``backscroll explain``, ``backscroll logs``, the no-FTS fallback, and keeping the
operations commands out of ``backscroll search``'s imports."""

from __future__ import annotations

import json
import logging
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from backscroll import cli
from backscroll.daemon.logging import JsonFormatter

FIXTURE = Path(__file__).parent / "fixtures" / "claude-code" / "spotter-tool_heavy.jsonl"
SESSION = "3f2a0000-0000-4000-8000-000000000001"


def claude_transcript(home: Path, project: str = "-p") -> Path:
    dest = home / ".claude" / "projects" / project / f"{SESSION}.jsonl"
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(FIXTURE, dest)
    return dest


def run_json(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict[str, Any]]:
    code = cli.main(list(argv))
    return code, json.loads(capsys.readouterr().out)


# --------------------------------------------------------------------------- explain


def test_explain_an_indexed_transcript_gives_host_position_and_turns(
    isolated_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = claude_transcript(isolated_home)
    assert cli.main(["index"]) == 0
    capsys.readouterr()
    code, out = run_json(capsys, "explain", str(path), "--json")
    assert code == 0
    assert out["owner"] == "claude-code" and out["indexed"] is True
    row = out["row"]
    assert row["position"] == path.stat().st_size == out["size"]
    assert row["turns"] > 0 and row["sessions"] == 1
    assert row["session_ids"][0]["session"] == SESSION
    assert row["error"] is None
    assert out["notes"] == ["up to date"]


def test_explain_counts_bytes_appended_since_the_last_index(
    isolated_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = claude_transcript(isolated_home)
    assert cli.main(["index"]) == 0
    with open(path, "a") as fh:
        fh.write('{"type": "user"}\n')
    capsys.readouterr()
    _code, out = run_json(capsys, "explain", str(path), "--json")
    assert out["notes"] == ["17 bytes after the saved position are not indexed yet"]


def test_explain_a_subagent_transcript_names_include_subagents(
    isolated_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sub = isolated_home / ".claude" / "projects" / "-p" / "sess1" / "subagents"
    sub.mkdir(parents=True)
    path = sub / "agent-aac57f5.jsonl"
    path.write_bytes((FIXTURE.parent / "spotter-ae4a77f8-subagents-agent-aac57f5.jsonl")
                     .read_bytes())  # fmt: skip
    assert cli.main(["index"]) == 0
    capsys.readouterr()
    _code, out = run_json(capsys, "explain", str(path), "--json")
    assert out["owner"] == "claude-code" and out["row"]["turns"] == 0
    assert len(out["notes"]) == 1
    assert "hosts.claude-code.include_subagents is false" in out["notes"][0]
    assert "not indexed yet" not in out["notes"][0]


def test_explain_a_transcript_not_indexed_yet(
    isolated_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = claude_transcript(isolated_home)
    code, out = run_json(capsys, "explain", str(path), "--json")
    assert code == 0 and out["owner"] == "claude-code" and out["indexed"] is False
    assert "backscroll index" in out["notes"][0]


@pytest.mark.parametrize(
    ("config", "name", "reason"),
    [
        ("", "notes.txt", "not a file name claude-code writes transcripts to"),
        ("hosts:\n  claude-code:\n    exclude: ['*/-secret/*']\n", None,
         "excluded by the pattern '*/-secret/*'"),
        ("exclude:\n  paths: ['*/-secret/*']\n", None, "excluded by the pattern '*/-secret/*'"),
        ("hosts:\n  claude-code:\n    enabled: false\n", None,
         "claude-code is disabled in config"),
    ],
)  # fmt: skip
def test_explain_says_why_a_file_is_skipped(
    tmp_path: Path, isolated_home: Path, capsys: pytest.CaptureFixture[str],
    config: str, name: str | None, reason: str,
) -> None:  # fmt: skip
    path = claude_transcript(isolated_home, "-secret")
    if name:
        path = path.with_name(name)
        path.write_text("hello\n")
    cfg = tmp_path / "config.yaml"
    cfg.write_text(config)
    code, out = run_json(capsys, "--config", str(cfg), "explain", str(path), "--json")
    assert code == 1 and out["owner"] is None
    assert any(reason in r for r in out["reasons"]), out["reasons"]


def test_explain_a_file_outside_every_root(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    stray = tmp_path / "stray.jsonl"
    stray.write_text("{}\n")
    assert cli.main(["explain", str(stray)]) == 1
    out = capsys.readouterr().out
    assert out.startswith(f"{stray}\n  not indexed:\n")
    assert "not under any host's root" in out


# --------------------------------------------------------------------------- logs


def daemon_log(path: Path) -> None:
    """A real log file, written through the daemon's JSON formatter."""
    logger = logging.getLogger("backscroll.test_ops")
    handler = logging.FileHandler(path, encoding="utf-8")
    handler.setFormatter(JsonFormatter())
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    logger.propagate = False
    try:
        logger.info("daemon ready", extra={"event": "ready", "socket": "/run/b.sock", "pid": 7})
        logger.debug("indexed", extra={"event": "indexed", "host": "codex", "turns": 3})
        logger.warning("cannot read transcript", extra={"event": "read_error",
                       "path": "/h/a b.jsonl", "error": "PermissionError: denied"})  # fmt: skip
        try:
            raise ValueError("boom")
        except ValueError:
            logger.exception("reader failed", extra={"event": "reader_error"})
    finally:
        logger.removeHandler(handler)
        handler.close()
    with open(path, "a") as fh:
        fh.write("Traceback (most recent call last): not JSON\n")


def test_logs_prints_json_lines_readably(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "daemon.log"
    daemon_log(log)
    assert cli.main(["logs", "--file", str(log)]) == 0
    lines = capsys.readouterr().out.splitlines()
    ts = json.loads(log.read_text().splitlines()[0])["ts"]
    assert lines[0] == f"{ts} info    ready: daemon ready socket=/run/b.sock pid=7"
    assert lines[1].endswith("debug   indexed host=codex turns=3")
    assert lines[2].endswith(
        'warning read_error: cannot read transcript path="/h/a b.jsonl" '
        'error="PermissionError: denied"'
    )
    assert lines[3].endswith("error   reader_error: reader failed")
    assert lines[4] == "    Traceback (most recent call last):"
    assert any(line.strip() == "ValueError: boom" for line in lines)
    assert lines[-1] == "Traceback (most recent call last): not JSON"  # printed as it is


def test_logs_level_filters_and_json_passes_lines_through(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "daemon.log"
    daemon_log(log)
    assert cli.main(["logs", "--file", str(log), "--level", "warning", "--json"]) == 0
    out = capsys.readouterr().out.splitlines()
    raw = log.read_text().splitlines()
    assert out == [raw[2], raw[3], raw[4]]
    assert cli.main(["logs", "--file", str(log), "-n", "1"]) == 0
    assert capsys.readouterr().out.splitlines() == [raw[-1]]


def test_logs_level_filters_before_counting_the_last_n(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "daemon.log"
    rows = [{"ts": "t1", "level": "error", "event": "first_error"},
            {"ts": "t2", "level": "error", "event": "second_error"},
            {"ts": "t3", "level": "info", "event": "later"},
            {"ts": "t4", "level": "debug", "event": "later_still"}]  # fmt: skip
    log.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert cli.main(["logs", "--file", str(log), "--level", "error", "-n", "1"]) == 0
    assert capsys.readouterr().out.split() == ["t2", "error", "second_error"]
    assert cli.main(["logs", "--file", str(log), "--level", "warning", "-n", "5"]) == 0
    assert len(capsys.readouterr().out.splitlines()) == 2


def test_logs_level_reads_journald_priorities_and_never_takes_a_stray_line_for_an_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "daemon.log"
    log.write_text(
        '<3>{"ts": "t1", "level": "error", "event": "the_error"}\n'
        '<6>{"ts": "t2", "level": "info", "event": "later"}\n'
        "<3>a crash before logging was set up\n"
        "a stray line of text\n"
    )
    assert cli.main(["logs", "--file", str(log), "--level", "error", "-n", "2"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split() == ["t1", "error", "the_error"]  # (its <3> read and left out)
    assert out[1] == "a crash before logging was set up"
    assert cli.main(["logs", "--file", str(log), "--level", "warning"]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "a stray line of text"


def test_logs_follow_without_a_journal_says_why_instead_of_waiting(
    isolated_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import shutil
    import subprocess

    from backscroll import logs

    if not shutil.which("journalctl"):
        pytest.skip("no journalctl on this machine")
    held = subprocess.run([*logs.JOURNAL, "-n", "1"], capture_output=True, text=True)
    if held.stdout.strip():
        pytest.skip("this machine's journal holds backscroll lines")
    assert cli.main(["logs", "-f"]) == 2
    err = capsys.readouterr().err
    assert "no line of the backscroll user unit" in err and "nothing to follow" in err
    assert "backscroll service install" in err and "--file" in err


def test_logs_names_a_missing_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["logs", "--file", str(tmp_path / "none.log")]) == 2
    assert "cannot read the log file" in capsys.readouterr().err


# --------------------------------------------------------------------------- without FTS5


def test_without_fts5_search_still_finds_words_unranked_and_doctor_says_so(
    isolated_home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("BACKSCROLL_NO_FTS", "1")
    claude_transcript(isolated_home)
    assert cli.main(["index"]) == 0
    capsys.readouterr()
    code, result = run_json(capsys, "search", "phoenix", "--json")
    assert code == 0
    assert result["ranked"] is False and result["daemon"] is False
    assert result["hits"] and all("phoenix" in json.dumps(h).lower() for h in result["hits"])
    code, report = run_json(capsys, "doctor", "--json")
    found = {f["check"]: f for f in report["findings"]}
    assert found["fts5"]["status"] == "warn" and "BACKSCROLL_NO_FTS=1" in found["fts5"]["detail"]
    assert found["index fts"]["status"] == "warn"


# --------------------------------------------------------------------------- import cost


def test_the_cli_parser_does_not_import_the_operations_modules() -> None:
    code = (
        "import sys; from backscroll import cli; cli.build_parser(); "
        "print(' '.join(sorted(m for m in sys.modules if m.startswith(('backscroll', 'yaml')))))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True, timeout=60)  # fmt: skip
    loaded = set(done.stdout.split())
    heavy_modules = (
        "backscroll.service",
        "backscroll.doctor",
        "backscroll.explain",
        "backscroll.logs",
        "backscroll.readers",
        "backscroll.indexing.indexer",
    )
    for heavy in heavy_modules:
        assert heavy not in loaded, f"{heavy} is imported just to build the parser"


def test_explain_a_path_that_does_not_exist_says_so_and_exits_1(
    isolated_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = isolated_home / ".claude" / "projects" / "-x" / "abc.jsonl"
    code, out = run_json(capsys, "explain", str(path), "--json")
    assert code == 1 and out["exists"] is False and out["indexed"] is False
    assert out["notes"] == ["no such file, and nothing was ever indexed from it: check the path"]


def test_logs_refuses_a_negative_line_count_with_a_clear_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "daemon.log"
    log.write_text(json.dumps({"ts": "t1", "level": "info", "event": "x"}) + "\n")
    assert cli.main(["logs", "--file", str(log), "-n", "-1"]) == 2
    err = capsys.readouterr().err
    assert "-n/--lines: -1 is not a number of lines; give 0 or more" in err
    assert "unexpected error" not in err


def test_config_check_says_a_file_that_is_not_utf8_is_not_text(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "config.yaml"
    bad.write_bytes(b"\xff\xfe log_level: info\n")
    assert cli.main(["config", "check", str(bad)]) == 2
    assert "it is not UTF-8 text" in capsys.readouterr().err
    assert cli.main(["config", "check", str(tmp_path)]) == 2
    assert "is a directory; give the config file itself" in capsys.readouterr().err


def test_a_failed_refresh_before_a_search_logs_why_as_a_json_line(isolated_home: Path) -> None:
    script = (
        "from backscroll import config, direct\n"
        "def broken(cfg, *a, **k):\n"
        "    raise OSError(28, 'No space left on device')\n"
        "direct.index = broken\n"
        "direct.refresh(config.load())\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr
    (line,) = done.stderr.splitlines()
    entry = json.loads(line)
    assert entry["event"] == "refresh_error" and "No space left on device" in entry["error"]
    assert entry["msg"].startswith("refresh failed")
