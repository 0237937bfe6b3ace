"""Soak: many concurrent clients query while the daemon indexes.

Run from the repository root::

    python bench/bench_soak.py                         # 8 clients, 60 s, 20 MB corpus
    python bench/bench_soak.py --clients 4 --seconds 30 --size-mb 10

Starts the daemon on a ``bench/corpus.py`` corpus and, right after READY=1 (so
the cold index is still running), starts ``--clients`` client processes, each
with its own connection, sending ``search`` (random common words, sometimes two),
``sessions`` and ``status`` back to back for ``--seconds``. Meanwhile a writer
appends a prompt to a random transcript every 50 ms, so indexing never stops.
Prints query latency p50/p99 per method (while the cold index ran, and after),
errors (target 0) and the daemon's RSS at READY, after the cold index, at the end
and VmHWM.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import random
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from corpus import common_words, generate, transcripts  # noqa: E402

from backscroll.client import Client  # noqa: E402
from tests.daemon.harness import claude_user_line, start_daemon  # noqa: E402


def client(sock: str, seconds: float, seed: int, out: Any) -> None:
    rng = random.Random(seed)
    words = common_words(20)
    samples: list[tuple[str, float, float]] = []  # (method, start offset, seconds)
    errors: list[str] = []
    t_zero = time.time()
    with Client(Path(sock), timeout=60) as c:
        while time.time() - t_zero < seconds:
            roll = rng.random()
            if roll < 0.8:
                method = "search"
                q = " ".join(rng.sample(words, rng.choice((1, 1, 2))))
                params: dict[str, Any] = {"query": q, "limit": 10}
            elif roll < 0.95:
                method, params = "sessions", {"limit": 20}
            else:
                method, params = "status", {}
            t0 = time.perf_counter()
            try:
                c.call(method, params)
            except Exception as exc:
                errors.append(f"{method}: {exc!r}")
            samples.append((method, time.time(), time.perf_counter() - t0))
    out.put((samples, errors))


def pct(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, int(q * len(s)))] * 1000 if s else float("nan")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument("--size-mb", type=int, default=20)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args(argv)
    rng = random.Random(args.seed)
    ctx = mp.get_context("fork")
    with tempfile.TemporaryDirectory(prefix="bs-soak-") as tmp:
        base = Path(tmp)
        generate(base / "home", args.size_mb, args.seed)
        files = [p for p in transcripts(base / "home") if ".claude" in p.parts]
        with start_daemon(base) as d:
            rss_ready = d.rss_kb()
            out = ctx.Queue()
            procs = [
                ctx.Process(
                    target=client, args=(str(d.socket_path), args.seconds, args.seed + i, out)
                )
                for i in range(args.clients)
            ]
            for p in procs:
                p.start()
            watcher = d.client()
            cold_done_at: float | None = None
            rss_cold: int | None = None
            started = time.monotonic()
            appended = 0
            while time.monotonic() - started < args.seconds:
                path = rng.choice(files)
                sid = path.name[: -len(".jsonl")]
                line = claude_user_line(sid, str(uuid.uuid4()), f"soak prompt {appended}")
                with open(path, "a", encoding="utf-8") as fh:
                    fh.write(line)
                appended += 1
                if cold_done_at is None and watcher.call("status", {})["daemon"]["cold_index_done"]:
                    cold_done_at, rss_cold = time.time(), d.rss_kb()
                time.sleep(0.05)  # the writer's pace
            results = [out.get() for _ in procs]
            for p in procs:
                p.join()
            d.sync()
            rss_end, peak = d.rss_kb(), d.peak_rss_kb()
            code = d.stop()
    samples = [s for r in results for s in r[0]]
    errors = [e for r in results for e in r[1]]
    print(
        f"{args.clients} clients x {args.seconds:g} s, {len(samples)} requests "
        f"({len(samples) / args.seconds:.0f}/s), {appended} appends; errors {len(errors)}"
    )
    for e in errors[:5]:
        print("  error:", e)
    print(f"{'method':<9} {'phase':<12} {'n':>6} {'p50 ms':>8} {'p99 ms':>8}")
    for method in ("search", "sessions", "status"):
        for phase in ("cold index", "after"):
            if phase == "cold index":
                xs = [t for m, at, t in samples if m == method and at < (cold_done_at or 1e18)]
            else:
                xs = [t for m, at, t in samples if m == method and at >= (cold_done_at or 1e18)]
            if xs:
                print(
                    f"{method:<9} {phase:<12} {len(xs):>6} {pct(xs, 0.5):>8.1f} "
                    f"{pct(xs, 0.99):>8.1f}"
                )
    print(
        f"daemon RSS: {rss_ready} kB at READY, {rss_cold} kB when the cold index finished, "
        f"{rss_end} kB at end, VmHWM {peak} kB; stop exit {code}"
    )
    return 0 if not errors else 1


if __name__ == "__main__":
    raise SystemExit(main())
