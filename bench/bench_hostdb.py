"""Host databases: time to pick up one new message in a small and a large opencode.db.

Run from the repository root::

    python bench/bench_hostdb.py               # 100 vs 10 000 messages
    python bench/bench_hostdb.py --rounds 50   # more samples per database

Builds OpenCode v1.2-schema databases (WAL, like the host) of realistic shape:
sessions of 100 messages (user prompt, then assistant messages of step-start,
reasoning, a tool call with output, text, step-finish parts):

- small: 100 messages (1 session)
- large: 10 000 messages (100 sessions)
- long session (printed for context): 10 000 messages in 1 session

For each, a full read gives the cursor; then, ``--rounds`` times, the host inserts
one new message (a user prompt with one text part, bumping ``session.time_updated``
as OpenCode does) into the most recent session and the reader picks it up
incrementally from the previous cursor. Reported: the median incremental read
and the ratio large/small (the target is ~1: independent of database size).
Database readers re-read each changed session whole, so the cost follows the
size of the changed session, shown by the long-session line.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path

from backscroll.model import Cursor, ReaderOptions
from backscroll.readers.opencode import OpenCodeReader

_DDL = """
CREATE TABLE project (id TEXT PRIMARY KEY, worktree TEXT NOT NULL, vcs TEXT, name TEXT,
  time_created INTEGER NOT NULL, time_updated INTEGER NOT NULL, time_initialized INTEGER,
  sandboxes TEXT);
CREATE TABLE session (id TEXT PRIMARY KEY, project_id TEXT NOT NULL, workspace_id TEXT,
  parent_id TEXT, slug TEXT NOT NULL, directory TEXT NOT NULL, path TEXT, title TEXT NOT NULL,
  version TEXT NOT NULL, share_url TEXT, summary_additions INTEGER, summary_deletions INTEGER,
  summary_files INTEGER, summary_diffs TEXT, cost REAL NOT NULL DEFAULT 0,
  tokens_input INTEGER NOT NULL DEFAULT 0, tokens_output INTEGER NOT NULL DEFAULT 0,
  tokens_reasoning INTEGER NOT NULL DEFAULT 0, tokens_cache_read INTEGER NOT NULL DEFAULT 0,
  tokens_cache_write INTEGER NOT NULL DEFAULT 0, revert TEXT, permission TEXT, agent TEXT,
  model TEXT, time_created INTEGER NOT NULL, time_updated INTEGER NOT NULL,
  time_compacting INTEGER, time_archived INTEGER);
CREATE TABLE message (id TEXT PRIMARY KEY, session_id TEXT NOT NULL, time_created INTEGER NOT NULL,
  time_updated INTEGER NOT NULL, data TEXT NOT NULL);
CREATE TABLE part (id TEXT PRIMARY KEY, message_id TEXT NOT NULL, session_id TEXT NOT NULL,
  time_created INTEGER NOT NULL, time_updated INTEGER NOT NULL, data TEXT NOT NULL);
