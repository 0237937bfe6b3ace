"""The ``backscroll`` command's own overhead around a cold index: the cyclic
collector, and the interpreter's teardown at exit.

Run from the repository root::

    python bench/bench_command.py --corpus DIR --size-mb 240

Each arm is a fresh process indexing the corpus into a new index (the same
command as ``backscroll index``, run through ``cli.main``):

- collector: at Python's default threshold and at the one ``cli.entry`` sets,
  with a ``gc.callbacks`` hook counting the collections of the writer's process
  and the time they took, split into start-up (imports) and the pass (the
  reader processes freeze what they inherit and collect almost nothing);
- exit: the time from ``main`` returning to the process being gone, for an
  ordinary exit (the interpreter frees every module and object) and for
  ``os._exit`` after flushing (what ``cli.entry`` does when nothing else runs).

Best of ``--repeat``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

import corpus  # noqa: E402
from bench_index import clean_env  # noqa: E402

CHILD = """
import gc, json, sys, time
threshold = tuple(json.loads(sys.argv[1]))
gc.set_threshold(*threshold)
events = []
started = [0.0]
def hook(phase, info):
    if phase == "start":
        started[0] = time.perf_counter()
    else:
        events.append((time.perf_counter() - started[0], info["generation"]))
gc.callbacks.append(hook)
import backscroll.cli, backscroll.direct
imports = len(events)
code = backscroll.cli.main(["index", "--json"])
gc.callbacks.remove(hook)
print(json.dumps({
    "code": code,
    "startup": [len(events[:imports]), sum(t for t, _ in events[:imports])],
    "pass": [len(events[imports:]), sum(t for t, _ in events[imports:])],
}), file=sys.stderr)
"""


EXIT_CHILD = """
import os, sys, time
import backscroll.cli
code = backscroll.cli.main(["index", "--json"])
sys.stdout.flush()
print(time.time(), file=sys.stderr, flush=True)
if sys.argv[1] == "fast":
    os._exit(code)
sys.exit(code)
"""


def exit_time(home: Path, how: str) -> float:
    """Seconds from ``main`` returning to the process being gone."""
    with tempfile.TemporaryDirectory(prefix="bs-bench-exit-") as data:
        env = clean_env(home, Path(data), None)
        env["PYTHONPATH"] = str(ROOT)
        proc = subprocess.Popen(
            [sys.executable, "-c", EXIT_CHILD, how],
            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        assert proc.stderr is not None
        returned = float(proc.stderr.read().strip().splitlines()[-1])
        proc.wait()
        return time.time() - returned


def run(home: Path, threshold: tuple[int, int, int]) -> dict[str, list[float]]:
    with tempfile.TemporaryDirectory(prefix="bs-bench-gc-") as data:
        env = clean_env(home, Path(data), None)
        env["PYTHONPATH"] = str(ROOT)
        done = subprocess.run(
            [sys.executable, "-c", CHILD, json.dumps(threshold)],
            env=env, capture_output=True, text=True, check=True,
        )  # fmt: skip
    result: dict[str, list[float]] = json.loads(done.stderr.strip().splitlines()[-1])
    return result


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    corpus.add_corpus_options(ap)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    stats = corpus.generate(args.corpus, args.size_mb, args.seed)
    print(f"corpus {stats.bytes / 1e6:.1f} MB")
    for label, threshold in (("default (700, 10, 10)", (700, 10, 10)),
                             ("backscroll (50000, 10, 10)", (50_000, 10, 10))):  # fmt: skip
        runs = [run(args.corpus, threshold) for _ in range(args.repeat)]
        best = min(runs, key=lambda r: r["startup"][1] + r["pass"][1])
        (n_start, t_start), (n_pass, t_pass) = best["startup"], best["pass"]
        print(
            f"  {label:<27} start-up {int(n_start):3d} collections {t_start * 1e3:5.1f} ms,"
            f"  pass {int(n_pass):3d} collections {t_pass * 1e3:5.1f} ms"
            f"  (best of {args.repeat})"
        )
    for label, how in (("ordinary exit", "normal"), ("os._exit after flushing", "fast")):
        fastest = min(exit_time(args.corpus, how) for _ in range(args.repeat))
        print(f"  {label:<27} main() returned -> process gone {fastest * 1e3:5.1f} ms (best)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
