"""Claude Desktop's sidecars: the ``local_<id>.json`` files the desktop app keeps
beside the Claude Code transcripts it runs.

Cowork sessions (claude_cowork.py) keep theirs next to their own transcript.
"Code"-tab sessions are ordinary Claude Code transcripts in the home
directory's ``.claude/projects``, indexed once, as Claude Code's; the app keeps
their sidecar in another tree::

    <userData>/claude-code-sessions/<account>/<org>/local_<id>.json

It names its transcript by ``cliSessionId`` (the transcript's file stem) and
holds the title the app shows (``title``, renamed or generated), which the
format notes say to prefer over the transcript's own; nothing else is taken
from it. It is rewritten in place on a rename, so it is a sidecar of the
transcript; when several name one session the newest wins.

Claude Desktop is closed source; these facts are unverified and tolerated:

- the layout and fields, known from one peer reader (no public sample: the
  tests' sidecar is constructed from the format notes);
- where ``<userData>`` is: a reader is handed no environment, so it is looked
  for in the home directory that holds the transcript's ``.claude``, at each
  OS's default place; an ``XDG_CONFIG_HOME`` or ``%APPDATA%`` moved elsewhere
  is not followed.
"""

from __future__ import annotations

import os
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from backscroll.readers.base import first_line_title, read_json_document

#: ``<userData>`` under the home directory: macOS, Linux, Windows (classic
#: installer), Windows (Store install).
USER_DATA = (
    Path("Library", "Application Support", "Claude"),
    Path(".config", "Claude"),
    Path("AppData", "Roaming", "Claude"),
    Path("AppData", "Local", "Packages", "Claude_pzs8sxrjxfjjc", "LocalCache", "Roaming", "Claude"),
)
CODE_SESSIONS_DIR = "claude-code-sessions"
_SIDECAR = re.compile(r"^local_[0-9A-Za-z-]+\.json$")
#: Sidecars are small; anything bigger is not one.
_SIDECAR_MAX_BYTES = 1 << 20
#: A directory changed this soon before it was listed may change again within
#: the same mtime tick (2 s on FAT): its listing is not trusted, but redone.
_RACY_NS = 2_000_000_000


def read_sidecar(path: Path) -> dict[str, Any]:
    """A sidecar's fields; empty when it is missing, unreadable or not one."""
    try:
        if path.stat().st_size > _SIDECAR_MAX_BYTES:
            return {}
        doc = read_json_document(path)
    except (OSError, ValueError):
        return {}
    return doc if isinstance(doc, dict) else {}


def _cli_session_id(meta: dict[str, Any]) -> str | None:
    cli_id = meta.get("cliSessionId")
    if not isinstance(cli_id, str) or not cli_id or "/" in cli_id or "\\" in cli_id:
        return None
    return cli_id


def _home_of(folder: Path) -> Path | None:
    """``<home>`` of a project folder ``<home>/.claude/projects/<enc>``."""
    parents = folder.parents
    if len(parents) < 3 or parents[0].name != "projects" or parents[1].name != ".claude":
        return None
    return parents[2]


@dataclass
class _Tree:
    """One ``claude-code-sessions`` directory as last listed."""

    #: Each directory listed and its mtime then: a sidecar added, removed or
    #: replaced changes one of them.
    dirs: dict[Path, int]
    #: When the listing began (wall clock, ns).
    listed_at: int
    #: Each sidecar: (mtime, size) when parsed, and the session it names.
    files: dict[Path, tuple[tuple[int, int], str | None]]
    by_session: dict[str, tuple[Path, ...]]

    def unchanged(self) -> bool:
        if any(self.listed_at - m < _RACY_NS for m in self.dirs.values()):
            return False
        try:
            if any(os.stat(d).st_mtime_ns != m for d, m in self.dirs.items()):
                return False
            # (a sidecar caught before the app wrote its fields is looked at again)
            return all(_stamp(f) == s for f, (s, sid) in self.files.items() if sid is None)
        except OSError:
            return False


def _stamp(path: Path) -> tuple[int, int]:
    st = os.stat(path)
    return (st.st_mtime_ns, st.st_size)


def _listing(directory: Path) -> tuple[int, list[Path]]:
    """The directory's mtime (taken first) and its entries, sorted."""
    mtime = os.stat(directory).st_mtime_ns
    return mtime, sorted(directory.iterdir())


