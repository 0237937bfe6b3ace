"""OpenHands CLI: ``~/.openhands/conversations/<id>/events/event-<n>-<eventId>.json``.

The CLI stores conversations with the OpenHands software-agent SDK
(``shared/formats/openhands/README.md``): one directory per conversation, named
by the conversation id without dashes, with one JSON file per event, written
once (events are frozen models; that a file is never rewritten is unverified,
so each event file is a ``document``: re-read whole if it ever changes).

Indexed, keyed by the event ``id``:

- ``MessageEvent`` from ``user``: the ``text`` parts of ``llm_message.content``
  (not ``extended_content``, the context the SDK appends);
- ``MessageEvent`` from ``agent``: the same, as assistant text; an
  ``ActionEvent``'s ``thought`` (the text shown beside a tool call) and the
  ``finish`` tool's ``action.message`` (the final message to the user);
- ``Condensation.summary`` and ``CondensationSummaryEvent.summary``: summaries.

Left out: ``reasoning_content``, ``thinking_blocks``, actions' arguments,
observations (tool results), system prompts and control events.

Session: the directory name; project = ``base_state.json``
``workspace.working_dir`` (**[C]**: the key is what peers read); title =
``base_state.json`` ``tags.title`` when set (**[C]**), else the first user
message (the CLI lists conversations by it). User-sourced messages with a
``sender`` (another agent) or the SDK's own nudges are not prompts (**[C]**).
Sub-agent conversations under ``<id>/subagents/<sub>/events/`` (**[C]**) are
indexed under the parent only when sub-agents are included. Event timestamps carry
no zone (the SDK writes ``datetime.now().isoformat()``): they are read as this
machine's local time. An agent message
written after a web tool ran (since the last user message) is marked tainted.

Roots: ``$OPENHANDS_CONVERSATIONS_DIR``, else ``$OPENHANDS_PERSISTENCE_DIR`` (or
``~/.openhands``) ``/conversations``, the same on every OS. Resume:
``openhands --resume <id>``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any, ClassVar

from backscroll.model import Cursor, Kind, ReaderOptions, ReadResult, Role, Session, Turn
from backscroll.readers.base import (
    BaseReader,
    HostEnv,
    block_texts,
    clean_text,
    first_line_title,
    is_absolute_path,
    is_external_tool,
    looks_like_id,
    parse_time,
    read_json_document,
    resume_in,
)

EVENT_FILE = re.compile(r"event-(\d{5,})-(.+)\.json")
BASE_STATE = "base_state.json"
#: Messages the SDK sends with ``source: "user"`` (a missing-tool-call nudge, a
#: critic's refinement request).
SDK_NUDGES = (
    "Your last response did not include a function call or a message",
    "The task appears incomplete (iteration ",
)


def event_number(path: Path) -> int | None:
    match = EVENT_FILE.fullmatch(path.name)
    return int(match.group(1)) if match else None


def _load(path: Path) -> dict[str, Any] | None:
    try:
        doc = read_json_document(path)
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) else None


def _message_text(event: dict[str, Any]) -> str:
    message = event.get("llm_message")
    content = message.get("content") if isinstance(message, dict) else None
    return clean_text("\n\n".join(block_texts(content)))


def _is_user_message(event: dict[str, Any]) -> bool:
    """A message the person sent: not one from another agent (``sender``), nor a
    nudge the SDK itself sends as the user (**[C]**: prefixes peers skip)."""
    if event.get("kind") != "MessageEvent" or event.get("source") != "user":
        return False
    return not event.get("sender") and not _message_text(event).startswith(SDK_NUDGES)


def prose(event: dict[str, Any]) -> list[tuple[str, Role, str]]:
    """``(key suffix, role, text)`` of each piece of prose in one event."""
    kind = event.get("kind")
    out: list[tuple[str, Role, str]] = []
    if kind == "MessageEvent":
        if _is_user_message(event):
            out.append(("", "user", _message_text(event)))
        elif event.get("source") == "agent":
            out.append(("", "assistant", _message_text(event)))
    elif kind == "ActionEvent":
        out.append(("", "assistant", clean_text("\n\n".join(block_texts(event.get("thought"))))))
        action = event.get("action")
        if event.get("tool_name") == "finish" and isinstance(action, dict):
            message = action.get("message")
            if isinstance(message, str):
                out.append((":finish", "assistant", clean_text(message)))
    elif kind in ("Condensation", "CondensationSummaryEvent"):
        summary = event.get("summary")
        if isinstance(summary, str):
            out.append(("", "summary", clean_text(summary)))
    return [(suffix, role, text) for suffix, role, text in out if text]


def _earlier(events_dir: Path, number: int) -> list[tuple[int, Path]]:
    """The conversation's event files before ``number``, newest first."""
    try:
        names = list(events_dir.iterdir())
    except OSError:
        return []
    found = [(n, p) for p in names if (n := event_number(p)) is not None and n < number]
    return sorted(found, reverse=True)


