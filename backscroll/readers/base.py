"""The Reader protocol and the parsing helpers every reader shares.

A reader knows where its host keeps transcripts, which files are its own, and how
to turn a file (from a saved :class:`~backscroll.model.Cursor`) into a
:class:`~backscroll.model.ReadResult`. It does no SQL, no watching and reads no
config: everything it needs is handed to it.
"""

from __future__ import annotations

import functools
import json
import os
import re
import shlex
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any, ClassVar, Generic, Protocol, Self, TypeGuard, TypeVar
from urllib.parse import unquote, urlsplit

from backscroll.digests import sha1
from backscroll.files import TooLarge as TooLarge
from backscroll.files import open_regular as open_regular
from backscroll.files import read_bounded as read_bounded
from backscroll.model import MTIME_NOTE as MTIME_NOTE
from backscroll.model import UNREAD_SUBAGENT, Cursor, Kind, Problem, ReaderOptions, ReadResult


def _first_loads(raw: bytes | str) -> Any:
    """orjson's parser, imported at the first line parsed: every host's reader
    imports this module, in processes that parse nothing (``backscroll index``
    itself, which only lists the files its reader processes read)."""
    global _fast_loads
    try:
        import orjson

        _fast_loads = orjson.loads
    except ImportError:  # pragma: no cover - a platform without an orjson wheel
        _fast_loads = json.loads
    return _fast_loads(raw)


_fast_loads: Callable[[bytes | str], Any] = _first_loads

# --------------------------------------------------------------------------- environment


@dataclass(frozen=True, slots=True)
class HostEnv:
    """What a reader may know about the machine when it lists its default roots."""

    home: Path
    environ: Mapping[str, str] = field(default_factory=dict)
    platform: str = sys.platform
    #: Under WSL, the Windows user folders as WSL mounts them (``/mnt/c/Users``):
    #: Windows programs (Cursor) keep their data there, not in the Linux home.
    wsl_users: Path | None = None
    #: This user's login name (under WSL: to pick their Windows home).
    login: str = ""

    @classmethod
    def current(cls) -> HostEnv:
        users = _wsl_users()
        return cls(
            home=Path(os.path.expanduser("~")),
            environ=dict(os.environ),
            wsl_users=users,
            login=_login() if users is not None else "",
        )

    def windows_homes(self) -> list[Path]:
        """Under WSL, the Windows home folders this user may read: the one named
        like the Linux login when there is one, else each readable one; none
        elsewhere. (Other people's profiles are usually closed to WSL.)"""
        if self.wsl_users is None:
            return []
        try:
            names = sorted(os.listdir(self.wsl_users))
        except OSError:
            return []
        homes = [
            self.wsl_users / name
            for name in names
            if name not in _WINDOWS_SHARED_PROFILES
            and os.path.isdir(self.wsl_users / name)
            and os.access(self.wsl_users / name, os.R_OK | os.X_OK)
        ]
        login = self.login.casefold()
        mine = [h for h in homes if login and h.name.casefold() == login]
        return mine or homes

    def var(self, name: str) -> Path | None:
        """A path from an environment variable, or None when unset/empty."""
        value = self.environ.get(name, "").strip()
        return Path(os.path.expanduser(value)) if value else None

    @property
    def is_macos(self) -> bool:
        return self.platform == "darwin"

    @property
    def is_windows(self) -> bool:
        return self.platform.startswith("win")

    def xdg_data(self) -> Path:
        """``$XDG_DATA_HOME`` or ``~/.local/share`` (Linux default for many hosts)."""
        return self.var("XDG_DATA_HOME") or self.home / ".local" / "share"

    def xdg_config(self) -> Path:
        return self.var("XDG_CONFIG_HOME") or self.home / ".config"

    def app_support(self) -> Path:
        """macOS ``~/Library/Application Support``."""
        return self.home / "Library" / "Application Support"

    def appdata(self) -> Path:
        """Windows ``%APPDATA%`` (roaming)."""
        return self.var("APPDATA") or self.home / "AppData" / "Roaming"

    def editor_user_dirs(self) -> list[Path]:
        """The ``User`` directory of every VS Code-family editor, for this platform."""
        names = ("Code", "Code - Insiders", "VSCodium", "Cursor", "Windsurf")
        if self.is_macos:
            base = self.app_support()
        elif self.is_windows:
            base = self.appdata()
        else:
            base = self.xdg_config()
        return [base / name / "User" for name in names]


