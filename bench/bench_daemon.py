"""The daemon: freshness, query latency, CLI start-up, memory and idle CPU.

Run from the repository root::

    python bench/bench_daemon.py                          # ~200 MB corpus, 60 s idle window
    python bench/bench_daemon.py --size-mb 50 --idle-seconds 10 --appends 50   # quicker
    python bench/bench_daemon.py --corpus DIR             # keep / reuse a corpus in DIR
    python bench/bench_daemon.py --debounce-ms 50         # with index.debounce_ms changed

Starts a real ``backscroll daemon`` (the console script) with the corpus
(bench/corpus.py) as ``$HOME``, a fresh data directory, and ``NOTIFY_SOCKET``
pointing at a datagram socket owned here; waits for ``READY=1``, then calls
``sync`` for the cold index. Then, in order:

- memory: VmRSS at READY, peak during the cold index (VmHWM, and the highest
  VmRSS sampled every 20 ms), and VmRSS once idle after it (/proc/<pid>/status);
- idle CPU: utime+stime from /proc/<pid>/stat over ``--idle-seconds``;
- append -> searchable: a prompt with a unique word is appended to a random
  transcript (in its host's format), then ``search`` is polled over the socket
  every 2 ms until the word is found; p50/p99 over ``--appends``;
- socket round trip: ``search`` for one of those unique words (one hit) and for
  common words, against the same query (``methods.build`` + ``run_sync``) run
  in this process on a read-only sqlite3 connection;
- ``backscroll search WORD`` end to end (a subprocess talking to the daemon)
  against ``python -c 'import socket, json'``, and the CLI's heaviest imports
  from ``python -X importtime``.
"""

from __future__ import annotations

import argparse
import os
import random
import re
import signal
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import corpus
from bench_index import backscroll_exe, clean_env, warm

from backscroll import methods
from backscroll.client import Client
from backscroll.readers import READERS
from backscroll.store import open_readonly
from backscroll.store.queries import run_sync
from backscroll.store.search import STOPWORDS

FRESH_P50_MS, FRESH_P99_MS = 150.0, 500.0
RARE_RTT_MS = 2.0
COMMON_RATIO = 1.3
CLI_RATIO = 1.2
IDLE_RSS_MB, PEAK_RSS_MB = 80.0, 150.0
IDLE_CPU_PCT = 0.5


def verdict(ok: bool) -> str:
    return "MET" if ok else "NOT MET"


def pct(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, max(0, round(q / 100 * (len(s) - 1))))]


# --------------------------------------------------------------------------- /proc


def proc_status(pid: int) -> dict[str, int]:
    """VmRSS / VmHWM and friends in bytes."""
    out: dict[str, int] = {}
    with open(f"/proc/{pid}/status") as fh:
        for line in fh:
            if line.startswith("Vm"):
                key, value = line.split(":", 1)
                out[key] = int(value.split()[0]) * 1024
    return out


def cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as fh:
        fields = fh.read().rsplit(")", 1)[1].split()
    # fields[0] is field 3 (state); utime and stime are fields 14 and 15.
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class RssSampler(threading.Thread):
    def __init__(self, pid: int, every: float = 0.02) -> None:
        super().__init__(daemon=True)
        self.pid, self.every = pid, every
        self.peak = 0
        self.done = threading.Event()

    def run(self) -> None:
        while not self.done.wait(self.every):
            try:
                self.peak = max(self.peak, proc_status(self.pid)["VmRSS"])
            except (OSError, KeyError):
                return


# --------------------------------------------------------------------------- the daemon


