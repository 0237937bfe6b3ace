"""Journald priorities: ``<N>`` in front of each JSON line only when stderr is the journal."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

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
