"""First-run race: N processes open the same brand-new index at the same instant.

Run from the repository root::

    python bench/bench_race.py                      # 6 processes, 500 rounds
    python bench/bench_race.py --procs 6 --rounds 200

Each round makes a new directory; N worker processes (forked once, reused)
wait on a barrier, then all open ``index.db`` there at once. Rounds alternate
between two arms:

* ``no-retry``: ``sqlite3.connect`` (its default 5 s busy timeout),
  ``PRAGMA journal_mode=WAL``, then ``schema.migrate``: what a naive opener does.
* ``retry``: ``schema.connect`` (busy_timeout first, transient errors of the
  WAL switch retried with jitter) then ``schema.migrate``.

An opener fails when it raises or the journal mode is not ``wal`` afterwards.
Prints failures per arm and the errors seen (target with retry: 0).
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import sqlite3
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from backscroll.store import schema

ARMS = ("no-retry", "retry")


def open_plain(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(str(path), isolation_level=None)
    mode = conn.execute("PRAGMA journal_mode=WAL").fetchone()[0]
    if str(mode).lower() != "wal":
        conn.close()
        raise sqlite3.OperationalError(f"journal mode stayed {mode}")
    return conn


def open_retry(path: Path) -> sqlite3.Connection:
    conn = schema.connect(path)
    mode = conn.execute("PRAGMA journal_mode").fetchone()[0]
    if str(mode).lower() != "wal":
        conn.close()
        raise sqlite3.OperationalError(f"journal mode stayed {mode}")
    return conn


def worker(root: str, rounds: int, barrier: Any, out: Any) -> None:
    for r in range(rounds):
        arm = ARMS[r % 2]
        path = Path(root) / f"r{r}" / "index.db"
        barrier.wait()
        error = ""
        try:
            conn = open_plain(path) if arm == "no-retry" else open_retry(path)
            try:
                schema.migrate(conn, path)
            finally:
                conn.close()
        except Exception as exc:
            error = f"{type(exc).__name__}: {exc}"
        out.put((r, arm, error))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--procs", type=int, default=6)
    ap.add_argument("--rounds", type=int, default=500)
    args = ap.parse_args(argv)
    ctx = mp.get_context("fork")
    with tempfile.TemporaryDirectory(prefix="bs-race-") as root:
        for r in range(args.rounds):
            (Path(root) / f"r{r}").mkdir()
        barrier = ctx.Barrier(args.procs)
        out = ctx.Queue()
        procs = [
            ctx.Process(target=worker, args=(root, args.rounds, barrier, out))
            for _ in range(args.procs)
        ]
        started = time.monotonic()
        for p in procs:
            p.start()
        opens: Counter[str] = Counter()
        failed_opens: Counter[str] = Counter()
        failed_rounds: dict[str, set[int]] = {a: set() for a in ARMS}
        errors: dict[str, Counter[str]] = {a: Counter() for a in ARMS}
        for _ in range(args.rounds * args.procs):
            r, arm, error = out.get()
            opens[arm] += 1
            if error:
                failed_opens[arm] += 1
                failed_rounds[arm].add(r)
                errors[arm][error] += 1
        for p in procs:
            p.join()
        seconds = time.monotonic() - started
    per_arm = args.rounds // 2
    print(f"{args.procs} processes x {args.rounds} rounds ({per_arm} per arm), {seconds:.1f} s")
    print(f"{'arm':<10} {'opens':>7} {'failed opens':>13} {'rounds with a failure':>22}")
    for arm in ARMS:
        print(
            f"{arm:<10} {opens[arm]:>7} {failed_opens[arm]:>13} "
            f"{len(failed_rounds[arm]):>14} / {per_arm}"
        )
        for error, n in errors[arm].most_common(5):
            print(f"    {n:>5} x {error}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
