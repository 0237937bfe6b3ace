"""The ``backscroll`` command. Query commands talk to the daemon when it runs and
fall back to reading the index directly when it does not."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable

from backscroll import __version__, render
from backscroll.errors import BackscrollError
from backscroll.wire import RESULT_SCHEMA

TYPE_CHECKING = False  # typing is not imported at run time: this is the CLI's hot path
if TYPE_CHECKING:
    import argparse
    from pathlib import Path
    from typing import Any, NoReturn

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


def _color(stream: Any) -> bool:
    """Bold on a terminal, unless ``NO_COLOR`` is set to anything (no-color.org)."""
    return bool(stream.isatty()) and not os.environ.get("NO_COLOR")


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
    # A first index (or a rebuild) forks its reader processes now: the first
    # reads the configuration while this one imports the rest (indexing/prefork.py).
    from backscroll.indexing.prefork import maybe_start

    prefork = maybe_start(_config_file(args), rebuild=args.rebuild)
    try:
        cfg = None
        if prefork is not None:  # (imported while it reads the configuration)
            if args.rebuild:
                from backscroll import rebuild as rebuild_module  # noqa: F401
            else:
                from backscroll import direct  # noqa: F401

            cfg = prefork.config()
        if cfg is None:
            cfg = _config(args)
        if prefork is not None and not prefork.configure(cfg):
            prefork = None
        return _index(args, cfg, prefork)
    finally:
        if prefork is not None:
            prefork.close()


def _index(args: argparse.Namespace, cfg: Any, prefork: Any) -> int:
    from backscroll import direct
    from backscroll.daemon.logging import setup_logging

    setup_logging(cfg.effective_log_level() if args.verbose else "warning")
    progress = _progress_bar(args)
    rebuilt = None
    try:
        if args.rebuild:
            rebuilt = rebuild(cfg, progress, prefork=prefork)
            summary, totals = rebuilt.summary, rebuilt.totals
        else:
            summary, totals = direct.index(cfg, progress, check=True, prefork=prefork)
    finally:
        if progress:
            progress.done()
    data = {
        "schema": RESULT_SCHEMA,
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
    if rebuilt is not None:
        data["rebuilt"] = True
        data["kept_old"] = str(rebuilt.kept) if rebuilt.kept else None
        data["carried"] = rebuilt.carried.__dict__
    if args.json:
        _emit(data)
        return 0
    if rebuilt is not None:
        render_rebuilt(rebuilt)
    print(
        f"indexed {summary.files_changed} changed of {summary.files_seen} files, "
        f"{summary.turns_added} turns added, in {summary.seconds:.2f} s"
    )
    width = render.host_width(totals["hosts"])
    for host, e in sorted(totals["hosts"].items()):
        print(
            f"  {host:<{width}} {e['files']:>6} files {e['sessions']:>6} sessions "
            f"{e['turns']:>8} turns"
        )
    if summary.problems or summary.errors:
        print(f"  {summary.problems} malformed records skipped, {summary.errors} unreadable files")
    if not totals["hosts"]:
        print("no transcripts found: `backscroll doctor` shows where each host was looked for")
    return 0


def rebuild(
    cfg: Any,
    progress: Any = None,
    fault: Callable[[str, Path], None] | None = None,
    *,
    prefork: Any = None,
) -> Any:
    """``index --rebuild`` (see backscroll.rebuild): a new index beside the old one,
    swapped in whole, kept history and exclusions carried, the old kept as .old.
    ``prefork``: reader processes forked as the command started (the caller
    closes them)."""
    from backscroll.rebuild import rebuild as run

    return run(cfg, progress, fault, prefork=prefork)


def render_rebuilt(rebuilt: Any) -> None:
    c = rebuilt.carried
    print(f"rebuilt the index; carried over {c.exclusions} exclusion(s) and {c.turns} kept "
          f"turn(s) in {c.sessions} session(s) whose transcripts were not read again")  # fmt: skip
    if rebuilt.kept:
        print(f"the old index is kept as {rebuilt.kept}")
    for problem in c.problems:
        print(f"warning: {problem}; what it held was not carried over (the old index is "
              "kept as it was)", file=sys.stderr)  # fmt: skip


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
    project = project_of(args)
    since = None
    if args.since:
        since = _parse_date(args.since)
    until = _parse_date(args.until, "--until") if args.until else None
    _check_window(args.since_days, since, until)
    return {
        k: v
        for k, v in {
            "query": _query_text(args.words),
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


def _client(args: argparse.Namespace) -> str:
    """How hints name the options: the project as ``--here`` when given so."""
    return "cli-here" if getattr(args, "here", False) else "cli"


def project_of(args: argparse.Namespace) -> str | None:
    """The project path asked for, absolute: ``--here`` is the current directory,
    ``--project`` is resolved against it (``~`` expanded). The store matches it or,
    from a subdirectory, the deepest indexed project above it."""
    if getattr(args, "here", False):
        if getattr(args, "project", None):
            raise BackscrollError(
                "give --here or --project, not both (--here is the current directory)"
            )
        return os.getcwd()
    project: str | None = getattr(args, "project", None)
    return os.path.abspath(os.path.expanduser(project)) if project else None


def _query_text(words: list[str]) -> str:
    """The query from the command line's words. A word holding spaces was quoted
    in the shell (``search "a phrase"``, ``search -"a phrase"``): it stays a phrase."""
    out = []
    for word in words:
        if any(c.isspace() for c in word.strip()) and '"' not in word:
            dash = "-" if word.startswith("-") else ""
            word = f'{dash}"{word.removeprefix(dash).strip()}"'
        out.append(word)
    return " ".join(out)


def _parse_date(text: str, flag: str = "--since") -> float:
    """Unix seconds from a date (``2026-05-12``, a time with ``T``, a year
    ``2026``, a month ``2026-05``, ``20260512``) or Unix seconds (9 digits or
    more); a bare number of fewer digits is refused, not read as 1970."""
    import re
    from datetime import datetime

    from backscroll.readers.base import parse_time

    typed = text.strip()
    text = typed
    # A year (``2026``) or a month (``2026-05``): its first day.
    short = re.fullmatch(r"(\d{4})(?:-(\d{2}))?", text) if text.isascii() else None
    if short is not None:
        text = f"{short.group(1)}-{short.group(2) or '01'}-01"
    digits = text.isascii() and text.isdigit()
    value: float | None = None
    if digits and len(text) == 8:  # 20260512: a date, or nothing (never Unix seconds)
        try:
            value = parse_time(datetime.strptime(text, "%Y%m%d").isoformat())
        except ValueError:
            value = None
    elif not digits or len(text) >= 9:
        value = parse_time(text if "T" in text or digits else text + "T00:00:00")
    if value is None:
        raise BackscrollError(
            f"cannot read the date {typed!r} given to {flag}; use YYYY-MM-DD (or YYYY, YYYY-MM)"
        )
    return value


def _check_window(since_days: float | None, since: float | None, until: float | None) -> None:
    """The date options, checked here so that the message names them as typed."""
    import math
    import time

    if since_days is not None and not (math.isfinite(since_days) and since_days >= 0):
        raise BackscrollError(f"--since-days must be a number of days ≥ 0, got {since_days}")
    if since is not None and until is not None and since >= until:
        raise BackscrollError(
            "--since must be before --until (no turn can be in that window); swap the dates"
        )
    if since_days is not None and until is not None and time.time() - since_days * 86400 >= until:
        raise BackscrollError(
            f"--since-days {since_days:g} starts after --until (no turn can be in that window); "
            "widen or drop one"
        )


def cmd_search(args: argparse.Namespace) -> int:
    from backscroll.access import needs_config
    from backscroll.wording import worded

    if getattr(args, "team", False):
        from backscroll.cli_team import search_team

        params: dict[str, Any] = {"any": args.any or None}
        result = search_team(args, _config(args), _search_params)
    else:
        # Loaded once (and only when a config file exists): it sets limits and the socket.
        cfg = _config(args) if needs_config(_config_file(args)) else None
        params = _search_params(args, cfg)
        result = _query(args, "search", params, cfg)
    result = worded(result, _client(args), params)
    if args.json:
        _emit(result)
    else:
        print(render.hits(render.terminal_safe(result), sys.stdout.isatty(), _color(sys.stdout)))
    return 0 if result.get("hits") else 1  # like grep: 1 when nothing matched


def cmd_sessions(args: argparse.Namespace) -> int:
    _check_window(args.since_days, None, None)  # (as search checks it, naming the flag)
    params = {
        k: v
        for k, v in {
            "host": args.host,
            "project": project_of(args),
            "since_days": args.since_days,
            "session": args.session,
            "limit": args.limit,
        }.items()
        if v is not None
    }
    from backscroll.wording import worded

    result = worded(_query(args, "sessions", params), _client(args), params)
    _emit(result) if args.json else print(render.sessions(render.terminal_safe(result)))
    return 0


def cmd_show(args: argparse.Namespace) -> int:
    if args.window < 1:
        raise BackscrollError(f"--window {args.window} shows nothing; give 1 or more turns")
    if args.around is not None and args.around < 1:
        raise BackscrollError(f"--around {args.around}: turns are numbered from 1")
    params: dict[str, Any] = {"session": args.session_id, "window": args.window}
    if args.around is not None:
        params["around"] = args.around
    if getattr(args, "host", None):
        params["host"] = args.host
    from backscroll.wording import worded

    result = worded(_query(args, "session", params), _client(args), params)
    _emit(result) if args.json else print(
        render.session(render.terminal_safe(result), _color(sys.stdout))
    )
    return 0 if result.get("session") else 1


def cmd_status(args: argparse.Namespace) -> int:
    result = _query(args, "status", {})
    _emit(result) if args.json else print(render.status(render.terminal_safe(result)))
    return 0


def cmd_forget(args: argparse.Namespace) -> int:
    from backscroll import cli_store

    return cli_store.cmd_forget(args, lambda text: _parse_date(text, "--before"))


def cmd_daemon(args: argparse.Namespace) -> int:
    from backscroll.daemon.server import config_failed, run_daemon

    try:
        config = _config(args)
    except BackscrollError as exc:
        return config_failed(exc)
    return run_daemon(config, _config_file(args))


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


def _at_least_one(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        n = None
    if n is not None and n >= 1:
        return n
    import argparse  # (only to say what is wrong: not on the search fast path)

    got = f"not a whole number: {text!r}" if n is None else f"must be at least 1, got {n}"
    raise argparse.ArgumentTypeError(got)


SEARCH_OPTIONS: tuple[Option, ...] = (
    *FILTER_OPTIONS,
    ("--role", {"choices": ("user", "assistant", "summary")}),
    ("--since", {"metavar": "DATE", "help": "only turns on or after this date"}),
    ("--until", {"metavar": "DATE", "help": "only turns before this date"}),
    ("--any", {"action": "store_true", "help": "match any word instead of all"}),
    ("--limit", {"type": _at_least_one, "help": "at most K hits (default 10)"}),
    (
        "--context",
        {"type": int, "metavar": "N", "help": "show N turns before and after each hit"},
    ),
    ("--max-turn-chars", {"type": int}),
    ("--max-total-chars", {"type": int}),
    ("--json", {"action": "store_true", "help": "print one JSON object (schema 1)"}),
    ("--team", {"action": "store_true", "help": "search the team's PostgreSQL (team.url)"}),
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
        if not token.startswith("-") or token == "-" or _is_exclusion(token):
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
        except Exception:  # (argparse's parser says what is wrong)
            return None
        if converted not in kw.get("choices", (converted,)):
            return None
        values[dest] = converted
    if not words:
        return None
    return SimpleNamespace(command="search", config=None, words=words, func=cmd_search, **values)


def _is_exclusion(token: str) -> bool:
    """``-word`` in a query leaves turns with that word out: a word, not an option
    (``-h`` stays help; ``--anything`` stays an option)."""
    return len(token) > 1 and token[1] != "-" and token != "-h" and (
        token[1].isalnum() or token[1] in "\"'")  # fmt: skip


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
    command = _first_command(argv)
    return command if command in CORE_COMMANDS else None


def _unknown_host(args: argparse.Namespace) -> str | None:
    """The error for a ``--host`` that names no host backscroll knows (the same in
    every command: search, sessions, show and forget), or None."""
    host = getattr(args, "host", None)
    if not host or args.func not in (cmd_search, cmd_sessions, cmd_show, cmd_forget):
        return None
    from backscroll.hosts import unknown_host

    return unknown_host(host)


def _first_command(argv: list[str]) -> str | None:
    """The command ``argv`` names, core or not."""
    skip = False
    for token in argv:
        if skip:
            skip = False
        elif token == "--config":
            skip = True
        elif not token.startswith("-"):
            return token
    return None


def build_parser(only: str | None = None, json_errors: bool = False) -> argparse.ArgumentParser:
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

        def error(self, message: str) -> NoReturn:
            if only == "search" and (
                "required: words" in message or "unrecognized arguments: -" in message
            ):
                message += (
                    "; words that start with '-' go after --, as in: backscroll search -- --force"
                )
            if json_errors:  # `--json` was given: a usage error is JSON on stdout too
                _emit({"schema": RESULT_SCHEMA, "error": {"message": f"{self.prog}: {message}",
                                              "exit_code": 2}})  # fmt: skip
            super().error(message)

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
    p.add_argument(
        "words",
        nargs="+",
        help='words to find; "a phrase" in order, word* as a prefix, -word or NOT word to '
        "leave turns with it out, a OR b for either",
    )
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
    p.add_argument("--host", help="the session's host, when two hosts share the id")
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
        from backscroll import cli_agents, cli_ops, cli_store

        cli_agents.register(sub)
        cli_ops.register(sub)
        cli_store.register(sub)
        from backscroll import cli_team

        cli_team.register(sub)
        from backscroll import cli_ui

        cli_ui.register(sub)
    return parser


def _undecodable(argv: list[str]) -> str | None:
    """The first argument that is not valid UTF-8 (Python keeps its bytes as
    surrogates), shown with the bad bytes escaped; None when all are valid."""
    for arg in argv:
        try:
            arg.encode("utf-8")
        except UnicodeEncodeError:
            return arg.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    return None


def _quiet_pipe() -> int:
    """A closed pipe (``backscroll search x | head -1``) ends quietly: stdout is
    pointed at /dev/null so the interpreter's final flush cannot fail loudly."""
    if sys.stdout is None:  # no stdout at all (``>&-``): nothing to quieten
        return 0
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # (a stdout without a file descriptor)
        pass
    return 0


