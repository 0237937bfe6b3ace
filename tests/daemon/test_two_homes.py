"""Two HOMEs of one user without XDG_RUNTIME_DIR share /tmp's socket path: a
client must not take the other HOME's daemon for its own. The daemon says in
its hello which index it serves; a client of another index answers from its
own (and says why), and doctor fails the daemon check with the fix."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from backscroll.wire import PROTOCOL_VERSION
from tests.conftest import DaemonFactory
from tests.daemon.harness import CLAUDE_FIXTURES, claude_user_line, run_cli, session_uuid


def test_a_daemon_of_another_index_on_the_shared_socket_is_not_used(
    tmp_path: Path, daemon_factory: DaemonFactory
) -> None:
    d = daemon_factory()  # HOME A, with nothing of B's
    other = tmp_path / "b"
    project = other / "home" / ".claude" / "projects" / "-b"
    project.mkdir(parents=True)
    transcript = project / f"{session_uuid(7)}.jsonl"
    shutil.copyfile(CLAUDE_FIXTURES[0], transcript)
    with transcript.open("a", encoding="utf-8") as fh:
        fh.write(claude_user_line(session_uuid(7), "u-b-1", "the quetzalbarrow plan"))
    shared = {"BACKSCROLL_SOCKET": str(d.socket_path)}  # what /tmp/backscroll-<uid> gives both
    assert run_cli(other, "index", env=shared).returncode == 0
    found = run_cli(other, "search", "--json", "quetzalbarrow", env=shared)
    assert found.returncode == 0, found.stdout + found.stderr
    result = json.loads(found.stdout)
    assert result["daemon"] is False and result["hits"]
    assert "serves another index" in found.stderr and str(d.db_path) in found.stderr
    doctor = run_cli(other, "doctor", "--json", env=shared)
    checks = {f["check"]: f for f in json.loads(doctor.stdout)["findings"]}
    assert checks["daemon"]["status"] == "fail"
    assert "BACKSCROLL_SOCKET" in checks["daemon"]["fix"]
    own = run_cli(tmp_path, "search", "--json", "quetzalbarrow", env=shared)  # A: its daemon
    assert json.loads(own.stdout)["daemon"] is True


def test_the_daemon_names_its_index_by_its_real_path(
    daemon_factory: DaemonFactory, tmp_path: Path
) -> None:
    # (BACKSCROLL_HOME through a symlink: a client naming the other path is the same index.)
    real = tmp_path / "real-data"
    real.mkdir(mode=0o700)
    link = tmp_path / "link-data"
    link.symlink_to(real)
    d = daemon_factory(env={"BACKSCROLL_HOME": str(link)})
    hello = d.call("hello", {"protocol": PROTOCOL_VERSION})
    assert hello["db"] == str(real.resolve() / "index.db")
