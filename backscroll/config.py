"""One YAML file, loaded once into frozen typed objects.

Unknown keys, wrong types and bad values are all reported together, each with the
file, the dotted key and the fix. ``config.example.yaml`` documents every option;
a test checks it covers every field here.
"""

from __future__ import annotations

import copyreg
import dataclasses
import math
import os
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from backscroll import paths
from backscroll.errors import ConfigError
from backscroll.user_patterns import compile_user_pattern
from backscroll.wire import MAX_SEARCH_LIMIT


def frozen_map(items: dict[Any, Any]) -> Mapping[Any, Any]:
    """A read-only view of ``items`` (what a loaded configuration's mappings are)."""
    return types.MappingProxyType(items)


def _pickle_frozen_map(m: types.MappingProxyType[Any, Any]) -> tuple[Any, tuple[dict[Any, Any]]]:
    return (frozen_map, (dict(m),))


# A loaded configuration's mappings (``hosts``, ``redaction.patterns``) are
# read-only views, which pickle refuses: pickled as a copy, a configuration
# crosses to reader processes started from a fork server (the daemon's) and to
# the command from the reader process that read it (indexing/prefork.py).
copyreg.pickle(types.MappingProxyType, _pickle_frozen_map)

LogLevel = Literal["debug", "info", "warning", "error"]
OnDelete = Literal["keep", "forget"]


@dataclass(frozen=True)
class HostConfig:
    #: Index this host at all.
    enabled: bool = True
    #: Replace the host's default roots (empty: use the defaults).
    roots: tuple[str, ...] = ()
    #: Roots added to the defaults.
    extra_roots: tuple[str, ...] = ()
    #: Glob patterns of paths never indexed for this host.
    exclude: tuple[str, ...] = ()
    #: Index sub-agent transcripts under their parent session (Claude Code, Copilot CLI).
    include_subagents: bool = False


@dataclass(frozen=True)
class RedactionConfig:
    enabled: bool = True
    #: Extra patterns: name -> regular expression; matches become [REDACTED:name].
    patterns: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class LimitsConfig:
    max_hits: int = 10
    max_turn_chars: int = 800
    max_total_chars: int = 6000


@dataclass(frozen=True)
class IndexConfig:
    #: Quiet time after a change before a file is indexed (a streamed transcript
    #: is written many times a second).
    debounce_ms: int = 100
    #: A file that keeps changing is indexed at least this often.
    max_wait_ms: int = 1000
    #: Stat-only reconciliation pass, catching what the watcher missed.
    rescan_minutes: int = 10
    #: Lines longer than this are skipped (base64 images can be megabytes).
    max_line_bytes: int = 16 * 1024 * 1024
    #: Whole JSON documents (Gemini CLI sessions, Cline tasks, ...) larger than this
    #: are skipped with a warning naming the file: parsing one takes several times its size.
    max_document_bytes: int = 64 * 1024 * 1024
    #: Gemini CLI ``session-*.json`` documents larger than this are streamed one
    #: message at a time (bounded memory, no size cap) instead of parsed whole.
    stream_document_bytes: int = 8 * 1024 * 1024
    #: What to do when a source transcript is deleted: keep its turns or forget them.
    on_delete: OnDelete = "keep"
    #: Directories (beyond other hosts' projects) to look for Aider histories in.
    project_roots: tuple[str, ...] = ()


@dataclass(frozen=True)
class ServerConfig:
    max_request_bytes: int = 1024 * 1024
    #: Seconds a client may take to finish a request line.
    request_timeout_s: float = 10.0
    #: Seconds an idle connection is kept open.
    idle_timeout_s: float = 300.0
    max_connections: int = 256
    #: Seconds a client may take to read a reply before it is disconnected.
    write_timeout_s: float = 10.0
    #: Replies larger than this are refused with an error saying to ask for less.
    max_reply_bytes: int = 16 * 1024 * 1024
    #: Longest search query text, in characters.
    max_query_chars: int = 4096
    #: Seconds one query may run in the daemon before it is stopped with an error
    #: saying to narrow it (a query holds one of the daemon's read connections).
    query_timeout_s: float = 5.0


@dataclass(frozen=True)
class ExcludeConfig:
    #: Glob patterns of transcript paths never indexed.
    paths: tuple[str, ...] = ()
    #: Project directories whose sessions are never indexed.
    projects: tuple[str, ...] = ()


