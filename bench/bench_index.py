"""Indexing: cold ``backscroll index`` against a minimal loader, and the cost of
indexing one appended line in a big file against a small one.

Run from the repository root::

    python bench/bench_index.py                      # ~200 MB corpus in a temp dir
    python bench/bench_index.py --size-mb 50         # quicker
    python bench/bench_index.py --corpus DIR         # keep / reuse a corpus in DIR
    python bench/bench_index.py --hosts claude-code,codex   # the older two-host corpus

(a) Cold index. The corpus (bench/corpus.py) is used as ``$HOME`` and a fresh
``BACKSCROLL_HOME`` per run. Each arm is a subprocess timed wall-clock, so all
pay interpreter start-up: ``backscroll index --json`` with redaction on (the
default), off (``redaction.enabled: false``) and on but read in-process
(``BACKSCROLL_INDEX_WORKERS=1``); with ``--baseline REF`` also the code of git
ref ``REF`` (``git archive`` into the work directory), so a before/after ratio
comes from the same run. Every backscroll arm starts the same way, as
``python -m backscroll`` with ``PYTHONPATH`` naming its tree (this checkout, or
the baseline's) and a working directory outside both: the same launcher and the
same import path for before and after. (The development venv's console script
goes through the editable install's import hook, which a user's ``pip install
.`` does not have and the baseline arm never had.) And the floor, a minimal
single-threaded loader in this file (``--floor``) that shares none of
backscroll's schema: every JSONL line through ``json.loads``, prose picked
roughly as the readers do (Gemini's records keyed by message id, the last one
winning), ``executemany`` into a bare ``docs(id, text)`` table
and an external-content FTS5 table over it filled once per file, all in one
transaction. Arms alternate for ``--repeat`` rounds; the best time of each is
compared, in wall time and in CPU time (user+sys of the child and the
processes it waited for, from ``wait4``), with MB/s. Peak RSS likewise.

(b) Append cost. One Claude Code session of ``--big-mb`` MB and one of 100 KB
are indexed cold in-process; then ``--appends`` times a prompt line is appended
to each and ``Indexer.index_item`` indexes it. The medians are compared.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import corpus

ROOT = Path(__file__).resolve().parents[1]

REDACTION_TARGET = 1.15
SPEEDUP_TARGET = 2.5
APPEND_TARGET = 1.5


# --------------------------------------------------------------------------- the floor

_FLOOR_SCHEMA = """
CREATE TABLE docs (id INTEGER PRIMARY KEY, text TEXT NOT NULL);
CREATE VIRTUAL TABLE docs_fts USING fts5(text, content='docs', content_rowid='id',
    tokenize='porter unicode61');
"""


def _texts(content: Any, kind: str) -> list[str]:
    if isinstance(content, str):
        return [content]
    if not isinstance(content, list):
        return []
    return [b["text"] for b in content if isinstance(b, dict) and b.get("type") == kind]


def _claude_prose(obj: dict[str, Any]) -> Iterator[tuple[str, str]]:
    kind = obj.get("type")
    msg = obj.get("message")
    if kind not in ("user", "assistant") or obj.get("isMeta") or not isinstance(msg, dict):
        return
    for text in _texts(msg.get("content"), "text"):
        text = text.strip()
        if text and not text.startswith("<"):
            yield kind, text


def _codex_prose(obj: dict[str, Any]) -> Iterator[tuple[str, str]]:
    payload = obj.get("payload")
    if not isinstance(payload, dict):
        return
    if obj.get("type") == "event_msg" and payload.get("type") == "user_message":
        yield "user", str(payload.get("message", "")).strip()
    elif obj.get("type") == "response_item" and payload.get("role") == "assistant":
        for text in _texts(payload.get("content"), "output_text"):
            yield "assistant", text.strip()


def _copilot_prose(obj: dict[str, Any]) -> Iterator[tuple[str, str]]:
    data = obj.get("data")
    if obj.get("type") in ("user.message", "assistant.message") and isinstance(data, dict):
        yield str(obj["type"]).split(".")[0], str(data.get("content", "")).strip()


def _part_texts(content: Any) -> list[str]:
    """Gemini's genai parts: a string or a list of ``{"text": …}`` parts."""
    if isinstance(content, list):
        return [b["text"] for b in content if isinstance(b, dict) and "text" in b]
    return _texts(content, "text")