#: Folders under ``C:\\Users`` that are no one's home.
_WINDOWS_SHARED_PROFILES = frozenset({"Public", "Default", "Default User", "All Users"})


def _wsl_users() -> Path | None:
    """The Windows user folders when this is Linux under WSL (1 or 2), else None."""
    if not sys.platform.startswith("linux") or not is_wsl(os.environ, os.uname().release):
        return None
    from backscroll.mounts import windows_drive

    return (windows_drive("C") or Path("/mnt/c")) / "Users"


def _login() -> str:
    try:
        import pwd

        return pwd.getpwuid(os.getuid()).pw_name
    except (ImportError, KeyError):
        return ""


def is_wsl(environ: Mapping[str, str], release: str, proc: str = "/proc") -> bool:
    """This Linux runs under WSL: its kernel says so, WSL's interop handler is
    registered (``WSLInterop``, ``WSLInterop-late`` since 2023), or WSL set the
    distribution's name (not in a systemd service's environment)."""
    return (
        "microsoft" in release.lower()
        or bool(environ.get("WSL_DISTRO_NAME"))
        or any(
            os.path.exists(f"{proc}/sys/fs/binfmt_misc/{name}")
            for name in ("WSLInterop", "WSLInterop-late")
        )
    )


# --------------------------------------------------------------------------- protocol


class Reader(Protocol):
    """One agent host. Implementations are small classes registered in ``READERS``."""

    #: Identifier used in config, CLI filters and the database ("claude-code").
    host: ClassVar[str]
    #: Human name ("Claude Code").
    name: ClassVar[str]
    #: Bump whenever the reader's output changes: the host's files are re-read once.
    version: ClassVar[int]
    kind: ClassVar[Kind]
    #: File names this host keeps inside project directories rather than under a
    #: root (Aider's ``.aider.chat.history.md``); the indexer looks for them in the
    #: project directories other hosts' sessions name.
    project_files: ClassVar[tuple[str, ...]]
    #: Watch the roots recursively (False: only the root directory itself).
    recursive_watch: ClassVar[bool]
    #: A changed sidecar (:meth:`sidecars`) has the transcript read again from
    #: its start. False: from where the last read ended, for a reader whose
    #: every read returns its session with the sidecar's metadata (a sidecar
    #: rewritten at every turn then costs no whole re-read).
    sidecars_reread_whole: ClassVar[bool]

    def roots(self, env: HostEnv) -> list[Path]:
        """Default directories to watch and scan, existing or not."""
        ...

    def sidecars(self, path: Path) -> list[Path]:
        """Files beside the transcript whose changes the reader must see (a title
        in ``workspace.yaml``): a stat-only pass re-reads the transcript when one
        of them is newer than the transcript was when it was indexed."""
        ...

    def database_dirs(self, env: HostEnv) -> list[Path]:
        """Directories of the SQLite databases the reader opens: its roots for a
        ``database`` host, or where a side database lives (VS Code's
        ``state.vscdb``). A sandboxed service must be able to write there: a
        WAL database cannot be read, even read-only, without its ``-shm`` file."""
        ...

    def watch_recursive(self, root: Path) -> bool:
        """Whether to watch ``root``'s subdirectories too (a root that holds much
        besides transcripts is watched shallowly)."""
        ...

    def source_for(self, path: Path) -> Path | None:
        """The transcript file to (re)index when ``path`` is created or changed
        (``opencode.db-wal`` -> ``opencode.db``), or None if it is not ours."""
        ...

    def discover(self, root: Path) -> Iterator[Path]:
        """Every transcript file under ``root`` (may name files outside it)."""
        ...

    def read(self, path: Path, prev: Cursor | None, opts: ReaderOptions) -> ReadResult:
        """Turns from ``path``. ``prev`` is None for a fresh read from the start.

        Raises OSError when the file cannot be read (vanished, unreadable); the
        indexer logs it and keeps what is already indexed.
        """
        ...


