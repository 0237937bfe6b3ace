"""OpenCode (sst/opencode, anomalyco/opencode) and its fork Kilo CLI.

Two stores, one session model:

- v1.2+: the SQLite ``opencode.db`` (``opencode-<channel>.db`` for channel builds,
  ``kilo.db`` for Kilo) with ``session``/``message``/``part`` rows and JSON ``data``.
  Read as a database: each read re-reads only the sessions touched since the
  saved high-water marks and lists them in ``replaced_sessions``.
- 2.x: the same database, messages in ``session_message`` (one row per message,
  ``seq`` order; see ``readers/hostdb/opencode.py``). A session with rows there is
  read from them alone (2.x copies old sessions' messages in); a forked session
  leaves out the rows it copied from its parent.
- before v1.2: the JSON tree ``storage/session/<project>/<ses>.json``,
  ``storage/message/<ses>/<msg>.json``, ``storage/part/<msg>/<prt>.json``. The
  unit is the session file: any changed message or part file maps to its
  session's ``storage/session/.../<ses>.json`` and the whole session is re-read.

Both produce the same turns for the same session (keys ``<message id>#<part id>``,
summaries keyed by message id), so a session present in both is one session.
Indexed: ``text`` parts that are not ``synthetic``/``ignored``; a finished
compaction summary (assistant message with ``summary: true``) as one summary
turn. Reasoning, tool, step, file, patch and other parts stay out. In 2.x: a
``user`` row's ``text``, an ``assistant`` row's ``text`` items (keys
``<row id>#<item id>``) and a finished ``compaction`` row's ``summary``; system,
synthetic, shell and switch rows, reasoning and tool items stay out.
"""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from backscroll.model import Cursor, Kind, Problem, ReaderOptions, ReadResult, Role, Session, Turn
from backscroll.readers.base import (
    MAX_DOCUMENT_BYTES,
    BaseReader,
    HostEnv,
    clean_text,
    is_external_tool,
    parse_time,
    read_bounded,
    read_json_document,
    resume_in,
)
from backscroll.readers.hostdb import later, open_readonly, snapshot

if TYPE_CHECKING:
    from backscroll.readers.hostdb import opencode as q
    from backscroll.readers.hostdb import tracking
else:
    q = later("backscroll.readers.hostdb.opencode")
    tracking = later("backscroll.readers.hostdb.tracking")


#: Sessions read per read transaction, so the host is never held up for long.
BATCH = 64
#: 2: marks of 2.x's tables too.
STATE_VERSION = 2


@dataclass(slots=True)
class Message:
    """One message with its parts in part-id order (from the db or the JSON tree)."""

    id: str
    info: Mapping[str, Any]
    created: float
    parts: list[tuple[str, Mapping[str, Any]]] = field(default_factory=list)


