"""``backscroll forget`` and ``backscroll exclusions``: removing what is indexed
for good, and undoing an exclusion. Heavy modules are imported in the handlers."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from backscroll import render
from backscroll.errors import BackscrollError
from backscroll.wire import RESULT_SCHEMA

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def _emit(data: Any) -> None:
    sys.stdout.write(json.dumps(data, ensure_ascii=False, default=str) + "\n")


def _config(args: argparse.Namespace) -> Any:
    from backscroll import config

    return config.load(Path(args.config) if getattr(args, "config", None) else None)


def _known_hosts() -> tuple[str, ...]:
    from backscroll.hosts import HOST_NAMES

    return HOST_NAMES  # (each once: some hosts have two readers)


# --------------------------------------------------------------------------- forget


def cmd_forget(args: argparse.Namespace, parse_date: Any) -> int:
    from backscroll.cli import project_of
    from backscroll.store import forget, open_writer

    project = project_of(args)  # (--here with --project is refused, as in search)
    cfg = _config(args)
    sel = forget.Selection(
        session=args.session,
        project=project,
        host=args.host,
        before=parse_date(args.before) if args.before else None,
    )
    if sel.empty():
        raise BackscrollError(
            "say what to forget: --session ID, --project PATH, --here, --host NAME or --before DATE"
        )
    if args.and_exclude and sel.session is None and sel.project is None and sel.host is None:
        raise BackscrollError(
            "--and-exclude needs --session, --project, --here or --host: a date is not "
            "something to keep out"
        )
    db = cfg.db_path()
    if not db.exists():
        raise BackscrollError(f"there is no index at {db} yet; nothing to forget")
    held = None if args.dry_run else _hold_off_rebuilds(db)
    try:
        writer = open_writer(db, check=True)
        try:
            sel = forget.resolve(writer, sel, _known_hosts())  # (NotFound: exit 1, cli.main)
            if args.dry_run:
                report = forget.count(writer, sel)
            else:
                report = forget.forget(writer, sel, exclude=args.and_exclude)
                report.leftovers = forget.other_copies(db, sel)
        finally:
            writer.close()
    finally:
        if held is not None:
            os.close(held)
    return _forget_report(args, report)


def _hold_off_rebuilds(db: Path) -> int:
    """A shared hold on the rebuild's forget lock for this forget (the fd to
    close when done); refused while a rebuild runs, since the index it swaps
    in would hold neither this forget nor its exclusion."""
    import fcntl

    from backscroll.rebuild import forget_lock_path
    from backscroll.store import forget

    fd = os.open(forget_lock_path(db), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        pid = forget.rebuild_pid(db)
        raise BackscrollError(
            f"a rebuild{f' (pid {pid})' if pid else ''} is building a new index from the "
            "transcripts, and the index it swaps in would hold neither this forget nor its "
            "exclusion; run forget again once `backscroll index --rebuild` has finished"
        ) from None
    return fd


def _forget_report(args: argparse.Namespace, report: Any) -> int:
    failed = bool(report.scrub_error or report.leftovers)
    scrubbed = report.scrubbed and not failed
    data = {
        "schema": RESULT_SCHEMA,
        "dry_run": args.dry_run,
        "sessions": report.sessions,
        "turns": report.turns,
        "excluded": report.excluded,
        "scrubbed": scrubbed,
        "scrub_error": report.scrub_error,
        "copies_left": [str(p) for p in report.leftovers],
    }
    if args.json:
        _emit(data)
        return 1 if failed else 0
    verb = "would forget" if args.dry_run else "forgot"
    print(f"{verb} {report.turns} turns in {report.sessions} sessions")
    if report.excluded:
        print(f"added {report.excluded} exclusion(s): they will not be indexed again")
    elif not args.dry_run:
        print(
            "the forgotten turns stay out when their files are read again; new turns of "
            "those sessions are indexed as they come (--and-exclude keeps those out too)"
        )
    if report.scrub_error:
        print(f"warning: the turns are deleted, but the file could not be scrubbed "
              f"({report.scrub_error}), so their text may remain in its free pages; free some "
              "space: the next `backscroll index`, `forget` or the daemon's upkeep tries again",
              file=sys.stderr)  # fmt: skip
    elif report.wal_busy:
        print("note: another process held the database open, so old pages may remain in "
              "index.db-wal until it is checkpointed; stop the daemon and run this again "
              "to be sure")  # fmt: skip
    for path in report.leftovers:
        print(f"warning: {path} may still hold this text and cannot be forgotten in "
              f"(it is not a usable index); delete it when you no longer need it: rm {path}",
              file=sys.stderr)  # fmt: skip
    return 1 if failed else 0


# --------------------------------------------------------------------------- exclusions


def cmd_exclusions(args: argparse.Namespace) -> int:
    from backscroll.store import exclusions, open_readonly, open_writer

    cfg = _config(args)
    db = cfg.db_path()
    if args.action is None:
        rows: list[Any] = []
        if db.exists():
            conn = open_readonly(db)
            try:
                rows = exclusions.listing(conn)
            finally:
                conn.close()
        if args.json:
            _emit({"schema": RESULT_SCHEMA, "exclusions": [e.as_dict() for e in rows]})
        elif not rows:
            print("no exclusions (`backscroll forget ... --and-exclude` adds one)")
        for e in [] if args.json else rows:
            host = f" ({e.host})" if e.host else ""
            line = f"{e.kind:<8} {e.value}{host}  since {e.as_dict()['created'] or '?'}"
            print(render.terminal_safe(line))
        return 0
    kind, value = _what(args)
    if not db.exists():
        raise exclusions.NotFound(f"there is no index at {db} yet, so no exclusions")
    writer = open_writer(db)
    try:
        with writer.transaction():
            removed = exclusions.remove(writer.conn, kind, value, args.on_host)
    finally:
        writer.close()
    if args.json:
        _emit({"schema": RESULT_SCHEMA, "removed": [e.as_dict() for e in removed]})
        return 0
    for e in removed:
        print(f"removed the {e.kind} exclusion {e.value}" + (f" ({e.host})" if e.host else ""))
    print("what changes from now on is indexed again; `backscroll index --rebuild` also reads "
          "again what was forgotten")  # fmt: skip
    return 0


def _what(args: argparse.Namespace) -> tuple[str, str]:
    given = [(k, v) for k, v in (("session", args.session), ("project", args.project),
             ("host", args.host)) if v]  # fmt: skip
    if len(given) != 1:
        raise BackscrollError("say which exclusion to remove: --session ID, --project PATH "
                              "or --host NAME (one of them)")  # fmt: skip
    kind, value = given[0]
    if kind == "project":
        value = os.path.abspath(os.path.expanduser(value)).rstrip("/") or "/"
    return kind, value


def register(sub: Any) -> None:
    p = sub.add_parser("exclusions", help="list what --and-exclude keeps out, or remove one")
    p.add_argument("action", nargs="?", choices=("remove",), help="remove one exclusion")
    p.add_argument("--session", metavar="ID", help="a session exclusion (id or unique prefix)")
    p.add_argument("--project", metavar="PATH", help="a project exclusion")
    p.add_argument("--host", metavar="NAME", help="a host exclusion")
    p.add_argument("--on-host", metavar="NAME",
                   help="only the exclusion stored for this host")  # fmt: skip
    p.add_argument("--json", action="store_true", help="print one JSON object (schema 1)")
    p.set_defaults(func=cmd_exclusions)
