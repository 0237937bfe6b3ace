"""The daemon's CPU per appended line, against a baseline: what an agent
writing all day costs.

Run from the repository root::

    python bench/bench_append_cpu.py --corpus DIR --size-mb 50 --appends 300 --baseline REF

Each round starts a daemon of this tree and one of git ref ``REF`` (both as
``python -m backscroll daemon`` with ``PYTHONPATH`` naming their tree) on the
corpus (bench/corpus.py) as ``$HOME``, lets it index everything (``sync``), then
appends ``--appends`` prompts, one every ``--interval-ms``, in each host's own
format, to the largest transcript of each host in turn, and ``sync``s again. The
CPU of the daemon's whole process tree over the appends (from ``/proc``,
Linux), divided by the appends, is the figure; the last prompt must then be
found. Appended lines are truncated away after each daemon. Each round starts
one arm later. Prints each run, then the best and median per arm and the ratio.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

import corpus  # noqa: E402
from bench_daemon import Daemon, append_prompt, hits  # noqa: E402
from bench_daemon_cold import tree_cpu  # noqa: E402
from bench_index import baseline_tree, warm  # noqa: E402


def targets(home: Path) -> list[Path]:
    """The largest transcript of each host in the corpus."""
    biggest: dict[str, Path] = {}
    for path in corpus.transcripts(home):
        host = path.relative_to(home).parts[0]
        if host not in biggest or path.stat().st_size > biggest[host].stat().st_size:
            biggest[host] = path
    return [biggest[h] for h in sorted(biggest)]


def run(home: Path, work: Path, tree: Path, appends: int, interval: float, seed: int) -> float:
    """Daemon CPU seconds over ``appends`` appended prompts."""
    files = targets(home)
    sizes = {p: p.stat().st_size for p in files}
    rng = random.Random(seed)
    d = Daemon(home, work, None, tree=tree)
    try:
        d.wait_ready()
        with d.client() as c:
            c.call("sync", {})
            before = tree_cpu(d.pid)
            word = ""
            for i in range(appends):
                word = f"zq{rng.randrange(16**8):08x}"
                append_prompt(files[i % len(files)], word, time.time(), rng)
                time.sleep(interval)
            c.call("sync", {})
            cpu = tree_cpu(d.pid) - before
            if hits(c.call("search", {"query": word})) < 1:
                raise SystemExit(f"the last appended prompt ({word}) was not found")
    finally:
        d.stop()
        for path, size in sizes.items():
            with open(path, "r+b") as fh:
                fh.truncate(size)
    return cpu


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    corpus.add_corpus_options(ap, size_mb=50)
    ap.add_argument("--appends", type=int, default=300)
    ap.add_argument("--interval-ms", type=float, default=20.0)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--baseline", metavar="REF", required=True, help="git ref to compare with")
    args = ap.parse_args(argv)
    stats = corpus.generate(args.corpus, args.size_mb, args.seed)
    print(
        f"corpus: {stats.files} sessions, {stats.bytes / 1e6:.1f} MB; {os.cpu_count()} CPUs; "
        f"{args.appends} appends, one every {args.interval_ms:g} ms, to "
        f"{', '.join(p.name for p in targets(args.corpus))}"
    )
    warm(args.corpus)
    order = ["now", "base"]
    per: dict[str, list[float]] = {arm: [] for arm in order}
    with tempfile.TemporaryDirectory(prefix="bs-bench-append-") as tmp:
        base = baseline_tree(args.baseline, Path(tmp))
        for rnd in range(args.repeat):
            for arm in order[rnd % 2 :] + order[: rnd % 2]:
                with tempfile.TemporaryDirectory(prefix=f"bs-{arm}-", dir=tmp) as w:
                    tree = ROOT if arm == "now" else base
                    cpu = run(
                        args.corpus, Path(w), tree, args.appends, args.interval_ms / 1000, rnd
                    )
                ms = 1000 * cpu / args.appends
                per[arm].append(ms)
                print(f"  round {rnd + 1} {arm:<4} daemon CPU {cpu:6.3f} s = {ms:5.2f} ms/append")
    print(f"\nCPU per appended prompt, best / median of {args.repeat}:")
    labels = {"now": "this tree", "base": args.baseline}
    for arm in order:
        print(f"  {labels[arm]:<12} {min(per[arm]):5.2f} / {statistics.median(per[arm]):5.2f} ms")
    print(f"  this tree / {args.baseline}: {min(per['now']) / min(per['base']):.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
