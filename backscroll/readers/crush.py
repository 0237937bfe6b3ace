"""Crush (charmbracelet/crush): one SQLite ``.crush/crush.db`` per project.

The databases are found through the global registry ``projects.json`` (each
project's ``data_dir``); a change to ``projects.json`` itself maps to nothing
here (``source_for`` returns None): the periodic rescan calls :meth:`discover`,
which reads it again and yields any new database.

Each read re-reads only the sessions touched since the saved marks (session
``updated_at``, top message rowid) and lists them in ``replaced_sessions``. One
turn per message (key = message id): the ``text`` parts of ``user`` and
``assistant`` rows; ``is_summary_message`` rows are summaries. ``tool`` rows,
tool calls/results, reasoning and attachments stay out.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from backscroll.model import Cursor, Kind, Problem, ReaderOptions, ReadResult, Role, Session, Turn
from backscroll.readers.base import (
    BaseReader,
    HostEnv,
    clean_text,
    is_external_tool,
    parse_time,
    read_side_file,
    resume_in,
)
from backscroll.readers.hostdb import later, open_readonly, snapshot

if TYPE_CHECKING:
    from backscroll.readers.hostdb import crush as q
    from backscroll.readers.hostdb import tracking
else:
    q = later("backscroll.readers.hostdb.crush")
    tracking = later("backscroll.readers.hostdb.tracking")


DB_NAME = "crush.db"
REGISTRY = "projects.json"
BATCH = 64
STATE_VERSION = 1


class CrushReader(BaseReader):
    host: ClassVar[str] = "crush"
    name: ClassVar[str] = "Crush"
    version: ClassVar[int] = 1
    kind: ClassVar[Kind] = "database"

    def __init__(self) -> None:
        #: database -> project directory, from the registry read by discover().
        self._projects: dict[Path, str] = {}

    def roots(self, env: HostEnv) -> list[Path]:
        # The global data dir, as crush's GlobalConfigData() resolves it.
        override = env.var("CRUSH_GLOBAL_DATA")
        if override:
            return [override]
        if env.var("XDG_DATA_HOME"):
            return [env.xdg_data() / "crush"]
        if env.is_windows:
            local = env.var("LOCALAPPDATA") or env.home / "AppData" / "Local"
            return [local / "crush"]
        return [env.home / ".local" / "share" / "crush"]

    def source_for(self, path: Path) -> Path | None:
        if path.name == DB_NAME + "-wal":
            return path.with_name(DB_NAME)
        if path.name == DB_NAME:
            return path
        return None

    def discover(self, root: Path) -> Iterator[Path]:
        """Every project database named in ``<root>/projects.json`` that exists."""
        for project, data_dir in _registry(root / REGISTRY):
            db = data_dir / DB_NAME
            if project:
                self._projects[db] = project
            if db.is_file():
                yield db

    def read(self, path: Path, prev: Cursor | None, opts: ReaderOptions) -> ReadResult:
        state = tracking.saved_state(prev, STATE_VERSION)
        with open_readonly(path) as conn:
            with snapshot(conn):
                schema = q.schema_problem(conn)
                if schema:
                    return ReadResult(unsupported=f"unknown schema ({schema}) in {path}")
                delta = tracking.changes(conn, state, q)
            fetched = tracking.fetch_changed(conn, delta, BATCH, q.sessions, _with_messages)
        project = self.project_of(path)
        problems: list[Problem] = []
        turns: list[Turn] = []
        sessions: list[Session] = []
        for row, messages in fetched:
            subagent = bool(row.parent_session_id)
            if subagent and not opts.include_subagents:
                continue
            turns.extend(session_turns(row, messages, subagent, problems))
            sessions.append(
                Session(
                    row.id,
                    project=project,
                    title=row.title or None,
                    started_at=parse_time(row.created_at),
                    updated_at=parse_time(row.updated_at),
                    resume_command=resume_in(project, "crush", "-s", row.id),
                    parent_session_id=row.parent_session_id or None,
                )
            )
        return delta.result(STATE_VERSION, turns, sessions, problems)

    def project_of(self, db: Path) -> str | None:
        """The project directory: from the registry, else the parent of ``.crush``."""
        if db in self._projects:
            return self._projects[db]
        if db.parent.name == ".crush":
            return str(db.parent.parent)
        return None


def _with_messages(
    conn: sqlite3.Connection, row: q.SessionRow
) -> tuple[q.SessionRow, list[q.MessageRow]]:
    return row, q.session_messages(conn, row.id)


def session_turns(
    session: q.SessionRow, messages: list[q.MessageRow], subagent: bool, problems: list[Problem]
) -> list[Turn]:
    turns: list[Turn] = []
    tainted = False
    for message in messages:
        try:
            parts = json.loads(message.parts)
        except (ValueError, RecursionError) as exc:
            problems.append(Problem(f"malformed parts JSON in message {message.id}: {exc}"))
            continue
        if not isinstance(parts, list):
            problems.append(Problem(f"parts of message {message.id} is not a JSON array"))
            continue
        if message.role == "user":
            tainted = False
        elif message.role != "assistant":
            continue  # tool results and system rows
        texts: list[str] = []
        text_tainted = False
        for part in parts:
            kind, data = _part(part)
            if kind == "tool_call" and is_external_tool(data.get("name")):
                tainted = True
            elif kind == "text" and isinstance(data.get("text"), str):
                text = clean_text(data["text"])
                if text:
                    texts.append(text)
                    text_tainted = text_tainted or tainted
        if not texts:
            continue
        role: Role = "user" if message.role == "user" else "assistant"
        if role == "assistant" and (message.is_summary or message.id == session.summary_message_id):
            role = "summary"
        turns.append(
            Turn(
                session.id,
                message.id,
                role,
                "\n\n".join(texts),
                parse_time(message.created_at),
                len(turns),
                tainted=role == "assistant" and text_tainted,
                subagent=subagent,
            )
        )
    return turns


def _part(part: Any) -> tuple[str | None, dict[str, Any]]:
    if not isinstance(part, dict):
        return None, {}
    data = part.get("data")
    return part.get("type"), data if isinstance(data, dict) else {}


def _registry(path: Path) -> Iterator[tuple[str | None, Path]]:
    """``(project path, data dir)`` pairs from ``projects.json``; nothing if it is
    missing or garbled (a mid-write registry is read again at the next rescan)."""
    try:
        doc = json.loads(read_side_file(path))
    except (OSError, ValueError):
        return
    projects = doc.get("projects") if isinstance(doc, dict) else None
    if not isinstance(projects, list):
        return
    for entry in projects:
        if not isinstance(entry, dict):
            continue
        project = entry.get("path") if isinstance(entry.get("path"), str) else None
        data_dir = entry.get("data_dir")
        if isinstance(data_dir, str) and data_dir:
            yield project, Path(data_dir)
        elif project:
            yield project, Path(project) / ".crush"
