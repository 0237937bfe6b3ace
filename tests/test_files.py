"""Reading part of a file that may not be one (backscroll/files.py): the head
and tail checks of every pass read a byte range, and a FIFO or device in a
transcript's place is refused at once rather than waited on."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from backscroll.files import NotRegular, read_range


def test_a_byte_range_is_read_and_cut_short_at_the_files_end(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(b"0123456789")
    assert read_range(path, 0, 4) == b"0123"
    assert read_range(path, 6, 4) == b"6789"
    assert read_range(path, 8, 100) == b"89"
    assert read_range(path, 10, 5) == b""
    assert read_range(path, 3, 0) == b""


def test_a_fifo_or_a_directory_in_the_files_place_is_refused_not_waited_on(
    tmp_path: Path,
) -> None:
    fifo = tmp_path / "fifo.jsonl"
    os.mkfifo(fifo)
    with pytest.raises(NotRegular, match="not a regular file"):
        read_range(fifo, 0, 1024)
    with pytest.raises(NotRegular):
        read_range(tmp_path, 0, 16)
    with pytest.raises(FileNotFoundError):
        read_range(tmp_path / "gone.jsonl", 0, 16)
