"""The ``backscroll`` command. Query commands talk to the daemon when it runs and
fall back to reading the index directly when it does not."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable

from backscroll import __version__, render
from backscroll.errors import BackscrollError

TYPE_CHECKING = False  # typing is not imported at run time: this is the CLI's hot path
if TYPE_CHECKING:
    import argparse
    from pathlib import Path
    from typing import Any

    Option = tuple[str, dict[str, Any]]

    Handler = Callable[[argparse.Namespace], int]


def _config(args: argparse.Namespace) -> Any:
    from backscroll import config

    return config.load(_config_file(args))


def _config_file(args: argparse.Namespace) -> Path | None:
    if not getattr(args, "config", None):
        return None
    from pathlib import Path

    return Path(args.config)


def _emit(data: Any) -> None:
    sys.stdout.write(json.dumps(data, ensure_ascii=False, indent=None, default=str) + "\n")


def _query(
    args: argparse.Namespace, method: str, params: dict[str, Any], cfg: Any = None
) -> dict[str, Any]:
    """Ask the daemon; without one, answer from the index directly (flagged)."""
    from backscroll.access import query_fast

    return query_fast(_config_file(args), method, params, cfg=cfg)


# --------------------------------------------------------------------------- commands


def cmd_index(args: argparse.Namespace) -> int:
    from backscroll import direct
    from backscroll.daemon.logging import setup_logging

    cfg = _config(args)
    setup_logging(cfg.effective_log_level() if args.verbose else "warning")
    progress = _progress_bar(args)
    kept = None
    try:
        if args.rebuild:
            summary, totals, kept = rebuild(cfg, progress)
        else:
            summary, totals = direct.index(cfg, progress)
    finally:
        if progress:
            progress.done()
    data = {
        "schema": 1,
        "files_seen": summary.files_seen,
        "files_changed": summary.files_changed,
        "turns_added": summary.turns_added,
        "turns_deleted": summary.turns_deleted,
        "bytes_read": summary.bytes_read,
        "problems": summary.problems,
        "errors": summary.errors,
        "seconds": round(summary.seconds, 3),
        "database": str(cfg.db_path()),
        **totals,
    }
    if args.rebuild:
        data["rebuilt"] = True
        data["kept_old"] = str(kept) if kept else None
    if args.json:
        _emit(data)
        return 0
    if kept:
        print(f"rebuilt the index; the unusable old one is kept as {kept}")
    print(
        f"indexed {summary.files_changed} changed of {summary.files_seen} files, "
        f"{summary.turns_added} turns added, in {summary.seconds:.2f} s"
    )
    for host, e in sorted(totals["hosts"].items()):
        print(
            f"  {host:<14} {e['files']:>6} files {e['sessions']:>6} sessions {e['turns']:>8} turns"
        )
    if summary.problems or summary.errors:
        print(f"  {summary.problems} malformed records skipped, {summary.errors} unreadable files")
    if not totals["hosts"]:
        print("no transcripts found: `backscroll doctor` shows where each host was looked for")
    return 0


def rebuild(
    cfg: Any, progress: Any = None, fault: Callable[[str, Path], None] | None = None
) -> tuple[Any, dict[str, Any], Path | None]:
    """``index --rebuild``: index everything into ``index.db.rebuild`` beside the old
    index, then swap it in with one atomic rename. A crash before the swap leaves
    the old index serving. Refused while a daemon holds the data directory."""
    import fcntl

    from backscroll import direct
    from backscroll.store import (
        carry_exclusions,
        ensure_private_dir,
        open_writer,
        remove_index,
        replace_index,
    )
    from backscroll.store.queries import run_sync, totals

    db = cfg.db_path()
    if db.is_dir():
        raise BackscrollError(f"{db} is a directory, not an index; move it aside and run again")
    ensure_private_dir(db.parent)
    built = db.with_name(db.name + ".rebuild")
    fd = os.open(db.parent / "daemon.lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise BackscrollError(
                f"a backscroll daemon serves {db}; stop it first (`systemctl --user stop "
                "backscroll`), then run `backscroll index --rebuild` again"
            ) from None
        remove_index(built)  # what a crashed rebuild left
        writer = open_writer(built)
        try:
            carry_exclusions(db, writer)
            indexer = direct.make_indexer(cfg, writer)
            indexer.fault = fault
            summary = indexer.reconcile(progress)
            counts = run_sync(writer.conn, totals())
            writer.checkpoint()
        finally:
            writer.close()
        kept = replace_index(built, db)
    finally:
        os.close(fd)
    return summary, counts, kept


def _progress_bar(args: argparse.Namespace) -> Any:
    """A progress bar on a terminal (warnings are written above it, not over it)."""
    if not sys.stderr.isatty() or args.json:
        return None
    import logging

    from backscroll.progressbar import ProgressBar

    bar = ProgressBar()
    bar.attach(logging.getLogger("backscroll"))
    return bar


def _search_params(args: argparse.Namespace, cfg: Any) -> dict[str, Any]:
    limits = cfg.limits if cfg is not None else None
    project = args.project
    if args.here:
        project = os.getcwd()
    since = None
    if args.since:
        since = _parse_date(args.since)
    until = _parse_date(args.until) if args.until else None
    return {
        k: v
        for k, v in {
            "query": " ".join(args.words),
            "host": args.host,
            "project": project,
            "role": args.role,
            "since_days": args.since_days,
            "since": since,
            "until": until,
            "session": args.session,
            "any": args.any or None,
            "limit": args.limit if args.limit is not None or not limits else limits.max_hits,
            "context": args.context,
            "max_turn_chars": args.max_turn_chars or (limits and limits.max_turn_chars),
            "max_total_chars": args.max_total_chars or (limits and limits.max_total_chars),
        }.items()
        if v is not None
    }


def _parse_date(text: str) -> float:
    from backscroll.readers.base import parse_time

    value = parse_time(text if "T" in text or text.isdigit() else text + "T00:00:00")
    if value is None:
        raise BackscrollError(f"cannot read the date {text!r}; use YYYY-MM-DD")
    return value


def cmd_search(args: argparse.Namespace) -> int:
    from backscroll.access import needs_config

    # Loaded once (and only when a config file exists): it sets limits and the socket.
    cfg = _config(args) if needs_config(_config_file(args)) else None
    result = _query(args, "search", _search_params(args, cfg), cfg)
    if args.json:
        _emit(result)
    else:
        print(render.hits(result, sys.stdout.isatty()))
    return 0


def cmd_sessions(args: argparse.Namespace) -> int:
    params = {
        k: v
        for k, v in {
            "host": args.host,
            "project": os.getcwd() if args.here else args.project,
            "since_days": args.since_days,
            "session": args.session,
            "limit": args.limit,
        }.items()
        if v is not None
    }
    result = _query(args, "sessions", params)
    _emit(result) if args.json else print(render.sessions(result))
    return 0


def cmd_show(args: argparse.Namespace) -> int:
    params: dict[str, Any] = {"session": args.session_id, "window": args.window}
    if args.around is not None:
        params["around"] = args.around
    result = _query(args, "session", params)
    _emit(result) if args.json else print(render.session(result, sys.stdout.isatty()))
    return 0 if result.get("session") else 1


def cmd_status(args: argparse.Namespace) -> int:
    result = _query(args, "status", {})
    _emit(result) if args.json else print(render.status(result))
    return 0


def cmd_forget(args: argparse.Namespace) -> int:
    from backscroll.store import forget, open_writer

    cfg = _config(args)
    project = os.getcwd() if args.here else args.project
    sel = forget.Selection(
        session=args.session,
        project=os.path.abspath(os.path.expanduser(project)) if project else None,
        host=args.host,
        before=_parse_date(args.before) if args.before else None,
    )
    if sel.empty():
        raise BackscrollError(
            "say what to forget: --session ID, --project PATH, --here, --host NAME or --before DATE"
        )
    db = cfg.db_path()
    if not db.exists():
        raise BackscrollError(f"there is no index at {db} yet; nothing to forget")
    writer = open_writer(db)
    try:
        if args.dry_run:
            report = forget.count(writer, sel)
        else:
            report = forget.forget(writer, sel, exclude=args.and_exclude)
    finally:
        writer.close()
    data = {
        "schema": 1,
        "dry_run": args.dry_run,
        "sessions": report.sessions,
        "turns": report.turns,
        "excluded": report.excluded,
        "scrubbed": report.scrubbed,
    }
    if args.json:
        _emit(data)
        return 0
    verb = "would forget" if args.dry_run else "forgot"
    print(f"{verb} {report.turns} turns in {report.sessions} sessions")
    if report.excluded:
        print(f"added {report.excluded} exclusion(s): they will not be indexed again")
    elif not args.dry_run:
        print("the source files are not re-indexed unless they change again "
              "(--and-exclude keeps them out for good)")  # fmt: skip
    if report.wal_busy:
        print("note: another process held the database open, so old pages may remain in "
              "index.db-wal until it is checkpointed; stop the daemon and run this again "
              "to be sure")  # fmt: skip
    return 0


def cmd_daemon(args: argparse.Namespace) -> int:
    from backscroll.daemon.server import run_daemon

    return run_daemon(_config(args))


# --------------------------------------------------------------------------- parser


# An option is its flag and its ``add_argument`` keywords (the ``Option`` alias).
# One table drives both argparse and the fast path of ``backscroll search``.
FILTER_OPTIONS: tuple[Option, ...] = (
    ("--host", {"help": "only this host (e.g. claude-code, codex)"}),
    ("--project", {"help": "only sessions whose working directory is this path"}),
    ("--here", {"action": "store_true", "help": "only sessions of the current directory"}),
    ("--since-days", {"type": float, "metavar": "N", "help": "only the last N days"}),
    ("--session", {"metavar": "ID_PREFIX", "help": "only sessions whose id starts so"}),
)

SEARCH_OPTIONS: tuple[Option, ...] = (
    *FILTER_OPTIONS,
    ("--role", {"choices": ("user", "assistant", "summary")}),
    ("--since", {"metavar": "DATE", "help": "only turns on or after this date"}),
    ("--until", {"metavar": "DATE", "help": "only turns before this date"}),
    ("--any", {"action": "store_true", "help": "match any word instead of all"}),
    ("--limit", {"type": int, "help": "at most K hits (default 10)"}),
    (
        "--context",
        {"type": int, "metavar": "N", "help": "show N turns before and after each hit"},
    ),
    ("--max-turn-chars", {"type": int}),
    ("--max-total-chars", {"type": int}),
    ("--json", {"action": "store_true", "help": "print one JSON object (schema 1)"}),
)


def _add_options(p: argparse.ArgumentParser, options: tuple[Option, ...]) -> None:
    for flag, kwargs in options:
        p.add_argument(flag, **kwargs)


def _filters(p: argparse.ArgumentParser) -> None:
    _add_options(p, FILTER_OPTIONS)


def _fast_search(argv: list[str]) -> Any:
    """``backscroll search`` arguments parsed from :data:`SEARCH_OPTIONS` without
    argparse, when they are plain words and exact options (the common case, and
    the one an agent runs in a loop). None for anything else (help, an unknown or
    abbreviated option, a bad value), which argparse then parses and reports."""
    from types import SimpleNamespace

    spec = dict(SEARCH_OPTIONS)
    values: dict[str, Any] = {
        flag[2:].replace("-", "_"): (False if kw.get("action") == "store_true" else None)
        for flag, kw in SEARCH_OPTIONS
    }
    words: list[str] = []
    tokens = iter(argv)
    for token in tokens:
        if token == "--":
            words.extend(tokens)
            break
        if not token.startswith("-") or token == "-":
            words.append(token)
            continue
        name, eq, value = token.partition("=")
        kw = spec.get(name)
        if kw is None:
            return None
        dest = name[2:].replace("-", "_")
        if kw.get("action") == "store_true":
            if eq:
                return None
            values[dest] = True
            continue
        if not eq:
            value = next(tokens, "")
            if not value or value.startswith("-"):
                return None
        try:
            converted = kw.get("type", str)(value)
        except ValueError:
            return None
        if converted not in kw.get("choices", (converted,)):
            return None
        values[dest] = converted
    if not words:
        return None
    return SimpleNamespace(command="search", config=None, words=words, func=cmd_search, **values)


#: Commands whose parser can be built alone (start-up time of the query commands).
CORE_COMMANDS = ("index", "search", "sessions", "show", "status", "forget", "daemon")


class _Skipped:
    """Stands in for the parser of a command that is not being built."""

    def __getattr__(self, name: str) -> Any:
        return lambda *args, **kwargs: self


class _OnlyCommand:
    """A subparsers action that builds only one command's parser (or all)."""

    def __init__(self, sub: Any, only: str | None) -> None:
        self.sub = sub
        self.only = only

    def add_parser(self, name: str, **kwargs: Any) -> Any:
        if self.only is None or name == self.only:
            return self.sub.add_parser(name, **kwargs)
        return _Skipped()


