"""Wall time of the operations commands, against a bare interpreter start in the same run.

    python bench/bench_ops.py [--copies 10] [--runs 7]

Builds a temp HOME with real sample transcripts (tests/daemon/harness.populate),
indexes it, then times (median of --runs) ``python -c pass``, ``backscroll --help``
(the parser with every subcommand registered), ``backscroll search``, ``doctor``,
``explain`` and ``config check``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.daemon.harness import daemon_env, populate


def timed(argv: list[str], env: dict[str, str], runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                       check=False)  # fmt: skip
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--copies", type=int, default=10)
    ap.add_argument("--runs", type=int, default=7)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tmp_path = Path(tmp)
        files = populate(tmp_path / "home", copies=args.copies)
        env = daemon_env(tmp_path)
        env.pop("BACKSCROLL_SOCKET", None)
        bs = [sys.executable, "-m", "backscroll"]
        subprocess.run([*bs, "index"], env=env, check=True, stdout=subprocess.DEVNULL)
        print(
            f"{len(files)} transcripts indexed; median of {args.runs} runs; {os.cpu_count()} CPUs"
        )
        timed([sys.executable, "-c", "pass"], env, 2)  # warm the page cache
        base = 0.0
        cases = {
            "python -c pass (baseline)": [sys.executable, "-c", "pass"],
            "backscroll --help": [*bs, "--help"],
            "backscroll search phoenix": [*bs, "search", "phoenix"],
            "backscroll config check": [*bs, "config", "check"],
            "backscroll explain FILE": [*bs, "explain", str(files[0])],
            "backscroll doctor": [*bs, "doctor"],
        }
        for name, argv in cases.items():
            t = timed(argv, env, args.runs)
            base = base or t
            print(f"  {name:<28} {t * 1000:7.1f} ms  {t / base:5.1f}x baseline")


if __name__ == "__main__":
    main()