@dataclass(frozen=True)
class TeamConfig:
    #: ``postgresql://user@host/db`` of the team database; empty: no publishing, no --team.
    url: str = ""
    #: File holding the database password (else libpq's PGPASSFILE / ~/.pgpass).
    password_file: str | None = None
    #: This machine's name in the team database (default: /etc/machine-id, else
    #: an id generated once in the data directory).
    machine_id: str | None = None
    #: Project directories (and everything under them) never published.
    exclude_projects: tuple[str, ...] = ()
    #: Project directories published as private: only their owner can read them.
    private_projects: tuple[str, ...] = ()
    #: Turns sent to PostgreSQL per transaction.
    batch_size: int = 500
    #: Seconds between looks at the outbox while nothing is pending.
    interval_s: float = 0.5
    #: Longest wait between retries while PostgreSQL cannot be reached.
    max_backoff_s: float = 60.0
    #: Seconds a publish or a --team search waits for the team database to answer
    #: before it counts as failed (a hung server, a network that drops packets).
    timeout_s: float = 30.0


@dataclass(frozen=True)
class UiConfig:
    #: Serve the web viewer from daemon start (else only after `backscroll ui`).
    enabled: bool = False
    #: TCP port on 127.0.0.1 (0: any free port). The viewer never listens elsewhere.
    port: int = 0


@dataclass(frozen=True)
class Config:
    #: Where index.db lives (default: $BACKSCROLL_HOME or the XDG data dir).
    data_dir: str | None = None
    #: The daemon's Unix socket (default: $BACKSCROLL_SOCKET or the runtime dir).
    socket: str | None = None
    log_level: LogLevel = "info"
    hosts: Mapping[str, HostConfig] = field(default_factory=dict)
    index: IndexConfig = field(default_factory=IndexConfig)
    redaction: RedactionConfig = field(default_factory=RedactionConfig)
    limits: LimitsConfig = field(default_factory=LimitsConfig)
    server: ServerConfig = field(default_factory=ServerConfig)
    exclude: ExcludeConfig = field(default_factory=ExcludeConfig)
    team: TeamConfig = field(default_factory=TeamConfig)
    ui: UiConfig = field(default_factory=UiConfig)
    #: Where the config came from (None: built-in defaults).
    source: str | None = field(default=None, compare=False)

    def host(self, name: str) -> HostConfig:
        return self.hosts.get(name, HostConfig())

    def data_path(self) -> Path:
        """``$BACKSCROLL_HOME`` first (as for the socket), then ``data_dir``, then XDG."""
        if os.environ.get("BACKSCROLL_HOME", "").strip():
            return paths.data_dir()
        return Path(os.path.expanduser(self.data_dir)) if self.data_dir else paths.data_dir()

    def db_path(self) -> Path:
        return paths.db_path(self.data_path())

    def socket_path(self) -> Path:
        if os.environ.get("BACKSCROLL_SOCKET"):
            return paths.socket_path()
        return Path(os.path.expanduser(self.socket)) if self.socket else paths.socket_path()

    def effective_log_level(self) -> str:
        """The level after ``$BACKSCROLL_LOG_LEVEL`` (already validated by :func:`load`)."""
        level = os.environ.get("BACKSCROLL_LOG_LEVEL", "").strip().lower()
        return level if level in typing.get_args(LogLevel) else self.log_level


# --------------------------------------------------------------------------- loading


def load(path: Path | None = None, *, known_hosts: tuple[str, ...] | None = None) -> Config:
    """Load ``path`` (default: :func:`paths.config_path`); a missing default file
    means built-in defaults, a missing explicit file is an error."""
    explicit = path is not None or bool(os.environ.get("BACKSCROLL_CONFIG"))
    path = path or paths.config_path()
    if not path.exists():
        if explicit:
            raise ConfigError([f"{path}: no such config file; create it from config.example.yaml"])
        return _env_overrides(Config())
    _refuse_foreign(path)
    import yaml

    try:
        text = _read_text(path)
        data, duplicates = _load_yaml(text, str(path))
    except UnicodeDecodeError as exc:
        raise ConfigError(
            [f"{path}: it is not UTF-8 text ({exc}); save it as UTF-8 (YAML is text)"]
        ) from exc
    except IsADirectoryError as exc:
        raise ConfigError([f"{path}: is a directory; give the config file itself"]) from exc
    except OSError as exc:
        raise ConfigError([f"{path}: cannot read it ({exc}); check its permissions"]) from exc
    except yaml.YAMLError as exc:
        raise ConfigError([f"{path}: {_yaml_problem(exc)}"]) from exc
    except ValueError as exc:  # (an integer of thousands of digits: Python refuses to read it)
        problem = f"{path}: holds a number too long to read; no setting takes one: shorten it"
        raise ConfigError([problem]) from exc
    return parse(data, str(path), known_hosts=known_hosts, problems=duplicates)


