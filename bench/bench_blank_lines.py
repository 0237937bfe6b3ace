"""Blank-line floods: how fast the tailer passes over lines holding nothing.

Run from the repository root::

    python bench/bench_blank_lines.py            # 50 MB of each
    python bench/bench_blank_lines.py --mb 10    # quicker

Writes three files of the same size: a transcript of ordinary JSON lines (the
baseline), a flood of empty lines, and a flood of lines holding only white
space, then tails each with :class:`~backscroll.readers.base.Tail` (best of
``--repeat``) and prints seconds, MB/s and the ratio to the baseline. A flood
must cost no more than ordinary lines of the same size: it holds nothing to
index, and a writer stuck on one indexes nothing else meanwhile.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from backscroll.readers.base import Tail

LINE = b'{"type":"user","message":{"content":"the login handler drops the session cookie"}}\n'


def write(path: Path, unit: bytes, size: int) -> None:
    block = unit * max(1, (1 << 20) // len(unit))
    with open(path, "wb") as fh:
        written = 0
        while written < size:
            fh.write(block)
            written += len(block)


def tail_seconds(path: Path, repeat: int) -> tuple[float, int]:
    best = float("inf")
    lines = 0
    for _ in range(repeat):
        start = time.perf_counter()
        tail = Tail(path)
        for _line in tail:
            pass
        best = min(best, time.perf_counter() - start)
        lines = tail.lines_read
    return best, lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mb", type=int, default=50, help="size of each file in MB")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    size = args.mb << 20
    with tempfile.TemporaryDirectory(prefix="bs-blank-") as tmp:
        cases = {
            "json lines (baseline)": LINE,
            "empty lines": b"\n",
            "white-space lines": b" \t\r\n",
        }
        results: dict[str, float] = {}
        for name, unit in cases.items():
            path = Path(tmp) / "f.jsonl"
            write(path, unit, size)
            seconds, lines = tail_seconds(path, args.repeat)
            results[name] = seconds
            mb = path.stat().st_size / 1e6
            print(f"{name:<24} {mb:7.1f} MB {lines:>10} lines {seconds:7.3f} s "
                  f"{mb / seconds:8.1f} MB/s")  # fmt: skip
        base = results["json lines (baseline)"]
        for name in ("empty lines", "white-space lines"):
            print(f"{name} / baseline: {results[name] / base:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
