"""The writer alone: a cold index's turns replayed into a fresh index, by how the
full-text index is fed during the bulk load.

Run from the repository root::

    python bench/bench_writer.py --corpus DIR --size-mb 240
    python bench/bench_writer.py --corpus DIR --size-mb 2000 --catch-up-rows 4096 16384

Reads (and redacts) every transcript of the corpus once, in-process, then for each
arm writes the same results into a new index exactly as ``backscroll index`` does
on an empty one (``begin_bulk``, transactions of 16 MB of source, ``end_bulk``).
Arms: ``row-by-row`` (the full-text index fed by its triggers, as before schema 7),
``adaptive`` (steps that grow with the index, ``fts.bulk_step``: what ships) and one
per ``--catch-up-rows`` value (fixed steps of that many turns). Prints the CPU
seconds of the writes and of the end of the load (secondary indexes, the last
catch-up), best of ``--repeat``: the end runs on one core after the last file is
read, so it counts in full towards the wall time. Then, for the adaptive arm, the
FTS segments the load leaves (it ends without ``optimize``) and ranked queries
timed over them and again after an ``optimize``.
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

import corpus  # noqa: E402


def _env(home: Path, data: Path) -> None:
    os.environ.update(
        HOME=str(home),
        BACKSCROLL_HOME=str(data),
        XDG_CONFIG_HOME=str(data / "config"),
        XDG_DATA_HOME=str(data / "share"),
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    corpus.add_corpus_options(ap)
    ap.add_argument(
        "--catch-up-rows",
        type=int,
        nargs="*",
        default=[1024, 4096, 16384],
        help="fixed steps to compare with the adaptive one (fts.bulk_step)",
    )
    ap.add_argument("--repeat", type=int, default=2)
    args = ap.parse_args(argv)
    stats = corpus.generate(args.corpus, args.size_mb, args.seed)
    with tempfile.TemporaryDirectory(prefix="bs-bench-writer-") as tmp:
        _env(args.corpus, Path(tmp) / "read")
        from backscroll import config as bconfig
        from backscroll.direct import make_indexer, make_redactor
        from backscroll.indexing.clean import clean
        from backscroll.indexing.indexer import Summary
        from backscroll.indexing.parallel import Outcome
        from backscroll.store import fts, open_writer

        cfg = bconfig.load(None)
        reader_ix = make_indexer(cfg, open_writer(cfg.db_path()))
        plans = [p for p in (reader_ix.plan(i, None) for i in reader_ix.scan()) if p]
        redactor = make_redactor(cfg)
        results = [
            clean(p.item.spec.reader.read(p.item.path, None, p.item.spec.options), redactor, ())
            for p in plans
        ]
        turns = sum(len(r.turns) for r in results)
        print(f"corpus {stats.bytes / 1e6:.1f} MB, {len(plans)} files, {turns} turns")

        adaptive = fts.bulk_step

        def replay(arm: int | str, n: int) -> tuple[float, float]:
            data = Path(tmp) / f"arm-{arm}-{n}"
            _env(args.corpus, data)
            writer = open_writer(bconfig.load(None).db_path())
            ix = make_indexer(cfg, writer)
            fts.bulk_step = adaptive if arm == "adaptive" else lambda upto: int(arm)
            t0 = time.process_time()
            writer.begin_bulk()
            if arm == "row-by-row":  # the triggers feed it: no watermark
                with writer.transaction():
                    writer.conn.execute("DELETE FROM meta WHERE key = ?", (fts.UPTO,))
                    writer.conn.execute(
                        "INSERT INTO turns_fts(turns_fts, rank) VALUES ('hashsize', ?)",
                        (fts.DEFAULT_HASHSIZE,),
                    )
            batch: list[tuple[object, Outcome]] = []
            size = 0
            for plan, result in zip(plans, results, strict=True):
                batch.append((plan, Outcome(result=result)))
                size += plan.stat.size
                if size >= 16 * 1024 * 1024:
                    ix._run_batch(batch, Summary())  # type: ignore[arg-type]
                    batch, size = [], 0
            if batch:
                ix._run_batch(batch, Summary())  # type: ignore[arg-type]
            t1 = time.process_time()
            writer.end_bulk()
            t2 = time.process_time()
            writer.close()
            return t1 - t0, t2 - t1

        arms: list[int | str] = ["row-by-row", "adaptive", *args.catch_up_rows]
        # Rounds interleave the arms: this machine's speed drifts over minutes.
        runs: dict[int | str, list[tuple[float, float]]] = {arm: [] for arm in arms}
        for n in range(args.repeat):
            for arm in arms:
                runs[arm].append(replay(arm, n))
        for arm in arms:
            writes, end = min(runs[arm], key=sum)
            label = f"steps of {arm}" if isinstance(arm, int) else str(arm)
            print(
                f"  {label:<18} writes {writes:6.2f} s  end of load {end:5.2f} s  "
                f"total {writes + end:6.2f} s CPU (best of {args.repeat})"
            )
        if "adaptive" in arms:
            _segments_and_queries(Path(tmp) / "arm-adaptive-0")
    return 0


#: Queries timed over the segments a bulk load leaves and over one merged segment.
QUERIES = ("the", "error", "function test", '"to the"', "zyxwvut")


def _segments_and_queries(data: Path) -> None:
    """What the load leaves in the full-text index (no final ``optimize``): its
    segments, and the same ranked queries before and after merging them."""
    conn = sqlite3.connect(data / "index.db", isolation_level=None)

    def timings() -> str:
        out = []
        for q in QUERIES:
            best = min(_timed(conn, q) for _ in range(7))
            out.append(f"{q} {best * 1e3:.1f} ms")
        return ", ".join(out)

    def segments() -> int:
        return int(conn.execute("SELECT count(DISTINCT segid) FROM turns_fts_idx").fetchone()[0])

    print(f"  after the load: {segments()} FTS segments; best of 7: {timings()}")
    t0 = time.process_time()
    conn.execute("INSERT INTO turns_fts(turns_fts) VALUES ('optimize')")
    spent = time.process_time() - t0
    print(f"  optimize {spent:.2f} s CPU -> {segments()} segment; best of 7: {timings()}")
    conn.close()


def _timed(conn: sqlite3.Connection, query: str) -> float:
    t0 = time.perf_counter()
    conn.execute(
        "SELECT rowid FROM turns_fts WHERE turns_fts MATCH ? ORDER BY rank LIMIT 20", (query,)
    ).fetchall()
    return time.perf_counter() - t0


if __name__ == "__main__":
    raise SystemExit(main())
