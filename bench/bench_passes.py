"""What one indexing pass costs where the thirteenth pass changed it.

Run from the repository root::

    python bench/bench_passes.py            # all three
    python bench/bench_passes.py kimi       # or cursor, subagent, prune

- ``kimi``: a modern Kimi CLI session (its wire from the first message) of
  ``--turns`` turns; the time of the pass after one more message appended to
  ``context.jsonl``, as kimi-cli writes at each step. Deciding where the wire's
  part starts must not read the whole history again.
- ``cursor``: Cursor's global ``state.vscdb`` with 400 chats of 100 bubbles; the
  pass after a write to another key, with no chat updated lately and with one
  updated a minute ago (read again while it settles, rewritten only if changed).
- ``subagent``: the store's step that names a session after the file holding its
  turns, for an append to a sub-agent's file of a session of ``--turns`` x 25
  turns, against an append to the session's own file.

- ``prune``: 12,000 one-line Claude Code sessions indexed, then 3,000 of their
  transcripts deleted (a host pruning old ones): the time of the next pass,
  which marks each missing and hands its sessions on (one run).

Each figure is the median of ``--rounds`` (``prune``: one run).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sqlite3
import statistics
import sys
import tempfile
import time
from contextlib import closing
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def index_home(home: Path, db: Path) -> None:
    """One pass over ``home``'s default roots into ``db``, as ``backscroll index``
    does (written out here, so the script runs on older trees too)."""
    from backscroll.config import Config
    from backscroll.indexing.indexer import Indexer, build_hosts
    from backscroll.readers.base import HostEnv
    from backscroll.store import open_writer

    writer = open_writer(db)
    try:
        Indexer(writer, build_hosts(Config(), HostEnv(home=home)), Config()).reconcile()
    finally:
        writer.close()


def _append(path: Path, *records: dict[str, Any]) -> None:
    with open(path, "a", encoding="utf-8") as fh:
        for record in records:
            fh.write(json.dumps(record) + "\n")


def _wire(at: int, kind: str, **payload: Any) -> dict[str, Any]:
    return {"timestamp": at, "message": {"type": kind, "payload": payload}}


def kimi(base: Path, turns: int, rounds: int) -> None:
    home = base / "home"
    work = "/home/dev/src/widget"
    session = home / ".kimi/sessions" / hashlib.md5(work.encode()).hexdigest() / "sid-1"
    session.mkdir(parents=True)
    (home / ".kimi/kimi.json").write_text(json.dumps({"work_dirs": [{"path": work}]}))
    wire, context = session / "wire.jsonl", session / "context.jsonl"
    _append(context, {"role": "_system_prompt", "content": "sys"})
    _append(wire, {"type": "metadata", "protocol_version": "1.10"})
    output = "x" * 8000
    for i in range(turns):
        _append(wire, _wire(i, "TurnBegin", user_input=f"prompt {i}"),
                _wire(i, "ContentPart", type="text", text=f"reply {i}"),
                _wire(i, "ToolResult", output=output), _wire(i, "TurnEnd"))  # fmt: skip
        _append(context, {"role": "_checkpoint", "id": i},
                {"role": "user", "content": [{"type": "text", "text": f"prompt {i}"}]},
                {"role": "assistant", "content": [{"type": "text", "text": f"reply {i}"}]},
                {"role": "tool", "content": [{"type": "text", "text": output}]})  # fmt: skip
    db = base / "index.db"
    index_home(home, db)
    times = []
    for n in range(rounds):
        _append(context, {"role": "assistant", "content": [{"type": "text", "text": f"more {n}"}]})
        start = time.perf_counter()
        index_home(home, db)
        times.append(time.perf_counter() - start)
    size = (context.stat().st_size + wire.stat().st_size) / 1e6
    print(f"kimi: {turns} turns ({size:.0f} MB): pass after one context append "
          f"{statistics.median(times) * 1000:.1f} ms median")  # fmt: skip


def _cursor_db(base: Path, recent: bool) -> Path:
    home = base / ("recent" if recent else "quiet")
    db = home / ".config/Cursor/User/globalStorage/state.vscdb"
    db.parent.mkdir(parents=True)
    now = int(time.time() * 1000)
    with closing(sqlite3.connect(db)) as conn, conn:
        conn.execute("CREATE TABLE ItemTable (key TEXT UNIQUE ON CONFLICT REPLACE, value BLOB)")
        conn.execute("CREATE TABLE cursorDiskKV (key TEXT UNIQUE ON CONFLICT REPLACE, value BLOB)")
        rows = []
        for i in range(400):
            cid, bubbles = f"chat-{i:05d}", [f"b{j}" for j in range(100)]
            for j, b in enumerate(bubbles):
                bubble = {"bubbleId": b, "type": 1 + j % 2, "text": f"text {i} {j} " * 40}
                rows.append((f"bubbleId:{cid}:{b}", json.dumps(bubble)))
            updated = now - 60_000 if recent and i == 399 else 1767261600000 + i
            doc = {"_v": 10, "composerId": cid, "name": f"chat {i}", "createdAt": 1767261600000,
                   "lastUpdatedAt": updated, "status": "completed",
                   "fullConversationHeadersOnly": [{"bubbleId": b} for b in bubbles]}  # fmt: skip
            rows.append((f"composerData:{cid}", json.dumps(doc)))
        conn.executemany("INSERT INTO cursorDiskKV VALUES (?, ?)", rows)
    return db


def cursor(base: Path, rounds: int) -> None:
    for recent in (False, True):
        db = _cursor_db(base, recent)
        index = base / f"cursor-{recent}.db"
        index_home(db.parents[4], index)
        times = []
        for n in range(rounds):
            with closing(sqlite3.connect(db)) as conn, conn:
                conn.execute("INSERT INTO ItemTable VALUES ('ui.state', ?)", (str(n),))
            start = time.perf_counter()
            index_home(db.parents[4], index)
            times.append(time.perf_counter() - start)
        print(f"cursor: pass after a write to another key, chat updated a minute ago: "
              f"{recent}: {statistics.median(times) * 1000:.1f} ms median")  # fmt: skip


def subagent(base: Path, turns: int, rounds: int) -> None:
    from backscroll.store.writer import IndexWriter

    writer = IndexWriter(base / "subagent.db")
    conn = writer.conn
    n = turns * 25
    conn.execute("INSERT INTO files (id, path, host) VALUES (1, '/main.jsonl', 'claude-code'),"
                 " (2, '/sub.jsonl', 'claude-code')")  # fmt: skip
    conn.execute("INSERT INTO sessions (id, host, session_id, source_path)"
                 " VALUES (1, 'claude-code', 's', '/main.jsonl')")  # fmt: skip
    text = "lorem ipsum dolor " * 40
    conn.executemany(
        "INSERT INTO turns (session, file, key, seq, role, ts, text)"
        " VALUES (1, 1, ?, ?, 'user', ?, ?)",
        ((f"k{i}", i, float(i), text) for i in range(n)),
    )
    conn.execute("INSERT INTO turns (session, file, key, seq, role, ts, text)"
                 " VALUES (1, 2, 'sub1', 0, 'assistant', ?, 'x')", (float(n),))  # fmt: skip
    conn.commit()
    for label, path in (("sub-agent's file", "/sub.jsonl"), ("session's own file", "/main.jsonl")):
        times = []
        for _ in range(rounds):
            start = time.perf_counter()
            writer._take_source(path, 1)
            times.append(time.perf_counter() - start)
        print(f"subagent: naming step, session of {n} turns, an append to the {label}: "
              f"{statistics.median(times) * 1000:.3f} ms median")  # fmt: skip
    writer.close()


def prune(base: Path) -> None:
    home = base / "home"
    for p in range(20):
        project = home / ".claude/projects" / f"-home-u-proj{p}"
        project.mkdir(parents=True)
        for i in range(600):
            sid = f"{p:08x}-0000-4000-8000-{i:012x}"
            line = {"type": "user", "uuid": f"u-{p}-{i}", "sessionId": sid, "cwd": "/home/u",
                    "timestamp": "2025-01-01T00:00:00Z", "version": "2.0.1",
                    "message": {"role": "user", "content": f"hello world {i}"}}  # fmt: skip
            (project / f"{sid}.jsonl").write_text(json.dumps(line) + "\n")
    db = base / "index.db"
    index_home(home, db)
    for path in sorted((home / ".claude/projects").rglob("*.jsonl"))[:3000]:
        path.unlink()
    start = time.perf_counter()
    index_home(home, db)
    print(f"prune: the pass after 3,000 of 12,000 transcripts were deleted: "
          f"{time.perf_counter() - start:.2f} s")  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("which", nargs="*", default=["kimi", "cursor", "subagent", "prune"])
    ap.add_argument("--turns", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-passes-") as tmp:
        base = Path(tmp)
        if "kimi" in args.which:
            kimi(base / "kimi", args.turns, args.rounds)
        if "cursor" in args.which:
            cursor(base / "cursor", args.rounds)
        if "subagent" in args.which:
            (base / "sub").mkdir()
            subagent(base / "sub", args.turns, args.rounds)
        if "prune" in args.which:
            prune(base / "prune")


if __name__ == "__main__":
    main()
