"""Hermes Agent (NousResearch/hermes-agent): ``$HERMES_HOME/state.db`` (``~/.hermes``).

Messages are inserted once each (``id`` AUTOINCREMENT), so a read re-reads only
sessions with messages past the last id seen (plus new and newly ended session
rows) and lists them in ``replaced_sessions``. Indexed: ``user`` and
``assistant`` rows with content, key = the message id. Out: ``tool`` and
``system`` rows, ``tool_calls``, ``reasoning``, and the background-review
harness prompts ("Review the conversation above and ...") with the replies they
drew. A session continued after compression names its predecessor in
``parent_session_id``; that link is kept on the Session.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from backscroll.model import Cursor, Kind, Problem, ReaderOptions, ReadResult, Session, Turn
from backscroll.readers.base import (
    HostEnv,
    OneDatabase,
    block_texts,
    clean_text,
    first_line_title,
    is_external_tool,
    parse_time,
)
from backscroll.readers.hostdb import later, open_readonly, snapshot

if TYPE_CHECKING:
    from backscroll.readers.hostdb import hermes as q
    from backscroll.readers.hostdb import tracking
else:
    q = later("backscroll.readers.hostdb.hermes")
    tracking = later("backscroll.readers.hostdb.tracking")


DB_NAME = "state.db"
#: The opening of the background-review prompts Hermes persisted into real
#: sessions: the format notes' rule, which also covers the combined prompt
#: ("... and update two things:") beside hermes_state.py's two
#: ``_REVIEW_HARNESS_PREFIXES`` ("... update the skill library", "... consider
#: saving to memory").
HARNESS_PREFIXES = ("Review the conversation above and ",)
#: Keys of tool-call arguments that name the working directory.
WORKDIR_KEYS = ("workdir", "cwd", "working_directory")
BATCH = 64
STATE_VERSION = 1


class HermesReader(OneDatabase):
    db_name: ClassVar[str] = DB_NAME
    host: ClassVar[str] = "hermes"
    name: ClassVar[str] = "Hermes Agent"
    version: ClassVar[int] = 1
    recursive_watch: ClassVar[bool] = False
    kind: ClassVar[Kind] = "database"

    def roots(self, env: HostEnv) -> list[Path]:
        # The same on every OS: $HERMES_HOME, else ~/.hermes.
        return [env.var("HERMES_HOME") or env.home / ".hermes"]

    def read(self, path: Path, prev: Cursor | None, opts: ReaderOptions) -> ReadResult:
        state = tracking.saved_state(prev, STATE_VERSION)
        with open_readonly(path) as conn:
            with snapshot(conn):
                schema = q.schema_problem(conn)
                if schema:
                    return ReadResult(unsupported=f"unknown schema ({schema}) in {path}")
                delta = tracking.changes(conn, state, q)
            fetched = tracking.fetch_changed(conn, delta, BATCH, q.sessions, _with_messages)
        problems: list[Problem] = []
        turns: list[Turn] = []
        sessions: list[Session] = []
        for row, messages in fetched:
            found = session_turns(row.id, messages, problems)
            turns.extend(found)
            first_prompt = next((t.text for t in found if t.role == "user"), "")
            last = max((m.timestamp for m in messages if m.timestamp), default=None)
            sessions.append(
                Session(
                    row.id,
                    project=workdir(messages),
                    title=row.title or first_line_title(first_prompt) or None,
                    started_at=parse_time(row.started_at),
                    updated_at=parse_time(row.ended_at or last),
                    # Reported by Hermes' CLI docs (--resume/-r); not verified here.
                    resume_command=f"hermes --resume {row.id}",
                    parent_session_id=row.parent_session_id or None,
                )
            )
        return delta.result(STATE_VERSION, turns, sessions, problems)


def _with_messages(
    conn: sqlite3.Connection, row: q.SessionRow
) -> tuple[q.SessionRow, list[q.MessageRow]]:
    return row, q.session_messages(conn, row.id)


#: How Hermes stores a content that is a list of parts (a photo with its caption):
#: this sentinel, then the parts as JSON (hermes_state.py ``_encode_content``).
JSON_SENTINELS = ("\x00json:", "\x01json:")


def _content_text(raw: object) -> str:
    """A message's prose: the text parts of a JSON-encoded content, never its
    JSON or its base64 images; a content that does not parse gives none."""
    if not isinstance(raw, str):
        return ""
    if not raw.startswith(JSON_SENTINELS):
        return clean_text(raw)
    try:
        parts = json.loads(raw[len(JSON_SENTINELS[0]) :])
    except (ValueError, RecursionError):
        return ""
    if isinstance(parts, dict):
        parts = parts.get("content")
    return clean_text("\n\n".join(block_texts(parts))) if isinstance(parts, list) else ""


def session_turns(
    session_id: str, messages: list[q.MessageRow], problems: list[Problem]
) -> list[Turn]:
    turns: list[Turn] = []
    tainted = False
    in_harness = False  # inside a background-review exchange: its replies stay out
    for message in messages:
        content = _content_text(message.content)
        if message.role == "system":
            in_harness = in_harness or content.startswith(HARNESS_PREFIXES)
        elif message.role == "user":
            in_harness = content.startswith(HARNESS_PREFIXES)
            tainted = False
            if content and not in_harness:
                turns.append(
                    Turn(
                        session_id,
                        str(message.id),
                        "user",
                        content,
                        parse_time(message.timestamp),
                        message.id,
                    )
                )
        elif message.role == "assistant":
            if content and not in_harness:
                turns.append(
                    Turn(
                        session_id,
                        str(message.id),
                        "assistant",
                        content,
                        parse_time(message.timestamp),
                        message.id,
                        tainted=tainted,
                    )
                )
            if any(is_external_tool(name) for name in _call_names(message, problems)):
                tainted = True
        elif message.role == "tool" and is_external_tool(message.tool_name):
            tainted = True
    return turns


def workdir(messages: list[q.MessageRow]) -> str | None:
    """Hermes keeps no cwd: the first working directory a tool call names."""
    for message in messages:
        for arguments in _call_arguments(message):
            for key in WORKDIR_KEYS:
                value = arguments.get(key)
                if isinstance(value, str) and (value.startswith(("/", "~")) or value[1:3] == ":\\"):
                    return value
    return None


def _calls(message: q.MessageRow, problems: list[Problem] | None = None) -> list[dict[str, Any]]:
    if not message.tool_calls:
        return []
    try:
        calls = json.loads(message.tool_calls)
    except (ValueError, RecursionError) as exc:
        if problems is not None:
            problems.append(Problem(f"malformed tool_calls JSON in message {message.id}: {exc}"))
        return []
    return [c for c in calls if isinstance(c, dict)] if isinstance(calls, list) else []


def _call_names(message: q.MessageRow, problems: list[Problem]) -> list[str]:
    """Tool names, OpenAI style (``function.name``) or flat (``name``)."""
    names = []
    for call in _calls(message, problems):
        function = call.get("function")
        name = function.get("name") if isinstance(function, dict) else call.get("name")
        if isinstance(name, str):
            names.append(name)
    return names


def _call_arguments(message: q.MessageRow) -> Iterator[dict[str, Any]]:
    for call in _calls(message):
        function = call.get("function")
        arguments = function.get("arguments") if isinstance(function, dict) else None
        if arguments is None:
            arguments = call.get("arguments")
        if isinstance(arguments, str):
            try:
                arguments = json.loads(arguments)
            except (ValueError, RecursionError):
                continue
        if isinstance(arguments, dict):
            yield arguments