def _gemini_prose(path: Path) -> list[str]:
    """A Gemini JSONL recording: the last record of each message id wins."""
    said: dict[str, str] = {}
    with open(path, "rb") as fh:
        for raw in fh:
            obj = json.loads(raw)
            if obj.get("type") in ("user", "gemini"):
                said[obj["id"]] = "\n".join(_part_texts(obj.get("content"))).strip()
    return [text for text in said.values() if text]


def floor_load(root: Path, db: Path) -> int:
    """The minimal loader; returns the number of turns inserted."""
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = NORMAL")
    conn.executescript(_FLOOR_SCHEMA)
    conn.execute("BEGIN IMMEDIATE")
    turns = 0
    last = 0
    for path in corpus.transcripts(root):
        rows: list[tuple[str]] = []
        if path.name.startswith("session-"):
            rows = [(text,) for text in _gemini_prose(path)]
        else:
            pick = _claude_prose
            if path.name.startswith("rollout-"):
                pick = _codex_prose
            elif path.name == "events.jsonl":
                pick = _copilot_prose
            with open(path, "rb") as fh:
                for raw in fh:
                    for _role, text in pick(json.loads(raw)):
                        if text:
                            rows.append((text,))
        conn.executemany("INSERT INTO docs (text) VALUES (?)", rows)
        conn.execute("INSERT INTO docs_fts(rowid, text) SELECT id, text FROM docs WHERE id > ?",
                     (last,))  # fmt: skip
        last += len(rows)
        turns += len(rows)
    conn.execute("COMMIT")
    conn.close()
    return turns


# --------------------------------------------------------------------------- (a) cold index


def backscroll_exe() -> str:
    exe = Path(sys.executable).with_name("backscroll")
    return str(exe) if exe.exists() else shutil.which("backscroll") or "backscroll"


def clean_env(home: Path, data: Path, config: Path | None) -> dict[str, str]:
    """An environment that sees only the corpus (no real host dirs, no daemon)."""
    env = {k: v for k, v in os.environ.items() if k in ("PATH", "LANG", "LC_ALL", "TZ")}
    env.update(
        HOME=str(home),
        BACKSCROLL_HOME=str(data),
        XDG_RUNTIME_DIR=str(data / "run"),
        XDG_CONFIG_HOME=str(data / "config"),
        XDG_DATA_HOME=str(data / "share"),
    )
    if config is not None:
        env["BACKSCROLL_CONFIG"] = str(config)
    return env


def timed_child(
    cmd: list[str], env: dict[str, str] | None = None, cwd: Path | None = None
) -> tuple[float, float, int, str]:
    """(wall s, CPU s, peak RSS bytes, stdout) of one child; CPU and RSS from ``wait4``."""
    started = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    out = proc.stdout.read()
    err = proc.stderr.read()
    _pid, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - started
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}):\n{err.decode()}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss * 1024, out.decode()


def warm(root: Path) -> None:
    """Read every transcript once so no arm pays for the first disk read."""
    for path in corpus.transcripts(root):
        with open(path, "rb") as fh:
            while fh.read(1 << 20):
                pass


def baseline_tree(ref: str, work: Path) -> Path:
    """The ``backscroll`` package of git ref ``ref``, unpacked under ``work``."""
    dest = work / "baseline"
    dest.mkdir()
    repo = Path(__file__).resolve().parent.parent
    archive = subprocess.run(
        ["git", "-C", str(repo), "archive", ref, "backscroll"], capture_output=True, check=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True)
    return dest


LABELS = {
    "floor": "minimal loader (floor: docs + FTS5)",
    "base": "baseline ref, redaction on",
    "on": "backscroll index, redaction on",
    "off": "backscroll index, redaction off",
    "serial": "redaction on, read in-process",
}


