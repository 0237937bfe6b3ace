"""Journald priorities on log lines: under systemd, each JSON line starts with the
``<N>`` syslog prefix (``sd-daemon(3)``), so ``journalctl -p warning`` filters
backscroll's lines and errors show in red; the prefix is stripped by journald and
``backscroll logs`` reads the JSON as before. Elsewhere the lines are unchanged.
"""

from __future__ import annotations

import logging
import os
from typing import IO, Any

#: Python level -> syslog priority (debug 7 … critical 2).
PRIORITIES = {
    logging.DEBUG: 7,
    logging.INFO: 6,
    logging.WARNING: 4,
    logging.ERROR: 3,
    logging.CRITICAL: 2,
}


def on_journal(stream: IO[Any]) -> bool:
    """Whether ``stream`` is the journal's stdout/stderr stream: systemd sets
    ``JOURNAL_STREAM=dev:inode`` of it (a child that inherited the variable but
    writes elsewhere does not match)."""
    value = os.environ.get("JOURNAL_STREAM", "")
    try:
        dev, ino = (int(part) for part in value.split(":"))
        st = os.fstat(stream.fileno())
    except (ValueError, OSError, AttributeError):
        return False
    return (st.st_dev, st.st_ino) == (dev, ino)


def priority(levelno: int) -> int:
    """The syslog priority of a Python log level (between levels: the one below)."""
    return next((p for lv, p in sorted(PRIORITIES.items(), reverse=True) if levelno >= lv), 7)


class PriorityPrefix(logging.Formatter):
    """Another formatter's line with ``<N>`` in front."""

    def __init__(self, inner: logging.Formatter) -> None:
        super().__init__()
        self.inner = inner

    def format(self, record: logging.LogRecord) -> str:
        return f"<{priority(record.levelno)}>{self.inner.format(record)}"


def prefix_priorities(handler: logging.Handler, stream: IO[Any]) -> None:
    """Put the priority in front of ``handler``'s lines when ``stream`` is the journal."""
    if on_journal(stream) and handler.formatter is not None:
        handler.setFormatter(PriorityPrefix(handler.formatter))
