"""File churn under a running daemon: appends, truncations, rotations, rewrites.

Run from the repository root::

    python bench/bench_churn.py                    # 120 s on a 10 MB corpus
    python bench/bench_churn.py --seconds 30 --size-mb 5

Starts the daemon (``index.on_delete: forget``, so a rotated-away file's turns
go, as they do from a fresh index) on a ``bench/corpus.py`` corpus, waits for
READY=1 and the cold index (``sync``), then for ``--seconds`` one writer keeps
changing Claude Code transcripts the way hosts and users do:

* append a prompt line (most operations; sometimes half a line, finished later),
* truncate to a line boundary (in place, same inode),
* rotate: rename the file to a new session name,
* rewrite: write the file again with its first lines dropped (temp file + rename).

Then ``sync`` and compare the daemon's turns with a fresh ``backscroll index`` of
the final files. Prints discrepancies (missing/extra/duplicated turns; target 0)
and the daemon's peak RSS (VmHWM).
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time
import uuid
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from corpus import generate, transcripts  # noqa: E402

from tests.daemon.harness import (  # noqa: E402
    claude_user_line,
    dump_turns,
    fresh_index,
    start_daemon,
)

CONFIG = "index:\n  on_delete: forget\n"


class Churner:
    def __init__(self, files: list[Path], rng: random.Random) -> None:
        self.files = files
        self.rng = rng
        self.ops: Counter[str] = Counter()
        self.pending: dict[Path, str] = {}

    def step(self) -> None:
        i = self.rng.randrange(len(self.files))
        path = self.files[i]
        roll = self.rng.random()
        if roll < 0.80:
            self.append(path)
        elif roll < 0.88:
            self.truncate(path)
        elif roll < 0.94:
            self.files[i] = self.rotate(path)
        else:
            self.rewrite(path)

    def append(self, path: Path) -> None:
        sid = path.name[: -len(".jsonl")]
        if path in self.pending:
            data = self.pending.pop(path)
            self.ops["finish-line"] += 1
        else:
            n = self.ops["append"] + self.ops["half-line"]
            line = claude_user_line(sid, str(uuid.uuid4()), f"churn prompt {n} about kestrels")
            if self.rng.random() < 0.1:
                cut = self.rng.randrange(1, len(line) - 1)
                data, self.pending[path] = line[:cut], line[cut:]
                self.ops["half-line"] += 1
            else:
                data = line
                self.ops["append"] += 1
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(data)

    def truncate(self, path: Path) -> None:
        data = path.read_bytes()
        ends = [i + 1 for i, b in enumerate(data) if b == 0x0A]
        if len(ends) < 4:
            return
        keep = ends[self.rng.randrange(len(ends) // 2, len(ends) - 1)]
        os.truncate(path, keep)
        self.pending.pop(path, None)
        self.ops["truncate"] += 1

    def rotate(self, path: Path) -> Path:
        new = path.with_name(f"{uuid.uuid4()}.jsonl")
        os.rename(path, new)
        if path in self.pending:
            self.pending[new] = self.pending.pop(path)
        self.ops["rotate"] += 1
        return new

    def rewrite(self, path: Path) -> None:
        lines = path.read_bytes().splitlines(keepends=True)
        if len(lines) < 4:
            return
        tmp = path.with_suffix(".tmp")
        tmp.write_bytes(b"".join(lines[2:]))
        os.replace(tmp, path)
        self.pending.pop(path, None)
        self.ops["rewrite"] += 1

    def finish(self) -> None:
        for path in list(self.pending):
            with open(path, "a", encoding="utf-8") as fh:
                fh.write(self.pending.pop(path))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=120)
    ap.add_argument("--size-mb", type=int, default=10)
    ap.add_argument("--rate", type=float, default=50, help="operations per second")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args(argv)
    rng = random.Random(args.seed)
    with tempfile.TemporaryDirectory(prefix="bs-churn-") as tmp:
        base = Path(tmp)
        generate(base / "home", args.size_mb, args.seed)
        files = [p for p in transcripts(base / "home") if ".claude" in p.parts]
        churn = Churner(files, rng)
        with start_daemon(base, config=CONFIG) as d:
            d.sync()
            rss_start = d.rss_kb()
            started = time.monotonic()
            while time.monotonic() - started < args.seconds:
                churn.step()
                time.sleep(rng.expovariate(args.rate))  # pacing of the writer
            churn.finish()
            d.sync()
            peak = d.peak_rss_kb()
            rss_end = d.rss_kb()
            got = dump_turns(d.db_path)
            code = d.stop()
        want = fresh_index(base, base / "fresh")
    have, expect = Counter(got), Counter(want)
    missing = sum((expect - have).values())
    extra = sum((have - expect).values())
    dup = len(got) - len(set(got))
    ops = ", ".join(f"{k} {v}" for k, v in sorted(churn.ops.items()))
    print(f"{args.seconds:g} s of churn on {len(files)} Claude Code files: {ops}")
    print(
        f"daemon {len(got)} turns vs fresh {len(want)}: {missing} missing, {extra} extra, "
        f"{dup} duplicated -> {missing + extra} discrepancies; stop exit {code}"
    )
    print(f"daemon RSS {rss_start} kB after cold index, {rss_end} kB at end, VmHWM {peak} kB")
    if missing + extra:
        for row in list((expect - have).elements())[:3]:
            print("  missing:", row[:3], row[4][:60])
        for row in list((have - expect).elements())[:3]:
            print("  extra:  ", row[:3], row[4][:60])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
