"""How busy the cores are during ``backscroll index``: the serial start and end
of a cold index, and the idle core time they leave.

Run from the repository root (Linux: it reads ``/proc/stat``)::

    python bench/bench_busy.py --corpus DIR --size-mb 240 --repeat 5

Each run indexes the corpus into a fresh index, as ``bench_index.py`` does,
while the whole machine's CPU time is sampled every ``--interval`` seconds
(``/proc/stat`` counts in 10 ms ticks, so keep it at 20 ms or more, and the
machine otherwise idle). Prints, per run, the busy cores of each sample (0, 1 or
2 on a two-core machine), how long the run had fewer than all cores busy at its
start and at its end, and the idle core-seconds; the run with the shortest wall
time is summarised last.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

import corpus  # noqa: E402
from bench_index import backscroll_exe, clean_env  # noqa: E402


def _cpu() -> tuple[int, int]:
    """(busy ticks, all ticks) of the whole machine."""
    with open("/proc/stat", encoding="ascii") as fh:
        fields = [int(v) for v in fh.readline().split()[1:]]
    idle = fields[3] + fields[4]  # idle + iowait
    return sum(fields) - idle, sum(fields)


def run(home: Path, interval: float, cores: int) -> tuple[float, list[float]]:
    """Wall seconds and the busy cores of each sample of one cold index."""
    with tempfile.TemporaryDirectory(prefix="bs-bench-busy-") as data:
        env = clean_env(home, Path(data), None)
        started = time.perf_counter()
        proc = subprocess.Popen(
            [backscroll_exe(), "index", "--json"], env=env, stdout=subprocess.DEVNULL
        )
        busy: list[float] = []
        before = _cpu()
        while proc.poll() is None:
            time.sleep(interval)
            now = _cpu()
            share = (now[0] - before[0]) / max(now[1] - before[1], 1)
            busy.append(min(share * cores, cores))
            before = now
        wall = time.perf_counter() - started
        if proc.returncode != 0:
            raise SystemExit(f"backscroll index failed ({proc.returncode})")
    return wall, busy


def edges(busy: list[float], cores: int, interval: float) -> tuple[float, float, float]:
    """Seconds below all cores at the start and at the end, and idle core-seconds."""
    full = [i for i, b in enumerate(busy) if b >= cores - 0.5]
    if not full:
        return len(busy) * interval, 0.0, sum(cores - b for b in busy) * interval
    head = full[0] * interval
    tail = (len(busy) - 1 - full[-1]) * interval
    idle = sum(cores - b for b in busy) * interval
    return head, tail, idle


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    corpus.add_corpus_options(ap)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--interval", type=float, default=0.02)
    args = ap.parse_args(argv)
    if not os.path.exists("/proc/stat"):
        raise SystemExit("bench_busy.py reads /proc/stat (Linux only)")
    stats = corpus.generate(args.corpus, args.size_mb, args.seed)
    cores = os.cpu_count() or 1
    print(f"corpus {stats.bytes / 1e6:.1f} MB, {cores} cores, a sample every {args.interval} s")
    runs = []
    for n in range(args.repeat):
        wall, busy = run(args.corpus, args.interval, cores)
        head, tail, idle = edges(busy, cores, args.interval)
        runs.append((wall, head, tail, idle))
        shown = "".join(str(round(b)) for b in busy)
        print(f"  run {n + 1}: wall {wall:5.2f} s  busy cores {shown}")
    wall, head, tail, idle = min(runs)
    print(
        f"fastest run: wall {wall:.2f} s; fewer than {cores} cores busy for the first "
        f"{head:.2f} s and the last {tail:.2f} s; {idle:.2f} idle core-seconds"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