def walk_files(root: Path) -> Iterator[Path]:
    """Every regular file under ``root``, not following symlinked directories
    (so a symlink loop under a root cannot trap the walk)."""
    try:
        if root.is_file():
            yield root
            return
    except OSError:
        return
    for dirpath, dirnames, filenames in os.walk(root, onerror=lambda _e: None):
        dirnames.sort()
        directory = Path(dirpath)  # (once per directory: parsing a path is not free)
        for name in sorted(filenames):
            yield directory / name


class BaseReader:
    """Defaults for :class:`Reader`: discovery by walking roots through ``source_for``."""

    host: ClassVar[str]
    name: ClassVar[str]
    version: ClassVar[int]
    kind: ClassVar[Kind]
    project_files: ClassVar[tuple[str, ...]] = ()
    #: Watch roots recursively. False for a root that holds much besides the
    #: transcripts (Hermes keeps its own checkout beside state.db).
    recursive_watch: ClassVar[bool] = True
    sidecars_reread_whole: ClassVar[bool] = True

    def roots(self, env: HostEnv) -> list[Path]:
        raise NotImplementedError

    def watch_recursive(self, root: Path) -> bool:
        return self.recursive_watch

    def sidecars(self, path: Path) -> list[Path]:
        return []

    def database_dirs(self, env: HostEnv) -> list[Path]:
        return self.roots(env) if self.kind == "database" else []

    def source_for(self, path: Path) -> Path | None:
        raise NotImplementedError

    def discover(self, root: Path) -> Iterator[Path]:
        seen: set[Path] = set()
        for path in walk_files(root):
            source = self.source_for(path)
            if source is not None and source not in seen:
                seen.add(source)
                yield source

    def read(self, path: Path, prev: Cursor | None, opts: ReaderOptions) -> ReadResult:
        raise NotImplementedError


# --------------------------------------------------------------------------- JSONL tailing


@dataclass(slots=True)
class Line:
    """One complete line of a file: its byte offset, 1-based number and content.

    Not frozen (treat it as if it were): one is built per line, and a frozen
    dataclass's ``__init__`` takes twice as long."""

    offset: int
    number: int
    raw: bytes


#: Bytes :class:`Tail` reads at a time. 128-256 KB reads split lines faster on
#: their own (a chunk that fits the CPU's cache) but did not make a whole
#: parallel index faster (bench/RESULTS.md, Cold index, twelfth pass).
READ_CHUNK = 1 << 20

#: One or more lines holding only white space (what ``bytes.strip`` removes).
_BLANK_LINES = re.compile(rb"[ \t\r\n\x0b\x0c]*\n")