class Daemon:
    """A ``backscroll daemon`` on ``home``: the console script, or with ``tree``
    ``python -m backscroll`` with ``PYTHONPATH`` naming that tree (run from
    ``work``, outside the checkout, whose package would shadow it)."""

    def __init__(
        self, home: Path, work: Path, config: str | None, tree: Path | None = None
    ) -> None:
        self.sock_dir = Path(tempfile.mkdtemp(prefix="bs-"))
        self.socket_path = self.sock_dir / "backscroll.sock"
        cfg: Path | None = None
        if config:
            cfg = work / "config.yaml"
            cfg.write_text(config)
        self.data = work / "data"
        self.env = clean_env(home, self.data, cfg)
        self.env["BACKSCROLL_SOCKET"] = str(self.socket_path)
        notify = self.sock_dir / "notify"
        self.notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.notify.bind(str(notify))
        self.stderr = open(work / "daemon.stderr", "wb")  # noqa: SIM115 - closed in stop()
        cmd = [backscroll_exe(), "daemon"]
        if tree is not None:
            self.env["PYTHONPATH"] = str(tree)
            cmd = [sys.executable, "-m", "backscroll", "daemon"]
        self.proc = subprocess.Popen(
            cmd,
            cwd=work,
            env={**self.env, "NOTIFY_SOCKET": str(notify)},
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=self.stderr,
        )
        self.pid = self.proc.pid

    def wait_ready(self, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.notify.settimeout(0.5)
            try:
                if b"READY=1" in self.notify.recv(65536):
                    return
            except TimeoutError:
                if self.proc.poll() is not None:
                    break
        self.stop()
        err = Path(self.stderr.name).read_text(errors="replace")
        raise SystemExit(f"the daemon did not say READY=1:\n{err[-3000:]}")

    def client(self) -> Client:
        c = Client(self.socket_path, timeout=600)
        c.connect()
        return c

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.stderr.close()
        self.notify.close()
        for p in self.sock_dir.iterdir():
            p.unlink()
        self.sock_dir.rmdir()


# --------------------------------------------------------------------------- measurements


def unique_word(rng: random.Random) -> str:
    return "zq" + "".join(rng.choices("bcdfghjklmnpqrstvwxz", k=10))


def append_prompt(path: Path, word: str, ts: float, rng: random.Random) -> None:
    """A prompt naming ``word``, appended in the format of ``path``'s host."""
    text = f"please look at {word} again before the release"
    if path.name.startswith("rollout-"):
        line = corpus.codex_user_lines(text, ts)
    elif path.name.startswith("session-"):
        line = corpus.gemini_user_line(text, ts, rng)
    elif path.name == "events.jsonl":
        line = corpus.copilot_user_line(text, ts, rng)
    else:
        line = corpus.claude_user_line(path.stem, "/home/user/projects/app", text, ts, rng)
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(line)


def hits(result: dict[str, Any]) -> int:
    return len(result.get("hits") or [])


def freshness(d: Daemon, files: list[Path], n: int, rng: random.Random) -> list[str]:
    client = d.client()
    lat: list[float] = []
    words: list[str] = []
    misses = 0
    for i in range(n):
        word = unique_word(rng)
        path = rng.choice(files)
        append_prompt(path, word, corpus.BASE_TS + 10_000_000 + i, rng)
        t0 = time.perf_counter()
        deadline = t0 + 10
        while True:
            if hits(client.call("search", {"query": word, "limit": 1})):
                lat.append(time.perf_counter() - t0)
                words.append(word)
                break
            if time.perf_counter() > deadline:
                misses += 1
                break
            time.sleep(0.002)
        time.sleep(rng.uniform(0.05, 0.15))  # let the debouncer forget this path
    client.close()
    ms = [x * 1000 for x in lat]
    p50, p99 = pct(ms, 50), pct(ms, 99)
    print(f"\nappend -> searchable over the socket, n={len(ms)} ({misses} not found in 10 s):")
    print(f"  p50 {p50:7.1f} ms  (target <= {FRESH_P50_MS:g})  {verdict(p50 <= FRESH_P50_MS)}")
    print(f"  p99 {p99:7.1f} ms  (target <= {FRESH_P99_MS:g})  {verdict(p99 <= FRESH_P99_MS)}")
    print(f"  min {min(ms):.1f}  p90 {pct(ms, 90):.1f}  max {max(ms):.1f} ms")
    return words


def time_calls(fn: Callable[[], Any], n: int) -> list[float]:
    fn()
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t0) * 1000)
    return out


