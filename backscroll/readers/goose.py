"""Goose (block/goose): ``sessions.db``, and the legacy one-JSONL-per-session files.

Checked against block/goose ``crates/goose/src/session/session_manager.rs``
(``add_message``, ``replace_conversation``, migrations v1-v7),
``session/legacy.rs`` and ``context_mgmt/mod.rs`` (``compact_messages``):

- ``messages.content_json`` is a ``MessageContent[]`` tagged by ``type``; only
  ``text`` items are prose. Tool results come back as ``user`` rows holding only
  ``toolResponse`` and so yield nothing; ``toolRequest``, ``thinking``,
  ``redactedThinking``, ``systemNotification`` ... stay out.
- ``metadata_json`` has ``userVisible``/``agentVisible``. Compaction keeps the old
  messages user-visible (indexed as before), adds the summary as an agent-only
  ``user`` message followed by an agent-only ``assistant`` continuation
  ("The previous message contains a summary ..."): the first is indexed as a
  summary, the second (an instruction to the model) is not.
- Compaction rewrites a session with ``replace_conversation`` (delete and
  re-insert, new row ids); since schema v7 each row keeps its ``message_id``,
  which is the turn key. Older rows without it are keyed by a hash of role,
  creation time and content (plus an occurrence number), which re-insertion
  does not change either.

Legacy ``<session>.jsonl`` files (line 1 metadata, then one ``Message`` per
line) were rewritten whole on save, so :class:`GooseJsonlReader` is a
``document`` reader. Goose imports them into ``sessions.db`` under the same
session id (the file stem) when it creates the database and leaves them in
place: next to a ``sessions.db`` they are left to the database reader.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from backscroll.model import (
    Cursor,
    Kind,
    Problem,
    ReaderOptions,
    ReadResult,
    Role,
    Session,
    Turn,
)
from backscroll.readers.base import (
    BaseReader,
    HostEnv,
    clean_text,
    content_key,
    first_line_title,
    is_external_tool,
    parse_time,
    read_bounded,
    resume_in,
)
from backscroll.readers.hostdb import later, open_readonly

if TYPE_CHECKING:
    from backscroll.readers.hostdb import goose as goose_sql
else:
    goose_sql = later("backscroll.readers.hostdb.goose")


DB_NAME = "sessions.db"
#: Session types that are not conversations a person had.
_HIDDEN_TYPES = frozenset({"hidden"})
_SUBAGENT_TYPES = frozenset({"sub_agent", "subagent"})


def goose_roots(env: HostEnv) -> list[Path]:
    """Goose's sessions folder (``config/paths.rs``: etcetera app strategy)."""
    root = env.var("GOOSE_PATH_ROOT")
    if root is not None:
        return [root / "data" / "sessions"]
    if env.is_windows:
        return [env.appdata() / "Block" / "goose" / "data" / "sessions"]
    return [env.xdg_data() / "goose" / "sessions"]


def goose_resume(session_id: str, project: str | None) -> str:
    return resume_in(project, "goose", "session", "--resume", "--session-id", session_id)


# --------------------------------------------------------------------------- messages


@dataclass(frozen=True, slots=True)
class _Message:
    """One Goose ``Message``, from a database row or a JSONL line."""

    key: str
    role: str
    content: Sequence[Any]
    created: Any
    user_visible: bool
    agent_visible: bool
    seq: int


def _visibility(metadata: Any) -> tuple[bool, bool]:
    if not isinstance(metadata, dict):
        return True, True
    return metadata.get("userVisible") is not False, metadata.get("agentVisible") is not False


def _texts(content: Sequence[Any]) -> list[str]:
    return [
        text
        for item in content
        if isinstance(item, dict) and item.get("type") == "text"
        for text in [clean_text(str(item.get("text") or ""))]
        if text
    ]


def _tool_name(item: Any) -> str | None:
    if not isinstance(item, dict) or item.get("type") not in ("toolRequest", "frontendToolRequest"):
        return None
    call = item.get("toolCall")
    value = call.get("value") if isinstance(call, dict) else None
    name = value.get("name") if isinstance(value, dict) else None
    return name if isinstance(name, str) else None


def _is_summary_continuation(message: _Message | None) -> bool:
    """The agent-only assistant note Goose appends right after a compaction summary."""
    if message is None or message.role != "assistant" or message.user_visible:
        return False
    return any("summary" in text.lower() for text in _texts(message.content))