def _command_of(argv: list[str]) -> str | None:
    """The core command named in ``argv`` (None: build every command's parser)."""
    skip = False
    for token in argv:
        if skip:
            skip = False
        elif token == "--config":
            skip = True
        elif not token.startswith("-"):
            return token if token in CORE_COMMANDS else None
    return None


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    import argparse

    class Formatter(argparse.HelpFormatter):
        """argparse's formatter, sized without importing shutil (start-up time)."""

        def __init__(self, prog: str) -> None:
            try:
                width = os.get_terminal_size().columns
            except OSError:
                width = int(os.environ.get("COLUMNS", "80") or 80)
            super().__init__(prog, width=max(width - 2, 40))

    class Parser(argparse.ArgumentParser):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            kwargs.setdefault("formatter_class", Formatter)
            super().__init__(*args, **kwargs)

    parser = Parser(
        prog="backscroll",
        description="Keep every coding-agent conversation turn findable.",
    )
    parser.add_argument("--version", action="version", version=f"backscroll {__version__}")
    parser.add_argument("--config", help="config file (default: $BACKSCROLL_CONFIG or XDG)")
    sub: Any = _OnlyCommand(
        parser.add_subparsers(
            dest="command", required=True, metavar="COMMAND", parser_class=Parser
        ),
        only,
    )

    p = sub.add_parser("index", help="index every enabled host's transcripts now")
    p.add_argument("--json", action="store_true", help="print the summary as one JSON object")
    p.add_argument("-v", "--verbose", action="store_true", help="log each problem to stderr")
    p.add_argument(
        "--rebuild", action="store_true", help="build a new index beside the old, then swap it in"
    )
    p.set_defaults(func=cmd_index)

    p = sub.add_parser("search", help="search the indexed turns")
    p.add_argument("words", nargs="+", help='words to find; "quoted phrases" match exactly')
    _add_options(p, SEARCH_OPTIONS)
    p.set_defaults(func=cmd_search)

    p = sub.add_parser("sessions", help="list indexed sessions")
    _filters(p)
    p.add_argument("--limit", type=int, default=None)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_sessions)

    p = sub.add_parser("show", help="print a session's indexed turns")
    p.add_argument("session_id", help="a session id or a unique prefix of one")
    p.add_argument("--around", type=int, metavar="N", help="centre the window on turn N")
    p.add_argument("--window", type=int, default=20, help="how many turns (default 20)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_show)

    p = sub.add_parser("status", help="what is indexed, per host, and the daemon's state")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_status)

    p = sub.add_parser("forget", help="remove turns from the index, bytes and all")
    p.add_argument("--session", metavar="ID", help="one session (its full id)")
    p.add_argument("--project", metavar="PATH", help="every session of this project")
    p.add_argument("--here", action="store_true", help="every session of this directory")
    p.add_argument("--host", metavar="NAME", help="everything from this host")
    p.add_argument("--before", metavar="DATE", help="turns older than this date")
    p.add_argument("--and-exclude", action="store_true",
                   help="never index these sessions/project/host again")  # fmt: skip
    p.add_argument("--dry-run", action="store_true", help="only count what would go")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_forget)

    p = sub.add_parser("daemon", help="run the indexing daemon in the foreground")
    p.set_defaults(func=cmd_daemon)

    if only is None:
        from backscroll import cli_agents, cli_ops

        cli_agents.register(sub)
        cli_ops.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) == 2 and argv[0] == "hook":
        # The prompt hook runs before every prompt: skip building the whole parser.
        from backscroll.cli_agents import HOOK_HOSTS

        if argv[1] in HOOK_HOSTS:
            from backscroll import hook

            return hook.main(argv[1], None)
    args = _fast_search(argv[1:]) if argv and argv[0] == "search" else None
    if args is None:
        args = build_parser(_command_of(argv)).parse_args(argv)
    handler: Handler = args.func
    try:
        return handler(args)
    except BackscrollError as exc:
        print(f"backscroll: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0
    except Exception as exc:
        if os.environ.get("BACKSCROLL_DEBUG") == "1":
            raise
        print(
            f"backscroll: unexpected error: {exc!r} "
            "(run with BACKSCROLL_DEBUG=1 for the traceback)",
            file=sys.stderr,
        )
        return 1
