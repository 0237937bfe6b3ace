"""Cold ``backscroll index`` of one corpus by several versions of the code, interleaved.

Each arm is a git ref (checked out into a temporary worktree) or a directory
holding a ``backscroll/`` package (a tree with an experimental change), with
optional ``KEY=VALUE`` environment after a ``|``:

    python bench/bench_ab.py --corpus C240 --rounds 30 \
        HEAD ../variant 'HEAD|BACKSCROLL_INDEX_WORKERS=3'

With ``--rebuild``, each run is ``backscroll index --rebuild`` of a copy of an
index the first arm built once.

Every arm runs on the interpreter of a fresh venv made as the README's install
makes one, this interpreter's packages (backscroll's dependencies) reachable
through a path entry: a development venv's editable install runs an import hook
at every start (~15 ms here), which no user's install has. ``--python dev``
runs this interpreter instead, as the passes before the seventeenth did.

Every round runs every arm once, in order, each into a fresh data directory,
so a slow minute of a noisy machine falls on all arms alike. Prints each arm's
best and median wall and CPU time (the command and its worker processes) and
each arm's ratio to the first (above 1: faster than the first arm); wall time
also as its lower quartile (p25), and as the median of each round's own ratio
(``paired``): when the machine's speed drifts over minutes, the runs of one
round, seconds apart, share it.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _tree(spec: str, scratch: Path) -> Path:
    """The directory to put on PYTHONPATH for an arm."""
    path = Path(spec)
    if (path / "backscroll").is_dir():
        return path
    dest = scratch / f"ref-{len(list(scratch.iterdir()))}"
    subprocess.run(
        ["git", "-C", str(ROOT), "worktree", "add", "--detach", "-q", str(dest), spec],
        check=True,
    )
    return dest


def _plain_python(scratch: Path) -> Path:
    """The interpreter of a new venv (with pip, as ``python3 -m venv`` makes
    it) that finds this interpreter's installed packages through a ``.pth``
    path entry: the dependencies without the ``.pth`` hooks beside them."""
    venv = scratch / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    ours = dict.fromkeys(sysconfig.get_paths()[key] for key in ("purelib", "platlib"))
    site = sysconfig.get_paths(vars={"base": str(venv), "platbase": str(venv)})["purelib"]
    Path(site, "bench-deps.pth").write_text("".join(f"{path}\n" for path in ours))
    return venv / "bin" / "python"


def _index(
    home: Path,
    tree: Path,
    corpus: Path,
    config: Path,
    extra: dict[str, str],
    *,
    rebuild: bool,
    python: str = sys.executable,
) -> tuple[float, float]:
    """``backscroll index`` (``--rebuild``) into ``home``: wall and CPU seconds."""
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(corpus),
        "BACKSCROLL_HOME": str(home),
        "BACKSCROLL_CONFIG": str(config),
        "XDG_RUNTIME_DIR": str(home / "run"),
        "XDG_CONFIG_HOME": str(home / "config"),
        "XDG_DATA_HOME": str(home / "share"),
        "PYTHONPATH": str(tree),
        **extra,
    }
    start = time.perf_counter()
    proc = subprocess.Popen(
        [python, "-m", "backscroll", "index", "--json", *(["--rebuild"] * rebuild)],
        env=env,
        stdout=subprocess.DEVNULL,
        cwd=home,
    )
    _pid, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    if status != 0:
        raise SystemExit(f"{tree}: backscroll index failed (status {status})")
    return wall, usage.ru_utime + usage.ru_stime


def _run(
    tree: Path,
    corpus: Path,
    config: Path,
    extra: dict[str, str],
    seed: Path | None,
    python: str,
) -> tuple[float, float]:
    """One timed run in a fresh data directory; with ``seed``, a rebuild of a
    copy of the index there."""
    home = Path(tempfile.mkdtemp(prefix="bench-ab-"))
    try:
        if seed is not None:
            shutil.copytree(seed, home, dirs_exist_ok=True)
        return _index(home, tree, corpus, config, extra, rebuild=seed is not None, python=python)
    finally:
        shutil.rmtree(home, ignore_errors=True)


def _p25(values: list[float]) -> float:
    """The lower quartile: steadier than the best (one lucky run) on a noisy
    machine, and less swayed than the median by its slow minutes."""
    if len(values) < 2:
        return values[0]
    return statistics.quantiles(values, n=4, method="inclusive")[0]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", type=Path, required=True, help="a HOME holding transcripts")
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--redaction", choices=("on", "off"), default="on")
    ap.add_argument(
        "--rebuild",
        action="store_true",
        help="time `index --rebuild` of an index the first arm built once, copied per run",
    )
    ap.add_argument(
        "--python",
        choices=("plain", "dev"),
        default="plain",
        help="plain: a venv without this one's editable-install hook (default); dev: this one",
    )
    ap.add_argument("arms", nargs="+", help="REF or DIR, optionally '|KEY=VALUE,...'")
    args = ap.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="bench-ab-trees-"))
    config = scratch / "config.yaml"
    config.write_text(f"redaction:\n  enabled: {'true' if args.redaction == 'on' else 'false'}\n")
    (scratch / "trees").mkdir()
    python = str(_plain_python(scratch)) if args.python == "plain" else sys.executable
    arms: list[tuple[str, Path, dict[str, str]]] = []
    try:
        for arm in args.arms:
            spec, _, env_text = arm.partition("|")
            extra = dict(kv.split("=", 1) for kv in env_text.split(",") if kv)
            arms.append((arm, _tree(spec, scratch / "trees"), extra))
        seed = None
        if args.rebuild:  # (one index, built by the first arm, copied into every run)
            seed = scratch / "seed"
            seed.mkdir()
            _index(seed, arms[0][1], args.corpus, config, arms[0][2], rebuild=False, python=python)
        walls: dict[str, list[float]] = {name: [] for name, _, _ in arms}
        cpus: dict[str, list[float]] = {name: [] for name, _, _ in arms}
        for _ in range(args.rounds):
            for name, tree, extra in arms:
                wall, cpu = _run(tree, args.corpus, config, extra, seed, python)
                walls[name].append(wall)
                cpus[name].append(cpu)
        first = arms[0][0]
        for name, _, _ in arms:
            w, c = walls[name], cpus[name]
            line = (
                f"{name:40s} wall best {min(w):.3f} p25 {_p25(w):.3f}"
                f" median {statistics.median(w):.3f}"
                f"  cpu best {min(c):.3f} median {statistics.median(c):.3f}"
            )
            if name != first:
                # (each round's own ratio, its median: runs seconds apart share the
                # machine's speed, where it drifts over minutes)
                paired = statistics.median(a / b for a, b in zip(walls[first], w, strict=True))
                line += (
                    f"  vs first: best {min(walls[first]) / min(w):.3f}x"
                    f" p25 {_p25(walls[first]) / _p25(w):.3f}x"
                    f" median {statistics.median(walls[first]) / statistics.median(w):.3f}x"
                    f" paired median {paired:.3f}x"
                )
            print(line)
    finally:
        for _, tree, _ in arms:
            if tree.parent == scratch / "trees":
                subprocess.run(
                    ["git", "-C", str(ROOT), "worktree", "remove", "--force", str(tree)],
                    check=False,
                )
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