def _turns(session_id: str, messages: Sequence[_Message], subagent: bool) -> Iterator[Turn]:
    tainted = False
    for idx, msg in enumerate(messages):
        ts = parse_time(msg.created)
        if not msg.user_visible:
            following = messages[idx + 1] if idx + 1 < len(messages) else None
            if msg.role == "user" and msg.agent_visible and _is_summary_continuation(following):
                for j, text in enumerate(_texts(msg.content)):
                    key = msg.key if j == 0 else f"{msg.key}#{j}"
                    yield Turn(
                        session_id, key, "summary", text, ts, msg.seq * 100 + j, subagent=subagent
                    )
            continue
        role: Role = "user" if msg.role == "user" else "assistant"
        if role == "user":
            texts = _texts(msg.content)
            if texts:
                tainted = False
            for j, text in enumerate(texts):
                key = msg.key if j == 0 else f"{msg.key}#{j}"
                yield Turn(session_id, key, "user", text, ts, msg.seq * 100 + j, subagent=subagent)
            continue
        j = 0
        for item in msg.content:
            if is_external_tool(_tool_name(item)):
                tainted = True
            texts = _texts([item])
            if texts:
                key = msg.key if j == 0 else f"{msg.key}#{j}"
                yield Turn(
                    session_id,
                    key,
                    "assistant",
                    texts[0],
                    ts,
                    msg.seq * 100 + j,
                    tainted=tainted,
                    subagent=subagent,
                )
                j += 1


def _title(name: Any, description: Any, turns: Sequence[Turn]) -> str | None:
    for value in (name, description):
        if isinstance(value, str) and value.strip():
            return value.strip()
    prompts = [t.text for t in turns if t.role == "user"]
    return first_line_title(prompts[0]) if prompts else None


# --------------------------------------------------------------------------- sessions.db


class GooseReader(BaseReader):
    host: ClassVar[str] = "goose"
    name: ClassVar[str] = "Goose"
    version: ClassVar[int] = 1
    kind: ClassVar[Kind] = "database"

    def roots(self, env: HostEnv) -> list[Path]:
        return goose_roots(env)

    def source_for(self, path: Path) -> Path | None:
        if path.name in (DB_NAME, DB_NAME + "-wal") and path.parent.name == "sessions":
            return path.parent / DB_NAME
        return None

    def read(self, path: Path, prev: Cursor | None, opts: ReaderOptions) -> ReadResult:
        known: dict[str, str] = dict(prev.state.get("sessions", {})) if prev else {}
        with open_readonly(path) as conn:
            schema = goose_sql.schema(conn)
            missing = sorted(
                {f"sessions.{c}" for c in goose_sql.REQUIRED_SESSION_COLUMNS}
                - {f"sessions.{c}" for c in schema.session_columns}
                | {f"messages.{c}" for c in goose_sql.REQUIRED_MESSAGE_COLUMNS}
                - {f"messages.{c}" for c in schema.message_columns}
            )
            if missing:
                return ReadResult(
                    unsupported=f"unknown schema (version {schema.version}; "
                    f"missing {', '.join(missing)}) in {path}"
                )
            prints = goose_sql.session_fingerprints(conn, schema.session_columns)
            changed = [sid for sid, fp in prints.items() if prev is None or known.get(sid) != fp]
            session_rows = goose_sql.sessions_by_id(conn, changed, schema.session_columns)
            message_rows = goose_sql.messages_of_sessions(conn, changed, schema.message_columns)

        by_session: dict[str, list[goose_sql.MessageRow]] = {}
        for row in message_rows:
            by_session.setdefault(row.session_id, []).append(row)
        problems: list[Problem] = []
        turns: list[Turn] = []
        sessions: list[Session] = []
        for srow in session_rows:
            kind = (srow.session_type or "user").strip()
            subagent = kind in _SUBAGENT_TYPES
            rows = by_session.get(srow.id, [])
            if kind in _HIDDEN_TYPES or (subagent and not opts.include_subagents) or not rows:
                continue
            messages = list(_db_messages(rows, problems))
            session_turns = list(_turns(srow.id, messages, subagent))
            turns.extend(session_turns)
            project = srow.working_dir or None
            sessions.append(
                Session(
                    srow.id,
                    project=project,
                    title=_title(srow.name, srow.description, session_turns),
                    started_at=parse_time(srow.created_at),
                    updated_at=parse_time(srow.updated_at),
                    resume_command=goose_resume(srow.id, project),
                    parent_session_id=srow.parent_session_id or None,
                )
            )
        return ReadResult(
            turns=tuple(turns),
            sessions=tuple(sessions),
            position=0,
            state={"sessions": prints, "schema": schema.version},
            replaced_sessions=frozenset(changed),
            removed_sessions=frozenset(known) - frozenset(prints),
            problems=tuple(problems),
        )


