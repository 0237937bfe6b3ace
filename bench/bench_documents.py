"""Document readers: memory and time to read one big Cline task or Gemini session.

Run from the repository root::

    python bench/bench_documents.py              # ~50 MB ui_messages.json
    python bench/bench_documents.py --mb 10      # smaller, quicker
    python bench/bench_documents.py --gemini --mb 120   # a Gemini session, streamed vs whole

Writes a synthetic ``ui_messages.json`` in Cline's shape (a typed task, then
rounds of API request, assistant text, a tool call, a command and its output,
user feedback), with most bytes in command output as in real long tasks. The
file is streamed to disk so building it does not raise the process's peak RSS.

Then reads it with :class:`~backscroll.readers.cline.ClineReader` twice: once
plain (wall time, ``ru_maxrss`` growth) and once under ``tracemalloc`` (peak
Python allocation). Document readers load the whole JSON: the figures show how
peak memory compares with the document size.

``--gemini`` writes a Gemini CLI ``session-*.json`` instead (prompts, answers
with thoughts, tool calls whose results hold most bytes) and reads it with
:class:`~backscroll.readers.gemini_cli.GeminiCliReader` whole (the baseline) and
streamed, each in a fresh subprocess (``ru_maxrss`` growth over the process
after imports, wall time), then once more each under ``tracemalloc``.
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

from backscroll.model import ReaderOptions
from backscroll.readers.cline import ClineReader
from backscroll.readers.gemini_cli import GeminiCliReader

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


def write_gemini_session(path: Path, target_bytes: int, seed: int = 7) -> tuple[int, int]:
    """Stream a Gemini CLI session of about ``target_bytes`` to ``path``; (messages, prose)."""
    rng = random.Random(seed)
    count = prose = 0
    with open(path, "w", encoding="utf-8") as fh:
        fh.write('{"sessionId": "0badf00d-0000-4000-8000-000000000000", "projectHash": ')
        fh.write(json.dumps("a" * 64) + ', "startTime": "2025-12-01T00:00:00.000Z", ')
        fh.write('"lastUpdated": "2025-12-02T00:00:00.000Z", "messages": [')

        def emit(msg: dict[str, object]) -> None:
            nonlocal count
            stamp = f"2025-12-01T{count // 3600 % 24:02d}:{count // 60 % 60:02d}:{count % 60:02d}Z"
            fh.write(", " if count else "")
            fh.write(json.dumps({"id": f"m-{count}", "timestamp": stamp, **msg}))
            count += 1

        while fh.tell() < target_bytes:
            emit({"type": "user", "content": rng.choice(_PROSE)})
            lines = rng.randint(200, 600)
            output = "".join(_OUTPUT_LINE.format(i, i % 1000) for i in range(lines))
            call = {
                "id": f"run_shell_command-{count}",
                "name": "run_shell_command",
                "args": {"command": "npm test"},
                "result": [{"functionResponse": {"response": {"output": output}}}],
                "status": "success",
            }
            thought = {"subject": "Checking", "description": rng.choice(_PROSE)}
            emit({"type": "gemini", "content": "", "thoughts": [thought], "toolCalls": [call]})
            emit({"type": "gemini", "content": rng.choice(_PROSE), "tokens": {"input": 900}})
            prose += 2
        fh.write("]}")
    return count, prose


def measure_gemini(path: Path, mode: str) -> None:
    """In this (fresh) process: read ``path`` whole or streamed; print a JSON line."""
    size = path.stat().st_size
    if mode == "whole":
        opts = ReaderOptions(max_document_bytes=size + 1, stream_document_bytes=size + 1)
    else:
        opts = ReaderOptions(stream_document_bytes=0)
    reader = GeminiCliReader()
    if mode == "stream":
        import backscroll.readers.stream  # its imports (ijson) are not the read's memory

        backscroll.readers.stream._ijson()
    rss_before = _rss_bytes()
    start = time.perf_counter()
    result = reader.read(path, None, opts)
    elapsed = time.perf_counter() - start
    rss_growth = _rss_bytes() - rss_before
    turns = len(result.turns)
    del result
    tracemalloc.start()
    reader.read(path, None, opts)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    print(json.dumps({"turns": turns, "s": elapsed, "rss": rss_growth, "peak": peak}))


def main_gemini(mb: float) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "session-2025-12-01T00-00-0badf00d.json"
        messages, prose = write_gemini_session(path, int(mb * 1_000_000))
        size = path.stat().st_size
        print(f"document: {size / 1e6:.1f} MB, {messages} messages, {prose} prose turns")
        figures = {}
        for mode in ("whole", "stream"):
            done = subprocess.run(
                [sys.executable, __file__, "--measure", mode, str(path)],
                capture_output=True,
                text=True,
                check=True,
            )
            figures[mode] = json.loads(done.stdout)
    whole, stream = figures["whole"], figures["stream"]
    assert whole["turns"] == stream["turns"], (whole, stream)
    print(f"turns: {whole['turns']} (both ways)")
    for mode, f in figures.items():
        print(
            f"{mode:>6}: {f['s']:.2f} s ({size / 1e6 / f['s']:.0f} MB/s), "
            f"tracemalloc peak {f['peak'] / 1e6:.1f} MB ({f['peak'] / size:.2f}x), "
            f"ru_maxrss growth {f['rss'] / 1e6:.1f} MB ({f['rss'] / size:.2f}x)"
        )
    print(
        f"stream/whole: time {stream['s'] / whole['s']:.2f}x, "
        f"tracemalloc peak {stream['peak'] / whole['peak']:.3f}x, "
        f"ru_maxrss growth {stream['rss'] / max(whole['rss'], 1):.3f}x"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=50.0, help="document size in MB")
    parser.add_argument("--gemini", action="store_true", help="a Gemini session, both ways")
    parser.add_argument("--measure", nargs=2, metavar=("MODE", "PATH"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        measure_gemini(Path(args.measure[1]), args.measure[0])
        return
    if args.gemini:
        main_gemini(args.mb)
        return
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
