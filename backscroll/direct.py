"""The no-daemon path: index and query the database from this process."""

from __future__ import annotations

import logging
import sqlite3
from typing import Any

from backscroll.config import Config
from backscroll.indexing.clean import LazyRedactor, Redactor
from backscroll.indexing.indexer import Indexer, Progress, Summary, build_hosts
from backscroll.indexing.parallel import Reads
from backscroll.store import fts, open_readonly, open_writer, schema
from backscroll.store.queries import run_sync, totals
from backscroll.store.writer import IndexWriter
from backscroll.wire import RESULT_SCHEMA

log = logging.getLogger("backscroll")


def make_redactor(config: Config) -> Redactor | None:
    if not config.redaction.enabled:
        return None
    return LazyRedactor(config.redaction.patterns)


def make_indexer(config: Config, writer: IndexWriter) -> Indexer:
    return Indexer(writer, build_hosts(config), config, make_redactor(config))


def index(
    config: Config,
    progress: Progress | None = None,
    *,
    check: bool = False,
    prefork: Reads | None = None,
) -> tuple[Summary, dict[str, Any]]:
    """Index every enabled host's roots incrementally; returns the summary and totals.
    ``check`` runs ``PRAGMA quick_check`` on the index first (``backscroll index``);
    ``prefork``: reader processes already started (indexing/prefork.py) for
    the first pass; the caller closes them."""
    writer = open_writer(config.db_path(), check=check)
    try:
        indexer = make_indexer(config, writer)
        indexer.prefork = prefork
        summary = indexer.reconcile(progress)
        retry_scrub(writer)
        return summary, run_sync(writer.conn, totals())
    finally:
        writer.close()


def retry_scrub(writer: IndexWriter) -> None:
    """Finish the scrub of a forget that could not (disk full); say so if it still cannot."""
    from backscroll.store import forget

    error = forget.retry_scrub(writer)
    if error is not None:
        log.warning(
            "forgotten text may remain in the index's free pages: the scrub failed again; "
            "free some disk space",
            extra={"event": "scrub_failed", "error": error},
        )


def refresh(config: Config) -> None:
    """Index what changed since the last look (stat only when nothing did)."""
    try:
        index(config)
    except Exception as exc:  # a search must still answer from what is indexed
        from backscroll.daemon.logging import ensure_logging

        ensure_logging()
        log.warning("refresh failed; answering from what is indexed",
                    extra={"event": "refresh_error", "error": repr(exc)})  # fmt: skip


def query(config: Config, method: str, params: Any, *, indexing: bool = True) -> Any:
    """The answer read from the index in this process. With ``indexing`` (no daemon
    runs) what changed is indexed first; without it (a daemon runs, and owns the
    writing, but did not answer) the index is read as it stands."""
    # (Not at the top: `backscroll index` needs neither.)
    from backscroll import methods, protocol

    db = config.db_path()
    protocol.check_query_length(method, params, config.server.max_query_chars)
    if indexing and method == "search":
        refresh(config)
    elif indexing and not db.exists():
        index(config)
    conn = open_readonly(db)
    try:
        enabled = [spec.host for spec in build_hosts(config)]
        if method == "status":
            return {"schema": RESULT_SCHEMA, "daemon": False, **run_sync(conn, totals())}
        q = methods.build(method, params, fts=fts.searchable(conn), enabled_hosts=enabled)
        return run_sync(conn, q)
    except sqlite3.DatabaseError as exc:
        if schema.is_corrupt(exc):  # said once, remembered: nothing writes into it after
            raise schema.mark_corrupt(db, str(exc)) from exc
        raise
    finally:
        conn.close()
