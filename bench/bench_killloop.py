"""Kill -9 the daemon at random moments of its cold index; nothing lost, nothing doubled.

Run from the repository root::

    python bench/bench_killloop.py                         # 50 kills, 20 MB corpus
    python bench/bench_killloop.py --kills 20 --kills-per-trial 5 --size-mb 10

Generates a corpus with ``bench/corpus.py`` (real line formats), indexes it
fresh once with ``backscroll index`` (the reference, and the cold-index time T).
Then, per trial, on a brand-new data directory: start the daemon, wait for
READY=1, SIGKILL it after a random delay in [0, 1.2 T], restart, and so on
``--kills-per-trial`` times; finally restart, ``sync``, and compare the turns
(host, session, key, role, text) with the reference, and the full-text index
with an FTS5 table fed the same turns row by row (a kill may land while a bulk
load defers it). Prints identical/total.
"""

from __future__ import annotations

import argparse
import random
import re
import shutil
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from corpus import generate  # noqa: E402

from tests.daemon.harness import dump_turns, fresh_index, start_daemon  # noqa: E402


def fts_disagreements(db: Path, words: int = 40) -> list[str]:
    """Words the full-text index answers differently from an FTS5 table fed the
    same turns row by row (``["<not searchable>"]`` if a load left it deferred,
    ``["<integrity>"]`` if FTS5's integrity-check fails)."""
    from backscroll.store import fts

    conn = sqlite3.connect(db)
    try:
        if not fts.searchable(conn):
            return ["<not searchable>"]
        try:
            conn.execute("INSERT INTO turns_fts(turns_fts, rank) VALUES ('integrity-check', 1)")
        except sqlite3.DatabaseError:
            return ["<integrity>"]
        conn.execute(
            "CREATE VIRTUAL TABLE temp.plain USING fts5(text, tokenize='porter unicode61')"
        )
        conn.execute("INSERT INTO plain(rowid, text) SELECT id, text FROM turns")
        sample = " ".join(
            r[0] for r in conn.execute("SELECT text FROM turns ORDER BY random() LIMIT 200")
        )
        bad = []
        for word in sorted(set(re.findall(r"[a-z]{5,}", sample)))[:words]:
            ours = conn.execute("SELECT rowid FROM turns_fts WHERE turns_fts MATCH ?", (word,))
            plain = conn.execute("SELECT rowid FROM plain WHERE plain MATCH ?", (word,))
            if sorted(ours.fetchall()) != sorted(plain.fetchall()):
                bad.append(word)
        return bad
    finally:
        conn.close()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kills", type=int, default=50)
    ap.add_argument("--kills-per-trial", type=int, default=5)
    ap.add_argument("--size-mb", type=int, default=20)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args(argv)
    rng = random.Random(args.seed)
    with tempfile.TemporaryDirectory(prefix="bs-kill-") as tmp:
        base = Path(tmp)
        stats = generate(base / "home", args.size_mb, args.seed)
        started = time.monotonic()
        reference = fresh_index(base, base / "reference")
        cold = time.monotonic() - started
        print(
            f"corpus {stats.bytes / 1e6:.1f} MB, {stats.files} files; fresh index "
            f"{len(reference)} turns in {cold:.2f} s (T, including interpreter start)"
        )
        trials = max(1, args.kills // args.kills_per_trial)
        identical = 0
        kills = 0
        restarts_seconds: list[float] = []
        for trial in range(trials):
            data = base / "data"
            shutil.rmtree(data, ignore_errors=True)
            for _ in range(args.kills_per_trial):
                t0 = time.monotonic()
                d = start_daemon(base)
                restarts_seconds.append(time.monotonic() - t0)
                try:
                    time.sleep(rng.uniform(0, 1.2 * cold))  # the random moment of the crash
                    d.kill()
                    kills += 1
                finally:
                    d.close()
            with start_daemon(base) as d:
                d.sync()
                code = d.stop()
            got = dump_turns(data / "index.db")
            fts_bad = fts_disagreements(data / "index.db")
            fts_note = "agrees" if not fts_bad else "DISAGREES: " + ", ".join(fts_bad)
            same = got == reference and not fts_bad
            identical += same
            dup = len(got) - len(set(got))
            missing = len(set(reference) - set(got))
            extra = len(set(got) - set(reference))
            print(
                f"trial {trial + 1}: {'identical' if same else 'DIFFERENT'} "
                f"({len(got)} turns, {missing} missing, {extra} extra, {dup} duplicated; "
                f"full-text index {fts_note}; "
                f"clean stop exit {code})"
            )
        ready = sorted(restarts_seconds)
        print(
            f"\n{kills} kills in {trials} trials: {identical}/{trials} trials identical to a "
            f"fresh index; start-to-READY after a kill median {ready[len(ready) // 2]:.2f} s, "
            f"max {ready[-1]:.2f} s"
        )
    return 0 if identical == trials else 1


if __name__ == "__main__":
    raise SystemExit(main())
