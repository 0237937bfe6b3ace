"""Continue (IDE extension and the ``cn`` CLI): ``~/.continue/sessions/<id>.json``.

One JSON object per session, rewritten whole on each save:
``{sessionId, title, workspaceDirectory, history: ChatHistoryItem[]}``. Indexed:
``history[].message`` with role ``user``/``assistant`` (text parts only) and an
item's ``conversationSummary`` (a compaction summary). Left out: ``thinking``,
``tool`` and ``system`` messages, ``contextItems`` (attached file contents),
``promptLogs``, ``toolCallStates``, ``editorState`` and tool call arguments.

``CONTINUE_GLOBAL_DIR`` moves ``~/.continue``. The ``sessions.json`` index maps
to nothing (the title is in the session file); its ``dateCreated`` for the
session is read as the start time. Messages carry no timestamps and no ids:
keys are position + content hash.

Resume: ``cn --fork <sessionId>`` continues the conversation from the CLI (``cn
--resume`` only reopens the last one); in the IDE, from the history panel.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, ClassVar

from backscroll.model import Cursor, Kind, Problem, ReaderOptions, ReadResult, Role, Session, Turn
from backscroll.readers.base import (
    BaseReader,
    HostEnv,
    block_texts,
    clean_text,
    content_key,
    first_line_title,
    is_external_tool,
    parse_time,
    path_from_uri,
    read_json_document,
    resume_in,
)

_INDEX = "sessions.json"
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", re.I)
_PLACEHOLDER_TITLES = frozenset({"", "New Session"})


def _tool_names(message: dict[str, Any]) -> list[str]:
    names: list[str] = []
    calls = message.get("toolCalls")
    if isinstance(calls, list):
        for call in calls:
            function = call.get("function") if isinstance(call, dict) else None
            name = function.get("name") if isinstance(function, dict) else None
            if isinstance(name, str):
                names.append(name)
    return names


def _date_created(path: Path, session_id: str) -> float | None:
    try:
        index = read_json_document(path.parent / _INDEX)
    except (OSError, ValueError):
        return None
    if isinstance(index, list):
        for entry in index:
            if isinstance(entry, dict) and entry.get("sessionId") == session_id:
                return parse_time(entry.get("dateCreated"))
    return None


class ContinueReader(BaseReader):
    host: ClassVar[str] = "continue"
    name: ClassVar[str] = "Continue"
    version: ClassVar[int] = 1
    kind: ClassVar[Kind] = "document"

    def roots(self, env: HostEnv) -> list[Path]:
        # ~/.continue on every OS (%USERPROFILE%\.continue on Windows).
        return [(env.var("CONTINUE_GLOBAL_DIR") or env.home / ".continue") / "sessions"]

    def source_for(self, path: Path) -> Path | None:
        if path.suffix != ".json" or path.name == _INDEX or path.parent.name != "sessions":
            return None
        # Session files are named by UUID; under ~/.continue any name is ours.
        if _UUID.fullmatch(path.stem) or path.parent.parent.name == ".continue":
            return path
        return None

    def read(self, path: Path, prev: Cursor | None, opts: ReaderOptions) -> ReadResult:
        stat = path.stat()
        doc = read_json_document(path, opts.max_document_bytes)  # ValueError mid-write: retried
        if not isinstance(doc, dict) or not isinstance(doc.get("history"), list):
            return ReadResult(
                position=stat.st_size,
                unsupported=f"unknown format in {path.name}: no history array",
            )
        raw_id = doc.get("sessionId")
        sid = raw_id if isinstance(raw_id, str) and raw_id else path.stem
        turns: list[Turn] = []
        problems: list[Problem] = []
        tainted = False
        first_prompt: str | None = None
        for index, item in enumerate(doc["history"]):
            message = item.get("message") if isinstance(item, dict) else None
            if not isinstance(message, dict):
                problems.append(Problem(f"malformed history item #{index}: no message"))
                continue
            role = message.get("role")
            if role in ("user", "assistant"):
                text = clean_text("\n\n".join(block_texts(message.get("content"))))
                if text:
                    turn_role: Role = "user" if role == "user" else "assistant"
                    if turn_role == "user":
                        tainted = False
                        first_prompt = first_prompt or text
                    turns.append(
                        Turn(
                            session_id=sid,
                            key=f"{index}:{content_key(role, text)}",
                            role=turn_role,
                            text=text,
                            seq=index * 2,
                            tainted=tainted and turn_role == "assistant",
                        )
                    )
                if role == "assistant":
                    names = _tool_names(message)
                    if any(is_external_tool(n) for n in names):
                        tainted = True
            summary = item.get("conversationSummary")
            if isinstance(summary, str) and clean_text(summary):
                text = clean_text(summary)
                turns.append(
                    Turn(
                        session_id=sid,
                        key=f"{index}:s:{content_key(text)}",
                        role="summary",
                        text=text,
                        seq=index * 2 + 1,
                    )
                )
        title = doc.get("title")
        if not isinstance(title, str) or title.strip() in _PLACEHOLDER_TITLES:
            title = first_line_title(first_prompt) if first_prompt else None
        project = path_from_uri(doc.get("workspaceDirectory"), plain_paths=True)
        session = Session(
            sid,
            project=project,
            title=title,
            started_at=_date_created(path, sid),
            updated_at=stat.st_mtime,
            resume_command=resume_in(project, "cn", "--fork", sid),
        )
        return ReadResult(
            turns=tuple(turns),
            sessions=(session,),
            position=stat.st_size,
            replace=True,
            problems=tuple(problems),
        )
