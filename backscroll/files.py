"""Reading a file that something else may have put in a file's place: a FIFO
(which would block the reader for ever), a device (``/dev/zero``, endless), a
directory. Standard library only: the config and the readers both use it."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import IO


class TooLarge(OSError):
    """A file larger than the limit for its kind: logged naming it, and skipped."""


class NotRegular(OSError):
    """A FIFO, device, socket or directory where a regular file was expected."""


def open_regular(path: Path) -> IO[bytes]:
    """Open ``path`` for reading only if it is a regular file: opened non-blocking,
    so a FIFO swapped in for a transcript or side file cannot hang the caller, and
    refused when it is a FIFO, device, socket or directory. Raises OSError."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise NotRegular(f"{path}: not a regular file (a FIFO, device, socket or directory)")
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_range(path: Path, start: int, length: int) -> bytes:
    """Up to ``length`` bytes of a regular file from byte ``start`` (fewer at
    its end): one open, one read, no buffered stream (once or twice per file of
    every pass, for the checks that a transcript is the one indexed before).
    Raises OSError, :class:`NotRegular` for what is not a regular file."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise NotRegular(f"{path}: not a regular file (a FIFO, device, socket or directory)")
        parts: list[bytes] = []
        while length > 0:
            part = os.pread(fd, length, start)
            if not part:
                break
            parts.append(part)
            start += len(part)
            length -= len(part)
        return b"".join(parts)
    finally:
        os.close(fd)


def read_bounded(path: Path, max_bytes: int, what: str = "file", option: str = "") -> bytes:
    """The bytes of a regular file of at most ``max_bytes``.

    Opened non-blocking, so a FIFO in the file's place cannot hang the indexer,
    and refused unless it is a regular file (a symlink to ``/dev/zero`` is a
    device); never more than ``max_bytes`` + 1 bytes are read, even from a file
    that grows meanwhile. Raises OSError (:class:`TooLarge` past the limit)."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise NotRegular(f"{path}: not a regular file (a FIFO, device, socket or directory)")
        fix = f"; raise {option} to read it" if option else ""
        if st.st_size > max_bytes:
            raise TooLarge(
                f"{path}: {what} of {st.st_size} bytes is over the {max_bytes}-byte limit, "
                f"not read{fix}"
            )
        chunks: list[bytes] = []
        total = 0
        while total <= max_bytes:
            chunk = os.read(fd, min(1 << 20, max_bytes + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
        if total > max_bytes:
            raise TooLarge(f"{path}: {what} grew past the {max_bytes}-byte limit, not read{fix}")
        return b"".join(chunks)
    finally:
        os.close(fd)
