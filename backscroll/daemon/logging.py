"""Structured logs: one JSON object per line on stderr, fields as extras."""

from __future__ import annotations

import json
import logging
import sys
import time
from typing import Any

_STANDARD = set(vars(logging.makeLogRecord({}))) | {"message", "asctime"}


class JsonFormatter(logging.Formatter):
    """``{"ts", "level", "event", "msg", ...extras}``; tracebacks under ``traceback``."""

    def format(self, record: logging.LogRecord) -> str:
        body: dict[str, Any] = {
            "ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
            + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "event": getattr(record, "event", None) or record.getMessage().replace(" ", "_"),
            "msg": record.getMessage(),
            "logger": record.name,
        }
        for key, value in vars(record).items():
            if key not in _STANDARD and key != "event" and not key.startswith("_"):
                body[key] = value
        if record.exc_info:
            body["traceback"] = self.formatException(record.exc_info)
        return json.dumps(body, ensure_ascii=False, default=str)


def setup_logging(level: str = "info") -> None:
    """Route the ``backscroll`` loggers to stderr as JSON lines at ``level``."""
    root = logging.getLogger("backscroll")
    for handler in list(root.handlers):
        root.removeHandler(handler)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter())
    root.addHandler(handler)
    from backscroll.daemon.journal import prefix_priorities  # <N> under journald only

    prefix_priorities(handler, sys.stderr)
    root.setLevel(getattr(logging, level.upper(), logging.INFO))
    root.propagate = False
