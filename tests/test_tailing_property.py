"""Tailing is exact: for any sequence of appends (whole and partial lines),
truncations, rewrites and renames of a real Claude Code transcript, indexing
after every step gives exactly the turns of indexing the final files fresh."""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from backscroll.config import Config, IndexConfig
from backscroll.indexing.indexer import Indexer, build_hosts
from backscroll.readers.base import HostEnv
from backscroll.store import open_writer
from tests.daemon.harness import FIXTURES, dump_turns, session_uuid

LINES: tuple[bytes, ...] = tuple(
    line
    for name in ("spotter-tool_heavy.jsonl", "agent-sessions-stage0-small-synthetic.jsonl")
    for line in (FIXTURES / "claude-code" / name).read_bytes().splitlines(keepends=True)
)
#: Renamed-away transcripts are forgotten, so the final files alone say what is indexed.
CONFIG = Config(index=IndexConfig(on_delete="forget"))

span = st.tuples(
    st.integers(0, len(LINES) - 1), st.integers(1, 12)
).map(lambda t: (t[0], min(t[0] + t[1], len(LINES))))  # fmt: skip

Op = tuple[Any, ...]
ops: st.SearchStrategy[Op] = st.one_of(
    st.tuples(st.just("append"), span),
    st.tuples(st.just("partial"), st.integers(0, len(LINES) - 1), st.floats(0.05, 0.95)),
    st.tuples(st.just("complete")),
    st.tuples(st.just("truncate"), st.floats(0.0, 1.0)),
    st.tuples(st.just("rewrite"), span, st.booleans()),
    st.tuples(st.just("rename")),
)


class Transcript:
    """One transcript file under a temp HOME, changed the way hosts change them."""

    def __init__(self, home: Path) -> None:
        self.dir = home / ".claude" / "projects" / "-p"
        self.dir.mkdir(parents=True)
        self.n = 1
        self.path = self.dir / f"{session_uuid(self.n)}.jsonl"
        self.path.write_bytes(b"".join(LINES[:3]))
        self.pending = b""  # the rest of a partially written line
        self.clock = time.time_ns()

    def apply(self, op: Op) -> None:
        kind = op[0]
        if kind == "append":
            i, j = op[1]
            self._append(b"".join(LINES[i:j]))
        elif kind == "partial":
            line = LINES[op[1]]
            cut = max(1, int(len(line) * op[2]))
            self._append(line[:cut])
            self.pending = line[cut:]
        elif kind == "complete":
            self._append(self.pending)
            self.pending = b""
        elif kind == "truncate":
            size = self.path.stat().st_size
            os.truncate(self.path, int(size * op[1]))
            self.pending = b""
        elif kind == "rewrite":
            i, j = op[1]
            data = b"".join(LINES[i:j])
            if op[2]:  # in place: same inode
                with open(self.path, "r+b") as fh:
                    fh.truncate(0)
                    fh.write(data)
            else:  # atomic replace: a new inode
                tmp = self.path.with_suffix(".tmp")
                tmp.write_bytes(data)
                os.replace(tmp, self.path)
            self.pending = b""
        elif kind == "force-rewrite":
            i, j = op[1]
            with open(self.path, "r+b") as fh:
                fh.truncate(0)
                fh.write(b"".join(LINES[i:j]))
        elif kind == "rename":
            self.n += 1
            new = self.dir / f"{session_uuid(self.n)}.jsonl"
            os.rename(self.path, new)
            self.path = new
        # Time passes between steps: a coarse filesystem clock must not hide a change.
        self.clock += 1_000_000_000
        os.utime(self.path, ns=(self.clock, self.clock))

    def _append(self, data: bytes) -> None:
        with open(self.path, "ab") as fh:
            fh.write(data)


def index_once(home: Path, db: Path) -> None:
    writer = open_writer(db)
    try:
        Indexer(writer, build_hosts(CONFIG, HostEnv(home=home)), CONFIG).reconcile()
    finally:
        writer.close()


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(steps=st.lists(ops, min_size=1, max_size=10))
def test_incremental_indexing_equals_a_fresh_index_of_the_final_file(steps: list[Op]) -> None:
    check(steps)


def check(steps: list[Op]) -> None:
    """Index after every step, then compare with a fresh index of the final files."""
    root = Path(tempfile.mkdtemp(prefix="tail-"))
    try:
        home = root / "home"
        transcript = Transcript(home)
        live = root / "live" / "index.db"
        writer = open_writer(live)
        indexer = Indexer(writer, build_hosts(CONFIG, HostEnv(home=home)), CONFIG)
        try:
            indexer.reconcile()
            for op in steps:
                transcript.apply(op)
                indexer.reconcile()
        finally:
            writer.close()
        fresh = root / "fresh" / "index.db"
        index_once(home, fresh)
        got, want = dump_turns(live), dump_turns(fresh)
        assert got == want, f"after {steps}"
    finally:
        shutil.rmtree(root, ignore_errors=True)


def test_an_in_place_rewrite_behind_an_unchanged_head_is_reindexed() -> None:
    check([("append", (0, 1)), ("force-rewrite", (0, 4))])
