"""Journald priorities: ``<N>`` in front of each JSON line only when stderr is the journal."""

from __future__ import annotations

import contextlib
import json
import os
import pty
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.daemon.harness import daemon_env

LOG = """
import logging
from backscroll.daemon.logging import setup_logging
setup_logging("debug")
log = logging.getLogger("backscroll.test")
log.debug("d"); log.info("i"); log.warning("w"); log.error("e"); log.critical("c")
"""


def _log_to(path: Path, journal_stream: str | None) -> list[str]:
    env = {k: v for k, v in os.environ.items() if k != "JOURNAL_STREAM"}
    with open(path, "w") as err:
        if journal_stream == "this file":
            st = os.fstat(err.fileno())
            journal_stream = f"{st.st_dev}:{st.st_ino}"
        if journal_stream is not None:
            env["JOURNAL_STREAM"] = journal_stream
        subprocess.run([sys.executable, "-c", LOG], stderr=err, env=env, check=True, timeout=60)
    return path.read_text().splitlines()


def test_lines_to_the_journal_carry_their_syslog_priority(tmp_path: Path) -> None:
    lines = _log_to(tmp_path / "journal", "this file")
    assert [line[:3] for line in lines] == ["<7>", "<6>", "<4>", "<3>", "<2>"]
    assert [json.loads(line[3:])["level"] for line in lines] == [
        "debug", "info", "warning", "error", "critical"]  # fmt: skip


def test_lines_elsewhere_are_plain_json_even_with_an_inherited_journal_stream(
    tmp_path: Path,
) -> None:
    for inherited in (None, "1:2", "garbage"):
        lines = _log_to(tmp_path / "plain", inherited)
        assert len(lines) == 5 and all(json.loads(line)["msg"] for line in lines), inherited


def _daemon_with_a_bad_config(tmp_path: Path, stderr: Any, env: dict[str, str]) -> int:
    bad = tmp_path / "bad.yaml"
    bad.write_text("server:\n  idle_timeout_s: .nan\n")
    run_env = daemon_env(tmp_path, {"BACKSCROLL_CONFIG": str(bad), **env})
    return subprocess.run(
        [sys.executable, "-m", "backscroll", "daemon"], stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL, stderr=stderr, env=run_env, timeout=60, check=False,
    ).returncode  # fmt: skip


def test_a_config_that_stops_the_daemon_is_a_json_line_with_its_priority_in_the_journal(
    tmp_path: Path,
) -> None:
    # `journalctl -p warning` (as the README suggests) must show why the service died.
    journal = tmp_path / "journal"
    with open(journal, "w") as err:
        st = os.fstat(err.fileno())
        code = _daemon_with_a_bad_config(
            tmp_path, err, {"JOURNAL_STREAM": f"{st.st_dev}:{st.st_ino}"}
        )
    assert code == 2
    (line,) = journal.read_text().splitlines()
    assert line.startswith("<3>"), line
    record = json.loads(line[3:])
    assert record["level"] == "error" and record["event"] == "startup_failed"
    assert "server.idle_timeout_s" in record["error"] and record["fix"]


def test_a_config_that_stops_the_daemon_is_a_plain_sentence_on_a_terminal(
    tmp_path: Path,
) -> None:
    master, slave = pty.openpty()
    try:
        code = _daemon_with_a_bad_config(tmp_path, slave, {})
        os.close(slave)
        out = b""
        with contextlib.suppress(OSError):  # (EIO once the terminal's other end is closed)
            while chunk := os.read(master, 65536):
                out += chunk
    finally:
        os.close(master)
    assert code == 2
    text = out.decode()
    assert text.startswith("backscroll: ") and "server.idle_timeout_s" in text, text
    assert "{" not in text