class OpenCodeReader(BaseReader):
    host: ClassVar[str] = "opencode"
    name: ClassVar[str] = "OpenCode"
    #: 2: OpenCode 2.x's ``session_message`` read (databases read again once).
    version: ClassVar[int] = 2
    kind: ClassVar[Kind] = "database"

    #: Directory under the XDG data dir, and the parent of a ``storage/`` tree.
    app_dir: ClassVar[str] = "opencode"
    command: ClassVar[str] = "opencode"
    db_env: ClassVar[str] = "OPENCODE_DB"
    db_name: ClassVar[re.Pattern[str]] = re.compile(r"opencode(-[A-Za-z0-9._-]+)?\.db")

    def __init__(self) -> None:
        #: A database named by the host's env var (any file name), learnt in roots().
        self._named_dbs: frozenset[Path] = frozenset()
        #: Roots watched without their subdirectories, learnt in roots().
        self._shallow: frozenset[Path] = frozenset()

    # ------------------------------------------------------------------ locations

    def roots(self, env: HostEnv) -> list[Path]:
        # The XDG data dir on every platform (xdg-basedir, also macOS and Windows).
        data = env.xdg_data() / self.app_dir
        # The data dir is watched shallowly (its databases sit at the top; its
        # snapshot/ holds a git repository per project), the legacy tree deeply.
        self._shallow = frozenset({data})
        found = [data, *self._extra_roots(env)]
        override = env.environ.get(self.db_env, "").strip()
        if override and override != ":memory:":
            db = env.var(self.db_env) or Path(override)
            if not db.is_absolute():
                db = data / db
            self._named_dbs = frozenset({db})
            found.append(db)
        return found

    def _extra_roots(self, env: HostEnv) -> list[Path]:
        # The legacy JSON tree, and where some older installs kept it (config dir).
        return [
            env.xdg_data() / self.app_dir / "storage",
            env.xdg_config() / self.app_dir / "storage",
        ]

    def watch_recursive(self, root: Path) -> bool:
        return root not in self._shallow

    def source_for(self, path: Path) -> Path | None:
        name = path.name
        if name.endswith(("-shm", "-journal")):
            return None
        if name.endswith("-wal"):
            path = path.with_name(name[: -len("-wal")])
            name = path.name
        if self.db_name.fullmatch(name) or path in self._named_dbs:
            return path
        if path.suffix == ".json" and len(path.parents) > 3:
            return self._legacy_source(path)
        return None

    def discover(self, root: Path) -> Iterator[Path]:
        if root.is_file():
            if self.source_for(root) == root:
                yield root
            return
        for db in sorted(root.glob("*.db")):
            if self.source_for(db) == db:
                yield db
        storage = root if root.name == "storage" else root / "storage"
        for doc in sorted(storage.glob("session/*/*.json")):
            if self.source_for(doc) == doc:
                yield doc

    def _legacy_source(self, path: Path) -> Path | None:
        kind_dir, storage = path.parents[1], path.parents[2]
        if storage.name != "storage" or storage.parent.name != self.app_dir:
            return None
        if kind_dir.name == "session":
            return path
        if kind_dir.name == "message":
            return _session_file(storage, path.parent.name)
        if kind_dir.name == "part":
            sid = _part_session(storage, path)
            return _session_file(storage, sid) if sid else None
        return None

    # ------------------------------------------------------------------ reading

    def read(self, path: Path, prev: Cursor | None, opts: ReaderOptions) -> ReadResult:
        if path.suffix == ".json":
            return self._read_legacy(path, opts)
        return self._read_db(path, prev, opts)

    def _read_db(self, path: Path, prev: Cursor | None, opts: ReaderOptions) -> ReadResult:
        state = tracking.saved_state(prev, STATE_VERSION)
        problems: list[Problem] = []
        with open_readonly(path) as conn:
            with snapshot(conn):
                schema = q.schema_problem(conn)
                if schema:
                    return ReadResult(unsupported=f"unknown schema ({schema}) in {path}")
                delta = tracking.changes(conn, state, q)
                found = q.layout(conn)
            fetched = tracking.fetch_changed(
                conn, delta, BATCH, q.sessions, lambda c, row: _with_messages(c, found, row)
            )
        turns: list[Turn] = []
        sessions: list[Session] = []
        for row, msg_rows, part_rows, v2_rows, copied in fetched:
            subagent = bool(row.parent_id)
            if subagent and not opts.include_subagents:
                continue
            if v2_rows:
                turns.extend(v2_turns(row.id, v2_rows, subagent, copied, problems))
            else:
                messages = _db_messages(msg_rows, part_rows, problems)
                turns.extend(session_turns(row.id, messages, subagent))
            sessions.append(
                self._session(
                    row.id,
                    row.directory,
                    row.title,
                    row.time_created,
                    row.time_updated,
                    row.parent_id,
                )
            )
        return delta.result(STATE_VERSION, turns, sessions, problems)

    def _read_legacy(self, path: Path, opts: ReaderOptions) -> ReadResult:
        doc = read_json_document(path, opts.max_document_bytes)
        if not isinstance(doc, dict) or not isinstance(doc.get("id"), str):
            return ReadResult(unsupported=f"unknown format (no session id) in {path}")
        sid: str = doc["id"]
        storage = path.parents[2]
        problems: list[Problem] = []
        messages: list[Message] = []
        for msg_path in sorted((storage / "message" / sid).glob("*.json")):
            info = _load_json(msg_path, problems)
            if info is None:
                continue
            mid = _str(info.get("id")) or msg_path.stem
            message = Message(mid, info, _created(info, 0))
            parts = []
            for part_path in sorted((storage / "part" / mid).glob("*.json")):
                part = _load_json(part_path, problems)
                if part is not None:
                    parts.append((_str(part.get("id")) or part_path.stem, part))
            message.parts = sorted(parts, key=lambda p: p[0])
            messages.append(message)
        messages.sort(key=lambda m: (m.created, m.id))
        parent = _str(doc.get("parentID"))
        subagent = bool(parent)
        time_doc = doc.get("time")
        times: dict[str, Any] = time_doc if isinstance(time_doc, dict) else {}
        turns: list[Turn] = []
        sessions: tuple[Session, ...] = ()
        if not subagent or opts.include_subagents:
            turns = session_turns(sid, messages, subagent)
            session = self._session(
                sid,
                _str(doc.get("directory")),
                _str(doc.get("title")),
                times.get("created"),
                times.get("updated"),
                parent,
            )
            sessions = (session,)
        return ReadResult(
            turns=tuple(turns),
            sessions=sessions,
            position=0,
            replaced_sessions=frozenset({sid}),
            problems=tuple(problems),
        )

    def _session(
        self,
        sid: str,
        directory: str | None,
        title: str | None,
        created: Any,
        updated: Any,
        parent: str | None,
    ) -> Session:
        return Session(
            sid,
            project=directory or None,
            title=title or None,
            started_at=parse_time(created),
            updated_at=parse_time(updated),
            # Sessions are scoped to their project, so resume from its directory.
            resume_command=resume_in(directory, self.command, "-s", sid),
            parent_session_id=parent or None,
        )


