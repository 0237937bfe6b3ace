"""``backscroll search`` end to end against a running daemon, as a user installs it.

Builds a throwaway virtualenv with a plain (non-editable) install of this
checkout -- the query path needs no third-party package, so ``--no-deps`` -- and
times, interleaved, ``backscroll search <rare word>`` against
``python3 -c 'import socket, json'`` from the same interpreter. The daemon runs
from the current environment on a few real sample transcripts. A development
checkout's editable install adds ~20 ms of import-hook start-up, which is why
the install here is a plain one.

    python bench/bench_cli.py [--runs 80]

Prints medians and fastest runs and their ratio (target <= 1.2x).
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.daemon.harness import daemon_env, start_daemon  # noqa: E402

FIXTURE = ROOT / "tests" / "fixtures" / "claude-code" / "spotter-tool_heavy.jsonl"
WORD = "quixoticzebra"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--runs", type=int, default=80)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-cli-") as tmp:
        tmp_path = Path(tmp)
        venv = tmp_path / "venv"
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run(
            [str(venv / "bin" / "pip"), "install", "-q", "--no-deps", str(ROOT)],
            check=True,
        )
        home = tmp_path / "home"
        project = home / ".claude" / "projects" / "-p"
        project.mkdir(parents=True)
        session = project / "d6e0bada-1959-4eec-a9d2-0bfade768d8f.jsonl"
        shutil.copy(FIXTURE, session)
        line = {
            "type": "user",
            "uuid": "bench-0001",
            "sessionId": session.stem,
            "cwd": "/p",
            "timestamp": "2026-03-01T10:00:00Z",
            "message": {"role": "user", "content": f"the {WORD} plan"},
        }
        with open(session, "a") as fh:
            fh.write(json.dumps(line) + "\n")
        with start_daemon(tmp_path) as daemon:
            daemon.sync()
            env = daemon_env(tmp_path, {"BACKSCROLL_SOCKET": str(daemon.socket_path)})
            bare = [str(venv / "bin" / "python"), "-c", "import socket, json"]
            cli = [str(venv / "bin" / "backscroll"), "search", WORD]
            check = subprocess.run(cli, env=env, capture_output=True, text=True, check=True)
            assert WORD in check.stdout, check.stdout + check.stderr
            times: dict[str, list[float]] = {"bare": [], "cli": []}
            for _ in range(args.runs):
                for name, cmd in (("bare", bare), ("cli", cli)):
                    start = time.perf_counter()
                    subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, check=True)
                    times[name].append((time.perf_counter() - start) * 1000)
            daemon.stop()
    med = {k: statistics.median(v) for k, v in times.items()}
    low = {k: min(v) for k, v in times.items()}
    print(f"python {sys.version.split()[0]}, {args.runs} interleaved runs each")
    print(
        f"  python3 -c 'import socket, json'   median {med['bare']:6.1f} ms  min {low['bare']:6.1f}"
    )
    print(f"  backscroll search {WORD}   median {med['cli']:6.1f} ms  min {low['cli']:6.1f}")
    ratio = med["cli"] / med["bare"]
    verdict = "MET" if ratio <= 1.2 else "NOT MET"
    print(
        f"  ratio: median {ratio:.2f}x, fastest {low['cli'] / low['bare']:.2f}x"
        f"  (target <= 1.2x) {verdict}"
    )


if __name__ == "__main__":
    main()