def round_trips(d: Daemon, rare: str, n: int) -> None:
    client = d.client()
    conn = open_readonly(d.data / "index.db")
    hosts = [r.host for r in READERS]

    def local(query: str) -> Callable[[], Any]:
        return lambda: run_sync(
            conn, methods.build("search", {"query": query}, fts=True, enabled_hosts=hosts)
        )

    def remote(query: str) -> Callable[[], Any]:
        return lambda: client.call("search", {"query": query})

    print(f"\nsearch round trip (median of {n}; in-process = same query, sqlite3, this process):")
    print(f"  {'query':<22} {'hits':>6} {'socket':>9} {'in-process':>11} {'ratio':>6}")
    ratios = []
    rare_ms = 0.0
    common = [w for w in corpus.common_words(20) if w.isalpha() and w not in STOPWORDS][:5]
    for i, word in enumerate([rare, *common]):
        total = client.call("search", {"query": word})["total"]
        sock = statistics.median(time_calls(remote(word), n))
        loc = statistics.median(time_calls(local(word), n))
        if i:
            ratios.append(sock / loc)
        label = f"{word} (rare)" if i == 0 else word
        print(f"  {label:<22} {total:>6} {sock:7.2f}ms {loc:9.2f}ms {sock / loc:5.2f}x")
        if i == 0:
            rare_ms = sock
    worst = max(ratios)
    print(
        f"  rare word over the socket: {rare_ms:.2f} ms  (target <= {RARE_RTT_MS:g})  "
        f"{verdict(rare_ms <= RARE_RTT_MS)}"
    )
    print(
        f"  common words socket / in-process: worst {worst:.2f}x, median "
        f"{statistics.median(ratios):.2f}x  (target <= {COMMON_RATIO})  "
        f"{verdict(worst <= COMMON_RATIO)}"
    )
    conn.close()
    client.close()


def run_child(cmd: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(wall ms, CPU ms) of one child process."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    assert proc.stderr is not None
    err = proc.stderr.read()
    _pid, status, usage = os.wait4(proc.pid, 0)
    dt = time.perf_counter() - t0
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{err.decode()}")
    return dt * 1000, (usage.ru_utime + usage.ru_stime) * 1000


def cli(d: Daemon, rare: str, n: int) -> None:
    env = d.env
    probe = subprocess.run(
        [backscroll_exe(), "search", "--json", rare], env=env, capture_output=True, text=True
    )
    if '"daemon": true' not in probe.stdout:
        raise SystemExit(f"the CLI did not answer through the daemon:\n{probe.stdout[:500]}")
    bare = "python -c 'import socket, json'"
    arms = {
        "backscroll search": [backscroll_exe(), "search", rare],
        bare: [sys.executable, "-c", "import socket, json"],
        "python -c 'import backscroll.client'": [sys.executable, "-c", "import backscroll.client"],
    }
    wall: dict[str, list[float]] = {k: [] for k in arms}
    cpu: dict[str, list[float]] = {k: [] for k in arms}
    for _ in range(n):
        for name, cmd in arms.items():
            w, c = run_child(cmd, env)
            wall[name].append(w)
            cpu[name].append(c)
    print(f"\nCLI end to end against the running daemon ({n} runs each, interleaved):")
    for name in arms:
        print(
            f"  {name:<38} wall median {statistics.median(wall[name]):6.1f} ms"
            f" (min {min(wall[name]):5.1f})  CPU median {statistics.median(cpu[name]):6.1f} ms"
        )
    for label, series in (("wall", wall), ("CPU", cpu)):
        ratio = statistics.median(series["backscroll search"]) / statistics.median(series[bare])
        print(
            f"  {label:<4} backscroll search / bare python: {ratio:.2f}x  (target <= {CLI_RATIO})"
            f"  {verdict(ratio <= CLI_RATIO)}"
        )
    import_offenders(env, rare)


def import_offenders(env: dict[str, str], rare: str) -> None:
    cmd = [sys.executable, "-X", "importtime", "-m", "backscroll", "search", rare]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True)
    rows: list[tuple[int, int, int, str]] = []  # self, cumulative, depth, name
    for line in proc.stderr.splitlines():
        m = re.match(r"import time:\s+(\d+) \|\s+(\d+) \|( *)(\S+)", line)
        if m:
            depth = (len(m.group(3)) - 1) // 2
            rows.append((int(m.group(1)), int(m.group(2)), depth, m.group(4)))
    total = sum(r[0] for r in rows)
    print(
        f"  python -X importtime -m backscroll search: {len(rows)} modules, "
        f"{total / 1000:.1f} ms of imports; heaviest imports with what they pull in:"
    )
    outer = [r for r in rows if r[2] <= 1]
    for self_us, cum_us, _depth, name in sorted(outer, key=lambda r: -r[1])[:10]:
        print(f"    {cum_us / 1000:6.1f} ms cumulative  {self_us / 1000:5.1f} ms self  {name}")
    packages: dict[str, int] = {}
    for self_us, _cum, _depth, name in rows:
        pkg = name.split(".")[0]
        packages[pkg] = packages.get(pkg, 0) + self_us
    heavy = sorted(packages.items(), key=lambda kv: -kv[1])[:8]
    print(
        "  self time by top-level package: " + ", ".join(f"{k} {v / 1000:.1f} ms" for k, v in heavy)
    )


