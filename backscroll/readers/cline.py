"""Cline: VS Code extension tasks, and the Cline CLI/SDK session store.

- Extension (``saoudrizwan.claude-dev``): ``tasks/<task id>/ui_messages.json`` under
  every VS Code-family editor; parsed by :mod:`backscroll.readers.cline_ui`. The
  project comes from the ``cwdOnTaskInitialization`` of the task's item in
  ``state/taskHistory.json``, else from the ``# Current Working Directory (...)``
  line Cline puts in each ``api_req_started`` request.
- CLI / JetBrains / SDK: ``~/.cline/data/sessions/<id>/<id>.messages.json``
  (``CLINE_DATA_DIR`` moves ``~/.cline/data``, ``CLINE_DIR`` moves ``~/.cline``),
  a ``{version: 1, sessionId, messages: MessageParam[]}`` document written by
  ``buildMessagesFilePayload`` in cline/cline ``sdk/packages/core``; the sibling
  ``<id>.json`` manifest gives cwd, start time and title. Sub-agent message files
  in the same directory are not indexed.

No resume command: an extension task is reopened from Cline's History view; a
CLI session is listed by ``cline history`` and reopened from there (flags unverified).
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path
from typing import Any, ClassVar

from backscroll.model import Cursor, Problem, ReaderOptions, ReadResult, Role, Session, Turn
from backscroll.readers.base import (
    HostEnv,
    NameIndex,
    block_texts,
    calls_external_tool,
    clean_text,
    content_key,
    first_line_title,
    parse_time,
    read_json_document,
)
from backscroll.readers.cline_ui import CLINE_IDS, TaskStoreReader, UiParse

_MESSAGES_SUFFIX = ".messages.json"
_CLI_VERSIONS = (1,)


def _cli_messages_file(path: Path) -> Path | None:
    """``<sessions>/<id>/<id>.messages.json`` for a changed file of a CLI session
    (the sessions folder may have any name: ``CLINE_SESSION_DATA_DIR``)."""
    session_dir = path.parent
    sid = session_dir.name
    if path.name in (f"{sid}{_MESSAGES_SUFFIX}", f"{sid}.json"):
        return session_dir / f"{sid}{_MESSAGES_SUFFIX}"
    return None


def _load_cwds(index: Path) -> dict[str, str]:
    """``cwdOnTaskInitialization`` of each task id in a taskHistory.json."""
    try:
        items = read_json_document(index)
    except (OSError, ValueError):
        return {}
    return {
        str(item.get("id")): cwd
        for item in (items if isinstance(items, list) else [])
        if isinstance(item, dict)
        and isinstance(cwd := item.get("cwdOnTaskInitialization"), str)
        and cwd
    }


#: taskHistory.json, parsed once per change (a cold index reads every task of
#: one history: the document is parsed once, not once per task).
_HISTORY_CWDS = NameIndex(_load_cwds)


def _task_start_cwd(ui_path: Path, task_id: str) -> str | None:
    """``cwdOnTaskInitialization`` of the task's item in
    ``<globalStorage>/state/taskHistory.json``, or None."""
    index = ui_path.parent.parent.parent / "state" / "taskHistory.json"
    return _HISTORY_CWDS.lookup(index, task_id)


class ClineReader(TaskStoreReader):
    host: ClassVar[str] = "cline"
    name: ClassVar[str] = "Cline"
    #: 2: CLI prompts out of the SDK's <user_input> wrapping (read again).
    #: 3: the project from the task history's start directory first (read again).
    version: ClassVar[int] = 3
    extension_ids: ClassVar[tuple[str, ...]] = CLINE_IDS

    def roots(self, env: HostEnv) -> list[Path]:
        sessions = env.var("CLINE_SESSION_DATA_DIR")  # moves the sessions folder alone
        if sessions is None:
            data = env.var("CLINE_DATA_DIR")
            if data is None:
                data = (env.var("CLINE_DIR") or env.home / ".cline") / "data"
            sessions = data / "sessions"
        return [*super().roots(env), sessions]

    def source_for(self, path: Path) -> Path | None:
        return _cli_messages_file(path) or super().source_for(path)

    def read(self, path: Path, prev: Cursor | None, opts: ReaderOptions) -> ReadResult:
        if path.name.endswith(_MESSAGES_SUFFIX):
            return _read_cli(path, opts)
        return super().read(path, prev, opts)

    def session(self, path: Path, session_id: str, parsed: UiParse) -> Session:
        """The project is the task's start directory from the history index first
        (the format notes' order), else the ``# Current Working Directory`` of its
        requests (which follows the workspace if it moves)."""
        session = super().session(path, session_id, parsed)
        cwd = _task_start_cwd(path, session_id)
        if not cwd or cwd == session.project:
            return session
        return dataclasses.replace(session, project=cwd)


# --------------------------------------------------------------------------- CLI sessions


def _manifest(path: Path, sid: str) -> dict[str, Any]:
    try:
        doc = read_json_document(path.parent / f"{sid}.json")
    except (OSError, ValueError):
        return {}
    return doc if isinstance(doc, dict) else {}


#: What the Cline SDK wraps a typed prompt in (sdk/packages/shared/src/prompt/
#: format.ts; Cline strips them before showing it): a notice of a mode switch
#: and the bodies of @-mentioned files and folders go, the prompt is unwrapped.
_MODE_NOTICE = re.compile(r"<mode_notice>.*?</mode_notice>", re.DOTALL)
_ATTACHED = re.compile(r"<(file_content|folder_content)\b[^>]*>.*?</\1>", re.DOTALL)
_WRAPPED = re.compile(r"<(user_input|user_command)\b[^>]*>(.*?)</\1>", re.DOTALL)


def _typed(text: str) -> str:
    """What the person typed, out of the SDK's wrapping."""
    if "<" not in text:
        return text
    text = _MODE_NOTICE.sub("", text)
    text = _ATTACHED.sub("", text)
    return clean_text(_WRAPPED.sub(lambda m: m.group(2), text))


def _read_cli(path: Path, opts: ReaderOptions) -> ReadResult:
    size = path.stat().st_size
    doc = read_json_document(path, opts.max_document_bytes)  # ValueError mid-write: retried
    if not isinstance(doc, dict) or not isinstance(doc.get("messages"), list):
        return ReadResult(position=size, unsupported=f"unknown format in {path.name}")
    version = doc.get("version")
    if version not in _CLI_VERSIONS:
        return ReadResult(
            position=size, unsupported=f"unknown format version {version} in {path.name}"
        )
    sid = path.parent.name
    turns: list[Turn] = []
    problems: list[Problem] = []
    tainted = False
    first_prompt: str | None = None
    for index, msg in enumerate(doc["messages"]):
        if not isinstance(msg, dict) or msg.get("role") not in ("user", "assistant", "system"):
            problems.append(Problem(f"malformed message #{index}: no role"))
            continue
        role = msg["role"]
        content = msg.get("content")
        text = clean_text("\n\n".join(block_texts(content))) if role != "system" else ""
        if role == "user":
            text = _typed(text)
        if role == "user" and text:
            tainted = False
            first_prompt = first_prompt or text
        # The text of an assistant message precedes its tool calls: the calls
        # taint what the assistant writes after their results, not this text.
        after_external = tainted
        if role == "assistant" and calls_external_tool(content):
            tainted = True
        if not text:
            continue  # system prompt, tool results, thinking, images
        message_id = msg.get("id")
        key = message_id if isinstance(message_id, str) and message_id else None
        turn_role: Role = "user" if role == "user" else "assistant"
        turns.append(
            Turn(
                session_id=sid,
                key=key or f"i{index}:{content_key(role, text)}",
                role=turn_role,
                text=text,
                timestamp=parse_time(msg.get("ts")),
                seq=index,
                tainted=after_external and turn_role == "assistant",
            )
        )
    manifest = _manifest(path, sid)
    metadata = manifest.get("metadata")
    title = metadata.get("title") if isinstance(metadata, dict) else None
    if not isinstance(title, str) or not title:
        title = first_line_title(first_prompt) if first_prompt else None
    cwd = manifest.get("cwd") or manifest.get("workspace_root")
    session = Session(
        sid,
        project=cwd if isinstance(cwd, str) and cwd else None,
        title=title,
        started_at=parse_time(manifest.get("started_at")),
        updated_at=parse_time(doc.get("updated_at")),
        resume_command=None,
    )
    return ReadResult(
        turns=tuple(turns),
        sessions=(session,),
        position=size,
        replace=True,
        problems=tuple(problems),
    )