def _flush_quietly() -> None:
    """Flush stdout and stderr before exit. One the caller closed (``2>&-``: Python
    then has None for it) or whose reader went away is let go: the exit code
    stays the command's (a hook host drops the context on any other)."""
    for stream in (sys.stdout, sys.stderr):
        if stream is None:
            continue
        try:
            stream.flush()
        except (OSError, ValueError):
            if stream is sys.stdout:
                _quiet_pipe()


def _fail(args: Any, text: str, code: int) -> int:
    """An error on stderr, and as one JSON object on stdout with ``--json``."""
    if getattr(args, "json", False):
        import contextlib  # an error path: not imported on the way to a result

        with contextlib.suppress(BrokenPipeError):
            _emit({"schema": RESULT_SCHEMA, "error": {"message": text, "exit_code": code}})
    print(f"backscroll: {render.terminal_safe(text)}", file=sys.stderr)
    return code


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    bad = _undecodable(argv)
    if bad is not None:
        from types import SimpleNamespace  # an error path

        return _fail(
            SimpleNamespace(json="--json" in argv),
            f"the argument '{bad}' is not valid UTF-8; pass text in UTF-8 "
            "(check the terminal's or the script's encoding, e.g. LANG=C.UTF-8)",
            2,
        )
    if len(argv) == 2 and argv[0] == "hook":
        # The prompt hook runs before every prompt: skip building the whole parser.
        from backscroll.cli_agents import HOOK_HOSTS

        if argv[1] in HOOK_HOSTS:
            from backscroll import hook

            return hook.main(argv[1], None)
    args = _fast_search(argv[1:]) if argv and argv[0] == "search" else None
    if args is None and len(argv) > 3 and argv[0] == "--config" and argv[2] == "search":
        args = _fast_search(argv[3:])
        if args is not None:
            args.config = argv[1]
    if args is None:
        hook_command = _first_command(argv) == "hook"  # (its stdout is the agent's context)
        parser = build_parser(_command_of(argv), "--json" in argv and not hook_command)
        try:
            args = parser.parse_args(argv)
        except SystemExit as exc:
            if exc.code and hook_command:
                from backscroll import hook  # (exit 2 would block the user's prompt)

                return hook.bad_command(argv)
            raise
    handler: Handler = args.func
    unknown = _unknown_host(args)
    if unknown is not None:
        return _fail(args, unknown, 2)
    try:
        code = handler(args)
        sys.stdout.flush()
        return code
    except BackscrollError as exc:
        return _fail(args, str(exc), exc.exit_code)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return _quiet_pipe()
    except PermissionError as exc:  # another user's data directory or index
        from backscroll.paths import permission_problem

        return _fail(args, permission_problem(exc), 2)
    except Exception as exc:
        if os.environ.get("BACKSCROLL_DEBUG") == "1":
            raise
        if _disk_full(exc):
            from backscroll.paths import data_dir_text

            return _fail(
                args,
                f"the disk holding {data_dir_text()} is full ({exc}): free some space "
                "and run it again (nothing already indexed is lost)",
                2,
            )
        # 2, as for every error: 1 means "nothing matched" to a script reading `search`
        return _fail(
            args,
            f"unexpected error: {exc!r} (run with BACKSCROLL_DEBUG=1 for the traceback)",
            2,
        )