# --------------------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size-mb", type=int, default=200)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--corpus", type=Path, help="generate into / reuse this directory")
    ap.add_argument("--idle-seconds", type=float, default=60.0)
    ap.add_argument("--appends", type=int, default=100)
    ap.add_argument("--rtt-runs", type=int, default=200)
    ap.add_argument("--cli-runs", type=int, default=20)
    ap.add_argument("--debounce-ms", type=int, help="set index.debounce_ms in the config")
    args = ap.parse_args(argv)
    print(
        f"python {sys.version.split()[0]}, sqlite {sqlite3.sqlite_version}, {os.cpu_count()} CPUs"
    )
    rng = random.Random(args.seed)
    config = f"index:\n  debounce_ms: {args.debounce_ms}\n" if args.debounce_ms else None
    with tempfile.TemporaryDirectory(prefix="bs-bench-daemon-") as tmp:
        work = Path(tmp)
        root = args.corpus or work / "corpus"
        root.mkdir(parents=True, exist_ok=True)
        stats = corpus.generate(root, args.size_mb, args.seed)
        mb = stats.bytes / 1e6
        print(
            f"corpus: {stats.files} sessions, {mb:.1f} MB, seed {args.seed}; "
            f"config: {config.strip() if config else 'defaults'}"
        )
        warm(root)
        sizes: dict[Path, int] = {}
        d = Daemon(root, work, config)
        sampler = RssSampler(d.pid)
        sampler.start()
        try:
            d.wait_ready()
            ready_at = time.perf_counter()
            rss_ready = proc_status(d.pid)["VmRSS"]
            with d.client() as c:
                c.call("sync", {})
                cold = time.perf_counter() - ready_at
                totals = c.call("status", {})
            sampler.done.set()
            sampler.join()
            st = proc_status(d.pid)
            peak = max(st["VmHWM"], sampler.peak)
            turns = sum(h.get("turns", 0) for h in totals.get("hosts", {}).values())
            print(
                f"\ncold index through the daemon (READY -> sync reply): {cold:.2f} s, "
                f"{mb / cold:.1f} MB/s, {turns} turns"
            )
            t0, cpu0 = time.perf_counter(), cpu_seconds(d.pid)
            time.sleep(args.idle_seconds)
            cpu = (cpu_seconds(d.pid) - cpu0) / (time.perf_counter() - t0) * 100
            idle = proc_status(d.pid)["VmRSS"]
            print("\nmemory (/proc/<pid>/status):")
            print(f"  VmRSS at READY            {rss_ready / 1e6:6.1f} MB")
            print(
                f"  VmRSS idle after the cold index ({args.idle_seconds:g} s later) "
                f"{idle / 1e6:6.1f} MB  (target <= {IDLE_RSS_MB:g})  "
                f"{verdict(idle / 1e6 <= IDLE_RSS_MB)}"
            )
            print(
                f"  peak during the cold index {peak / 1e6:6.1f} MB  (target <= "
                f"{PEAK_RSS_MB:g})  {verdict(peak / 1e6 <= PEAK_RSS_MB)}"
            )
            print(
                f"idle CPU over {args.idle_seconds:g} s: {cpu:.3f} %  (target < "
                f"{IDLE_CPU_PCT})  {verdict(cpu < IDLE_CPU_PCT)}"
            )
            files = corpus.transcripts(root)
            sizes = {p: p.stat().st_size for p in files}
            words = freshness(d, files, args.appends, rng)
            round_trips(d, words[0], args.rtt_runs)
            cli(d, words[0], args.cli_runs)
        finally:
            sampler.done.set()
            d.stop()
            for path, size in sizes.items():  # leave a reused corpus as generated
                if path.stat().st_size != size:
                    os.truncate(path, size)
    return 0


if __name__ == "__main__":
    sys.exit(main())