#: No setting takes a number beyond this (a terabyte of bytes): past it an int
#: conversion overflows (a timeout of 1e300 seconds) and float() of a whole
#: number past ~2**1024 fails. Refused before anything compares or converts it;
#: the rescan interval has its own, lower bound (AT_MOST).
LARGEST_SETTING = 10**12


def _yaml_problem(exc: Exception) -> str:
    """A YAML syntax error by line and column, without the lines of the file that
    PyYAML quotes: one may hold a password (``team.url``), and the MCP server
    hands config problems to the agent."""
    import yaml

    mark = getattr(exc, "problem_mark", None)
    if not isinstance(exc, yaml.MarkedYAMLError) or mark is None:
        return f"not valid YAML ({' '.join(str(exc).split())}); fix its syntax"
    problem = exc.problem or "a syntax error"
    during = ""
    if exc.context:
        at = f" at line {exc.context_mark.line + 1}" if exc.context_mark is not None else ""
        during = f" ({exc.context}{at})"
    return (
        f"not valid YAML at line {mark.line + 1}, column {mark.column + 1}: {problem}{during}; "
        "fix the syntax there"
    )


#: A config file is a few hundred bytes; past this, something else is in its place.
MAX_CONFIG_BYTES = 1024 * 1024


def _read_text(path: Path) -> str:
    """The config file's text, opened non-blocking and only when it is a regular
    file of at most MAX_CONFIG_BYTES: a FIFO in its place hung the daemon at
    SIGHUP (and ``config check``), and ``/dev/zero`` ran it out of memory."""
    from backscroll.files import NotRegular, TooLarge, read_bounded

    if path.is_dir():
        raise IsADirectoryError(str(path))
    try:
        data = read_bounded(path, MAX_CONFIG_BYTES, "config file")
    except TooLarge:
        raise ConfigError(
            [
                f"{path}: over {MAX_CONFIG_BYTES} bytes, too large for a config file; "
                "give the YAML file from config.example.yaml"
            ]
        ) from None
    except NotRegular:
        raise ConfigError(
            [f"{path}: not a regular file (a FIFO, device or socket); give a YAML file"]
        ) from None
    return data.decode("utf-8")


def _refuse_foreign(path: Path) -> None:
    """A config file owned by another user could point backscroll at that user's
    socket or data directory: refuse it (a symlink is judged by its target)."""
    try:
        owner = path.stat().st_uid
    except OSError:
        return  # unreadable: reading it says why
    if hasattr(os, "getuid") and owner != os.getuid():
        raise ConfigError(
            [
                f"{path}: owned by uid {owner}, not by you (uid {os.getuid()}); a config "
                "another user controls could point backscroll at their socket or data, so it "
                f"is not read. Fix: `chown {os.getuid()} {path}` if it is yours, or remove it"
            ]
        )


def _load_yaml(text: str, source: str) -> tuple[Any, list[str]]:
    """``yaml.safe_load``, and the keys given twice in one mapping, each named with
    its line (PyYAML would keep the last silently): problems reported with the rest."""
    import yaml

    duplicates: list[str] = []

    class UniqueKeys(yaml.SafeLoader):
        def construct_mapping(self, node: Any, deep: bool = False) -> dict[Any, Any]:
            seen: dict[Any, Any] = {}
            for key_node, _value in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":
                    continue
                key = self.construct_object(key_node, deep=deep)
                mark = key_node.start_mark
                try:
                    first = seen.setdefault(key, mark)
                except TypeError:  # an unhashable key: PyYAML reports it below
                    continue
                # (by position, not by line: `{a: 1, a: 2}` gives both on one line)
                if first.index != mark.index:
                    duplicates.append(_given_twice(source, key, first, mark))
            return super().construct_mapping(node, deep)

    loader = UniqueKeys(text)
    try:
        data = loader.get_single_data()
    finally:
        loader.dispose()
    return data, duplicates


