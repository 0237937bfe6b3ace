"""``backscroll doctor``: each finding's status and fix, and its exit code."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from backscroll import __version__, cli
from tests.conftest import SharedMount
from tests.daemon.harness import start_daemon

FIXTURE = Path(__file__).parent / "fixtures" / "claude-code" / "spotter-tool_heavy.jsonl"
SESSION = "3f2a0000-0000-4000-8000-000000000001"


def claude_transcript(home: Path) -> Path:
    dest = home / ".claude" / "projects" / "-p" / f"{SESSION}.jsonl"
    dest.parent.mkdir(parents=True)
    shutil.copyfile(FIXTURE, dest)
    return dest


def doctor(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, Any]]:
    code = cli.main([*args, "doctor", "--json"])
    report = json.loads(capsys.readouterr().out)
    return code, {f["check"]: f for f in report["findings"]}


def test_doctor_says_which_hosts_are_indexed_and_why_others_are_not(
    tmp_path: Path, isolated_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    claude_transcript(isolated_home)
    cfg = tmp_path / "config.yaml"
    cfg.write_text("hosts:\n  gemini-cli:\n    enabled: false\n")
    assert cli.main(["--config", str(cfg), "index"]) == 0
    capsys.readouterr()
    code, found = doctor(capsys, "--config", str(cfg))
    assert code == 0
    assert found["host claude-code"]["status"] == "ok"
    assert found["host claude-code"]["detail"] == "indexed: ~/.claude/projects"
    assert found["host codex"]["detail"].startswith("not indexed: no root exists (~/.codex/")
    assert str(isolated_home / ".codex" / "sessions") in found["host codex"]["roots"]
    assert "disabled in config" in found["host gemini-cli"]["detail"]
    assert found["fts5"]["status"] == "ok"
    assert found["index fts"]["status"] == "ok"
    assert found["data"]["status"] == "ok" and "(0700)" in found["data"]["detail"]
    assert found["index"]["status"] == "ok" and "(0600)" in found["index"]["detail"]
    assert found["daemon"]["status"] == "warn" and "service install" in found["daemon"]["fix"]
    assert found["service"]["fix"] == "backscroll service install"


def test_doctor_fails_on_a_broken_config_and_names_the_problem(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cfg = tmp_path / "config.yaml"
    cfg.write_text("index:\n  debounce_ms: soon\n")
    code, found = doctor(capsys, "--config", str(cfg))
    assert code == 1
    assert found["config"]["status"] == "fail"
    assert "index.debounce_ms" in found["config"]["detail"]
    assert "config check" in found["config"]["fix"]


def test_doctor_warns_about_a_data_directory_others_can_read(
    tmp_path: Path, isolated_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    claude_transcript(isolated_home)
    assert cli.main(["index"]) == 0
    data = tmp_path / "data"
    os.chmod(data, 0o755)
    os.chmod(data / "index.db", 0o644)
    capsys.readouterr()
    code, found = doctor(capsys)
    assert code == 0  # a warning, not a failure
    assert found["data"]["status"] == "warn" and found["data"]["fix"] == f"chmod 700 {data}"
    assert found["index"]["fix"] == f"chmod 600 {data / 'index.db'}"


def test_doctor_reports_no_transcripts_anywhere_with_the_fix(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, found = doctor(capsys)
    assert code == 0
    assert found["hosts"]["status"] == "warn"
    assert "extra_roots" in found["hosts"]["fix"]


def test_doctor_estimates_inotify_watches_from_directories_under_roots(
    isolated_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    if not Path("/proc/sys/fs/inotify/max_user_watches").exists():
        pytest.skip("no inotify limits here (not Linux)")
    for n in range(3):
        (isolated_home / ".claude" / "projects" / f"-p{n}").mkdir(parents=True)
    _code, found = doctor(capsys)
    limit = Path("/proc/sys/fs/inotify/max_user_watches").read_text().strip()
    assert found["inotify"]["detail"] == f"inotify: about 4 watches needed, limit {limit}"


def test_doctor_says_which_roots_are_polled_because_they_are_on_a_share(
    isolated_home: Path, shared_mount: SharedMount, capsys: pytest.CaptureFixture[str]
) -> None:
    if not Path("/proc/sys/fs/inotify/max_user_watches").exists():
        pytest.skip("no inotify limits here (not Linux)")
    projects = isolated_home / ".claude" / "projects"
    (projects / "-p0").mkdir(parents=True)
    shared_mount(projects, "cifs")
    _code, found = doctor(capsys)
    detail = found["inotify"]["detail"]
    assert detail.startswith("inotify: about 0 watches needed")
    assert "1 existing root is on a shared file system (cifs) and polled every 2 s" in detail


def test_doctor_reaches_the_running_daemon_and_reports_its_version(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    with start_daemon(tmp_path) as d:
        monkeypatch.setenv("BACKSCROLL_SOCKET", str(d.socket_path))
        code, found = doctor(capsys)
        assert d.stop() == 0
    assert code == 0
    assert found["daemon"]["status"] == "ok"
    assert f"pid {d.pid} version {__version__}" in found["daemon"]["detail"]
    assert found["socket"]["status"] == "ok" and "(0600)" in found["socket"]["detail"]
    assert found["socket dir"]["status"] == "ok"


def test_doctor_text_output_ends_with_a_summary(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["doctor"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0].startswith("ok    python")
    assert "fix: backscroll service install" in out
    assert out.rstrip().splitlines()[-1].startswith("0 to fix, ")


def test_doctor_text_output_keeps_details_in_one_column(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # Host checks are named after every host, the longest of 21 characters.
    _code, findings = doctor(capsys)
    assert cli.main(["doctor"]) == 0
    lines = capsys.readouterr().out.splitlines()
    starts = {
        line.index(f["detail"])
        for f in findings.values()
        for line in lines
        if line.startswith(f"{f['status']:<4}  {f['check']} ")
    }
    assert len(starts) == 1, "\n".join(lines)


def test_doctor_warns_while_a_first_index_has_not_finished_its_full_text_index(
    isolated_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from backscroll import config as bconfig
    from backscroll.store import open_writer

    claude_transcript(isolated_home)
    db = bconfig.load(None).db_path()
    writer = open_writer(db)
    writer.begin_bulk()  # then killed: its end never ran
    writer.close()
    _code, found = doctor(capsys)
    assert found["index fts"]["status"] == "warn"
    assert "unranked" in found["index fts"]["detail"]
    assert "`backscroll index` completes it" in found["index fts"]["fix"]
    assert cli.main(["index"]) == 0
    capsys.readouterr()
    _code, found = doctor(capsys)
    assert found["index fts"]["status"] == "ok"


def test_doctor_fails_a_directory_in_the_indexs_place_without_mode_advice(
    tmp_path: Path, isolated_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """It advised `chmod 600` on the directory, as if it were the index."""
    db = tmp_path / "data" / "index.db"
    db.mkdir(parents=True, mode=0o700)
    code, found = doctor(capsys)
    assert code != 0
    assert found["index"]["status"] == "fail"
    assert found["index"]["detail"] == f"{db} is a directory, not an index"
    assert "chmod" not in found["index"]["fix"] and "move it aside" in found["index"]["fix"]
