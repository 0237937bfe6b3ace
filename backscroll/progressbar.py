"""``backscroll index``'s one-line progress bar on a terminal.

The bar is redrawn in place with a carriage return. A log record (a warning
about a malformed transcript, say) would otherwise be written over it and the
next redraw would overwrite the end of the warning; :meth:`ProgressBar.attach`
wraps the logger's handlers so each record first erases the bar, is written on
its own line, and the bar is drawn again below it.
"""

from __future__ import annotations

import logging
import sys
import time
from typing import IO


class _AroundBar(logging.Handler):
    """Writes records through ``inner`` with the bar erased meanwhile."""

    def __init__(self, inner: logging.Handler, bar: ProgressBar) -> None:
        super().__init__(inner.level)
        self.inner = inner
        self.bar = bar

    def emit(self, record: logging.LogRecord) -> None:
        self.bar.clear()
        self.inner.handle(record)
        self.bar.redraw()


class ProgressBar:
    """Call with ``(files_done, files_total, bytes_done, bytes_total)``."""

    def __init__(
        self, stream: IO[str] | None = None, delay: float = 0.5, interval: float = 0.1
    ) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.delay = delay
        self.interval = interval
        self.start = time.monotonic()
        self.text = ""
        self.shown = False
        self._drawn_at = 0.0
        self._wrapped: list[tuple[logging.Logger, list[logging.Handler]]] = []

    def __call__(self, files: int, total: int, done: int, total_bytes: int) -> None:
        now = time.monotonic()
        elapsed = now - self.start
        rate = done / elapsed if elapsed > 0 else 0.0
        eta = f"  ETA {(total_bytes - done) / rate:.0f} s" if rate > 0 else ""
        self.text = f"{files}/{total} files  {done / 1e6:.1f}/{total_bytes / 1e6:.1f} MB{eta}"
        if elapsed < self.delay or (now - self._drawn_at < self.interval and files < total):
            return
        self._drawn_at = now
        self.redraw()

    def redraw(self) -> None:
        if not self.text or time.monotonic() - self.start < self.delay:
            return
        self.stream.write("\r" + self.text + "   ")
        self.stream.flush()
        self.shown = True

    def clear(self) -> None:
        """Erase the bar; the cursor is left at the start of its line."""
        if self.shown:
            self.stream.write("\r" + " " * (len(self.text) + 3) + "\r")
            self.stream.flush()
            self.shown = False

    def attach(self, logger: logging.Logger) -> None:
        """Route ``logger``'s records around the bar until :meth:`done`."""
        handlers = list(logger.handlers)
        for handler in handlers:
            logger.removeHandler(handler)
            logger.addHandler(_AroundBar(handler, self))
        self._wrapped.append((logger, handlers))

    def done(self) -> None:
        self.clear()
        self.text = ""
        for logger, handlers in self._wrapped:
            for handler in list(logger.handlers):
                if isinstance(handler, _AroundBar):
                    logger.removeHandler(handler)
            for handler in handlers:
                logger.addHandler(handler)
        self._wrapped.clear()