def _subdirs(entries: list[Path]) -> list[Path]:
    return [p for p in entries if not p.is_symlink() and p.is_dir()]


#: A ``claude-code-sessions`` found missing is looked for again after this long
#: (most homes have none: a cold index asks twice per transcript).
_ABSENT_SECONDS = 5.0


class CodeTabSidecars:
    """Session id -> the Code-tab sidecars naming it. A tree is listed again only
    when one of its directories changes; a sidecar parsed again only when it does;
    a home with none of the app's places is looked at again after _ABSENT_SECONDS."""

    def __init__(self) -> None:
        self._trees: dict[Path, _Tree] = {}
        #: Project folder -> the app's places for its home, and when to look at
        #: them again (0: at once; later while none of them exists).
        self._folders: dict[str, tuple[tuple[Path, ...], float]] = {}

    def of(self, transcript: Path) -> list[Path]:
        """Every Code-tab sidecar naming ``transcript``'s session."""
        # (Asked twice per transcript per pass: the places are worked out once
        # per project folder, without pathlib's parents.)
        folder = os.path.dirname(transcript)
        known = self._folders.get(folder)
        now = time.monotonic()
        if known is None:
            home = _home_of(Path(folder))
            bases = () if home is None else tuple(home / u / CODE_SESSIONS_DIR for u in USER_DATA)
            known = (bases, 0.0)
        bases, again = known
        if not bases or now < again or transcript.suffix != ".jsonl":
            if known is not self._folders.get(folder):
                self._folders[folder] = known
            return []
        found: list[Path] = []
        present = False
        for base in bases:
            sessions = self._sessions(base)
            present = present or sessions is not None
            found += (sessions or {}).get(transcript.stem, ())
        self._folders[folder] = (bases, 0.0 if present else now + _ABSENT_SECONDS)
        return found

    def title(self, transcript: Path) -> str | None:
        """The title in the newest sidecar naming ``transcript``'s session."""
        newest: tuple[tuple[int, str], dict[str, Any]] | None = None
        for path in self.of(transcript):
            try:
                order = (os.stat(path).st_mtime_ns, str(path))
            except OSError:
                continue
            if newest is None or order > newest[0]:
                meta = read_sidecar(path)
                if _cli_session_id(meta) == transcript.stem:
                    newest = (order, meta)
        title = newest[1].get("title") if newest is not None else None
        return (first_line_title(title) or None) if isinstance(title, str) else None

    def _sessions(self, base: Path) -> dict[str, tuple[Path, ...]] | None:
        """Session id -> sidecars under ``base``; None when there is no such tree."""
        tree = self._trees.get(base)
        if tree is not None and tree.unchanged():
            return tree.by_session
        try:
            tree = self._list(base, tree)
        except OSError:
            self._trees.pop(base, None)
            return None
        self._trees[base] = tree
        return tree.by_session

    @staticmethod
    def _list(base: Path, old: _Tree | None) -> _Tree:
        listed_at = time.time_ns()
        dirs: dict[Path, int] = {}
        files: dict[Path, tuple[tuple[int, int], str | None]] = {}
        dirs[base], accounts = _listing(base)  # (OSError: no tree there)
        for account in _subdirs(accounts):
            try:
                dirs[account], orgs = _listing(account)
            except OSError:
                continue
            for org in _subdirs(orgs):
                try:
                    dirs[org], entries = _listing(org)
                except OSError:
                    continue
                for path in entries:
                    if not _SIDECAR.match(path.name):
                        continue
                    try:
                        stamp = _stamp(path)
                    except OSError:
                        continue
                    known = old.files.get(path) if old is not None else None
                    if known is not None and known[0] == stamp:
                        files[path] = known
                    else:
                        files[path] = (stamp, _cli_session_id(read_sidecar(path)))
        grouped: dict[str, list[Path]] = {}
        for path, (_, sid) in files.items():
            if sid is not None:
                grouped.setdefault(sid, []).append(path)
        by_session = {sid: tuple(paths) for sid, paths in grouped.items()}
        return _Tree(dirs, listed_at, files, by_session)


#: One per process, not per reader: readers are pickled to the reader processes
#: with every batch of files, and this cache stays behind.
CODE_TAB = CodeTabSidecars()
