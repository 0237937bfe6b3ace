"""``backscroll index --rebuild``: a new index beside the old, swapped in whole.

The rebuild holds the daemon's lock (so it is refused while a daemon serves the
index, and ``forget`` knows one is running), copies the old index's exclusions
before reading anything, re-reads every transcript, then carries over the kept
history it could not re-read (transcripts the host deleted). Only a complete
index is swapped in, with one atomic rename; the old one is kept as
``index.db.old``. A crash before the swap leaves the old index serving.
"""

from __future__ import annotations

import fcntl
import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from backscroll import direct
from backscroll.config import Config
from backscroll.errors import BackscrollError
from backscroll.indexing.indexer import Progress, Summary
from backscroll.indexing.parallel import Reads
from backscroll.store import (
    CarryReport,
    carry_exclusions,
    carry_kept,
    ensure_private_dir,
    open_writer,
    remove_index,
    replace_index,
)
from backscroll.store.queries import run_sync, totals


@dataclass
class Rebuilt:
    summary: Summary
    totals: dict[str, Any]
    #: Where the old index is kept (None: there was none).
    kept: Path | None
    carried: CarryReport


def lock_path(db: Path) -> Path:
    return db.parent / "daemon.lock"


def forget_lock_path(db: Path) -> Path:
    """Held shared by each ``forget``, exclusively by a rebuild."""
    return db.parent / "forget.lock"


def rebuild(
    cfg: Config,
    progress: Progress | None = None,
    fault: Callable[[str, Path], None] | None = None,
    *,
    prefork: Reads | None = None,
) -> Rebuilt:
    db = cfg.db_path()
    if db.is_dir():
        raise BackscrollError(f"{db} is a directory, not an index; move it aside and run again")
    ensure_private_dir(db.parent)
    built = db.with_name(db.name + ".rebuild")
    fd = os.open(lock_path(db), os.O_RDWR | os.O_CREAT, 0o600)
    forgets: int | None = None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            from backscroll.service import stop_hint

            try:
                holder = json.loads(os.read(fd, 4096) or b"{}")
            except (OSError, ValueError):
                holder = {}
            if isinstance(holder, dict) and "rebuild" in holder:
                what = f"another rebuild (pid {holder['rebuild']}) holds {db}; wait for it"
            else:
                pid = holder.get("pid") if isinstance(holder, dict) else None
                what = f"a backscroll daemon holds {db}; stop it first ({stop_hint(pid)})"
            raise BackscrollError(f"{what}, then run `backscroll index --rebuild` again") from None
        os.ftruncate(fd, 0)
        os.write(fd, json.dumps({"rebuild": os.getpid()}).encode())
        # A forget running now finishes first (it holds this shared), and no
        # forget starts until the swap: the new index would not hold it.
        forgets = os.open(forget_lock_path(db), os.O_RDWR | os.O_CREAT, 0o600)
        fcntl.flock(forgets, fcntl.LOCK_EX)
        remove_index(built)  # what a crashed rebuild left
        carried = CarryReport()
        writer = open_writer(built)
        try:
            carry_exclusions(db, writer, carried)
            indexer = direct.make_indexer(cfg, writer)
            indexer.fault = fault
            indexer.prefork = prefork  # (reader processes forked as the command started)
            summary = indexer.reconcile(progress)
            redactor = indexer.redactor
            carry_kept(db, writer, redactor.redact if redactor else None, carried,
                       tuple(cfg.exclude.projects))  # fmt: skip
            counts = run_sync(writer.conn, totals())
            writer.checkpoint()
        except BaseException:
            writer.close()
            remove_index(built)  # a half-built copy of the transcripts is not left lying
            raise
        writer.close()
        kept = replace_index(built, db)
        os.ftruncate(fd, 0)
    finally:
        if forgets is not None:
            os.close(forgets)
        os.close(fd)
    return Rebuilt(summary, counts, kept, carried)