def _events(conversation: Path) -> list[Path]:
    try:
        files = list((conversation / "events").iterdir())
    except OSError:
        return []
    numbered = [(n, p) for p in files if (n := event_number(p)) is not None]
    return [p for _n, p in sorted(numbered)]


def _local_time(value: object) -> float | None:
    """An event's time: ISO 8601 without a zone is the writer's local time (the
    SDK's ``datetime.now().isoformat()``); anything else as parse_time reads it."""
    if isinstance(value, str):
        try:
            dt = datetime.fromisoformat(value)
        except ValueError:
            return parse_time(value)
        if dt.tzinfo is None:
            return dt.timestamp()  # (a naive datetime's timestamp is local time)
    return parse_time(value)


class OpenHandsReader(BaseReader):
    host: ClassVar[str] = "openhands"
    name: ClassVar[str] = "OpenHands CLI"
    #: 2: event times without a zone are local time, not UTC (read again).
    version: ClassVar[int] = 2
    kind: ClassVar[Kind] = "document"

    def roots(self, env: HostEnv) -> list[Path]:
        persistence = env.var("OPENHANDS_PERSISTENCE_DIR") or env.home / ".openhands"
        return [env.var("OPENHANDS_CONVERSATIONS_DIR") or persistence / "conversations"]

    def source_for(self, path: Path) -> Path | None:
        if path.parent.name == "events" and event_number(path) is not None:
            return path
        return None

    def discover(self, root: Path) -> Iterator[Path]:
        try:
            conversations = sorted(p for p in root.iterdir() if p.is_dir())
        except OSError:
            return
        for conversation in conversations:
            yield from _events(conversation)
            try:
                subagents = sorted((conversation / "subagents").iterdir())
            except OSError:
                continue
            for sub in subagents:
                yield from _events(sub)

    def read(self, path: Path, prev: Cursor | None, opts: ReaderOptions) -> ReadResult:
        size = path.stat().st_size
        event = read_json_document(path, opts.max_document_bytes)  # ValueError: retried
        number = event_number(path) or 0
        if not isinstance(event, dict) or not isinstance(event.get("kind"), str):
            return ReadResult(position=size, unsupported=f"not an event (no kind) in {path.name}")
        conversation = path.parent.parent
        subagent = conversation.parent.name == "subagents"
        if subagent and not opts.include_subagents:
            return ReadResult(position=size, replace=True)
        # A sub-agent's events belong to the conversation that delegated to it.
        owner = conversation.parent.parent if subagent else conversation
        sid = owner.name
        raw_id = event.get("id")
        key = raw_id if looks_like_id(raw_id) else f"n:{number}"
        if subagent:
            key = f"{conversation.name}:{key}"
        when = _local_time(event.get("timestamp"))
        found = prose(event)
        # Only messages look back (to the last user message): thoughts beside
        # tool calls are many, and written before any tool result.
        is_message = event.get("kind") == "MessageEvent"
        earlier = _earlier(path.parent, number) if found and is_message else []
        tainted = is_message and self._after_web_tool(earlier)
        turns = tuple(
            Turn(sid, key + suffix, role, text, when, number * 2 + i,
                 tainted=tainted and role == "assistant", subagent=subagent)
            for i, (suffix, role, text) in enumerate(found)
        )  # fmt: skip
        state = _load(owner / BASE_STATE) or {}
        tags = state.get("tags")
        title = tags.get("title") if isinstance(tags, dict) else None
        if not isinstance(title, str) or not title.strip():
            title = None
            first = not subagent and _is_user_message(event) and found
            if first and not self._user_before(earlier):
                title = first_line_title(found[0][2])
        workspace = state.get("workspace")
        cwd = workspace.get("working_dir") if isinstance(workspace, dict) else None
        project = cwd if is_absolute_path(cwd) else None
        session = Session(
            sid,
            project=project,
            title=title,
            started_at=when if number == 0 and not subagent else None,
            updated_at=when,
            resume_command=resume_in(None, "openhands", "--resume", sid),
        )
        return ReadResult(turns=turns, sessions=(session,), position=size, replace=True)

    @staticmethod
    def _user_before(earlier: list[tuple[int, Path]]) -> bool:
        """Whether a user message comes before (reads back to the first one found)."""
        for _n, path in earlier:
            event = _load(path)
            if event is not None and _is_user_message(event):
                return True
        return False

    @staticmethod
    def _after_web_tool(earlier: list[tuple[int, Path]]) -> bool:
        """Whether a web tool ran since the last user message."""
        for _n, path in earlier:
            event = _load(path)
            if event is None:
                continue
            if _is_user_message(event):
                return False
            if event.get("kind") == "ActionEvent" and is_external_tool(event.get("tool_name")):
                return True
        return False