def _given_twice(source: str, key: Any, first: Any, again: Any) -> str:
    """The problem for ``key`` given at YAML mark ``again`` after ``first``."""
    line = again.line + 1
    if first.line == again.line:
        where = f"twice on this line (columns {first.column + 1} and {again.column + 1})"
    else:
        where = f"twice (first on line {first.line + 1})"
    return f"{source}: line {line}: the key {key!r} is given {where}; keep one of them"


#: Sizes, counts and intervals for which 0 makes no sense (0 is not "off").
MUST_BE_POSITIVE = frozenset(
    {
        "index.rescan_minutes",
        "index.max_line_bytes",
        "limits.max_hits",
        "limits.max_turn_chars",
        "limits.max_total_chars",
        "server.max_request_bytes",
        "server.request_timeout_s",
        "server.query_timeout_s",
        "server.idle_timeout_s",
        "server.max_connections",
        "team.batch_size",
        "team.interval_s",
        "team.max_backoff_s",
        "team.timeout_s",
    }
)


#: Upper bounds where more would be refused later (a search asks for at most this many hits).
#: The daemon's scheduler adds the rescan interval to today's date: past year
#: 9999 it overflows. A rescan a century apart is no rescan at all.
AT_MOST = {"limits.max_hits": MAX_SEARCH_LIMIT, "index.rescan_minutes": 100 * 525_960}


def parse(
    data: Any,
    source: str,
    *,
    known_hosts: tuple[str, ...] | None = None,
    problems: list[str] | None = None,
) -> Config:
    """The config in ``data``; every problem (with ``problems`` found earlier, such
    as keys given twice) raised at once in one ConfigError."""
    if data is None:
        data = {}
    problems = list(problems or [])
    if not isinstance(data, dict):
        raise ConfigError([*problems, f"{source}: the top level must be a mapping of options"])
    values = _build(Config, data, "", source, problems)
    if isinstance(values, dict):
        hosts = values.get("hosts", {})
        if known_hosts is None:
            from backscroll.hosts import HOST_NAMES

            known_hosts = HOST_NAMES
        if known_hosts:
            for name in hosts:
                if name not in known_hosts:
                    problems.append(_unknown(source, f"hosts.{name}", name, known_hosts))
        patterns = values.get("redaction")
        if isinstance(patterns, RedactionConfig):
            for name, rx in patterns.patterns.items():
                try:
                    compile_user_pattern(name, rx, f"{source}: redaction.patterns.{name}")
                except ConfigError as exc:
                    problems += exc.problems
        team = values.get("team")
        if isinstance(team, TeamConfig):
            problems += _team_problems(team, source)
            redaction = values.get("redaction")
            if team.url and isinstance(redaction, RedactionConfig) and not redaction.enabled:
                problems.append(
                    f"{source}: team.url: publishing needs redaction (redaction.enabled is "
                    "false), since only redacted text may leave the machine; set "
                    "redaction.enabled: true or remove team.url"
                )
        ui = values.get("ui")
        if isinstance(ui, UiConfig) and ui.port > 65535:
            problems.append(
                f"{source}: ui.port: {ui.port} is not a TCP port; "
                "use 1-65535, or 0 for any free one"
            )
    if problems:
        raise ConfigError(problems)
    assert isinstance(values, dict)
    return _env_overrides(Config(**values, source=source))


#: libpq connection parameters that hold a secret (in a URL's query string).
_QUERY_SECRETS = frozenset({"password", "sslpassword"})


def _team_problems(team: TeamConfig, source: str) -> list[str]:
    """``team.url`` is a postgresql:// URL without a password (passwords stay out
    of config files that ``config show`` prints and logs quote)."""
    from urllib.parse import parse_qs, urlsplit

    if not team.url:
        return []
    try:
        parts = urlsplit(team.url)
        has_password = parts.password is not None or bool(
            _QUERY_SECRETS & set(parse_qs(parts.query, keep_blank_values=True))
        )
    except ValueError as exc:
        return [f"{source}: team.url: not a URL ({exc}); write postgresql://USER@HOST/DB"]
    if parts.scheme not in ("postgresql", "postgres"):
        return [
            f"{source}: team.url: {parts.scheme or 'no'} scheme; write postgresql://USER@HOST/DB"
        ]
    if has_password:
        return [
            f"{source}: team.url: holds a password; remove it from the URL and put it in "
            "team.password_file or a PGPASSFILE (~/.pgpass)"
        ]
    return []


