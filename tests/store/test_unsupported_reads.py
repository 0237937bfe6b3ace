"""A read the reader refuses: by default the file's turns stay (a format this
version does not know); with ``replace``, none of the file is to stay indexed
(an Aider history that is not the user's), and the reason is kept either way."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from backscroll.model import ReadResult, Session, Turn
from backscroll.store import open_writer
from backscroll.store.writer import FileStat, IndexWriter, Update


@pytest.fixture
def writer(tmp_path: Path) -> Iterator[IndexWriter]:
    w = open_writer(tmp_path / "index.db")
    yield w
    w.close()


def _apply(writer: IndexWriter, result: ReadResult, size: int) -> None:
    row = writer.file_row("/h.md")
    stat = FileStat(size=size, mtime_ns=size, inode=1)
    writer.apply(Update("/h.md", "aider", stat, 3, row.fingerprint if row else None, True, result))


def _turns(writer: IndexWriter) -> int:
    return int(writer.conn.execute("SELECT count(*) FROM turns").fetchone()[0])


@pytest.mark.parametrize("replace", [False, True], ids=["unknown-format", "not-the-users"])
def test_a_refused_read_keeps_or_drops_the_files_turns_and_keeps_the_reason(
    writer: IndexWriter, replace: bool
) -> None:
    turns = (Turn("s", "k1", "user", "an old prompt", 1000.0), Turn("s", "k2", "user", "more"))
    _apply(writer, ReadResult(turns=turns, sessions=(Session("s"),), position=10), 10)
    assert _turns(writer) == 2
    _apply(writer, ReadResult(unsupported="not this user's", replace=replace), 11)
    assert _turns(writer) == (0 if replace else 2)
    row = writer.file_row("/h.md")
    assert row is not None and row.error == "not this user's"