@dataclass(slots=True)
class Tail:
    """Reads the complete lines of a file from a byte position.

    Stops before a half-written last line (no trailing newline), so ``end`` is
    always just after the last complete line. Lines longer than ``max_line_bytes``
    are skipped without being held in memory and reported in ``problems``.

    With ``settled`` set, a last line without its newline is offered too (as
    ``unterminated``); the caller that finds it whole calls :meth:`take` so that
    ``end`` moves past it. :func:`tail_jsonl` sets it once the file has been quiet
    for :data:`SETTLE_SECONDS`: a writer that never ends its last line.
    """

    path: Path
    start: int = 0
    first_line_number: int = 1
    max_line_bytes: int = 16 * 1024 * 1024
    end: int = 0
    lines_read: int = 0
    problems: list[Problem] = field(default_factory=list)
    settled: bool = False
    unterminated: Line | None = None

    def take(self, line: Line) -> None:
        """Count the unterminated last ``line`` as read (it parsed whole)."""
        if line is self.unterminated:
            self.end = line.offset + len(line.raw)
            self.lines_read += 1
            self.unterminated = None

    def __iter__(self) -> Iterator[Line]:
        with open_regular(self.path) as fh:
            yield from self.iter_stream(fh)

    def iter_stream(self, fh: IO[bytes]) -> Iterator[Line]:
        """Like iterating, but over an already open binary stream (e.g. zstd)."""
        if self.start:
            fh.seek(self.start)
        offset = self.start
        self.end = self.start
        number = self.first_line_number
        chunk_size = READ_CHUNK
        limit = self.max_line_bytes
        pending = bytearray()
        pending_offset = offset
        oversized = False
        while True:
            chunk = fh.read(chunk_size)
            if not chunk:
                break
            begin = 0
            while True:
                nl = chunk.find(b"\n", begin)
                if nl < 0:
                    piece = chunk[begin:]
                    if not oversized:
                        pending += piece
                        if len(pending) > limit:
                            oversized = True
                            pending.clear()
                    offset += len(piece)
                    break
                piece = chunk[begin:nl]
                offset += len(piece) + 1
                blank = False
                if not pending and not oversized and len(piece) <= limit:
                    # The common case: the whole line lies in this chunk, no copy.
                    if piece and not piece.isspace():
                        yield Line(pending_offset, number, piece)
                    else:
                        blank = True
                else:
                    if oversized or len(pending) + len(piece) > limit:
                        self.problems.append(
                            Problem(
                                f"line longer than {limit} bytes skipped; raise "
                                "index.max_line_bytes to read it",
                                line=number,
                                offset=pending_offset,
                            )
                        )
                    else:
                        pending += piece
                        raw = bytes(pending)
                        if raw.strip():
                            yield Line(pending_offset, number, raw)
                    pending.clear()
                    oversized = False
                number += 1
                self.lines_read += 1
                self.end = offset
                pending_offset = offset
                begin = nl + 1
                if blank and (run := _BLANK_LINES.match(chunk, begin)) is not None:
                    # A flood of blank lines: skip the rest of the run at C speed.
                    count = chunk.count(b"\n", begin, run.end())
                    offset += run.end() - begin
                    number += count
                    self.lines_read += count
                    self.end = pending_offset = offset
                    begin = run.end()
        if self.settled and pending and not oversized and bytes(pending).strip():
            self.unterminated = Line(pending_offset, number, bytes(pending))
            yield self.unterminated


def tail_jsonl(
    path: Path,
    prev: Cursor | None,
    opts: ReaderOptions,
    parse: Callable[[bytes], Any] | None = None,
) -> tuple[Tail, Iterator[tuple[Line, Any]]]:
    """Tail a JSONL file from ``prev``; yields ``(line, parsed object)``.

    Malformed lines are recorded in ``tail.problems`` and skipped. The caller
    saves ``tail.end`` as the new position and ``tail.first_line_number +
    tail.lines_read`` (see :func:`next_line_number`) in its state. ``parse``
    parses each line (a :class:`~backscroll.readers.lean.Lean` parser: the
    fields the reader reads); the whole line by default.
    """
    start = prev.position if prev else 0
    first = int(prev.state.get("line", 1)) if prev else 1
    tail = Tail(path, start=start, first_line_number=first, max_line_bytes=opts.max_line_bytes)
    tail.settled = is_settled(path)
    return tail, _parse_lines(tail, iter(tail), parse or loads)


#: A file unchanged this long has a writer that is done with its last line.
SETTLE_SECONDS = 3.0


def is_settled(path: Path, now: float | None = None) -> bool:
    try:
        mtime = path.stat().st_mtime
    except OSError:
        return False
    return (time.time() if now is None else now) - mtime >= SETTLE_SECONDS


def loads(raw: bytes | str) -> Any:
    """Parse one JSON value: orjson (2-3x faster on transcript lines), and the
    standard library for what orjson refuses but JSON allows (lone surrogate
    escapes). orjson reads integers beyond 64 bits as floats; no host writes
    such numbers where backscroll reads them. Raises ValueError or RecursionError."""
    try:
        return _fast_loads(raw)
    except ValueError:
        return json.loads(raw)


