"""Structured logs on stderr, fields as extras: JSON lines where a service
manager collects them (journald, launchd: stderr is not a terminal), readable
lines for a person watching a terminal. ``$BACKSCROLL_LOG_FORMAT`` (``json`` or
``text``) forces either."""

from __future__ import annotations

import json
import logging
import os
import re
import sys
import time
from typing import IO, Any

_STANDARD = set(vars(logging.makeLogRecord({}))) | {"message", "asctime"}
FORMATS = ("json", "text")
#: Events whose message already says everything their fields hold.
_TERSE = {"index_progress"}


def _extras(record: logging.LogRecord) -> dict[str, Any]:
    return {
        key: value
        for key, value in vars(record).items()
        if key not in _STANDARD and key != "event" and not key.startswith("_")
    }


def _event_of(record: logging.LogRecord) -> str:
    """A stable event name for a record that gives none (a library's): its message
    template's first line as a lower-case slug, so that no address, path or
    newline of one occurrence ends up in the name."""
    template = record.msg if isinstance(record.msg, str) else type(record.msg).__name__
    first = template.split("\n", 1)[0].split(":", 1)[0]
    first = re.sub(r"%(?:\([^)]*\))?[-#0 +]*\d*(?:\.\d+)?[a-zA-Z]", " ", first)  # (%s, %(x)d)
    slug = re.sub(r"[^a-z0-9]+", "_", first.lower()).strip("_")[:60].rstrip("_")
    return slug or f"{record.name}_{record.levelname.lower()}"


class JsonFormatter(logging.Formatter):
    """``{"ts", "level", "event", "msg", ...extras}``; tracebacks under ``traceback``."""

    def format(self, record: logging.LogRecord) -> str:
        body: dict[str, Any] = {
            "ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
            + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "event": getattr(record, "event", None) or _event_of(record),
            "msg": record.getMessage(),
            "logger": record.name,
        }
        body.update(_extras(record))
        if record.exc_info:
            body["traceback"] = self.formatException(record.exc_info)
        return json.dumps(body, ensure_ascii=False, default=str)


class TextFormatter(logging.Formatter):
    """``14:02:07 warning cannot read transcript  path=/x.jsonl error=...``"""

    def format(self, record: logging.LogRecord) -> str:
        stamp = time.strftime("%H:%M:%S", time.localtime(record.created))
        line = f"{stamp} {record.levelname.lower():<7} {record.getMessage()}"
        if getattr(record, "event", None) not in _TERSE:
            fields = " ".join(f"{k}={v}" for k, v in _extras(record).items() if v is not None)
            if fields:
                line += "  " + fields
        if record.exc_info:
            line += "\n" + self.formatException(record.exc_info)
        return line


def log_format(stream: IO[str], forced: str | None = None) -> str:
    """``json`` or ``text``: ``forced``, else ``$BACKSCROLL_LOG_FORMAT``, else text
    on a terminal and JSON anywhere else."""
    choice = (forced or os.environ.get("BACKSCROLL_LOG_FORMAT", "")).strip().lower()
    if choice in FORMATS:
        return choice
    try:
        return "text" if stream.isatty() else "json"
    except (AttributeError, ValueError):
        return "json"


def ensure_logging(level: str = "warning") -> None:
    """Route the ``backscroll`` loggers to stderr unless something already does
    (a command that logs only when something goes wrong: its line keeps its fields)."""
    if not logging.getLogger("backscroll").handlers:
        setup_logging(level)


def setup_logging(
    level: str = "info", fmt: str | None = None, stream: IO[str] | None = None
) -> None:
    """Route the ``backscroll`` loggers to ``stream`` (stderr) at ``level``, and
    the warnings of the libraries beside them (uvicorn, APScheduler, asyncio) the
    same way, so that every line on stderr has the same format."""
    out = stream if stream is not None else sys.stderr
    root = logging.getLogger("backscroll")
    for handler in list(root.handlers):
        root.removeHandler(handler)
    handler = logging.StreamHandler(out)
    handler.setFormatter(TextFormatter() if log_format(out, fmt) == "text" else JsonFormatter())
    root.addHandler(handler)
    from backscroll.daemon.journal import prefix_priorities  # <N> under journald only

    prefix_priorities(handler, sys.stderr)
    root.setLevel(getattr(logging, level.upper(), logging.INFO))
    root.propagate = False
    others = logging.getLogger()
    for old in [h for h in others.handlers if getattr(h, "backscroll", False)]:
        others.removeHandler(old)
    handler.backscroll = True  # type: ignore[attr-defined]
    others.addHandler(handler)
    others.setLevel(max(logging.WARNING, root.level))
    # A library's `warnings.warn` (watchdog: "Callback with id ... will be
    # Overwritten") is a log line too, not a bare line among the JSON ones.
    logging.captureWarnings(True)
