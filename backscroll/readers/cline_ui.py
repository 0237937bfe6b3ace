"""The Cline task store shared by Cline, Roo Code and legacy Kilo Code.

Each VS Code-family extension keeps one directory per task under
``<editor>/User/globalStorage/<extension id>/tasks/<task id>/``. Its
``ui_messages.json`` (a ``ClineMessage[]`` array rewritten whole on every UI
update) is the prose source; ``api_conversation_history.json`` is the raw API
traffic wrapped in ``<environment_details>`` noise and is not indexed.

What counts as prose (checked against cline/cline ``src/shared/ExtensionMessage.ts``
and ``Task.startTask``, which records the typed task as the first ``say: "text"``):

- user: ``say: "task"``, the first ``say: "text"`` before any API request, ``say: "user_feedback"``;
- assistant: ``say: "text"`` after that, ``say: "completion_result"``, and the
  question/response inside ``ask: "followup"`` / ``"plan_mode_respond"`` / ``"act_mode_respond"``;
- summary: ``ask: "condense"`` (Cline), ``say: "tool"`` with ``tool: "summarizeTask"``
  (Cline), ``say: "condense_context"`` with ``contextCondense.summary`` (Roo/Kilo).

Everything else (tools, commands and their output, reasoning, API request blobs,
checkpoints, errors, MCP traffic) stays out.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from backscroll.model import Cursor, Kind, Problem, ReaderOptions, ReadResult, Role, Session, Turn
from backscroll.readers.base import (
    BaseReader,
    HostEnv,
    clean_text,
    content_key,
    first_line_title,
    is_external_tool,
    parse_time,
    read_json_document,
)

UI_MESSAGES = "ui_messages.json"
HISTORY_ITEM = "history_item.json"

#: Extension ids of the hosts that share this store, lower-case as VS Code writes them.
CLINE_IDS = ("saoudrizwan.claude-dev",)
ROO_IDS = ("rooveterinaryinc.roo-cline",)
KILO_IDS = ("kilocode.kilo-code",)

_CWD = re.compile(r"# Current (?:Working|Workspace) Directory \((.+?)\) Files")
_TOOL_KINDS = frozenset({"tool"})
_BROWSER_KINDS = frozenset({"browser_action_launch", "browser_action", "browser_action_result"})
_RESPONSE_ASKS = {
    "followup": "question",
    "plan_mode_respond": "response",
    "act_mode_respond": "response",
}


def extension_dirs(env: HostEnv, extension_id: str) -> list[Path]:
    """``globalStorage/<extension_id>`` under every VS Code-family ``User`` dir,
    plus Kiro and the remote-server data dirs (VS Code Remote / Cursor server)."""
    users = list(env.editor_user_dirs())
    kiro_base = (
        env.app_support() if env.is_macos else env.appdata() if env.is_windows else env.xdg_config()
    )
    users.append(kiro_base / "Kiro" / "User")
    for server in (".vscode-server", ".vscode-server-insiders", ".cursor-server"):
        users.append(env.home / server / "data" / "User")
    return [user / "globalStorage" / extension_id for user in users]


def task_file_for(path: Path, extension_ids: tuple[str, ...]) -> Path | None:
    """``tasks/<id>/ui_messages.json`` of one of ``extension_ids`` for ``path``.

    A changed ``history_item.json`` (Roo's per-task title/workspace) maps to its
    task's ``ui_messages.json``; the API history and metadata files map to nothing.
    """
    if path.name not in (UI_MESSAGES, HISTORY_ITEM) or path.parent.parent.name != "tasks":
        return None
    parts = {part.lower() for part in path.parts}
    if not any(ext in parts for ext in extension_ids):
        return None
    return path if path.name == UI_MESSAGES else path.parent / UI_MESSAGES


# --------------------------------------------------------------------------- parsing


@dataclass(slots=True)
class UiParse:
    """What one ``ui_messages.json`` says."""

    turns: list[Turn] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    first_prompt: str | None = None
    cwd: str | None = None
    started_at: float | None = None
    updated_at: float | None = None


def _json_obj(text: Any) -> dict[str, Any] | None:
    if not isinstance(text, str) or not text.lstrip().startswith("{"):
        return None
    try:
        obj = json.loads(text)
    except ValueError:
        return None
    return obj if isinstance(obj, dict) else None


def _is_external(kind: str, text: Any) -> bool:
    """Did this tool row bring in content from outside the machine?"""
    if kind in _BROWSER_KINDS:
        return True
    obj = _json_obj(text)
    if obj is None:
        return False
    if kind in _TOOL_KINDS:
        return is_external_tool(str(obj.get("tool") or ""))
    if kind == "use_mcp_server":
        return is_external_tool(str(obj.get("toolName") or "")) or is_external_tool(
            str(obj.get("serverName") or "")
        )
    return False


def _prose(msg: dict[str, Any], kind: str, seen_request: bool) -> tuple[Role, str] | None:
    """The role and text of a prose row, or None for noise."""
    text = msg.get("text")
    if msg.get("type") == "say":
        if kind == "task" or kind == "user_feedback":
            return ("user", text) if isinstance(text, str) else None
        if kind == "text":
            if not isinstance(text, str):
                return None
            return ("user" if not seen_request else "assistant", text)
        if kind == "completion_result":
            return ("assistant", text) if isinstance(text, str) else None
        if kind == "condense_context":
            condense = msg.get("contextCondense")
            summary = condense.get("summary") if isinstance(condense, dict) else None
            return ("summary", summary) if isinstance(summary, str) else None
        if kind == "tool":
            obj = _json_obj(text)
            if obj and obj.get("tool") == "summarizeTask" and isinstance(obj.get("content"), str):
                return ("summary", obj["content"])
        return None
    if kind in _RESPONSE_ASKS:
        obj = _json_obj(text)
        if obj is not None:
            value = obj.get(_RESPONSE_ASKS[kind])
            return ("assistant", value) if isinstance(value, str) else None
        return ("assistant", text) if isinstance(text, str) else None
    if kind in ("condense", "summarize_task"):
        return ("summary", text) if isinstance(text, str) else None
    return None


def _cwd_from_request(text: Any) -> str | None:
    obj = _json_obj(text)
    request = obj.get("request") if obj else None
    if isinstance(request, str):
        match = _CWD.search(request)
        if match:
            return match.group(1).strip()
    return None


def parse_ui_messages(doc: Any, session_id: str) -> UiParse | None:
    """Turns from a ``ClineMessage[]`` document; None if it is not one.

    Keys are the message's ``ts`` (Cline's own message id: a streamed message keeps
    its ``ts`` while it grows), ``#n``-suffixed if a ``ts`` repeats, or position +
    content hash for a row without one. A ``partial`` row directly followed by a
    row of the same kind is an older state of the same streamed message: dropped.
    """
    if not isinstance(doc, list):
        return None
    out = UiParse()
    seen_request = False
    tainted = False
    used: dict[str, int] = {}
    rows: list[tuple[int, dict[str, Any], str]] = []
    for index, msg in enumerate(doc):
        kind = msg.get(str(msg.get("type"))) if isinstance(msg, dict) else None
        if not isinstance(msg, dict) or msg.get("type") not in ("say", "ask") or not kind:
            out.problems.append(Problem(f"malformed message #{index}: not a say/ask object"))
            continue
        rows.append((index, msg, str(kind)))
    for pos, (index, msg, kind) in enumerate(rows):
        ts = parse_time(msg.get("ts"))
        if ts is not None:
            out.started_at = ts if out.started_at is None else min(out.started_at, ts)
            out.updated_at = ts if out.updated_at is None else max(out.updated_at, ts)
        if kind == "api_req_started":
            out.cwd = out.cwd or _cwd_from_request(msg.get("text"))
        if msg.get("partial") is True and pos + 1 < len(rows):
            _, nxt, nxt_kind = rows[pos + 1]
            if nxt.get("type") == msg.get("type") and nxt_kind == kind:
                continue
        prose = _prose(msg, kind, seen_request)
        if kind.startswith("api_req"):
            seen_request = True
        if prose is None:
            if _is_external(kind, msg.get("text")):
                tainted = True
            continue
        role, raw = prose
        text = clean_text(raw)
        if not text:
            continue
        if role == "user":
            tainted = False
            if out.first_prompt is None:
                out.first_prompt = text
        raw_ts = msg.get("ts")
        base = str(raw_ts) if isinstance(raw_ts, int | float) else f"i{index}:{content_key(text)}"
        n = used.get(base, 0)
        used[base] = n + 1
        key = base if n == 0 else f"{base}#{n}"
        out.turns.append(
            Turn(
                session_id=session_id,
                key=key,
                role=role,
                text=text,
                timestamp=ts,
                seq=index,
                tainted=tainted and role == "assistant",
            )
        )
    return out


def read_history_item(task_dir: Path) -> dict[str, Any]:
    """Roo's per-task ``history_item.json`` (title, workspace, ts), or {}."""
    try:
        item = read_json_document(task_dir / HISTORY_ITEM)
    except (OSError, ValueError):
        return {}
    return item if isinstance(item, dict) else {}