def _glued(line: Line) -> list[tuple[Line, Any]] | None:
    """Two or more JSON objects written on one line (a writer that lost a newline):
    each with its own byte offset, or None when the line is not such a run."""
    try:
        text = line.raw.decode("utf-8")
    except UnicodeDecodeError:
        return None
    decoder = json.JSONDecoder()
    out: list[tuple[Line, Any]] = []
    pos = 0
    try:
        while pos < len(text):
            obj, end = decoder.raw_decode(text, pos)
            if not isinstance(obj, dict):
                return None
            offset = line.offset + len(text[:pos].encode("utf-8"))
            out.append((Line(offset, line.number, text[pos:end].encode("utf-8")), obj))
            pos = end
            while pos < len(text) and text[pos] in " \t\r":
                pos += 1
    except (ValueError, RecursionError):
        return None
    return out if len(out) > 1 else None


def _parse_lines(
    tail: Tail, lines: Iterator[Line], parse: Callable[[bytes], Any]
) -> Iterator[tuple[Line, Any]]:
    for line in lines:
        try:
            obj = parse(line.raw)
        except (ValueError, RecursionError) as exc:
            padded = _after_nul_padding(line)
            if line is tail.unterminated:
                # Still being written after all (left for next time), unless it is
                # a whole record after a crash's NUL padding.
                whole = _loads_or_none(padded.raw) if padded is not None and padded.raw else None
                if padded is not None and whole is not None:
                    tail.problems.append(Problem(
                        f"{padded.offset - line.offset} NUL bytes (left by a crash) skipped",
                        line.number, line.offset))  # fmt: skip
                    tail.take(line)
                    yield padded, whole[0]
                return
            if padded is not None:
                # A crash left the file's preallocated tail as NUL bytes and the
                # host went on writing after them: the record that follows counts.
                try:
                    obj = loads(padded.raw) if padded.raw else None
                except (ValueError, RecursionError):
                    pass  # junk after the NULs too: one problem for the line, below
                else:
                    tail.problems.append(Problem(
                        f"{padded.offset - line.offset} NUL bytes (left by a crash) skipped",
                        line.number, line.offset))  # fmt: skip
                    if padded.raw:
                        yield padded, obj
                    continue
            parts = _glued(line)
            if parts is None:
                tail.problems.append(Problem(f"malformed JSON: {exc}", line.number, line.offset))
                continue
            tail.problems.append(
                Problem(f"{len(parts)} JSON records glued on one line; each was read", line.number)
            )
            tail.take(line)
            yield from parts
            continue
        if line is tail.unterminated:  # (the settled last line parsed whole)
            tail.take(line)
        yield line, obj


def _loads_or_none(raw: bytes) -> tuple[Any] | None:
    """``(value,)`` when ``raw`` parses, else None."""
    try:
        return (loads(raw),)
    except (ValueError, RecursionError):
        return None


def _after_nul_padding(line: Line) -> Line | None:
    """``line`` without the NUL bytes it starts with, if it starts with any."""
    if not line.raw.startswith(b"\x00"):
        return None
    rest = line.raw.lstrip(b"\x00")
    return Line(line.offset + len(line.raw) - len(rest), line.number, rest)


def parse_lines(
    tail: Tail, lines: Iterator[Line], parse: Callable[[bytes], Any] | None = None
) -> Iterator[tuple[Line, Any]]:
    """Parse already-tailed lines as JSON (malformed ones go to ``tail.problems``)."""
    return _parse_lines(tail, lines, parse or loads)


def next_line_number(tail: Tail) -> int:
    return tail.first_line_number + tail.lines_read


# --------------------------------------------------------------------------- session progress


