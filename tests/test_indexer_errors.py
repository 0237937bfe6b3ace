"""A transcript that cannot be read is logged, kept out, and not tried again
until it changes; nothing already indexed is lost."""

from __future__ import annotations

import os
from pathlib import Path
from typing import ClassVar

from backscroll.config import Config
from backscroll.daemon.indexer import HostSpec, Indexer
from backscroll.model import Cursor, Kind, ReaderOptions, ReadResult
from backscroll.readers.base import BaseReader, HostEnv
from backscroll.store import open_writer


class BrokenReader(BaseReader):
    """A reader whose every read fails the way a permission error would."""

    host: ClassVar[str] = "claude-code"
    name: ClassVar[str] = "broken"
    version: ClassVar[int] = 1
    kind: ClassVar[Kind] = "append"

    def __init__(self) -> None:
        self.reads = 0

    def roots(self, env: HostEnv) -> list[Path]:
        return []

    def source_for(self, path: Path) -> Path | None:
        return path if path.suffix == ".jsonl" else None

    def read(self, path: Path, prev: Cursor | None, opts: ReaderOptions) -> ReadResult:
        self.reads += 1
        raise PermissionError(f"cannot read {path}")


def test_an_unreadable_file_is_retried_only_after_it_changes(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    transcript = root / "a.jsonl"
    transcript.write_text("{}\n")
    reader = BrokenReader()
    writer = open_writer(tmp_path / "data" / "index.db")
    try:
        indexer = Indexer(writer, [HostSpec(reader, (root,), ReaderOptions())], Config())
        first = indexer.reconcile()
        assert (first.errors, reader.reads) == (1, 1)
        assert "cannot read" in (first.last_error or "")
        indexer.reconcile()
        assert reader.reads == 1, "an unchanged unreadable file was read again"
        stat = transcript.stat()
        os.utime(transcript, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
        indexer.reconcile()
        assert reader.reads == 2, "a changed file was not tried again"
        row = writer.file_row(str(transcript))
        assert row is not None and row.error and "PermissionError" in row.error
    finally:
        writer.close()
