"""Instructions a piece of the cold index executes, counted by valgrind (callgrind).

Wall time on a shared 2-core machine moves by several percent between runs,
so a change worth 1-3 % of a pass cannot be seen in it; an instruction count is
the same on every run. Each workload runs in its own interpreter under
``valgrind --tool=callgrind``, once with the work and once without (the same
imports and set-up), and the difference is printed, for this checkout's
package and, with ``--against DIR``, for the package in DIR (a ``git archive``
of an older commit, say) in the same run::

    python bench/bench_instructions.py --corpus C240 --against DIR read-claude clean

Workloads (``C240`` is ``python bench/corpus.py C240 --size-mb 240``):

- ``read-claude``: the first 40 Claude Code transcripts (by path) read by their reader;
- ``clean``: every read of the corpus cleaned (redaction, exclusions, surrogates);
- ``unpickle``: every read of the corpus unpickled as the writer receives it;
- ``plan``: every file scanned, planned and tail-hashed as a first index does;
- ``scan``: every file scanned;
- ``imports``: what ``backscroll index`` imports before its first chunk.

The reads that ``clean`` and ``unpickle`` start from are made once, by this
checkout, before any count. Needs valgrind (Debian: ``apt install valgrind``).
"""

from __future__ import annotations

import argparse
import os
import pickle
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from backscroll.indexing.spec import HostSpec

ROOT = Path(__file__).resolve().parent.parent
WORKLOADS = ("read-claude", "clean", "unpickle", "plan", "scan", "imports")


def _tasks(corpus: Path) -> list[tuple[HostSpec, Path]]:
    """Every transcript of the corpus, found as a pass finds it (each reader's
    ``discover`` under its roots)."""
    from backscroll.config import Config
    from backscroll.indexing.indexer import build_hosts
    from backscroll.readers.base import HostEnv

    hosts = build_hosts(Config(), HostEnv(home=corpus, environ={}))
    return [
        (spec, path)
        for spec in hosts
        for root in spec.roots
        if root.exists()
        for path in spec.reader.discover(root)
    ]


def _child(workload: str, corpus: Path, data: Path, work: bool) -> None:
    """Runs inside valgrind, with the measured package first on sys.path."""
    if workload == "read-claude":
        from backscroll.model import ReaderOptions
        from backscroll.readers.claude_code import ClaudeCodeReader

        files = sorted(corpus.glob(".claude/projects/*/*.jsonl"))[:40]
        reader, opts = ClaudeCodeReader(), ReaderOptions()
        if work:
            for path in files:
                reader.read(path, None, opts)
    elif workload in ("clean", "unpickle"):
        from backscroll.config import Config
        from backscroll.indexing import parallel
        from backscroll.indexing.clean import clean

        blob = (data / "reads.pickle").read_bytes()
        if workload == "unpickle":
            if work:
                pickle.loads(blob)
            return
        reads = pickle.loads(blob)
        parallel.configure_worker(Config(), True)
        redactor = parallel._redactor
        assert redactor is not None
        redactor.redact("warm")
        if work:
            for outcome in reads:
                clean(outcome.get(), redactor, ())
    elif workload in ("plan", "scan"):
        os.environ.update(
            HOME=str(corpus),
            BACKSCROLL_HOME=str(data / "index"),
            XDG_CONFIG_HOME=str(data / "config"),
            XDG_DATA_HOME=str(data / "share"),
        )
        from backscroll import config as bconfig
        from backscroll.direct import make_indexer
        from backscroll.indexing.indexer import tail_hash
        from backscroll.store import open_writer

        cfg = bconfig.load(None)
        indexer = make_indexer(cfg, open_writer(cfg.db_path()))
        if work:
            items = list(indexer.scan())
            if workload == "plan":
                for item in items:
                    plan = indexer.plan(item, None)
                    if plan is not None:
                        tail_hash(plan.item.path, plan.stat.size)
    elif workload == "imports" and work:
        import backscroll.cli
        import backscroll.direct
        from backscroll.config import Config
        from backscroll.indexing.indexer import build_hosts
        from backscroll.indexing.prefork import maybe_start  # noqa: F401

        build_hosts(Config())
        del backscroll


def _count(tree: Path, workload: str, corpus: Path, data: Path, work: bool) -> int:
    for sub in ("index", "config", "share"):  # (a first index: nothing there)
        shutil.rmtree(data / sub, ignore_errors=True)
    done = subprocess.run(
        ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable,
         __file__, "--child", workload, "--corpus", str(corpus), "--data", str(data),
         *(["--work"] * work)],
        env={**os.environ, "PYTHONPATH": str(tree)},
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    found = re.search(r"Collected : (\d+)", done.stderr)
    if found is None:
        raise SystemExit(f"no instruction count from valgrind:\n{done.stderr[-2000:]}")
    return int(found.group(1))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", type=Path, required=True, help="a HOME holding transcripts")
    ap.add_argument("--against", type=Path, help="a directory holding another backscroll/")
    ap.add_argument("--child", choices=WORKLOADS, help=argparse.SUPPRESS)
    ap.add_argument("--data", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--work", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("workloads", nargs="*", help=f"some of {', '.join(WORKLOADS)} (default: all)")
    args = ap.parse_args()
    unknown = set(args.workloads) - set(WORKLOADS)
    if unknown:
        ap.error(f"unknown workloads {sorted(unknown)}; the workloads are {', '.join(WORKLOADS)}")
    workloads = args.workloads or list(WORKLOADS)
    if args.child:
        _child(args.child, args.corpus, args.data, args.work)
        return
    trees = [ROOT] + ([args.against] if args.against else [])
    for tree in trees:  # (the measured runs read compiled modules, as an install does)
        subprocess.run(
            [sys.executable, "-m", "compileall", "-q", str(tree / "backscroll")],
            check=True,
            stdout=subprocess.DEVNULL,
        )
    with tempfile.TemporaryDirectory(prefix="bench-instr-") as tmp:
        data = Path(tmp)
        if {"clean", "unpickle"} & set(workloads):
            from backscroll.indexing.parallel import Outcome

            reads = [
                Outcome(result=spec.reader.read(path, None, spec.options))
                for spec, path in _tasks(args.corpus)
            ]
            (data / "reads.pickle").write_bytes(pickle.dumps(reads, pickle.HIGHEST_PROTOCOL))
        for workload in workloads:
            counts = [
                _count(tree, workload, args.corpus, data, True)
                - _count(tree, workload, args.corpus, data, False)
                for tree in trees
            ]
            line = f"{workload:12s} this checkout {counts[0] / 1e6:8.1f}M instructions"
            if len(counts) > 1:
                line += f"  against: {counts[1] / 1e6:8.1f}M  ratio {counts[0] / counts[1]:.3f}"
            print(line, flush=True)


if __name__ == "__main__":
    main()
