"""The daemon's first index, against a baseline: what a new user of
``backscroll daemon`` waits for.

Run from the repository root::

    python bench/bench_daemon_cold.py --corpus DIR --size-mb 240 --repeat 5 --baseline REF

Each round starts, with an empty data directory and the corpus (bench/corpus.py)
as ``$HOME``, a daemon of this tree and one of git ref ``REF`` (both as
``python -m backscroll daemon`` with ``PYTHONPATH`` naming their tree), and runs
``backscroll index`` of this tree for reference. A daemon is timed from its
launch to ``READY=1`` and from there to the reply of ``sync`` (every file
indexed); the CLI from launch to exit. CPU is user+sys of every process of the
run (the daemon, its fork server and reader processes), read from ``/proc``
(Linux) when ``sync`` replies. Each round starts one arm later, so no arm always
follows the same one. Prints each run, then the best and the median of each arm
and the ratios of this tree's daemon to the baseline's and to the CLI.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

import corpus  # noqa: E402
from bench_daemon import Daemon  # noqa: E402
from bench_index import baseline_tree, clean_env, timed_child, warm  # noqa: E402

#: Clock ticks per second of /proc/<pid>/stat's times.
_TICKS = os.sysconf("SC_CLK_TCK")


def _children(pid: int) -> list[int]:
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            found += [int(c) for c in (task / "children").read_text().split()]
        except OSError:
            continue
    return found


def tree_cpu(pid: int) -> float:
    """user+sys seconds of ``pid``, its live descendants and the children each
    has waited for."""
    total = 0.0
    todo = [pid]
    while todo:
        p = todo.pop()
        try:
            stat = Path(f"/proc/{p}/stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        # utime, stime, cutime, cstime are fields 14-17 (1-based) of the whole line.
        total += sum(int(v) for v in fields[11:15]) / _TICKS
        todo += _children(p)
    return total


def daemon_run(home: Path, work: Path, tree: Path) -> tuple[float, float, float, int]:
    """(launch -> READY s, READY -> sync reply s, CPU s, turns) of one daemon."""
    started = time.perf_counter()
    d = Daemon(home, work, None, tree=tree)
    try:
        d.wait_ready()
        ready = time.perf_counter()
        with d.client() as c:
            c.call("sync", {})
            synced = time.perf_counter()
            cpu = tree_cpu(d.pid)
            status = c.call("status", {})
    finally:
        d.stop()
    turns = sum(h.get("turns", 0) for h in status.get("hosts", {}).values())
    return ready - started, synced - ready, cpu, turns


def cli_run(home: Path, work: Path) -> tuple[float, float, int]:
    """(wall s, CPU s, turns) of ``backscroll index`` of this tree."""
    import json

    env = clean_env(home, work / "data", None)
    env["PYTHONPATH"] = str(ROOT)
    wall, cpu, _rss, out = timed_child(
        [sys.executable, "-m", "backscroll", "index", "--json"], env, work
    )
    return wall, cpu, int(json.loads(out)["turns_added"])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    corpus.add_corpus_options(ap)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--baseline", metavar="REF", required=True, help="git ref to compare with")
    args = ap.parse_args(argv)
    stats = corpus.generate(args.corpus, args.size_mb, args.seed)
    mb = stats.bytes / 1e6
    print(f"corpus: {stats.files} sessions, {mb:.1f} MB, seed {args.seed}; {os.cpu_count()} CPUs")
    warm(args.corpus)
    order = ["daemon", "base", "cli"]
    # arm -> [(launch->READY, READY->synced or CLI wall, CPU)]
    runs: dict[str, list[tuple[float, float, float]]] = {arm: [] for arm in order}
    with tempfile.TemporaryDirectory(prefix="bs-bench-dcold-") as tmp:
        base = baseline_tree(args.baseline, Path(tmp))
        for rnd in range(args.repeat):
            for arm in order[rnd % len(order) :] + order[: rnd % len(order)]:
                with tempfile.TemporaryDirectory(prefix=f"bs-{arm}-", dir=tmp) as w:
                    work = Path(w)
                    if arm == "cli":
                        wall, cpu, turns = cli_run(args.corpus, work)
                        runs[arm].append((0.0, wall, cpu))
                        line = f"index wall {wall:6.2f} s"
                    else:
                        tree = ROOT if arm == "daemon" else base
                        up, sync, cpu, turns = daemon_run(args.corpus, work, tree)
                        runs[arm].append((up, sync, cpu))
                        line = f"READY {up:5.2f} s, READY->synced {sync:6.2f} s"
                print(f"  round {rnd + 1} {arm:<6} {line}  CPU {cpu:6.2f} s  {turns} turns")
    labels = {
        "daemon": "daemon, this tree",
        "base": f"daemon, {args.baseline}",
        "cli": "backscroll index, this tree",
    }
    best: dict[str, float] = {}
    print(f"\nfirst index of {mb:.1f} MB, best / median of {args.repeat}:")
    for arm in order:
        rs = runs[arm]
        total = [up + sync for up, sync, _ in rs]
        best[arm] = min(total)
        part = "" if arm == "cli" else f"  (READY->synced best {min(r[1] for r in rs):.2f} s)"
        print(
            f"  {labels[arm]:<28} launch->indexed {best[arm]:6.2f} / "
            f"{statistics.median(total):6.2f} s ({mb / best[arm]:6.1f} MB/s)"
            f"  CPU {min(r[2] for r in rs):6.2f} s{part}"
        )
    print(
        f"  this tree's daemon: {best['base'] / best['daemon']:.2f}x faster than "
        f"{args.baseline}'s; {best['daemon'] / best['cli']:.2f}x the CLI's time"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