class KiloCliReader(OpenCodeReader):
    """Kilo CLI and the current Kilo Code extension: OpenCode's store as ``kilo.db``.

    Legacy Kilo Code (v5.x) tasks live in VS Code's globalStorage with UUID task
    ids; kilo.db sessions have new ``ses_…`` ids, so the two share no id.
    """

    host: ClassVar[str] = "kilo-cli"
    name: ClassVar[str] = "Kilo CLI"
    app_dir: ClassVar[str] = "kilo"
    command: ClassVar[str] = "kilo"
    db_env: ClassVar[str] = "KILO_DB"
    db_name: ClassVar[re.Pattern[str]] = re.compile(r"kilo\.db")

    def _extra_roots(self, env: HostEnv) -> list[Path]:
        return []


# ---------------------------------------------------------------------- turns


def session_turns(session_id: str, messages: Iterable[Message], subagent: bool) -> list[Turn]:
    """The prose turns of one session, messages in order, parts in id order."""
    turns: list[Turn] = []
    tainted = False
    for message in messages:
        role = message.info.get("role")
        timestamp = parse_time(message.created) if message.created else None
        if role == "user":
            tainted = False
            for pid, part in message.parts:
                text = _prose(part)
                if text:
                    turns.append(
                        Turn(
                            session_id,
                            f"{message.id}#{pid}",
                            "user",
                            text,
                            timestamp,
                            len(turns),
                            subagent=subagent,
                        )
                    )
        elif role == "assistant" and message.info.get("summary") is True:
            # A compaction summary counts once the host finished it without error.
            if message.info.get("finish") and not message.info.get("error"):
                texts = [t for t in (_prose(p) for _, p in message.parts) if t]
                if texts:
                    turns.append(
                        Turn(
                            session_id,
                            message.id,
                            "summary",
                            "\n\n".join(texts),
                            timestamp,
                            len(turns),
                            subagent=subagent,
                        )
                    )
        elif role == "assistant":
            for pid, part in message.parts:
                if part.get("type") == "tool" and is_external_tool(part.get("tool")):
                    tainted = True
                    continue
                text = _prose(part)
                if text:
                    turns.append(
                        Turn(
                            session_id,
                            f"{message.id}#{pid}",
                            "assistant",
                            text,
                            timestamp,
                            len(turns),
                            tainted=tainted,
                            subagent=subagent,
                        )
                    )
    return turns


def v2_turns(
    session_id: str,
    rows: Iterable[q.V2Row],
    subagent: bool,
    copied: Copied,
    problems: list[Problem],
) -> list[Turn]:
    """The prose turns of one 2.x session, rows in ``seq`` order; ``copied`` are
    the rows a fork holds as copies of its parent's (indexed with the parent)."""
    turns: list[Turn] = []
    tainted = False

    def add(key: str, role: Role, text: str, timestamp: float | None) -> None:
        turns.append(
            Turn(
                session_id,
                key,
                role,
                text,
                timestamp,
                len(turns),
                tainted=tainted and role == "assistant",
                subagent=subagent,
            )
        )

    for row in rows:
        if row.type not in _V2_READ or (row.seq, row.type, row.data) in copied:
            continue
        data = _parse(row.data, f"session_message {row.id}", problems)
        if data is None:
            continue
        timestamp = parse_time(_created(data, row.time_created)) or None
        if row.type == "user":
            tainted = False
            text = data.get("text")
            if isinstance(text, str) and clean_text(text):
                add(row.id, "user", clean_text(text), timestamp)
        elif row.type == "compaction":
            summary = data.get("summary")
            if data.get("status") != "running" and isinstance(summary, str) and clean_text(summary):
                add(row.id, "summary", clean_text(summary), timestamp)
        else:
            content = data.get("content")
            for n, item in enumerate(content if isinstance(content, list) else []):
                if not isinstance(item, dict):
                    continue
                if item.get("type") == "tool" and is_external_tool(item.get("name")):
                    tainted = True
                elif not item.get("fallbackNotice") and (text := _prose(item)):
                    item_id = item.get("id")
                    add(f"{row.id}#{item_id if isinstance(item_id, str) else n}", "assistant",
                        text, timestamp)  # fmt: skip
    return turns