# --------------------------------------------------------------------------- reader


class TaskStoreReader(BaseReader):
    """A reader for one extension's ``tasks/<id>/ui_messages.json`` files."""

    kind: ClassVar[Kind] = "document"
    extension_ids: ClassVar[tuple[str, ...]]

    def roots(self, env: HostEnv) -> list[Path]:
        return [d for ext in self.extension_ids for d in extension_dirs(env, ext)]

    def source_for(self, path: Path) -> Path | None:
        return task_file_for(path, self.extension_ids)

    def sidecars(self, path: Path) -> list[Path]:
        return [path.parent / HISTORY_ITEM] if path.name == UI_MESSAGES else []

    def discover(self, root: Path) -> Iterator[Path]:
        tasks = root / "tasks"
        if root.name == "tasks":
            tasks = root
        try:
            dirs = sorted(p for p in tasks.iterdir() if p.is_dir())
        except OSError:  # not an extension root (the Cline CLI's sessions dir)
            yield from (p for p in super().discover(root) if p.is_file())
            return
        for task_dir in dirs:
            candidate = task_dir / UI_MESSAGES
            if candidate.is_file() and self.source_for(candidate) is not None:
                yield candidate

    def read(self, path: Path, prev: Cursor | None, opts: ReaderOptions) -> ReadResult:
        size = path.stat().st_size
        doc = read_json_document(path, opts.max_document_bytes)  # ValueError mid-write: retried
        session_id = path.parent.name
        parsed = parse_ui_messages(doc, session_id)
        if parsed is None:
            return ReadResult(
                position=size, unsupported=f"unknown format in {path.name}: not a message array"
            )
        return ReadResult(
            turns=tuple(parsed.turns),
            sessions=(self.session(path, session_id, parsed),),
            position=size,
            replace=True,
            problems=tuple(parsed.problems),
        )

    def session(self, path: Path, session_id: str, parsed: UiParse) -> Session:
        """Session metadata; Roo-shaped stores add ``history_item.json``."""
        item = read_history_item(path.parent)
        task = item.get("task")
        workspace = item.get("workspace")
        parent = item.get("parentTaskId")
        title = first_line_title(task) if isinstance(task, str) and task.strip() else None
        return Session(
            session_id,
            project=workspace if isinstance(workspace, str) and workspace else parsed.cwd,
            title=title or (first_line_title(parsed.first_prompt) if parsed.first_prompt else None),
            started_at=parsed.started_at,
            updated_at=parsed.updated_at,
            # No resume command: the task is reopened from the extension's History view.
            resume_command=None,
            parent_session_id=parent if isinstance(parent, str) and parent else None,
        )
