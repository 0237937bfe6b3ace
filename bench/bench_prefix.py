"""Prefix searches (``pars*``) against plain words, in one run on one index.

Run from the repository root::

    python bench/bench_prefix.py --corpus DIR --size-mb 240

Indexes the corpus (bench/corpus.py; reused when it exists) into a fresh index
with ``backscroll index``, then times, in this process, a search for each word
of a list and for each word's prefix (its first five letters and a star), best of
``--repeat``. Prefixes are matched in two steps (backscroll/store/prefix.py):
candidates from the stems, then each candidate's text is checked, so a prefix
costs more than a word; the ratio prefix / word is printed per word and in all.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT))

import corpus  # noqa: E402

from backscroll.protocol import SearchParams  # noqa: E402
from backscroll.store import open_readonly  # noqa: E402
from backscroll.store.queries import run_sync  # noqa: E402
from backscroll.store.search import search  # noqa: E402

WORDS = ("buffer", "index", "session", "restore", "failure", "database", "function")


def best(conn: object, query: str, repeat: int) -> tuple[float, int]:
    fastest, total = float("inf"), 0
    for _ in range(repeat):
        started = time.perf_counter()
        result = run_sync(conn, search(SearchParams(query=query, limit=10), fts=True))  # type: ignore[arg-type]
        fastest = min(fastest, time.perf_counter() - started)
        total = int(result["total"])
    return fastest, total


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    corpus.add_corpus_options(ap)
    ap.add_argument("--repeat", type=int, default=7)
    args = ap.parse_args()
    root = Path(args.corpus)
    corpus.generate(root, args.size_mb, args.seed)
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "HOME": str(root), "BACKSCROLL_HOME": tmp,
               "XDG_CONFIG_HOME": os.path.join(tmp, "config"), "PYTHONPATH": str(ROOT)}  # fmt: skip
        subprocess.run([sys.executable, "-m", "backscroll", "index"], env=env, check=True,
                       stdout=subprocess.DEVNULL)  # fmt: skip
        conn = open_readonly(next(Path(tmp).rglob("index.db")))
        words = prefixes = 0.0
        print(f"{'query':12} {'ms':>8} {'hits':>6}   {'prefix':12} {'ms':>8} {'hits':>6}  ratio")
        for word in WORDS:
            plain, n_plain = best(conn, word, args.repeat)
            star = word[:5] + "*"
            pre, n_pre = best(conn, star, args.repeat)
            words += plain
            prefixes += pre
            print(f"{word:12} {plain * 1000:8.2f} {n_plain:6}   {star:12} {pre * 1000:8.2f} "
                  f"{n_pre:6}  {pre / plain:5.2f}x")  # fmt: skip
        print(f"all words {words * 1000:.1f} ms, all prefixes {prefixes * 1000:.1f} ms: "
              f"{prefixes / words:.2f}x")  # fmt: skip
        conn.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
