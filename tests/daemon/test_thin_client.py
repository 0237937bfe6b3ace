"""``backscroll search`` against a running daemon is a thin client: it imports
neither the daemon, nor the store, nor watchdog, APScheduler or aiosqlite."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.conftest import DaemonFactory
from tests.daemon.harness import daemon_env

PROBE = """
import json, sys
from backscroll import cli
code = cli.main(["search", "anything", "--json"])
heavy = sorted(m for m in sys.modules if m.split(".")[0] in
               ("watchdog", "apscheduler", "aiosqlite", "yaml", "sqlite3", "psycopg",
                "psycopg_pool", "shtab")
               or m.startswith(("backscroll.daemon", "backscroll.store", "backscroll.readers",
                                "backscroll.team")))
sys.stderr.write(json.dumps({"code": code, "heavy": heavy}) + "\\n")
"""


def test_search_against_the_daemon_imports_nothing_heavy(
    tmp_path: Path, daemon_factory: DaemonFactory
) -> None:
    daemon = daemon_factory()
    env = daemon_env(tmp_path, {"BACKSCROLL_SOCKET": str(daemon.socket_path)})
    done = subprocess.run(
        [sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, check=True
    )
    report = json.loads(done.stderr.strip().splitlines()[-1])
    assert report["code"] == 1  # an empty index: nothing matched, so 1 (like grep)
    assert json.loads(done.stdout)["daemon"] is True
    assert report["heavy"] == []