def cold_index(root: Path, work: Path, repeat: int, mb: float, baseline: str | None) -> None:
    off_cfg = work / "redaction-off.yaml"
    off_cfg.write_text("redaction:\n  enabled: false\n")
    on_cfg = work / "redaction-on.yaml"
    on_cfg.write_text("redaction:\n  enabled: true\n")
    order = ["floor", "on", "off", "serial"] + (["base"] if baseline else [])
    base_tree = baseline_tree(baseline, work) if baseline else None
    arms: dict[str, list[tuple[float, float, int]]] = {arm: [] for arm in order}
    turns: dict[str, int] = {}
    warm(root)
    for rnd in range(repeat):
        # Each round starts one arm later: no arm always follows the same one
        # (the one before leaves its deleted index to the file system).
        for arm in order[rnd % len(order) :] + order[: rnd % len(order)]:
            data = work / f"{arm}-{rnd}"
            data.mkdir()
            if arm == "floor":
                cmd = [sys.executable, __file__, "--floor", str(root), str(data / "floor.db")]
                wall, cpu, rss, out = timed_child(cmd)
                turns[arm] = int(out.strip())
            else:
                env = clean_env(root, data, off_cfg if arm == "off" else on_cfg)
                if arm == "serial":
                    env["BACKSCROLL_INDEX_WORKERS"] = "1"
                tree = base_tree if arm == "base" else ROOT
                assert tree is not None
                env["PYTHONPATH"] = str(tree)
                cmd = [sys.executable, "-m", "backscroll", "index", "--json"]
                # (Not in the checkout: its package would shadow PYTHONPATH's.)
                wall, cpu, rss, out = timed_child(cmd, env, work)
                turns[arm] = int(json.loads(out)["turns_added"])
            arms[arm].append((wall, cpu, rss))
            print(
                f"  round {rnd + 1} {arm:<6} wall {wall:6.2f} s  CPU {cpu:6.2f} s  "
                f"peak RSS {rss / 1e6:6.1f} MB  {turns[arm]} turns",
                flush=True,
            )
            shutil.rmtree(data)
    wall_best = {arm: min(r[0] for r in runs) for arm, runs in arms.items()}
    cpu_best = {arm: min(r[1] for r in runs) for arm, runs in arms.items()}
    peak = {arm: max(r[2] for r in runs) for arm, runs in arms.items()}
    print(f"\n(a) cold index of {mb:.1f} MB, best of {repeat} (wall and CPU = user+sys):")
    for arm in order:
        print(
            f"  {LABELS[arm]:<38} wall {wall_best[arm]:6.2f} s ({mb / wall_best[arm]:6.1f} MB/s)"
            f"  CPU {cpu_best[arm]:6.2f} s ({mb / cpu_best[arm]:6.1f} MB/s)"
            f"  peak RSS {peak[arm] / 1e6:5.1f} MB  {turns[arm]} turns"
        )
    for name, best in (("wall", wall_best), ("CPU", cpu_best)):
        r_cold = best["on"] / best["floor"]
        r_red = best["on"] / best["off"]
        print(
            f"  {name:<4} backscroll / floor: {r_cold:.2f}x redaction on,"
            f" {best['off'] / best['floor']:.2f}x off, {best['serial'] / best['floor']:.2f}x"
            f" in-process;  redaction on / off: {r_red:.2f}x (target <= {REDACTION_TARGET})"
            f" {'MET' if r_red <= REDACTION_TARGET else 'NOT MET'}"
        )
        if "base" in best:
            speedup = best["base"] / best["on"]
            met = "MET" if speedup >= SPEEDUP_TARGET else "NOT MET"
            print(
                f"  {name:<4} speed-up over {baseline}: {speedup:.2f}x"
                f" (target >= {SPEEDUP_TARGET}) {met};"
                f" baseline / floor {best['base'] / best['floor']:.2f}x"
            )


# --------------------------------------------------------------------------- (b) append cost


