"""What ``backscroll index`` spends before its first file: imports, and the part
of them that is building dataclasses.

    python bench/bench_startup.py --runs 10
    python bench/bench_startup.py --runs 40 --against ../other-tree

Each run is a fresh interpreter that imports what ``backscroll index`` imports
(``backscroll.cli`` and ``backscroll.direct``), timing the imports and, by
wrapping ``dataclasses``' class processing, the time spent creating dataclasses
(their generated methods are compiled at import). Prints the median and best
of each, and how many dataclasses and backscroll modules were loaded. With
``--against DIR`` (a directory holding another ``backscroll/`` package), the two
trees' runs alternate and each is printed, with the ratio of their imports.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

_PROBE = """
import dataclasses, json, sys, time
spent = [0.0, 0]
real = dataclasses._process_class
def timed(cls, *args, **kwargs):
    start = time.perf_counter()
    try:
        return real(cls, *args, **kwargs)
    finally:
        spent[0] += time.perf_counter() - start
        spent[1] += 1
dataclasses._process_class = timed
start = time.perf_counter()
import backscroll.cli, backscroll.direct
total = time.perf_counter() - start
modules = sum(1 for m in sys.modules if m.startswith("backscroll"))
print(json.dumps({"imports": total, "dataclasses": spent[0], "classes": spent[1],
                  "modules": modules}))
"""


def _run(tree: Path) -> dict[str, float]:
    """One fresh interpreter's imports of ``tree``'s package."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    probe = [sys.executable, "-c", _PROBE]
    # (run from the tree: ``-c`` puts the working directory first on sys.path)
    done = subprocess.run(probe, env=env, cwd=tree, capture_output=True, text=True, check=True)
    result: dict[str, float] = json.loads(done.stdout)
    return result


def _report(name: str, runs: list[dict[str, float]]) -> float:
    print(name)
    for key in ("imports", "dataclasses"):
        values = [r[key] * 1000 for r in runs]
        print(f"  {key:12s} median {statistics.median(values):6.1f} ms  best {min(values):6.1f} ms")
    print(f"  dataclasses created: {runs[0]['classes']}, backscroll modules: {runs[0]['modules']}")
    return statistics.median(r["imports"] for r in runs)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--against", type=Path, help="another tree (a directory holding backscroll/)")
    args = ap.parse_args()
    trees = [ROOT] + ([args.against.resolve()] if args.against else [])
    runs: dict[Path, list[dict[str, float]]] = {t: [] for t in trees}
    for _ in range(args.runs):
        for tree in trees:  # (alternating: a slow minute falls on both)
            runs[tree].append(_run(tree))
    medians = [_report(str(tree), runs[tree]) for tree in trees]
    if len(medians) == 2:
        print(f"imports, median: this tree / the other = {medians[0] / medians[1]:.3f}")


if __name__ == "__main__":
    main()
