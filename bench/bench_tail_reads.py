"""How the read size of ``Tail`` (readers/base.py ``READ_CHUNK``) changes the time
to split a corpus's JSONL into lines, on its own (no parsing, one process).

    python bench/bench_tail_reads.py --corpus C240 --rounds 3

Rounds alternate the sizes; prints each size's best and median seconds and
its ratio to 1 MB (above 1: faster). A whole parallel index did not get
faster with smaller reads (bench_ab.py; bench/RESULTS.md, twelfth pass).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from backscroll.readers import base

SIZES = (1 << 20, 1 << 18, 1 << 17)


def split_all(files: list[Path]) -> int:
    lines = 0
    for path in files:
        for _line in base.Tail(path):
            lines += 1
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", type=Path, required=True)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    files = sorted(p for p in args.corpus.rglob("*.jsonl") if p.is_file())
    times: dict[int, list[float]] = {size: [] for size in SIZES}
    counts: set[int] = set()
    for _ in range(args.rounds):
        for size in SIZES:
            base.READ_CHUNK = size
            start = time.perf_counter()
            counts.add(split_all(files))
            times[size].append(time.perf_counter() - start)
    assert len(counts) == 1, counts  # every size gives the same lines
    first = times[SIZES[0]]
    print(f"{len(files)} files, {counts.pop()} lines")
    for size, t in times.items():
        print(
            f"{size >> 10:5d} KB  best {min(t):.3f} s  median {statistics.median(t):.3f} s"
            f"  vs 1 MB: best {min(first) / min(t):.2f}x"
            f" median {statistics.median(first) / statistics.median(t):.2f}x"
        )


if __name__ == "__main__":
    main()
