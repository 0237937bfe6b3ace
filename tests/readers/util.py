"""Shared helpers for reader tests: fixtures, and the store's semantics in memory.

:class:`MemoryIndex` applies :class:`ReadResult` objects the way the SQLite store
does (upsert by key, ``replace`` drops the file's other turns, ``replaced_sessions``
drops those sessions' other turns), so reader tests can check that reading a
file incrementally gives the same turns as reading it fresh.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import threading
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from backscroll.model import Cursor, ReaderOptions, ReadResult, Session, Turn
from backscroll.readers.base import Reader

if TYPE_CHECKING:
    from backscroll.indexing.indexer import Summary

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def fixture(host: str, name: str) -> Path:
    path = FIXTURES / host / name
    assert path.exists(), f"missing fixture {path}"
    return path


@dataclass
class MemoryIndex:
    turns: dict[tuple[str, str], Turn] = field(default_factory=dict)
    sessions: dict[str, Session] = field(default_factory=dict)
    cursor: Cursor | None = None

    def apply(self, result: ReadResult) -> None:
        assert result.unsupported is None, result.unsupported
        if result.replace:
            self.turns.clear()
        for sid in result.replaced_sessions | result.removed_sessions:
            for k in [k for k in self.turns if k[0] == sid]:
                del self.turns[k]
        for sid in result.removed_sessions:
            self.sessions.pop(sid, None)
        for turn in result.turns:
            self.turns[(turn.session_id, turn.key)] = turn
        for s in result.sessions:
            old = self.sessions.get(s.session_id)
            if old is None:
                self.sessions[s.session_id] = s
            else:
                self.sessions[s.session_id] = Session(
                    s.session_id,
                    project=s.project or old.project,
                    title=s.title or old.title,
                    started_at=s.started_at if s.started_at is not None else old.started_at,
                    updated_at=s.updated_at if s.updated_at is not None else old.updated_at,
                    resume_command=s.resume_command or old.resume_command,
                    parent_session_id=s.parent_session_id or old.parent_session_id,
                )
        self.cursor = Cursor(result.position, dict(result.state))

    def read(self, reader: Reader, path: Path, opts: ReaderOptions | None = None) -> ReadResult:
        result = reader.read(path, self.cursor, opts or ReaderOptions())
        self.apply(result)
        return result

    def texts(self, role: str | None = None) -> list[str]:
        ordered = sorted(self.turns.values(), key=lambda t: (t.session_id, t.seq, t.key))
        return [t.text for t in ordered if role is None or t.role == role]

    def comparable(self) -> dict[tuple[str, str], tuple[str, str, float | None, bool, bool]]:
        return {
            k: (t.role, t.text, t.timestamp, t.tainted, t.subagent) for k, t in self.turns.items()
        }


def read_fresh(reader: Reader, path: Path, opts: ReaderOptions | None = None) -> MemoryIndex:
    index = MemoryIndex()
    index.read(reader, path, opts)
    return index


def grow_file_incrementally(
    reader: Reader,
    source: Path,
    dest: Path,
    cuts: list[int],
    opts: ReaderOptions | None = None,
) -> MemoryIndex:
    """Write ``source`` to ``dest`` in pieces ending at the byte ``cuts`` (any
    offsets, mid-line included), reading incrementally after each piece, as the
    daemon would while a host appends. Returns the resulting index."""
    data = source.read_bytes()
    index = MemoryIndex()
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_bytes(b"")
    written = 0
    for cut in [*sorted(c for c in cuts if 0 < c < len(data)), len(data)]:
        with open(dest, "ab") as fh:
            fh.write(data[written:cut])
        written = cut
        index.read(reader, dest, opts)
    return index


def copy_fixture(host: str, name: str, dest_dir: Path, new_name: str | None = None) -> Path:
    dest_dir.mkdir(parents=True, exist_ok=True)
    dest = dest_dir / (new_name or name)
    shutil.copyfile(fixture(host, name), dest)
    return dest


def role_counts(index: MemoryIndex) -> Counter[str]:
    """How many turns of each role the index holds."""
    return Counter(turn.role for turn in index.turns.values())


def all_text(index: MemoryIndex) -> str:
    return "\n".join(index.texts())


def append_lines(path: Path, *entries: dict[str, Any]) -> None:
    """Append ``entries`` to a JSONL file, one line each, as a host would."""
    with open(path, "a", encoding="utf-8") as fh:
        for entry in entries:
            fh.write(json.dumps(entry) + "\n")


def line_cuts(data: bytes) -> list[int]:
    """Every line end, one byte either side of it, and a point in each line's middle."""
    cuts: list[int] = []
    start = 0
    for i, byte in enumerate(data):
        if byte == ord("\n"):
            cuts += [i, i + 1, i + 2, (start + i) // 2]
            start = i + 1
    return cuts


def line_starts(path: Path) -> list[int]:
    """The offset just after every newline of the file."""
    return [i + 1 for i, b in enumerate(path.read_bytes()) if b == 0x0A]


def host_connection(path: Path, timeout: float = 5) -> sqlite3.Connection:
    """A connection to a host database as the host itself writes it (autocommit)."""
    return sqlite3.connect(path, isolation_level=None, timeout=timeout)


@dataclass
class BackgroundReads:
    count: int = 0


@contextmanager
def reading_in_background(reader: Reader, path: Path) -> Iterator[BackgroundReads]:
    """Read ``path`` incrementally in a thread, over and over, while the block runs
    (as the daemon would while the host writes); ``count`` is the reads finished."""
    stop = threading.Event()
    reads = BackgroundReads()

    def keep_reading() -> None:
        index = MemoryIndex()
        while not stop.is_set():
            index.read(reader, path)
            reads.count += 1

    thread = threading.Thread(target=keep_reading)
    thread.start()
    try:
        yield reads
    finally:
        stop.set()
        thread.join()


def index_home(home: Path, db: Path) -> Summary:
    """One pass of the indexer over every host's default roots under ``home``
    into ``db``, as ``backscroll index`` does (default config)."""
    from backscroll.config import Config
    from backscroll.indexing.indexer import Indexer, build_hosts
    from backscroll.readers.base import HostEnv
    from backscroll.store import open_writer

    writer = open_writer(db)
    try:
        return Indexer(writer, build_hosts(Config(), HostEnv(home=home)), Config()).reconcile()
    finally:
        writer.close()
