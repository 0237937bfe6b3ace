"""Grok Build: reading a big ``updates.jsonl``, fresh and after an append.

Run from the repository root::

    python bench/bench_grok.py               # ~200 MB log
    python bench/bench_grok.py --mb 50       # smaller, quicker

Writes a synthetic ``updates.jsonl`` in Grok's shape: rounds of a prompt, a
streamed reply (many ``agent_message_chunk`` lines), a tool call and tool
updates that repeat the tool's growing output, as the notes describe real logs
(most bytes in ``tool_call_update``). Then prints:

- a fresh read by :class:`~backscroll.readers.grok.GrokReader` against the
  floor of tailing the same file and parsing every line as JSON
  (``tail_jsonl``), MB/s and the ratio (the reader skips tool lines unparsed);
- the cost of reading one appended exchange after the big log was indexed,
  against the same append to a 100 KB log (the ratio should stay near 1: the
  read starts at the saved byte offset).
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path
from typing import Any

from backscroll.model import Cursor, ReaderOptions
from backscroll.readers.base import tail_jsonl
from backscroll.readers.grok import GrokReader

SID = "019f7a10-3c2e-7d41-9b5a-6e0f2c8d4a17"


def _line(update: dict[str, Any], ts: int) -> str:
    envelope = {
        "timestamp": ts,
        "method": "session/update",
        "params": {"sessionId": SID, "update": update},
    }
    return json.dumps(envelope, separators=(",", ":")) + "\n"


def _chunk(kind: str, text: str) -> dict[str, Any]:
    return {"sessionUpdate": kind, "content": {"type": "text", "text": text}}


def _round(n: int, ts: int) -> str:
    out = [_line(_chunk("user_message_chunk", f"Round {n}: why does the build fail?"), ts)]
    for i in range(20):
        out.append(_line(_chunk("agent_message_chunk", f"piece {i} of reply {n}, "), ts))
    output = ""
    out.append(
        _line(
            {
                "sessionUpdate": "tool_call",
                "toolCallId": f"c{n}",
                "title": "Run tests",
                "kind": "execute",
                "status": "pending",
            },
            ts,
        )
    )
    for step in range(12):
        output += f"test_{step} ... ok\n" * 400
        update = {
            "sessionUpdate": "tool_call_update",
            "toolCallId": f"c{n}",
            "status": "in_progress",
            "content": [{"type": "content", "content": {"type": "text", "text": output}}],
        }
        out.append(_line(update, ts))
    out.append(_line(_chunk("agent_message_chunk", f"Round {n} done."), ts))
    return "".join(out)


def _write(path: Path, mb: float) -> int:
    path.parent.mkdir(parents=True, exist_ok=True)
    n = 0
    with open(path, "w", encoding="utf-8") as fh:
        while fh.tell() < mb * 1e6:
            fh.write(_round(n, 1785400000 + n))
            n += 1
    return n


def _floor(path: Path) -> float:
    started = time.perf_counter()
    _tail, lines = tail_jsonl(path, None, ReaderOptions())
    for _ in lines:
        pass
    return time.perf_counter() - started


def _fresh(reader: GrokReader, path: Path) -> tuple[float, Cursor, int]:
    started = time.perf_counter()
    result = reader.read(path, None, ReaderOptions())
    return time.perf_counter() - started, Cursor(result.position, result.state), len(result.turns)


def _append_cost(reader: GrokReader, path: Path, cursor: Cursor, repeat: int) -> float:
    best = float("inf")
    for i in range(repeat):
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(_line(_chunk("user_message_chunk", f"one more question {i}"), 1))
            fh.write(_line(_chunk("agent_message_chunk", f"one more answer {i}"), 1))
        started = time.perf_counter()
        result = reader.read(path, cursor, ReaderOptions())
        best = min(best, time.perf_counter() - started)
        cursor = Cursor(result.position, result.state)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mb", type=float, default=200.0)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    reader = GrokReader()
    with tempfile.TemporaryDirectory() as tmp:
        big = Path(tmp) / "sessions" / "%2Fbig" / SID / "updates.jsonl"
        small = Path(tmp) / "sessions" / "%2Fsmall" / SID / "updates.jsonl"
        rounds = _write(big, args.mb)
        _write(small, 0.1)
        size = big.stat().st_size / 1e6
        floors, freshes = [], []
        cursor, turns = Cursor(), 0
        for _ in range(args.repeat):
            floors.append(_floor(big))
            took, cursor, turns = _fresh(reader, big)
            freshes.append(took)
        floor, fresh = min(floors), min(freshes)
        print(f"log: {size:.1f} MB, {rounds} rounds, {turns} turns")
        print(f"floor (tail + parse every line): {floor:.2f} s = {size / floor:.0f} MB/s")
        print(
            f"GrokReader fresh read:           {fresh:.2f} s = {size / fresh:.0f} MB/s"
            f" ({fresh / floor:.2f}x the floor)"
        )
        _t, small_cursor, _n = _fresh(reader, small)
        big_append = _append_cost(reader, big, cursor, args.repeat * 5)
        small_append = _append_cost(reader, small, small_cursor, args.repeat * 5)
        print(
            f"append read, {size:.0f} MB log: {big_append * 1e3:.2f} ms;"
            f" 100 KB log: {small_append * 1e3:.2f} ms"
            f" ({big_append / small_append:.2f}x)"
        )


if __name__ == "__main__":
    main()