def _db_messages(
    rows: Sequence[goose_sql.MessageRow], problems: list[Problem]
) -> Iterator[_Message]:
    seen: dict[str, int] = {}
    for seq, row in enumerate(rows):
        try:
            content = json.loads(row.content_json or "[]")
            metadata = json.loads(row.metadata_json) if row.metadata_json else None
        except (ValueError, TypeError) as exc:
            problems.append(Problem(f"session {row.session_id} message {row.id}: {exc}"))
            continue
        if not isinstance(content, list):
            problems.append(Problem(f"session {row.session_id} message {row.id}: not a list"))
            continue
        if row.message_id:
            key = str(row.message_id)
        else:
            # Pre-v7 rows: no id of their own, and the row id changes on compaction.
            base = "h:" + content_key(row.role, row.created_timestamp, row.content_json)
            n = seen.get(base, 0)
            seen[base] = n + 1
            key = base if n == 0 else f"{base}#{n}"
        user_visible, agent_visible = _visibility(metadata)
        yield _Message(
            key, row.role, content, row.created_timestamp, user_visible, agent_visible, seq
        )


# --------------------------------------------------------------------------- legacy JSONL


class GooseJsonlReader(BaseReader):
    """Legacy per-session ``<id>.jsonl`` files, rewritten whole on every save."""

    host: ClassVar[str] = "goose"
    name: ClassVar[str] = "Goose (legacy JSONL)"
    version: ClassVar[int] = 1
    kind: ClassVar[Kind] = "document"

    def roots(self, env: HostEnv) -> list[Path]:
        # Very old builds kept sessions under the config dir or ~/.goose.
        return [
            *goose_roots(env),
            env.xdg_config() / "goose" / "sessions",
            env.home / ".goose" / "sessions",
        ]

    def source_for(self, path: Path) -> Path | None:
        if path.suffix != ".jsonl" or path.parent.name != "sessions":
            return None
        if _imported(path):
            return None
        return path

    def read(self, path: Path, prev: Cursor | None, opts: ReaderOptions) -> ReadResult:
        size = path.stat().st_size
        if _imported(path):
            # Goose imported this file into sessions.db (same session id): the
            # database reader indexes it; drop whatever this file gave before.
            return ReadResult(position=size, replace=True)
        limit = opts.max_document_bytes
        data = read_bounded(path, limit, "session file", "index.max_document_bytes")
        session_id = path.stem
        problems: list[Problem] = []
        meta: dict[str, Any] = {}
        messages: list[_Message] = []
        offset = 0
        lines = data.split(b"\n")
        for number, raw in enumerate(lines, start=1):
            line_offset = offset
            offset += len(raw) + 1
            if not raw.strip():
                continue
            last = number == len(lines)
            try:
                obj = json.loads(raw)
            except ValueError as exc:
                if last:  # a file caught mid-rewrite: keep what is indexed, retry later
                    raise ValueError(f"{path} ends in a partial line") from exc
                problems.append(Problem(f"malformed JSON: {exc}", number, line_offset))
                continue
            if not isinstance(obj, dict):
                problems.append(Problem("line is not a JSON object", number, line_offset))
                continue
            if number == 1 and "role" not in obj:
                meta = obj
                continue
            content = obj.get("content")
            if obj.get("role") not in ("user", "assistant") or not isinstance(content, list):
                problems.append(Problem("not a Goose message", number, line_offset))
                continue
            mid = obj.get("id")
            key = str(mid) if isinstance(mid, str) and mid else f"o:{line_offset}"
            user_visible, agent_visible = _visibility(obj.get("metadata"))
            messages.append(
                _Message(
                    key,
                    obj["role"],
                    content,
                    obj.get("created"),
                    user_visible,
                    agent_visible,
                    line_offset,
                )
            )
        turns = list(_turns(session_id, messages, subagent=False))
        project = meta.get("working_dir") if isinstance(meta.get("working_dir"), str) else None
        times = [parse_time(m.created) for m in messages]
        known = [t for t in times if t is not None]
        session = Session(
            session_id,
            project=project or None,
            title=_title(None, meta.get("description"), turns),
            started_at=min(known) if known else None,
            updated_at=max(known) if known else None,
            resume_command=goose_resume(session_id, project or None),
        )
        return ReadResult(
            turns=tuple(turns),
            sessions=(session,) if messages else (),
            position=size,
            replace=True,
            problems=tuple(problems),
        )


def _imported(path: Path) -> bool:
    return (path.parent / DB_NAME).exists()
