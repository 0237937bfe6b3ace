"""Team search: publish throughput and the lag from append to team-searchable.

Run from the repository root (needs PostgreSQL's binaries, as for the tests)::

    python bench/bench_team.py                       # 20 MB corpus, 40 appends
    python bench/bench_team.py --size-mb 50 --appends 100 --interval 0.1

Starts a throwaway PostgreSQL cluster (tests/team/pgserver.py) with the team
schema, indexes a synthetic corpus (bench/corpus.py) with ``backscroll index``,
then measures:

- publish throughput: the publisher draining the whole outbox (every indexed
  turn) into the team table, in turns/s, against the baseline of the same rows
  sent by one bare ``executemany`` of the same upsert (no outbox read, no ack)
  into a second, empty team database, in the same run;
- append -> team-searchable: a real daemon with ``team.url`` set runs on the
  corpus; a prompt with a unique word is appended to a random transcript, then
  the local daemon (over its socket) and the team database (a full-text query
  as another member) are both polled every 2 ms until each finds the word.
  p50/p95 of each, and the team lag's ratio to the local one.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "bench"), str(ROOT)]

import corpus  # noqa: E402

from backscroll.store import outbox  # noqa: E402
from backscroll.team import sql  # noqa: E402
from tests.daemon.harness import DaemonProcess, dump_turns, run_cli  # noqa: E402
from tests.team.pgserver import PASSWORD, start_server  # noqa: E402
from tests.team.util import local_publisher  # noqa: E402


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--size-mb", type=int, default=20)
    ap.add_argument("--appends", type=int, default=40)
    ap.add_argument("--interval", type=float, default=0.5, help="team.interval_s")
    ap.add_argument("--batch", type=int, default=500, help="team.batch_size")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    server = start_server()
    if server is None:
        print("PostgreSQL is not installed (no initdb): apt-get install postgresql")
        return 1
    import psycopg

    try:
        with tempfile.TemporaryDirectory(prefix="bench-team-") as tmp:
            work = Path(tmp)
            server.create_team_db("team", ["alice", "bob"])
            server.create_team_db("raw", ["alice"])
            pw = work / "pw"
            pw.write_text(PASSWORD)
            corpus.generate(work / "home", size_mb=args.size_mb, seed=args.seed)
            done = run_cli(work, "index")
            assert done.returncode == 0, done.stderr
            db = work / "data" / "index.db"
            n_turns = len(dump_turns(db))
            from backscroll.config import TeamConfig

            team = TeamConfig(url=server.url("alice", "team"), password_file=str(pw),
                              machine_id="bench", batch_size=args.batch)  # fmt: skip
            # --- publish throughput, against one bare executemany of the same rows
            pub, writer = local_publisher(db, team)
            start = time.perf_counter()
            while asyncio.run(pub.round()):
                pass
            publish_s = time.perf_counter() - start
            pub.close()
            batch = outbox.read_batch(writer, 10**9)
            assert not batch.turns
            outbox.disable(writer)
            outbox.enable(writer)
            rows = outbox.read_batch(writer, 10**9)
            outbox.disable(writer)
            writer.close()
            from backscroll.team.keys import TeamKeys
            from backscroll.team.publish import remote_changes

            upserts, _ = remote_changes(rows.turns, "bench", team, TeamKeys(b"bench"))
            with psycopg.connect(server.url("alice", "raw"), password=PASSWORD) as conn:
                start = time.perf_counter()
                sql.publish(conn, upserts, [])
                conn.commit()
                raw_s = time.perf_counter() - start
            print(f"corpus: {args.size_mb} MB, {n_turns} turns indexed")
            print(f"publish (team.batch_size {args.batch}): {n_turns / publish_s:,.0f} turns/s "
                  f"({publish_s:.2f} s); "
                  f"bare executemany of the same rows: {len(upserts) / raw_s:,.0f} turns/s "
                  f"({raw_s:.2f} s); ratio {publish_s / raw_s:.2f}x the bare time")  # fmt: skip
            # --- append -> team-searchable, through a real daemon
            cfg = (f"team:\n  url: {team.url}\n  password_file: {pw}\n  machine_id: bench\n"
                   f"  interval_s: {args.interval}\n  batch_size: {args.batch}\n")  # fmt: skip
            files = [p for p in corpus.transcripts(work / "home") if ".claude" in p.parts]
            rng = random.Random(args.seed)
            local: list[float] = []
            remote: list[float] = []
            with (
                DaemonProcess(work, config=cfg) as d,
                psycopg.connect(
                    server.url("bob", "team"), password=PASSWORD, autocommit=True
                ) as bob,
            ):
                d.wait_ready()
                deadline = time.monotonic() + 300
                while (d.call("status").get("team") or {}).get("pending", 1):
                    assert time.monotonic() < deadline, "the daemon never caught up"
                    time.sleep(0.05)
                for i in range(args.appends):
                    word = f"lagprobe{i}x{rng.randrange(10**9)}"
                    path = rng.choice(files)
                    line = corpus.claude_user_line(
                        path.stem, "/bench", f"note {word} here", time.time(), rng
                    )
                    start = time.perf_counter()
                    with path.open("a") as f:
                        f.write(line)
                    seen_local = seen_team = None
                    while seen_local is None or seen_team is None:
                        now = time.perf_counter() - start
                        assert now < 60, f"{word} never became searchable"
                        if seen_local is None and d.call("search", {"query": word})["hits"]:
                            seen_local = time.perf_counter() - start
                        if seen_team is None and bob.execute(
                            "SELECT 1 FROM backscroll.turns"
                            " WHERE tsv @@ websearch_to_tsquery('english', %s)", (word,),
                        ).fetchone():  # fmt: skip
                            seen_team = time.perf_counter() - start
                        time.sleep(0.002)
                    local.append(seen_local)
                    remote.append(seen_team)
            print(f"append -> searchable ({args.appends} appends, team.interval_s "
                  f"{args.interval}): local p50 {pct(local, .5) * 1000:.0f} ms p95 "
                  f"{pct(local, .95) * 1000:.0f} ms; team p50 {pct(remote, .5) * 1000:.0f} ms "
                  f"p95 {pct(remote, .95) * 1000:.0f} ms; team/local p50 "
                  f"{statistics.median(remote) / statistics.median(local):.1f}x")  # fmt: skip
    finally:
        server.destroy()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
