"""A session's first and last activity when a read takes turns away."""

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


def _apply(writer: IndexWriter, path: str, session: Session, stamps: list[float],
           prefix: str, based_on: tuple[int, int, int, int] | None, size: int) -> None:  # fmt: skip
    turns = tuple(
        Turn(session.session_id, f"{prefix}{i}", "user", f"turn {i}", t, seq=i)
        for i, t in enumerate(stamps)
    )
    stat = FileStat(size=size, mtime_ns=size, inode=1)
    result = ReadResult(turns=turns, sessions=(session,), position=size)
    writer.apply(Update(path, "claude-code", stat, 1, based_on, True, result))


def _times(writer: IndexWriter) -> tuple[float, float]:
    row = writer.conn.execute("SELECT started_at, updated_at FROM sessions").fetchone()
    return float(row[0]), float(row[1])


def test_a_session_held_by_another_file_too_keeps_the_times_that_file_gave(
    writer: IndexWriter,
) -> None:
    # The parent transcript spans 990..1090 in records that are not turns (its
    # session start and last tool call); a sub-agent file of the same session
    # is then rewound by one turn.
    parent = Session("s", project="/p", started_at=990.0, updated_at=1090.0)
    _apply(writer, "/parent.jsonl", parent, [1000.0, 1010.0], "p", None, 10)
    child = Session("s")
    _apply(writer, "/agent.jsonl", child, [1020.0, 1050.0], "a", None, 20)
    row = writer.file_row("/agent.jsonl")
    assert row is not None
    _apply(writer, "/agent.jsonl", child, [1020.0], "a", row.fingerprint, 15)
    assert _times(writer) == (990.0, 1090.0)


def test_a_session_its_one_file_rewound_takes_its_times_from_what_is_left(
    writer: IndexWriter,
) -> None:
    alone = Session("s", project="/p")
    _apply(writer, "/only.jsonl", alone, [1000.0, 1010.0, 1050.0], "t", None, 30)
    row = writer.file_row("/only.jsonl")
    assert row is not None
    _apply(writer, "/only.jsonl", alone, [1000.0, 1010.0], "t", row.fingerprint, 20)
    assert _times(writer) == (1000.0, 1010.0)
