"""Transcripts outside every root (Crush keeps one database per project) are
watched once a full pass has found them, so a change there is indexed without
waiting for the next periodic rescan."""

from __future__ import annotations

import json
import shutil
import sqlite3
import time
from pathlib import Path

from tests.daemon.conftest import DaemonFactory

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
SID = "3f2c9a0e-0000-4000-8000-000000000001"


def _crush_project(home: Path, project: Path) -> Path:
    data = project / ".crush"
    data.mkdir(parents=True)
    db = data / "crush.db"
    shutil.copy(FIXTURES / "crush" / "crush.db", db)
    registry = home / ".local" / "share" / "crush"
    registry.mkdir(parents=True)
    (registry / "projects.json").write_text(
        json.dumps({"projects": [{"path": str(project), "data_dir": str(data)}]})
    )
    return db


def test_a_project_database_outside_the_roots_is_reindexed_on_change(
    tmp_path: Path, daemon_factory: DaemonFactory
) -> None:
    db = _crush_project(tmp_path / "home", tmp_path / "work" / "app")
    daemon = daemon_factory()
    daemon.sync()
    assert daemon.call("search", {"query": "loadConfig"})["hits"]
    conn = sqlite3.connect(db, isolation_level=None)
    try:
        conn.execute("BEGIN IMMEDIATE")
        conn.execute(
            "INSERT INTO messages (id, session_id, role, parts, created_at, updated_at,"
            " is_summary_message) VALUES (?, ?, 'user', ?, ?, ?, 0)",
            (
                "m-new",
                SID,
                json.dumps(
                    [{"type": "text", "data": {"text": "what about the quokkaphonic registry?"}}]
                ),
                1900000000,
                1900000000,
            ),
        )
        conn.execute("UPDATE sessions SET updated_at = 1900000000 WHERE id = ?", (SID,))
        conn.execute("COMMIT")
    finally:
        conn.close()
    # No sync: the watcher must see the change. Wait on the condition, bounded.
    deadline = time.monotonic() + 15
    hits: list[object] = []
    while time.monotonic() < deadline and not hits:
        hits = daemon.call("search", {"query": "quokkaphonic"})["hits"]
    assert hits, "the change to a project database outside the roots was not indexed"
    modes = {r["path"]: r["mode"] for r in daemon.call("status", {})["roots"]}
    assert modes.get(str(db.parent)) in ("inotify", "polling")
