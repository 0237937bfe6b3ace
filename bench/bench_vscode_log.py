"""VS Code chat mutation log: cost of one appended entry in a short and a long session.

Run from the repository root::

    python bench/bench_vscode_log.py               # 5 vs 500 requests
    python bench/bench_vscode_log.py --rounds 50   # more samples

Writes two ``chatSessions/<id>.jsonl`` logs shaped like VS Code's (a kind-0 line,
then per request: a push of the request, a thinking part, streamed markdown
growing through pushes with a cut index, a tool call with ~20 KB of output
replaced in place, ``result`` with metadata, the model state):

- short: 5 requests
- long: 500 requests (the whole log is ~100x larger; its prose ~100x too)

Each is read once from the start; then, ``--rounds`` times, one entry is appended
(a push that grows the last request's markdown) and read from the saved
position. Reported: the median incremental read, the fresh replay of the long
log, and the ratio long/short. The reader applies new entries to a saved
skeleton of the session (prose only), so the incremental cost follows the
session's prose, not the log's size; a replay from the start follows the log.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from backscroll.model import Cursor, ReaderOptions
from backscroll.readers.vscode_copilot_chat import VsCodeCopilotChatReader

OUTPUT = "x" * 20_000


def _md(text: str) -> dict[str, Any]:
    return {"value": text, "isTrusted": False, "supportThemeIcons": False, "supportHtml": False}


def _entries(requests: int) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [
        {"kind": 0, "v": {"version": 3, "creationDate": 1785000000000, "sessionId": "bench",
                          "requests": [], "inputState": {"inputText": ""}}}
    ]  # fmt: skip
    for n in range(requests):
        k: list[Any] = ["requests", n, "response"]
        request = {
            "requestId": f"request_{n}",
            "timestamp": 1785000000000 + n * 1000,
            "message": {"text": f"Question {n} about the loader", "parts": []},
            "response": [],
            "modelState": {"value": 0},
            "variableData": {"variables": []},
        }
        out.append({"kind": 2, "k": ["requests"], "v": [request]})
        out.append({"kind": 2, "k": k, "v": [{"kind": "thinking", "value": "Let me think."}]})
        out.append({"kind": 2, "k": k, "v": [_md("Looking at it.")]})
        tool = {"kind": "toolInvocationSerialized", "toolId": "run_in_terminal",
                "invocationMessage": "Running", "isComplete": True}  # fmt: skip
        out.append({"kind": 2, "k": k, "v": [tool]})
        done = {**tool, "resultDetails": {"output": [{"type": "embed", "value": OUTPUT}]}}
        out.append({"kind": 2, "k": k, "v": [done], "i": 2})
        out.append({"kind": 2, "k": k, "v": [_md("The answer, part one.")]})
        out.append({"kind": 2, "k": k, "v": [_md("The answer, part one. And two " * 20)], "i": 3})
        out.append({"kind": 1, "k": ["requests", n, "result"],
                    "v": {"metadata": {"toolCallResults": OUTPUT[:5000]}}})  # fmt: skip
        out.append({"kind": 1, "k": ["requests", n, "modelState"],
                    "v": {"value": 1, "completedAt": 1785000000500 + n * 1000}})  # fmt: skip
    return out


def _write(path: Path, entries: list[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as fh:
        for entry in entries:
            fh.write(json.dumps(entry, separators=(",", ":")) + "\n")


def _measure(path: Path, requests: int, rounds: int) -> tuple[float, float, int]:
    """(median incremental read in ms, fresh replay in ms, file size)."""
    reader = VsCodeCopilotChatReader()
    opts = ReaderOptions()
    started = time.perf_counter()
    result = reader.read(path, None, opts)
    fresh_ms = (time.perf_counter() - started) * 1000
    cursor = Cursor(result.position, dict(result.state))
    times: list[float] = []
    last = requests - 1
    for n in range(rounds):
        grow = {"kind": 2, "k": ["requests", last, "response"],
                "v": [_md(f"The answer, part one. And two. Edit {n}.")], "i": 3}  # fmt: skip
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(grow, separators=(",", ":")) + "\n")
        started = time.perf_counter()
        result = reader.read(path, cursor, opts)
        times.append((time.perf_counter() - started) * 1000)
        cursor = Cursor(result.position, dict(result.state))
        assert not result.replace and len(result.turns) == 2  # only the request it touched
    return statistics.median(times), fresh_ms, path.stat().st_size


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--short", type=int, default=5)
    parser.add_argument("--long", type=int, default=500)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-vscode-") as tmp:
        figures = {}
        for label, requests in (("short", args.short), ("long", args.long)):
            path = Path(tmp) / label / "chatSessions" / "bench.jsonl"
            _write(path, _entries(requests))
            figures[label] = _measure(path, requests, args.rounds)
            inc, fresh, size = figures[label]
            print(f"{label:5} {requests:4} requests, {size / 1e6:7.2f} MB: "
                  f"append {inc:7.2f} ms (median of {args.rounds}), "
                  f"replay from the start {fresh:8.1f} ms")  # fmt: skip
        ratio = figures["long"][0] / figures["short"][0]
        size_ratio = figures["long"][2] / figures["short"][2]
        print(f"append cost long/short: {ratio:.2f}x for a {size_ratio:.0f}x larger log; "
              f"long log: append {figures['long'][0]:.2f} ms vs replay "
              f"{figures['long'][1]:.1f} ms")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
