"""Operations subcommands: ``service``, ``config``, ``doctor``, ``explain``, ``logs``.

Registered into the ``backscroll`` parser by :func:`register` (see
cli.build_parser). Heavy modules are imported inside the handlers, so that
``backscroll search`` does not pay for them.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from backscroll.wire import RESULT_SCHEMA

TYPE_CHECKING = False  # typing is not imported at run time: this is the CLI's hot path
if TYPE_CHECKING:
    from typing import Any


def _config_path(args: argparse.Namespace) -> Path | None:
    return Path(args.config) if getattr(args, "config", None) else None


def _known_hosts() -> tuple[str, ...]:
    from backscroll.readers import READERS

    return tuple(r.host for r in READERS)


def _emit(data: Any) -> None:
    sys.stdout.write(json.dumps(data, ensure_ascii=False, default=str) + "\n")


# --------------------------------------------------------------------------- service


def cmd_service(args: argparse.Namespace) -> int:
    from backscroll import service

    plat = service.detect_platform()
    if args.action == "install":
        outcome = service.install(plat, service.current_layout(plat), dry_run=args.dry_run)
    elif args.action == "uninstall":
        outcome = service.uninstall(plat, dry_run=args.dry_run)
    else:
        st = service.status(plat, service.current_layout(plat))
        if args.json:
            _emit(st.as_dict())
        else:
            print(_service_status(st))
        return 0 if st.installed else 1
    print("\n".join(outcome.lines))
    return outcome.code


def _service_status(st: Any) -> str:
    if not st.installed:
        return f"not installed ({st.path}): run `backscroll service install`"
    lines = [f"installed: {st.path}" + ("" if st.ours else " (not written by backscroll)")]
    if st.ours and not st.up_to_date:
        lines.append("  differs from what `backscroll service install` would write now")
    if st.manager:
        lines.append(f"  enabled: {st.enabled or '?'}  active: {st.active or '?'}")
    else:
        lines.append("  the service manager is not reachable from here")
    return "\n".join(lines)


# --------------------------------------------------------------------------- config


def cmd_config(args: argparse.Namespace) -> int:
    from backscroll import config as config_mod
    from backscroll import paths
    from backscroll.errors import ConfigError

    file = Path(args.file) if getattr(args, "file", None) else _config_path(args)
    try:
        cfg = config_mod.load(file, known_hosts=_known_hosts())
    except ConfigError as exc:
        if getattr(args, "json", False):
            _emit({"schema": RESULT_SCHEMA, "ok": False, "problems": exc.problems,
                   "error": {"message": str(exc), "exit_code": 2}})  # fmt: skip
        print(f"{len(exc.problems)} problem{'s' if len(exc.problems) != 1 else ''}:",
              file=sys.stderr)  # fmt: skip
        for problem in exc.problems:
            print(f"  {problem}", file=sys.stderr)
        return 2
    where = cfg.source or f"{file or paths.config_path()} (absent: built-in defaults)"
    if args.action == "check":
        if getattr(args, "json", False):
            _emit({"schema": RESULT_SCHEMA, "ok": True, "problems": [], "source": where})
        else:
            print(f"ok: {where}")
        return 0
    data = {"schema": RESULT_SCHEMA, **_plain(cfg)}
    data["effective"] = {
        "data_dir": str(cfg.data_path()),
        "db": str(cfg.db_path()),
        "socket": str(cfg.socket_path()),
        "log_level": cfg.effective_log_level(),
        "source": cfg.source,
    }
    if args.json:
        _emit(data)
    else:
        import yaml

        sys.stdout.write(yaml.safe_dump(data, sort_keys=False, allow_unicode=True))
    return 0


def _plain(value: Any) -> Any:
    """Config objects as plain YAML/JSON data."""
    import dataclasses
    from collections.abc import Mapping

    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {
            f.name: _plain(getattr(value, f.name))
            for f in dataclasses.fields(value)
            if f.name != "source"
        }
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, tuple | list):
        return [_plain(v) for v in value]
    return value


# --------------------------------------------------------------------------- doctor, explain, logs


def cmd_doctor(args: argparse.Namespace) -> int:
    from backscroll import doctor

    findings = doctor.run(_config_path(args))
    if args.json:
        _emit({"schema": RESULT_SCHEMA, "ok": doctor.exit_code(findings) == 0,
               "findings": [f.as_dict() for f in findings]})  # fmt: skip
    else:
        from backscroll.render import terminal_safe

        print(terminal_safe(doctor.render(findings)))
    return doctor.exit_code(findings)


def cmd_explain(args: argparse.Namespace) -> int:
    from backscroll import config as config_mod
    from backscroll import explain

    cfg = config_mod.load(_config_path(args), known_hosts=_known_hosts())
    result = explain.explain(cfg, args.path)
    if args.json:
        _emit(result)
    else:
        from backscroll.render import terminal_safe  # (titles and paths from transcripts)

        print(explain.render(terminal_safe(result)))
    return 0 if result["owner"] and (result["exists"] or result["indexed"]) else 1


def cmd_logs(args: argparse.Namespace) -> int:
    from backscroll import logs

    if args.lines is not None and args.lines < 0:
        from backscroll.errors import BackscrollError

        raise BackscrollError(f"-n/--lines: {args.lines} is not a number of lines; give 0 or more")

    return logs.show(args.file, follow=args.follow, level=args.level, raw=args.json,
                     lines=args.lines)  # fmt: skip


# --------------------------------------------------------------------------- registration


def register(sub: Any) -> None:
    """Add this module's subcommands to ``sub`` (an argparse subparsers action)."""
    p = sub.add_parser("service", help="install, remove or inspect the login service")
    p.add_argument("action", choices=("install", "uninstall", "status"))
    p.add_argument("--dry-run", action="store_true",
                   help="print what would be written and run; change nothing")  # fmt: skip
    p.add_argument("--json", action="store_true", help="status as JSON")
    p.set_defaults(func=cmd_service)

    p = sub.add_parser("config", help="check the config file, or show the effective config")
    p.add_argument("action", choices=("check", "show"))
    p.add_argument("file", nargs="?", help="the file to check (default: the one in use)")
    p.add_argument("--json", action="store_true", help="show as JSON")
    p.set_defaults(func=cmd_config)

    p = sub.add_parser("doctor", help="check the installation and say how to fix problems")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_doctor)

    p = sub.add_parser("explain", help="which host owns a file, and what of it is indexed")
    p.add_argument("path", help="a transcript file (or any file under a host's root)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_explain)

    p = sub.add_parser("logs", help="the daemon's logs (journal, launchd log or --file)")
    p.add_argument("-f", "--follow", action="store_true", help="keep printing new lines")
    p.add_argument("--level", choices=("debug", "info", "warning", "error"),
                   help="only lines at this level or above")  # fmt: skip
    p.add_argument("-n", "--lines", type=int, metavar="N", help="only the last N lines")
    p.add_argument("--file", help="read this log file instead")
    p.add_argument("--json", action="store_true", help="print the JSON lines as they are")
    p.set_defaults(func=cmd_logs)

    from backscroll import cli_completion

    cli_completion.register(sub)
