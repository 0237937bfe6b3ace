"""Claude Desktop Cowork ("local agent mode"): Claude Code transcripts inside the app.

Each Cowork session is a ``local_<uuid>.json`` sidecar written by the Claude
desktop app plus an ordinary Claude Code JSONL transcript nested in the
session's own directory::

    <userData>/local-agent-mode-sessions/<org>/<workspace>/local_<uuid>.json
    <userData>/local-agent-mode-sessions/<org>/<workspace>/local_<uuid>/
        .claude/projects/<encoded dir>/<cliSessionId>.jsonl
        .claude/projects/<encoded dir>/<cliSessionId>/subagents/**/agent-<id>.jsonl

The transcript is read by :class:`~backscroll.readers.claude_code.ClaudeCodeReader`
unchanged (append-only, tailed by byte offset); this module adds the roots and
the sidecar. The sidecar is rewritten in place when the session is renamed or
archived, so it is a :meth:`sidecars` entry: a change to it re-reads the
transcript whole. From it: the title (``title``, preferred over the
transcript's ``ai-title``), the project (the first of ``userSelectedFolders``;
the transcript's ``cwd`` is a sandbox path, kept only as a fallback) and the
start time (``createdAt``, epoch ms). The session id is the transcript's
(``cliSessionId``), which the CLI's own sessions never share.

Claude Desktop is closed source and publishes no schema: everything here is
known from peer readers, and these facts are unverified and tolerated:

- the sidecar's field set (any field may be missing; a missing or unreadable
  sidecar leaves the transcript's own metadata);
- the ``<encoded dir>`` naming, so the transcript is found by its place under
  ``local_<uuid>/.claude/projects/``, never by rebuilding the name;
- no environment variable is known to move ``<userData>``;
- whether ``claude --resume <cliSessionId>`` works on a Cowork transcript: no
  resume command is given (Cowork sessions reopen inside the app).

Uploads and outputs inside ``local_<uuid>/`` are never walked.
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

from backscroll.model import Cursor, ReaderOptions, ReadResult, Session
from backscroll.readers.base import (
    HostEnv,
    first_line_title,
    is_absolute_path,
    parse_time,
)
from backscroll.readers.claude_code import ClaudeCodeReader
from backscroll.readers.claude_desktop import read_sidecar

SESSIONS_DIR = "local-agent-mode-sessions"
_LOCAL = re.compile(r"^local_[0-9A-Za-z-]+$")


def _session_dir(path: Path) -> Path | None:
    """``local_<uuid>/`` holding the transcript ``path``, or None if not a Cowork one.

    ``local_<uuid>/.claude/projects/<enc>/<id>.jsonl`` or, for a sub-agent,
    ``.../<enc>/<id>/subagents/**/agent-<x>.jsonl`` (``**`` may be empty).
    """
    parts = path.parts
    for i in range(len(parts) - 4, -1, -1):
        if (
            _LOCAL.match(parts[i])
            and parts[i + 1] == ".claude"
            and parts[i + 2] == "projects"
            and SESSIONS_DIR in parts[:i]
        ):
            return Path(*parts[: i + 1])
    return None


def sidecar_of(session_dir: Path) -> Path:
    return session_dir.with_name(session_dir.name + ".json")


class CoworkReader(ClaudeCodeReader):
    host: ClassVar[str] = "claude-desktop-cowork"
    name: ClassVar[str] = "Claude Desktop Cowork"
    version: ClassVar[int] = 1
    #: A changed sidecar reads the transcript again whole (see above), where
    #: Claude Code reads on from the end.
    sidecars_reread_whole: ClassVar[bool] = True

    def roots(self, env: HostEnv) -> list[Path]:
        if env.is_macos:
            bases = [env.app_support() / "Claude"]
        elif env.is_windows:
            local = env.var("LOCALAPPDATA") or env.home / "AppData" / "Local"
            store = local / "Packages" / "Claude_pzs8sxrjxfjjc" / "LocalCache" / "Roaming"
            bases = [store / "Claude", env.appdata() / "Claude"]
        else:
            bases = [env.xdg_config() / "Claude"]
        return [base / SESSIONS_DIR for base in bases]

    def sidecars(self, path: Path) -> list[Path]:
        session_dir = _session_dir(path)
        return [sidecar_of(session_dir)] if session_dir is not None else []

    def source_for(self, path: Path) -> Path | None:
        if path.suffix == ".json" and _LOCAL.match(path.stem) and SESSIONS_DIR in path.parts:
            return self._transcript_of(path)  # a renamed/archived session's sidecar
        if path.suffix != ".jsonl" or _session_dir(path) is None:
            return None
        return super().source_for(path)

    def _transcript_of(self, sidecar: Path) -> Path | None:
        """The main transcript named by a sidecar's ``cliSessionId``, if it exists."""
        cli_id = read_sidecar(sidecar).get("cliSessionId")
        if not isinstance(cli_id, str) or not cli_id or "/" in cli_id or "\\" in cli_id:
            return None
        projects = sidecar.with_suffix("") / ".claude" / "projects"
        try:
            for enc in sorted(p for p in projects.iterdir() if p.is_dir()):
                candidate = enc / f"{cli_id}.jsonl"
                if candidate.is_file():
                    return candidate
        except OSError:
            return None
        return None

    def discover(self, root: Path) -> Iterator[Path]:
        """``<org>/<workspace>/local_<uuid>/.claude/projects/**.jsonl`` only: the
        session's uploads and outputs are never walked."""
        for session_dir in _local_dirs(root):
            projects = session_dir / ".claude" / "projects"
            for dirpath, dirnames, filenames in os.walk(projects, onerror=lambda _e: None):
                dirnames.sort()
                for name in sorted(filenames):
                    path = Path(dirpath) / name
                    if self.source_for(path) == path:
                        yield path

    def read(self, path: Path, prev: Cursor | None, opts: ReaderOptions) -> ReadResult:
        result = super().read(path, prev, opts)
        session_dir = _session_dir(path)
        if session_dir is None or not result.sessions or "/subagents/" in path.as_posix():
            return result
        meta = read_sidecar(sidecar_of(session_dir))
        sessions = tuple(_with_sidecar(s, meta) for s in result.sessions)
        return dataclasses.replace(result, sessions=sessions)


def _local_dirs(root: Path) -> Iterator[Path]:
    """Every ``local_<uuid>`` session directory two levels under ``root``."""
    for org in _subdirs(root):
        for workspace in _subdirs(org):
            for entry in _subdirs(workspace):
                if _LOCAL.match(entry.name):
                    yield entry


def _subdirs(directory: Path) -> list[Path]:
    try:
        return sorted(p for p in directory.iterdir() if p.is_dir() and not p.is_symlink())
    except OSError:
        return []


def _with_sidecar(session: Session, meta: dict[str, Any]) -> Session:
    title = meta.get("title")
    folders = meta.get("userSelectedFolders")
    project = next(
        (f for f in folders if is_absolute_path(f)) if isinstance(folders, list) else iter(()),
        None,
    )
    started = parse_time(meta.get("createdAt"))
    updated = parse_time(meta.get("lastActivityAt"))
    return dataclasses.replace(
        session,
        title=first_line_title(title)
        if isinstance(title, str) and title.strip()
        else session.title,
        project=project or session.project,
        started_at=started if started is not None else session.started_at,
        updated_at=max(u for u in (updated, session.updated_at) if u is not None)
        if updated is not None or session.updated_at is not None
        else None,
        resume_command=None,  # Cowork sessions reopen inside the desktop app only
    )