@dataclass(slots=True)
class SessionProgress:
    """What a reader of one session per append-only file carries from one read to
    the next; ``state()`` is what it saves."""

    session_id: str | None = None
    cwd: str | None = None
    title: str | None = None
    first_user: str | None = None
    started: float | None = None
    updated: float | None = None
    tainted: bool = False

    @classmethod
    def resumed(cls, state: Mapping[str, Any]) -> Self:
        return cls(
            session_id=state.get("sid"),
            cwd=state.get("cwd"),
            title=state.get("title"),
            first_user=state.get("first_user"),
            started=state.get("started"),
            updated=state.get("updated"),
            tainted=bool(state.get("tainted")),
        )

    def state(self, line: int) -> dict[str, Any]:
        return {
            "line": line,
            "sid": self.session_id,
            "cwd": self.cwd,
            "title": self.title,
            "first_user": self.first_user,
            "started": self.started,
            "updated": self.updated,
            "tainted": self.tainted,
        }


# --------------------------------------------------------------------------- values


_NUMBER = re.compile(r"-?\d+(\.\d+)?")
_fromisoformat = datetime.fromisoformat


def parse_time(value: Any) -> float | None:
    """Unix seconds from an ISO-8601 string or a number in s/ms/us; None if absent."""
    if type(value) is str:  # nearly every call (one per line of most transcripts): first
        try:
            dt = _fromisoformat(value)  # (3.11 takes "Z")
        except ValueError:
            return _loose_time(value)
        return (dt if dt.tzinfo is not None else dt.replace(tzinfo=UTC)).timestamp()
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        v = float(value)
        if v > 1e14:  # microseconds
            return v / 1e6
        if v > 1e11:  # milliseconds
            return v / 1e3
        return v if v > 0 else None
    if isinstance(value, str):
        return parse_time(str(value))
    return None


def _loose_time(value: str) -> float | None:
    """A time that is not plain ISO 8601: padded, or a number in a string."""
    text = value.strip()
    if _NUMBER.fullmatch(text):
        return parse_time(float(text))
    try:
        dt = _fromisoformat(text)
    except ValueError:
        return None
    return (dt if dt.tzinfo is not None else dt.replace(tzinfo=UTC)).timestamp()


_TEXT = frozenset({"text"})


def block_texts(content: Any, types: Iterable[str] = _TEXT) -> list[str]:
    """Texts of content blocks of the given types; a plain string is one text."""
    if isinstance(content, str):
        return [content]
    wanted = types if types is _TEXT else frozenset(types)  # (called for most lines)
    out: list[str] = []
    if isinstance(content, list):
        for block in content:
            kind = block.get("type") if isinstance(block, dict) else None
            if isinstance(kind, str) and kind in wanted:  # (a dict as "type" is no kind)
                text = block.get("text")
                if isinstance(text, str):
                    out.append(text)
            elif isinstance(block, str):
                out.append(block)
    return out


def clean_text(text: str) -> str:
    """Normalise line endings and strip; the store indexes what this returns."""
    return text.replace("\r\n", "\n").strip()


def content_key(*parts: object) -> str:
    """A short stable hash for turn keys where the host gives no id."""
    digest = sha1(usedforsecurity=False)
    for part in parts:
        digest.update(str(part).encode("utf-8", "surrogatepass"))
        digest.update(b"\x00")
    return digest.hexdigest()[:20]


def resume_in(project: str | None, *command: str) -> str:
    """A resume command, prefixed with ``cd <project> &&`` when the host needs the cwd."""
    cmd = " ".join(shlex.quote(part) for part in command)
    if project:
        return f"cd {shlex.quote(project)} && {cmd}"
    return cmd


def tag_blocks(
    *tags: str, ignore_case: bool = False, trailing_space: bool = False
) -> re.Pattern[str]:
    """A pattern for whole ``<tag>...</tag>`` blocks of any of ``tags``: context a
    harness injects into a prompt (``<system-reminder>``), to ``.sub("", text)`` away.
    ``trailing_space`` also takes the white space after a block."""
    names = "|".join(re.escape(tag) for tag in tags)
    flags = re.DOTALL | (re.IGNORECASE if ignore_case else 0)
    return re.compile(rf"<({names})>.*?</\1>" + (r"\s*" if trailing_space else ""), flags)