def append_cost(work: Path, big_mb: int, appends: int, seed: int) -> None:
    home = work / "append-home"
    os.environ.update(
        HOME=str(home),
        BACKSCROLL_HOME=str(work / "append-data"),
        XDG_CONFIG_HOME=str(work / "append-config"),
    )
    os.environ.pop("CLAUDE_CONFIG_DIR", None)
    os.environ.pop("BACKSCROLL_CONFIG", None)
    from backscroll import config as config_mod
    from backscroll.direct import make_indexer
    from backscroll.store import open_writer

    rng = random.Random(seed)
    text = corpus.Text(rng)
    project = home / ".claude" / "projects" / "-home-user-projects-app"
    big = project / f"{corpus._uuid(rng)}.jsonl"
    small = project / f"{corpus._uuid(rng)}.jsonl"
    t0 = time.perf_counter()
    corpus.write_claude_session(big, big_mb * 1_000_000, text, corpus.BASE_TS)
    corpus.write_claude_session(small, 100_000, text, corpus.BASE_TS)
    made = time.perf_counter() - t0
    cfg = config_mod.load()
    writer = open_writer(cfg.db_path())
    indexer = make_indexer(cfg, writer)
    t0 = time.perf_counter()
    summary = indexer.reconcile()
    cold = time.perf_counter() - t0
    print(
        f"\n(b) append cost: files {big.stat().st_size / 1e6:.1f} MB and "
        f"{small.stat().st_size / 1e3:.0f} KB written in {made:.1f} s, indexed cold in "
        f"{cold:.2f} s ({summary.turns_added} turns)"
    )
    items = {name: indexer.owner(path) for name, path in (("big", big), ("small", small))}
    times: dict[str, list[float]] = {"big": [], "small": []}
    for i in range(appends + 2):  # the first two rounds warm caches and are dropped
        for name, path in (("big", big), ("small", small)):
            item = items[name]
            assert item is not None
            line = corpus.claude_user_line(
                path.stem,
                "/home/user/projects/app",
                f"appended prompt {name} number {i} " + text.prose(20),
                corpus.BASE_TS + i,
                rng,
            )
            with open(path, "a", encoding="utf-8") as fh:
                fh.write(line)
            t0 = time.perf_counter()
            s = indexer.index_item(item)
            dt = time.perf_counter() - t0
            if s.turns_added != 1:
                raise SystemExit(f"expected one new turn in {path.name}, got {s.turns_added}")
            if i >= 2:
                times[name].append(dt)
    writer.close()
    med = {k: statistics.median(v) for k, v in times.items()}
    p90 = {k: statistics.quantiles(v, n=10)[-1] for k, v in times.items()}
    for name in ("small", "big"):
        print(
            f"  index_item after one appended line, {name:<5} file: median "
            f"{med[name] * 1000:7.2f} ms  p90 {p90[name] * 1000:7.2f} ms  (n={appends})"
        )
    ratio = med["big"] / med["small"]
    print(
        f"  big / small: {ratio:.2f}x  (target <= {APPEND_TARGET})  "
        f"{'MET' if ratio <= APPEND_TARGET else 'NOT MET'}"
    )


# --------------------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size-mb", type=int, default=200)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--corpus", type=Path, help="generate into / reuse this directory")
    corpus.add_hosts_option(ap)
    ap.add_argument("--repeat", type=int, default=2, help="rounds of the cold-index arms")
    ap.add_argument("--big-mb", type=int, default=100, help="size of the big file in (b)")
    ap.add_argument("--appends", type=int, default=20)
    ap.add_argument("--skip-cold", action="store_true")
    ap.add_argument("--skip-append", action="store_true")
    ap.add_argument(
        "--baseline", metavar="REF", help="also time the cold index of git ref REF (e.g. main)"
    )
    ap.add_argument("--floor", nargs=2, metavar=("ROOT", "DB"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.floor:
        print(floor_load(Path(args.floor[0]), Path(args.floor[1])))
        return 0
    print(
        f"python {sys.version.split()[0]}, sqlite {sqlite3.sqlite_version}, {os.cpu_count()} CPUs"
    )
    with tempfile.TemporaryDirectory(prefix="bs-bench-index-") as tmp:
        work = Path(tmp)
        if not args.skip_cold:
            root = args.corpus or work / "corpus"
            root.mkdir(parents=True, exist_ok=True)
            stats = corpus.generate(root, args.size_mb, args.seed, args.hosts)
            mb = stats.bytes / 1e6
            print(
                f"corpus: {stats.files} sessions, {mb:.1f} MB, {stats.prose_turns} prose "
                f"turns ({stats.prose_chars / 1e6:.1f} MB of prose), seed {args.seed}, "
                f"hosts {','.join(stats.hosts)}"
            )
            cold_index(root, work, args.repeat, mb, args.baseline)
        if not args.skip_append:
            append_cost(work, args.big_mb, args.appends, args.seed)
    return 0


if __name__ == "__main__":
    sys.exit(main())