CREATE INDEX session_project_idx ON session(project_id);
CREATE INDEX session_parent_idx ON session(parent_id);
CREATE INDEX message_session_time_created_id_idx ON message(session_id, time_created, id);
CREATE INDEX part_message_id_id_idx ON part(message_id, id);
CREATE INDEX part_session_idx ON part(session_id);
"""

_PROSE = (
    "I'll read the configuration loader to see how the defaults are merged. "
    "The test fails because the fixture writes the file after the watcher started; "
    "moving the write before the start makes it deterministic."
)
_OUTPUT = "\n".join(f"line {i}: some tool output that is not prose" for i in range(40))
T0 = 1767225600000


def build(path: Path, sessions: int, per_session: int) -> None:
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.executescript(_DDL)
    conn.execute(
        "INSERT INTO project VALUES ('p', '/home/u/app', 'git', NULL, ?, ?, NULL, '[]')", (T0, T0)
    )
    conn.execute("BEGIN")
    clock = T0
    for s in range(sessions):
        sid = f"ses_{s:05}"
        conn.execute(
            "INSERT INTO session (id, project_id, slug, directory, title, version, time_created,"
            " time_updated) VALUES (?, 'p', 'slug', '/home/u/app', ?, '1.2.10', ?, ?)",
            (sid, f"Session {s}", clock, clock),
        )
        for m in range(per_session):
            clock += 1000
            mid = f"msg_{s:05}_{m:05}"
            role = "user" if m % 2 == 0 else "assistant"
            info = {"role": role, "time": {"created": clock}}
            conn.execute(
                "INSERT INTO message VALUES (?, ?, ?, ?, ?)",
                (mid, sid, clock, clock, json.dumps(info)),
            )
            if role == "user":
                parts = [{"type": "text", "text": f"Prompt {m}: why does the watcher test fail?"}]
            else:
                parts = [
                    {"type": "step-start"},
                    {"type": "reasoning", "text": "Think about the ordering first."},
                    {
                        "type": "tool",
                        "tool": "read",
                        "state": {"input": {"filePath": "x.py"}, "output": _OUTPUT},
                    },
                    {"type": "text", "text": _PROSE},
                    {"type": "step-finish", "reason": "stop"},
                ]
            for p, data in enumerate(parts):
                conn.execute(
                    "INSERT INTO part VALUES (?, ?, ?, ?, ?, ?)",
                    (f"prt_{s:05}_{m:05}_{p}", mid, sid, clock, clock, json.dumps(data)),
                )
        conn.execute("UPDATE session SET time_updated = ? WHERE id = ?", (clock, sid))
    conn.execute("COMMIT")
    conn.close()


def add_prompt(conn: sqlite3.Connection, sid: str, n: int) -> None:
    """One new message the way OpenCode writes it: message, part, session bump."""
    at = int(time.time() * 1000) + n
    mid = f"msg_new_{n:05}"
    conn.execute("BEGIN IMMEDIATE")
    conn.execute(
        "INSERT INTO message VALUES (?, ?, ?, ?, ?)",
        (mid, sid, at, at, json.dumps({"role": "user", "time": {"created": at}})),
    )
    conn.execute(
        "INSERT INTO part VALUES (?, ?, ?, ?, ?, ?)",
        (
            f"prt_new_{n:05}",
            mid,
            sid,
            at,
            at,
            json.dumps({"type": "text", "text": f"new prompt {n}"}),
        ),
    )
    conn.execute("UPDATE session SET time_updated = ? WHERE id = ?", (at, sid))
    conn.execute("COMMIT")


def measure(path: Path, last_session: str, rounds: int) -> tuple[float, float, int]:
    """(full read s, median incremental read s, turns from the last incremental read)."""
    reader = OpenCodeReader()
    opts = ReaderOptions()
    started = time.perf_counter()
    result = reader.read(path, None, opts)
    full = time.perf_counter() - started
    cursor = Cursor(result.position, dict(result.state))
    host = sqlite3.connect(path, isolation_level=None)
    samples = []
    for n in range(rounds):
        add_prompt(host, last_session, n)
        started = time.perf_counter()
        result = reader.read(path, cursor, opts)
        samples.append(time.perf_counter() - started)
        cursor = Cursor(result.position, dict(result.state))
        assert any(t.text == f"new prompt {n}" for t in result.turns), "new message missed"
        assert result.replaced_sessions == {last_session}, result.replaced_sessions
    host.close()
    return full, statistics.median(samples), len(result.turns)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=20)
    args = parser.parse_args()
    cases = [("small", 1, 100), ("large", 100, 100), ("long session", 1, 10_000)]
    print(
        f"python {sys.version.split()[0]}, sqlite {sqlite3.sqlite_version}, "
        f"{args.rounds} rounds, median incremental read"
    )
    medians: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for label, sessions, per_session in cases:
            path = Path(tmp) / f"{label.replace(' ', '-')}" / "opencode.db"
            path.parent.mkdir()
            started = time.perf_counter()
            build(path, sessions, per_session)
            built = time.perf_counter() - started
            full, incremental, turns = measure(path, f"ses_{sessions - 1:05}", args.rounds)
            medians[label] = incremental
            size = path.stat().st_size / 1e6
            print(
                f"{label:13} {sessions * per_session:6} messages in {sessions:3} sessions "
                f"({size:5.1f} MB, built {built:4.1f} s): full read {full * 1000:7.1f} ms, "
                f"one new message {incremental * 1000:6.2f} ms ({turns} turns re-read)"
            )
    ratio = medians["large"] / medians["small"]
    print(f"large/small incremental ratio: {ratio:.2f} (target ~1: independent of db size)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
