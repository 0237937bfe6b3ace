"""Document readers: memory and time to read one big Cline task.

Run from the repository root::

    python bench/bench_documents.py              # ~50 MB ui_messages.json
    python bench/bench_documents.py --mb 10      # smaller, quicker

Writes a synthetic ``ui_messages.json`` in Cline's shape (a typed task, then
rounds of API request, assistant text, a tool call, a command and its output,
user feedback), with most bytes in command output as in real long tasks. The
file is streamed to disk so building it does not raise the process's peak RSS.

Then reads it with :class:`~backscroll.readers.cline.ClineReader` twice: once
plain (wall time, ``ru_maxrss`` growth) and once under ``tracemalloc`` (peak
Python allocation). Document readers load the whole JSON: the figures show how
peak memory compares with the document size.
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

from backscroll.model import ReaderOptions
from backscroll.readers.cline import ClineReader

_PROSE = [
    "I'll read the configuration loader to see how the defaults are merged.",
    "The test fails because the fixture writes the file after the watcher started.",
    "Let me check whether the token count includes the system prompt before trimming.",
    "This looks like a race between the debounce timer and the shutdown handler.",
    "I've updated the migration so the FTS table is rebuilt with the new tokenizer.",
]
_OUTPUT_LINE = "PASS tests/unit/module_{:05d}.spec.ts (12.{:03d} s) ok ok ok ok ok ok ok ok\n"


def _rss_bytes() -> int:
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return rss if sys.platform == "darwin" else rss * 1024  # Linux reports KiB


def write_task(path: Path, target_bytes: int, seed: int = 7) -> tuple[int, int]:
    """Stream a Cline task of about ``target_bytes`` to ``path``; (messages, prose rows)."""
    rng = random.Random(seed)
    ts = 1_740_000_000_000
    count = prose = 0
    with open(path, "w", encoding="utf-8") as fh:

        def emit(row: dict[str, object]) -> None:
            nonlocal ts, count
            ts += 1000
            fh.write("," if count else "[")
            fh.write(json.dumps({"ts": ts, **row}))
            count += 1

        emit({"type": "say", "say": "text", "text": "Make the flaky suite pass reliably."})
        prose += 1
        while fh.tell() < target_bytes:
            emit({"type": "say", "say": "api_req_started", "text": json.dumps({"tokensIn": 9})})
            emit({"type": "say", "say": "text", "text": rng.choice(_PROSE)})
            tool = {"tool": "readFile", "path": f"src/m{count}.ts", "content": "x" * 200}
            emit({"type": "say", "say": "tool", "text": json.dumps(tool)})
            emit({"type": "ask", "ask": "command", "text": "npm test"})
            lines = rng.randint(200, 600)
            output = "".join(_OUTPUT_LINE.format(i, i % 1000) for i in range(lines))
            emit({"type": "ask", "ask": "command_output", "text": output})
            emit({"type": "say", "say": "user_feedback", "text": "Keep going, check the logs."})
            prose += 2
        fh.write("]")
    return count, prose


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=50.0, help="document size in MB")
    args = parser.parse_args()
    reader = ClineReader()
    with tempfile.TemporaryDirectory() as tmp:
        task = Path(tmp) / "saoudrizwan.claude-dev" / "tasks" / "1740000000000"
        task.mkdir(parents=True)
        path = task / "ui_messages.json"
        messages, prose = write_task(path, int(args.mb * 1_000_000))
        size = path.stat().st_size
        print(f"document: {size / 1e6:.1f} MB, {messages} messages, {prose} prose rows")

        rss_before = _rss_bytes()
        start = time.perf_counter()
        result = reader.read(path, None, ReaderOptions())
        elapsed = time.perf_counter() - start
        rss_growth = _rss_bytes() - rss_before
        turns = len(result.turns)
        del result

        tracemalloc.start()
        reader.read(path, None, ReaderOptions())
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()

    print(f"turns: {turns}")
    print(f"read time: {elapsed:.2f} s ({size / 1e6 / elapsed:.0f} MB/s)")
    print(f"tracemalloc peak: {peak / 1e6:.1f} MB ({peak / size:.2f}x the document)")
    print(f"ru_maxrss growth: {rss_growth / 1e6:.1f} MB ({rss_growth / size:.2f}x the document)")


if __name__ == "__main__":
    main()