def _env_overrides(config: Config) -> Config:
    """``$BACKSCROLL_LOG_LEVEL`` over ``log_level`` (``$BACKSCROLL_HOME`` and
    ``$BACKSCROLL_SOCKET`` are applied by :meth:`Config.data_path` / ``socket_path``)."""
    level = os.environ.get("BACKSCROLL_LOG_LEVEL", "").strip().lower()
    if not level:
        return config
    choices = typing.get_args(LogLevel)
    if level not in choices:
        raise ConfigError(
            [
                f"$BACKSCROLL_LOG_LEVEL: {level!r} is not one of "
                f"{', '.join(repr(c) for c in choices)}; set one of those or unset it"
            ]
        )
    return dataclasses.replace(config, log_level=typing.cast(LogLevel, level))


def _unknown(source: str, dotted: str, key: str, choices: typing.Iterable[str]) -> str:
    import difflib  # (only for a mistake: every command reads the configuration)

    close = difflib.get_close_matches(key, list(choices), n=1)
    hint = f"did you mean `{close[0]}`?" if close else "remove it"
    return f"{source}: {dotted}: unknown option; {hint}"


def _build(cls: type, data: dict[str, Any], prefix: str, source: str, problems: list[str]) -> Any:
    hints = typing.get_type_hints(cls)
    names = [f.name for f in dataclasses.fields(cls) if f.name != "source"]
    out: dict[str, Any] = {}
    for key, value in data.items():
        dotted = f"{prefix}{key}"
        if key not in names:
            problems.append(_unknown(source, dotted, str(key), names))
            continue
        converted = _convert(hints[key], value, dotted, source, problems)
        if converted is not _BAD:
            out[key] = converted
    return out


_BAD = object()


def _convert(tp: Any, value: Any, dotted: str, source: str, problems: list[str]) -> Any:
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        inner = [a for a in args if a is not type(None)]
        return _convert(inner[0], value, dotted, source, problems)
    if dataclasses.is_dataclass(tp):
        if not isinstance(value, dict):
            problems.append(
                f"{source}: {dotted}: expected a mapping of options, got {value!r}; "
                "indent its options under it (`option: value`)"
            )
            return _BAD
        cls = typing.cast(type, tp)
        return cls(**_build(cls, value, dotted + ".", source, problems))
    if origin is Literal:
        if value not in args:
            choices = ", ".join(repr(a) for a in args)
            problems.append(
                f"{source}: {dotted}: {value!r} is not one of {choices}; use one of them"
            )
            return _BAD
        return value
    if origin is tuple:
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            problems.append(
                f"{source}: {dotted}: expected a list of strings, got {value!r}; "
                'write a YAML list such as ["~/a", "~/b"]'
            )
            return _BAD
        return tuple(value)
    if origin in (Mapping, dict) or tp is Mapping:
        if not isinstance(value, dict):
            problems.append(
                f"{source}: {dotted}: expected a mapping, got {value!r}; write `name: value` pairs"
            )
            return _BAD
        value_type = args[1] if len(args) == 2 else Any
        result: dict[str, Any] = {}
        for k, v in value.items():
            item = _convert(value_type, v, f"{dotted}.{k}", source, problems)
            if item is not _BAD:
                result[str(k)] = item
        return frozen_map(result)
    if tp is Any:
        return value
    if tp is bool:
        if not isinstance(value, bool):
            problems.append(
                f"{source}: {dotted}: expected true or false, got {value!r}; write true or false"
            )
            return _BAD
        return value
    if tp is int or tp is float:
        ok = isinstance(value, int | float) and not isinstance(value, bool)
        # (an int is compared as it is: a huge one does not convert to float)
        finite = ok and (isinstance(value, int) or math.isfinite(value))
        if finite and abs(value) > LARGEST_SETTING:
            problems.append(
                f"{source}: {dotted}: got a number too large to be a setting; write a number "
                f"such as {_example(dotted)} (or remove the line for the default)"
            )
            return _BAD
        if ok and not math.isfinite(value):
            # (YAML's .nan and .inf: a NaN timeout cannot be waited on, an infinite one
            # turns its guard off, and `config show --json` could not print either)
            kind = "a whole number" if tp is int else "a number"
            least = "> 0" if dotted in MUST_BE_POSITIVE else "≥ 0"
            problems.append(
                f"{source}: {dotted}: expected {kind} {least}, got {_yaml_number(value)}, "
                "which is not a finite number; write a number such as "
                f"{_example(dotted)} (or remove the line for the default)"
            )
            return _BAD
        if not ok or value < 0 or (tp is int and not float(value).is_integer()):
            kind = "a whole number" if tp is int else "a number"
            # (0 is refused below for these: the fix must not offer it)
            least = "> 0" if dotted in MUST_BE_POSITIVE else "≥ 0"
            if isinstance(value, str):
                fix = _text_fix(value, tp)
            elif not ok:
                fix = f"write {kind}"
            elif value < 0:
                fix = "use a number above 0" if dotted in MUST_BE_POSITIVE else "use 0 or more"
            else:
                fix = "leave out the fraction"
            problems.append(f"{source}: {dotted}: expected {kind} {least}, got {value!r}; {fix}")
            return _BAD
        if dotted in AT_MOST and value > AT_MOST[dotted]:
            problems.append(
                f"{source}: {dotted}: {value!r} is more than the {AT_MOST[dotted]} allowed; "
                f"use {AT_MOST[dotted]} or less"
            )
            return _BAD
        if value == 0 and dotted in MUST_BE_POSITIVE:
            problems.append(
                f"{source}: {dotted}: 0 makes no sense here; give a number above 0 "
                "(or remove the line for the default)"
            )
            return _BAD
        return tp(value)
    if tp is str:
        if not isinstance(value, str):
            problems.append(
                f"{source}: {dotted}: expected a string, got {value!r}; put it in quotes"
            )
            return _BAD
        return value
    return value