#: Ids trusted as keys (real ones are UUIDs or similar; trimmed fixtures are not).
_REAL_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$")
_WINDOWS_DRIVE = re.compile(r"^[A-Za-z]:[\\/]")
_DRIVE_IN_URI = re.compile(r"^/[A-Za-z]:")


def looks_like_id(value: object) -> TypeGuard[str]:
    """True for a string that looks like a host's real id (safe to use as a key)."""
    return isinstance(value, str) and _REAL_ID.match(value) is not None


def is_absolute_path(value: Any) -> bool:
    """A POSIX or Windows absolute path (guards against placeholder cwds)."""
    if not isinstance(value, str) or not value:
        return False
    return value.startswith(("/", "\\\\")) or _WINDOWS_DRIVE.match(value) is not None


#: The start of a URI (``file://``, ``vscode-remote://``), not of a path.
_URI_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]+://")


def path_from_uri(value: object, *, plain_paths: bool = False) -> str | None:
    """The path of a ``file://`` or ``vscode-remote://<authority>/<path>`` URI
    (``file:///c%3A/x`` gives ``c:/x``); None for anything else. With
    ``plain_paths``, a string that is not a URI (no ``scheme://``) is taken as a
    path as it is (hosts that store either)."""
    if not isinstance(value, str) or not value.strip():
        return None
    if plain_paths and not _URI_SCHEME.match(value):
        return value
    parts = urlsplit(value)
    if parts.scheme not in ("file", "vscode-remote") or not parts.path:
        return None
    path = unquote(parts.path)
    return path[1:] if _DRIVE_IN_URI.match(path) else path  # file:///c:/... on Windows


def unread_subagent() -> ReadResult:
    """A sub-agent's transcript claimed, so that no other reader takes it, and not
    read while ``include_subagents`` is off (see model.UNREAD_SUBAGENT)."""
    return ReadResult(position=0, replace=True, state={UNREAD_SUBAGENT: True})


def first_line_title(text: str, limit: int = 80) -> str:
    """A title from a prompt: its first non-empty line, cut to ``limit`` characters.

    A run of ASCII letters, digits and punctuation that the cut would split (a
    word, a token, a URL) is left out whole, and a line that is one such run
    longer than the limit gives no title: titles are redacted after this, and
    half a token no longer has the shape that marks it as a secret. Text without
    spaces in other scripts (Chinese, Japanese) is cut where the limit falls."""
    for line in text.splitlines():
        line = line.strip()
        if not line:
            continue
        if len(line) <= limit:
            return line
        head = line[: limit - 1]
        if not line[limit - 1].isspace():
            head = _PARTIAL_WORD.sub("", head)
        head = head.rstrip()
        return head + "…" if head else ""
    return ""


_PARTIAL_WORD = re.compile(r"[!-~]+$")


# Tools that bring content from outside the machine into the conversation. An
# assistant turn written after one of these ran is marked tainted.
_EXTERNAL_TOOL = re.compile(
    r"(web_?fetch|web_?search|fetch_?url|url_?fetch|google_?search|browser|browse|"
    r"playwright|puppeteer|firecrawl|tavily|exa_search|brave_search|perplexity|http_?get|"
    r"curl|read_?url|scrape)",
    re.IGNORECASE,
)


#: Tools named too plainly for the pattern above that still bring outside content
#: in: Crush's ``fetch``, ``agentic_fetch``, ``download`` and ``sourcegraph``,
#: OpenCode's ``codesearch`` (Exa's hosted code search), Hermes' ``web_extract``
#: and ``web_crawl``, Amp's ``read_web_page``, Continue's ``search_web``. Also
#: matched as the last part of an MCP-style name (Goose's ``fetch__fetch``,
#: Claude Code's ``mcp__fetch__fetch``).
_EXTERNAL_NAMES = frozenset(
    {
        "fetch",
        "agentic_fetch",
        "download",
        "sourcegraph",
        "codesearch",
        "web_extract",
        "web_crawl",
        "read_web_page",
        "search_web",
        "builtin_search_web",
    }
)


