"""What the start-up corruption check costs: ``PRAGMA quick_check`` on an index
built from a corpus, against the no-change ``backscroll index`` pass it is added
to (the stat-only reconcile), measured in the same run.

Run from the repository root::

    python bench/bench_quick_check.py                  # ~200 MB corpus in a temp dir
    python bench/bench_quick_check.py --size-mb 50     # quicker
    python bench/bench_quick_check.py --corpus DIR     # keep / reuse a corpus in DIR

The index is built once (cold, in-process); then, ``--repeat`` times, the
no-change reconcile alone and ``quick_check`` alone are timed on the same open
files; the best of each is printed with their ratio. Also timed: the files
table read whole (``file_rows``, each reader's memo decoded) against the three
columns a pass's end needs to find vanished files (``known_files``).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import corpus

from backscroll.config import Config
from backscroll.indexing.indexer import Indexer, build_hosts
from backscroll.readers.base import HostEnv
from backscroll.store import open_writer, schema


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size-mb", type=int, default=200)
    ap.add_argument("--corpus", type=Path, help="corpus directory (made if absent)")
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="bs-qc-"))
    try:
        home = args.corpus or work / "home"
        if not home.exists() or not any(home.iterdir()):
            home.mkdir(parents=True, exist_ok=True)
            corpus.generate(home, args.size_mb, 1)
        os.environ["HOME"] = str(home)
        db = work / "data" / "index.db"
        cfg = Config(data_dir=str(db.parent))
        writer = open_writer(db)
        try:
            indexer = Indexer(writer, build_hosts(cfg, HostEnv.current()), cfg)
            started = time.perf_counter()
            indexer.reconcile()
            cold = time.perf_counter() - started
            writer.checkpoint()
            reconcile, check, rows, known = [], [], [], []
            for _ in range(args.repeat):
                t0 = time.perf_counter()
                indexer.reconcile()
                t1 = time.perf_counter()
                schema.quick_check(writer.conn, db)
                t2 = time.perf_counter()
                writer.file_rows()
                t3 = time.perf_counter()
                writer.known_files()
                t4 = time.perf_counter()
                reconcile.append(t1 - t0)
                check.append(t2 - t1)
                rows.append(t3 - t2)
                known.append(t4 - t3)
        finally:
            writer.close()
        size = db.stat().st_size / 1e6
        r, q = min(reconcile), min(check)
        print(f"index.db {size:.1f} MB (cold index {cold:.2f} s)")
        print(f"no-change reconcile  best {r * 1000:8.1f} ms")
        print(f"PRAGMA quick_check   best {q * 1000:8.1f} ms  ({size / q:.0f} MB/s)")
        print(f"start-up pass with the check / without: {(r + q) / r:.2f}x")
        # (the end of a pass looks for vanished files: every row with its memo, or three columns)
        print(f"every file's row     best {min(rows) * 1000:8.2f} ms  (file_rows, memos decoded)")
        print(f"every file's path    best {min(known) * 1000:8.2f} ms  (known_files)")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
