"""A reader process's first read of the corpus: lean parses against full ones.

Run from the repository root::

    python bench/bench_lean.py --corpus DIR --size-mb 240 --rounds 10

Each run forks a new process (as a cold index's reader processes are) that
reads every transcript of the corpus with its host's reader and pickles each
result, as a reader process does; it reports its CPU time and minor page
faults. Arms: ``lean`` (what ships: the readers' lean parses, readers/lean.py,
and :func:`~backscroll.indexing.parallel.keep_freed_memory`), ``full`` (every
line parsed whole), and each without keeping freed memory (``-free``). The
arms alternate, one round after another; the best and the median of each are
printed, and ``--hosts`` limits the read to some hosts. The first read in a new
process is what counts: in-process loops reuse memory a new process must fault
in first.
"""

from __future__ import annotations

import argparse
import importlib
import os
import pickle
import resource
import statistics
import sys
import time
from pathlib import Path
from types import ModuleType
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

import corpus  # noqa: E402
from bench_instructions import _tasks  # noqa: E402

ARMS = ("lean", "full", "lean-free", "full-free")
Tasks = list[tuple[Any, Path]]


def _child(arm: str, tasks: Tasks, modules: list[ModuleType]) -> tuple[float, int]:
    from backscroll.indexing.parallel import keep_freed_memory
    from backscroll.model import ReaderOptions
    from backscroll.readers import base

    if not arm.endswith("-free"):
        keep_freed_memory()
    if arm.startswith("full"):
        for module in modules:
            setattr(module, "_PARSE", base.loads)  # noqa: B010
    opts = ReaderOptions()
    base.loads(b"0")  # (both parsers imported first, as a reader process has them)
    import msgspec  # noqa: F401

    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    started = time.process_time()
    for spec, path in tasks:
        pickle.dumps(spec.reader.read(path, None, opts), pickle.HIGHEST_PROTOCOL)
    cpu = time.process_time() - started
    return cpu, resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults


def _run(arm: str, tasks: Tasks, modules: list[ModuleType]) -> tuple[float, int]:
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        try:
            os.write(w, repr(_child(arm, tasks, modules)).encode())
        finally:
            os._exit(0)
    os.close(w)
    with os.fdopen(r, "rb") as fh:
        data = fh.read()
    os.waitpid(pid, 0)
    cpu, faults = eval(data)  # (a tuple of two numbers this script wrote)
    return float(cpu), int(faults)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    corpus.add_corpus_options(ap)
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--hosts", default="", help="comma-separated hosts to read (default: all)")
    args = ap.parse_args()
    stats = corpus.generate(args.corpus, args.size_mb, args.seed)
    wanted = {h for h in args.hosts.split(",") if h}
    tasks = [(s, p) for s, p in _tasks(args.corpus) if not wanted or s.host in wanted]
    names = sorted({type(s.reader).__module__ for s, _p in tasks})
    modules = [m for m in map(importlib.import_module, names) if hasattr(m, "_PARSE")]
    print(
        f"corpus {stats.bytes / 1e6:.1f} MB, {len(tasks)} files; lean parses in "
        f"{', '.join(m.__name__.rsplit('.', 1)[1] for m in modules)}"
    )
    runs: dict[str, list[tuple[float, int]]] = {arm: [] for arm in ARMS}
    for n in range(args.rounds):
        for arm in ARMS[n % 2 :] + ARMS[: n % 2]:
            runs[arm].append(_run(arm, tasks, modules))
    base = min(cpu for cpu, _f in runs["full"])
    for arm in ARMS:
        cpus = [cpu for cpu, _f in runs[arm]]
        faults = statistics.median(f for _c, f in runs[arm])
        print(
            f"  {arm:<10} CPU best {min(cpus) * 1e3:6.1f} ms  median "
            f"{statistics.median(cpus) * 1e3:6.1f} ms  page faults (median) {faults:7.0f}"
            f"  best vs full {base / min(cpus):.3f}x"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