def is_external_tool(name: object) -> bool:
    """True for tool names that read untrusted content from outside the machine."""
    if not isinstance(name, str) or not name:
        return False
    return _external_name(name)


@functools.lru_cache(maxsize=4096)
def _external_name(name: str) -> bool:
    # (Cached: a transcript names the same few tools thousands of times.)
    return (
        _EXTERNAL_TOOL.search(name) is not None
        or name.rsplit("__", 1)[-1].lower() in _EXTERNAL_NAMES
    )


def calls_external_tool(content: Any, block_type: str = "tool_use") -> bool:
    """True when a list of content blocks holds a tool call (a ``block_type``
    block) whose ``name`` is an external tool."""
    if not isinstance(content, list):
        return False
    return any(
        isinstance(block, dict)
        and block.get("type") == block_type
        and is_external_tool(block.get("name"))
        for block in content
    )


#: Largest whole JSON document read by default (``index.max_document_bytes``):
#: parsing one holds it in memory several times over.
MAX_DOCUMENT_BYTES = 64 * 1024 * 1024
#: Largest file read beside a transcript (a title, a project marker, an index).
MAX_SIDE_FILE_BYTES = 1024 * 1024


def read_side_file(path: Path, max_bytes: int = MAX_SIDE_FILE_BYTES) -> bytes:
    """A small file beside a transcript (``workspace.yaml``, ``.project_root``),
    bounded as :func:`read_bounded` says. Raises OSError."""
    return read_bounded(path, max_bytes, "side file")


def side_file_objects(path: Path) -> Iterator[dict[str, Any]]:
    """Each JSON object line of a JSONL side file (an index of names, a history);
    other lines are skipped. A FIFO or /dev/zero in its place is refused and
    lines over MAX_SIDE_FILE_BYTES are skipped; OSError goes to the caller."""
    with open_regular(path) as fh:
        for line in Tail(path, max_line_bytes=MAX_SIDE_FILE_BYTES).iter_stream(fh):
            try:
                entry = json.loads(line.raw)
            except ValueError:
                continue
            if isinstance(entry, dict):
                yield entry


def read_json_document(path: Path, max_bytes: int = MAX_DOCUMENT_BYTES) -> Any:
    """Load a whole JSON document of at most ``max_bytes``. Raises ValueError for
    a truncated/garbled one (a document caught mid-write) and OSError if it cannot
    be read, is not a regular file, or is over the limit (:class:`TooLarge`).
    Parsed with the standard library: orjson is faster here but peaks ~1.5x higher
    (bench/bench_documents.py)."""
    return json.loads(read_bounded(path, max_bytes, "JSON document", "index.max_document_bytes"))


_V = TypeVar("_V")


class NameIndex(Generic[_V]):
    """A small side file mapping keys to names (``load(path)`` parses it), re-read
    only when its mtime or size changes: one stat per lookup, no parse."""

    def __init__(self, load: Callable[[Path], dict[str, _V]]) -> None:
        self._load = load
        self._cache: dict[Path, tuple[tuple[int, int], dict[str, _V]]] = {}

    def lookup(self, path: Path, key: str) -> _V | None:
        try:
            st = path.stat()
        except OSError:
            return None
        stamp = (st.st_mtime_ns, st.st_size)
        cached = self._cache.get(path)
        if cached is None or cached[0] != stamp:
            cached = (stamp, self._load(path))
            self._cache[path] = cached
        return cached[1].get(key)


class OneDatabase(BaseReader):
    """A host that keeps one SQLite database at the top of its root: that file is
    the source, and a change to its ``-wal`` is a change to it."""

    db_name: ClassVar[str]

    def source_for(self, path: Path) -> Path | None:
        if path.name == self.db_name + "-wal":
            return path.with_name(self.db_name)
        return path if path.name == self.db_name else None

    def discover(self, root: Path) -> Iterator[Path]:
        # Only the top-level file: the root may hold much else (Hermes: its checkout).
        db = root / self.db_name
        if db.is_file():
            yield db