def _text_fix(text: str, tp: type) -> str:
    """The fix for a number YAML read as text: the quotes around one it would
    read as a number, else the way to write one it does not (``1e9``: YAML 1.1
    reads an exponent as a number only with a dot and a sign, ``1.0e+9``)."""
    import yaml

    try:
        plain = yaml.safe_load(text)  # (what the same characters read as, unquoted)
    except yaml.YAMLError:
        plain = None
    if isinstance(plain, int | float) and not isinstance(plain, bool):
        return "write it without quotes"
    try:
        number = float(text.replace("_", "x"))  # (no digit separators: YAML reads those)
    except ValueError:
        number = math.nan
    if not math.isfinite(number):
        return "write a number" if tp is float else "write a whole number"
    if tp is int and number.is_integer():
        return f"YAML reads {text!r} as text, not a number; write it in digits: {int(number)}"
    if tp is int:
        return f"YAML reads {text!r} as text, not a number; write a whole number"
    return f"YAML reads {text!r} as text, not a number; write it as {number!r}"


def _yaml_number(value: float) -> str:
    """``value`` as YAML spells it (``.nan``, ``.inf``, ``-.inf``), as it was written."""
    if math.isnan(value):
        return ".nan"
    return ".inf" if value > 0 else "-.inf"


def _example(dotted: str) -> str:
    """The default of option ``dotted`` (a finite number to offer as the fix)."""
    section, _, name = dotted.rpartition(".")
    defaults: Any = Config()
    for part in section.split(".") if section else ():
        defaults = getattr(defaults, part, None)
    value = getattr(defaults, name, None)
    if isinstance(value, float):
        return f"{value:g}"
    return str(value) if isinstance(value, int) else "1"


def field_paths(cls: type = Config, prefix: str = "") -> list[str]:
    """Every dotted option name (used to check config.example.yaml covers them)."""
    out: list[str] = []
    hints = typing.get_type_hints(cls)
    for f in dataclasses.fields(cls):
        if f.name == "source":
            continue
        tp = hints[f.name]
        if dataclasses.is_dataclass(tp):
            out.extend(field_paths(typing.cast(type, tp), f"{prefix}{f.name}."))
        elif f.name == "hosts":
            out.extend(field_paths(HostConfig, f"{prefix}hosts.<host>."))
        else:
            out.append(prefix + f.name)
    return out
