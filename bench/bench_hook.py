"""Auto-recall hook: wall time of ``backscroll hook claude-code`` per prompt.

Run from the repository root::

    python bench/bench_hook.py                    # ~150 MB corpus (a few hundred sessions)
    python bench/bench_hook.py --corpus DIR       # keep / reuse a corpus in DIR
    python bench/bench_hook.py --runs 50

A corpus from bench/corpus.py is indexed (``backscroll index``), then a real
daemon is started on it (``python -m backscroll daemon``, readiness awaited on
``NOTIFY_SOCKET``, see tests/daemon/harness.py). Each run is one process, timed
wall-clock from spawn to exit, exactly as a host runs the hook: Claude Code's
UserPromptSubmit JSON on stdin, the answer on stdout. Arms, interleaved per round:

- ``python -c 'import socket, json'``: the floor, an interpreter that does nothing;
- ``backscroll --version``: the CLI's own start-up;
- the hook with a prompt of the corpus's words and with an unrelated one. Since
  the hook judges relatedness by rarity (issue 14), neither prints context here:
  this corpus has a few hundred terms, each in hundreds of turns, so both arms
  time a hook that searches and finds nothing worth injecting. The hook injecting
  hits is timed by ``bench_recall_hook.py``, on an index with planted rare words;

then the daemon is stopped and the two hook arms run again: the hook reads the
index directly (read-only, no re-indexing). p50/p95 in ms, and each arm's p50 as
a ratio of the floor's, measured in the same run.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "bench"), str(ROOT)]

from corpus import _WORDS, generate  # noqa: E402

from tests.daemon.harness import daemon_env, run_cli, start_daemon  # noqa: E402

UNRELATED = [
    "bake a sourdough loaf with rye flour and walnuts",
    "plan a cycling holiday through the alps in september",
    "translate this poem about autumn leaves into portuguese",
]


def related_prompts(n: int, seed: int) -> list[str]:
    """Prompts made of the corpus's mid-frequency words (many hits, none rare)."""
    rng = random.Random(seed)
    vocab = [w for w in _WORDS[60:] if w.isalpha() and len(w) > 4]
    out = []
    for _ in range(n):
        a, b, c = rng.sample(vocab, 3)
        out.append(f"why does the {a} {b} break when the {c} changes? we fixed this before")
    return out


def hook_command() -> list[str]:
    script = Path(sys.executable).parent / "backscroll"
    return [str(script)] if script.exists() else [sys.executable, "-m", "backscroll"]


def timed(cmd: list[str], env: dict[str, str], stdin: bytes = b"") -> tuple[float, bytes]:
    start = time.perf_counter()
    done = subprocess.run(cmd, input=stdin, env=env, capture_output=True, check=False)
    ms = (time.perf_counter() - start) * 1000
    if done.returncode != 0:
        raise SystemExit(f"{cmd} exited {done.returncode}: {done.stderr.decode()[-2000:]}")
    return ms, done.stdout


def payload(prompt: str) -> bytes:
    return json.dumps(
        {
            "session_id": "bench-current-session",
            "transcript_path": "/nonexistent.jsonl",
            "cwd": "/home/user/projects/bench",
            "permission_mode": "default",
            "hook_event_name": "UserPromptSubmit",
            "prompt": prompt,
        }
    ).encode()


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(round(q * (len(ordered) - 1)), len(ordered) - 1)]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", type=Path, help="corpus directory to create or reuse")
    ap.add_argument("--size-mb", type=int, default=150)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--runs", type=int, default=30)
    args = ap.parse_args(argv)

    work = Path(tempfile.mkdtemp(prefix="bench-hook-"))
    try:
        home = work / "home"
        if args.corpus:
            args.corpus.mkdir(parents=True, exist_ok=True)
            stats = generate(args.corpus, args.size_mb, args.seed)
            home.symlink_to(args.corpus.resolve())
        else:
            home.mkdir()
            stats = generate(home, args.size_mb, args.seed)
        print(f"corpus: {stats.files} sessions, {stats.bytes / 1e6:.0f} MB, "
              f"{stats.prose_turns} prose turns")  # fmt: skip
        started = time.monotonic()
        done = run_cli(work, "index", "--json")
        if done.returncode != 0:
            raise SystemExit(f"index failed: {done.stderr}")
        print(f"indexed in {time.monotonic() - started:.1f} s")

        hook = [*hook_command(), "hook", "claude-code"]
        floor = [sys.executable, "-c", "import socket, json"]
        version = [*hook_command(), "--version"]
        related = related_prompts(args.runs, args.seed)
        times: dict[str, list[float]] = {}
        printed: dict[str, int] = {}

        def arm(name: str, cmd: list[str], env: dict[str, str], stdin: bytes = b"") -> None:
            ms, out = timed(cmd, env, stdin)
            times.setdefault(name, []).append(ms)
            printed[name] = printed.get(name, 0) + (1 if out.strip() else 0)

        with start_daemon(work) as daemon:
            env = daemon_env(work, {"BACKSCROLL_SOCKET": str(daemon.socket_path)})
            for _ in range(3):  # warm the page cache and the daemon's read pool
                timed(hook, env, payload(related[0]))
            for i in range(args.runs):
                arm("floor: python -c 'import socket, json'", floor, env)
                arm("backscroll --version", version, env)
                arm("hook, daemon, corpus words", hook, env, payload(related[i]))
                arm("hook, daemon, unrelated prompt", hook, env,
                    payload(UNRELATED[i % len(UNRELATED)]))  # fmt: skip
            assert daemon.stop() == 0
        env = daemon_env(work, {"BACKSCROLL_SOCKET": str(work / "s" / "backscroll.sock")})
        for i in range(args.runs):
            arm("floor (no daemon)", floor, env)
            arm("hook, no daemon, corpus words", hook, env, payload(related[i]))
            arm("hook, no daemon, unrelated prompt", hook, env,
                payload(UNRELATED[i % len(UNRELATED)]))  # fmt: skip

        base = statistics.median(times["floor: python -c 'import socket, json'"])
        base_nd = statistics.median(times["floor (no daemon)"])
        print(f"\n{args.runs} runs per arm; wall time of one process, spawn to exit\n")
        lo = min(times["floor: python -c 'import socket, json'"])
        lo_nd = min(times["floor (no daemon)"])
        print("| arm | p50 ms | p95 ms | min ms | p50 / floor | min / floor | printed context |")
        print("|---|---|---|---|---|---|---|")
        for name, values in times.items():
            floor_ms, floor_min = (base_nd, lo_nd) if "no daemon" in name else (base, lo)
            print(
                f"| {name} | {statistics.median(values):.1f} | {pct(values, 0.95):.1f} | "
                f"{min(values):.1f} | {statistics.median(values) / floor_ms:.2f}x | "
                f"{min(values) / floor_min:.2f}x | {printed[name]}/{len(values)} |"
            )
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