def _disk_full(exc: BaseException) -> bool:
    """No space left where the index is written (SQLite's SQLITE_FULL, ENOSPC)."""
    import errno

    if isinstance(exc, OSError) and exc.errno == errno.ENOSPC:
        return True
    sqlite3 = sys.modules.get("sqlite3")
    code = getattr(exc, "sqlite_errorcode", None)
    return (
        sqlite3 is not None
        and isinstance(exc, sqlite3.OperationalError)
        and isinstance(code, int)
        and code & 0xFF == 13  # SQLITE_FULL
    )


def entry() -> None:
    """The ``backscroll`` command: :func:`main`, then out without tearing the
    interpreter down when nothing is left running.

    Freeing every module and object at exit took 21 ms after a 240 MB index,
    against 3 ms for this exit (``bench/bench_command.py``). With no other
    thread and no child process there is nothing to wait for: output is
    flushed, log handlers are closed, and the process ends. Otherwise it exits
    the ordinary way.

    The young-object collector also runs less often: the imports and the
    results of a cold index keep tens of thousands of objects alive at once,
    none of them garbage, and at the default threshold (700) the collector ran
    67 times in a 240 MB index, 11-12 ms at best (``bench/bench_command.py``)."""
    import gc

    gc.set_threshold(50_000, 10, 10)
    code = main()
    _flush_quietly()
    if _nothing_running():
        logging = sys.modules.get("logging")  # (a search's fast path never loads it)
        if logging is not None:
            logging.shutdown()
        os._exit(code)
    raise SystemExit(code)


def _nothing_running() -> bool:
    """No thread but this one and no live child process (checked only where
    this process ever loaded threading or multiprocessing)."""
    threading = sys.modules.get("threading")
    if threading is not None and threading.active_count() > 1:
        return False
    mp = sys.modules.get("multiprocessing")
    return mp is None or not mp.active_children()