#: The 2.x message types whose prose is indexed.
_V2_READ = frozenset({"user", "assistant", "compaction"})


def _prose(part: Mapping[str, Any]) -> str:
    if part.get("type") != "text" or part.get("synthetic") or part.get("ignored"):
        return ""
    text = part.get("text")
    return clean_text(text) if isinstance(text, str) else ""


# ---------------------------------------------------------------------- parsing


def _db_messages(
    msg_rows: list[q.MessageRow], part_rows: list[q.PartRow], problems: list[Problem]
) -> list[Message]:
    parts: dict[str, list[tuple[str, Mapping[str, Any]]]] = {}
    for prow in part_rows:
        data = _parse(prow.data, f"part {prow.id}", problems)
        if data is not None:
            parts.setdefault(prow.message_id, []).append((prow.id, data))
    messages: list[Message] = []
    for mrow in msg_rows:
        info = _parse(mrow.data, f"message {mrow.id}", problems)
        if info is None:
            continue
        message = Message(mrow.id, info, _created(info, mrow.time_created))
        message.parts = sorted(parts.get(mrow.id, []), key=lambda p: p[0])
        messages.append(message)
    messages.sort(key=lambda m: (m.created, m.id))
    return messages


def _parse(text: str, what: str, problems: list[Problem]) -> Mapping[str, Any] | None:
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as exc:
        problems.append(Problem(f"malformed JSON in {what}: {exc}"))
        return None
    if not isinstance(data, dict):
        problems.append(Problem(f"{what} is not a JSON object"))
        return None
    return data


def _load_json(path: Path, problems: list[Problem]) -> Mapping[str, Any] | None:
    """One legacy message/part file; a garbled one (mid-rewrite) is reported and
    skipped: its rewrite is a new change that re-reads the session."""
    try:
        text = read_bounded(path, MAX_DOCUMENT_BYTES).decode("utf-8")
    except OSError:
        return None  # vanished between listing and reading
    except UnicodeDecodeError as exc:
        problems.append(Problem(f"unreadable {path.name}: {exc}"))
        return None
    return _parse(text, path.name, problems)


def _created(info: Mapping[str, Any], fallback: int) -> float:
    time = info.get("time")
    created = time.get("created") if isinstance(time, dict) else None
    if isinstance(created, int | float) and not isinstance(created, bool):
        return float(created)
    return float(fallback)


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


#: A fork's copies of its parent's rows: (seq, type, data).
Copied = frozenset[tuple[int, str, str]]
if TYPE_CHECKING:
    Fetched = tuple[q.SessionRow, list[q.MessageRow], list[q.PartRow], list[q.V2Row], Copied]


def _with_messages(conn: sqlite3.Connection, found: q.Layout, row: q.SessionRow) -> Fetched:
    v2_rows = q.v2_messages(conn, found, row.id)
    if v2_rows:  # (2.x's copy of an old session's messages replaces them)
        copied: Copied = frozenset()
        if row.fork_of:  # a fork starts with verbatim copies of its parent's rows
            copied = frozenset(
                (r.seq, r.type, r.data) for r in q.v2_messages(conn, found, row.fork_of)
            )
        return row, [], [], v2_rows, copied
    return (
        row,
        q.session_messages(conn, found, row.id),
        q.session_parts(conn, found, row.id),
        [],
        frozenset(),
    )


# ---------------------------------------------------------------------- legacy tree


def _session_file(storage: Path, session_id: str) -> Path | None:
    """``storage/session/<project>/<ses>.json`` for a session id, if it exists."""
    try:
        projects = [p for p in (storage / "session").iterdir() if p.is_dir()]
    except OSError:
        return None
    for project in sorted(projects):
        candidate = project / f"{session_id}.json"
        if candidate.is_file():
            return candidate
    return None


def _part_session(storage: Path, part_path: Path) -> str | None:
    """The session of a part file: its own ``sessionID`` (current builds write it),
    else the message directory that holds its message."""
    message_id = part_path.parent.name
    try:
        data = json.loads(read_bounded(part_path, MAX_DOCUMENT_BYTES))
        if isinstance(data, dict) and isinstance(data.get("sessionID"), str):
            return str(data["sessionID"])
    except (OSError, ValueError):
        pass
    for msg in (storage / "message").glob(f"*/{message_id}.json"):
        return msg.parent.name
    return None
