"""Kiro (AWS): two stores, so two readers.

:class:`KiroCliReader` (host ``kiro``, append): ``kiro-cli`` keeps
``~/.kiro/sessions/cli/<uuid>.jsonl``, an event log of ``{"version": "v1", "kind",
"data": {"content": [{kind, data}], "meta"}}`` records, and a rewritten
``<uuid>.json`` sidecar with cwd, title and times. Indexed: ``Prompt`` and
``AssistantMessage`` ``text`` blocks; thinking, toolUse and ``ToolResults`` stay out.
Only prompts carry a time (epoch seconds), so replies take their prompt's time.

:class:`KiroIdeReader` (host ``kiro-ide``, document): the IDE's
``.../User/globalStorage/kiro.kiroagent/workspace-sessions/<workspace>/<id>.json``
documents, rewritten whole: ``{sessionId, title, workspacePath, history: [{message:
{role, content, id}}]}``. The IDE has no command that resumes a session: open the
workspace in Kiro and pick the session from the agent chat's session history.
"""

from __future__ import annotations

import base64
import binascii
from pathlib import Path
from typing import Any, ClassVar

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
    MTIME_NOTE,
    BaseReader,
    HostEnv,
    block_texts,
    clean_text,
    content_key,
    first_line_title,
    is_external_tool,
    next_line_number,
    parse_time,
    read_json_document,
    resume_in,
    tail_jsonl,
)

CLI_VERSION = "v1"
PROMPT_TIME_NOTE = "timestamp is the time of the prompt it answers"
_CLI_SIDECAR_MAX = 1 << 20


# --------------------------------------------------------------------------- CLI


def _cli_texts(content: Any) -> list[str]:
    """``text`` blocks of a CLI record (``{"kind": "text", "data": str}``)."""
    out: list[str] = []
    for block in content if isinstance(content, list) else []:
        if isinstance(block, dict) and block.get("kind") == "text":
            data = block.get("data")
            if isinstance(data, dict):
                data = data.get("data")
            if isinstance(data, str):
                out.append(data)
    return out


def _cli_external_tool(content: Any) -> bool:
    for block in content if isinstance(content, list) else []:
        if isinstance(block, dict) and block.get("kind") == "toolUse":
            data = block.get("data")
            if isinstance(data, dict) and is_external_tool(data.get("name")):
                return True
    return False


def _cli_sidecar(path: Path) -> dict[str, Any]:
    """The sidecar snapshot, or {} while it is missing or caught mid-rewrite."""
    try:
        doc = read_json_document(path.with_suffix(".json"), _CLI_SIDECAR_MAX)
    except (OSError, ValueError):
        return {}
    return doc if isinstance(doc, dict) else {}


def _text_field(doc: dict[str, Any], key: str) -> str | None:
    value = doc.get(key)
    return value.strip() if isinstance(value, str) and value.strip() else None


class KiroCliReader(BaseReader):
    host: ClassVar[str] = "kiro"
    name: ClassVar[str] = "Kiro CLI"
    version: ClassVar[int] = 1
    kind: ClassVar[Kind] = "append"

    def roots(self, env: HostEnv) -> list[Path]:
        # ``~/.kiro`` on every OS; no environment variable moves it.
        return [env.home / ".kiro" / "sessions" / "cli"]

    def sidecars(self, path: Path) -> list[Path]:
        return [path.with_suffix(".json")] if path.suffix == ".jsonl" else []

    def source_for(self, path: Path) -> Path | None:
        if path.parent.name != "cli":
            return None
        if path.suffix == ".jsonl":
            return path
        log = path.with_suffix(".jsonl")
        if path.suffix == ".json" and log.exists():  # the sidecar: re-read for title/cwd
            return log
        return None  # .lock, .history

    def read(self, path: Path, prev: Cursor | None, opts: ReaderOptions) -> ReadResult:
        tail, records = tail_jsonl(path, prev, opts)
        state: dict[str, Any] = dict(prev.state) if prev else {}
        sid = path.stem
        titled = bool(state.get("titled", False))
        tainted = bool(state.get("tainted", False))
        prompt_time: float | None = state.get("prompt_time")
        title: str | None = None
        turns: list[Turn] = []
        problems: list[Problem] = []

        for line, obj in records:
            if not isinstance(obj, dict) or not isinstance(obj.get("data"), dict):
                problems.append(Problem("record without data", line.number, line.offset))
                continue
            if obj.get("version") != CLI_VERSION:
                version = obj.get("version")
                return ReadResult(unsupported=f"unknown format version {version} in {path}")
            data = obj["data"]
            content = data.get("content")
            role: Role | None = None
            stamp: float | None = None
            note: str | None = None
            turn_tainted = False
            if obj.get("kind") == "Prompt":
                meta = data.get("meta")
                stamp = prompt_time = (
                    parse_time(meta.get("timestamp")) if isinstance(meta, dict) else None
                )
                role, tainted = "user", False
            elif obj.get("kind") == "AssistantMessage":
                role, stamp, note, turn_tainted = (
                    "assistant",
                    prompt_time,
                    PROMPT_TIME_NOTE,
                    tainted,
                )
                tainted = tainted or _cli_external_tool(content)
            text = clean_text("\n\n".join(_cli_texts(content)))
            if role is None or not text:
                continue
            if role == "user" and not titled and (candidate := first_line_title(text)):
                title, titled = candidate, True
            message_id = data.get("message_id")
            turns.append(
                Turn(
                    session_id=sid,
                    key=message_id
                    if isinstance(message_id, str) and message_id
                    else f"o:{line.offset}",
                    role=role,
                    text=text,
                    timestamp=stamp,
                    seq=line.offset,
                    tainted=turn_tainted,
                    note=note if stamp is not None else None,
                )
            )

        sidecar = _cli_sidecar(path)
        cwd = _text_field(sidecar, "cwd")
        session = Session(
            sid,
            project=cwd,
            title=_text_field(sidecar, "title") or title,
            started_at=parse_time(sidecar.get("created_at")),
            updated_at=parse_time(sidecar.get("updated_at")),
            # Resumes the latest session of that directory (no per-session flag known).
            resume_command=resume_in(cwd, "kiro-cli", "chat", "--resume"),
        )
        return ReadResult(
            turns=tuple(turns),
            sessions=(session,),
            position=tail.end,
            state={
                "line": next_line_number(tail),
                "titled": titled,
                "tainted": tainted,
                "prompt_time": prompt_time,
            },
            replace=prev is None,
            problems=(*tail.problems, *problems),
        )


# --------------------------------------------------------------------------- IDE


def _ide_text(content: Any) -> str:
    texts = block_texts(content)
    if isinstance(content, list):  # some builds write {"kind": "text", "data": ...}
        texts += _cli_texts(content)
    return clean_text("\n\n".join(texts))


def _workspace_from_folder(name: str) -> str | None:
    """Workspace folders are named by the base64url of the workspace path."""
    try:
        decoded = base64.urlsafe_b64decode(name + "=" * (-len(name) % 4)).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return None
    decoded = decoded.strip()
    return decoded if decoded.startswith(("/", "~", "file:")) or decoded[1:3] == ":\\" else None


_ROLES: dict[str, Role] = {
    "user": "user",
    "human": "user",
    "assistant": "assistant",
    "ai": "assistant",
}


class KiroIdeReader(BaseReader):
    host: ClassVar[str] = "kiro-ide"
    name: ClassVar[str] = "Kiro IDE"
    version: ClassVar[int] = 2
    kind: ClassVar[Kind] = "document"

    def roots(self, env: HostEnv) -> list[Path]:
        if env.is_macos:
            base = env.app_support() / "Kiro"
            legacy = [base / "workspace-sessions"]
        elif env.is_windows:
            base, legacy = env.appdata() / "Kiro", []
        else:
            base, legacy = env.xdg_config() / "Kiro", []
        sessions = base / "User" / "globalStorage" / "kiro.kiroagent" / "workspace-sessions"
        return [sessions, *legacy]

    def source_for(self, path: Path) -> Path | None:
        if path.suffix != ".json" or path.name == "sessions.json":
            return None
        return path if path.parent.parent.name == "workspace-sessions" else None

    def read(self, path: Path, prev: Cursor | None, opts: ReaderOptions) -> ReadResult:
        stat = path.stat()
        size = stat.st_size
        doc = read_json_document(path, opts.max_document_bytes)  # ValueError mid-write: retried
        history = doc.get("history", doc.get("messages")) if isinstance(doc, dict) else None
        if not isinstance(history, list):
            return ReadResult(unsupported=f"unrecognised Kiro session document {path}")
        sid = _text_field(doc, "sessionId") or path.stem
        turns: list[Turn] = []
        problems: list[Problem] = []
        first_prompt: str | None = None
        last_time: float | None = None
        for index, entry in enumerate(history):
            message = entry.get("message", entry) if isinstance(entry, dict) else None
            if not isinstance(message, dict):
                problems.append(Problem(f"history entry {index} is not an object"))
                continue
            role = _ROLES.get(str(message.get("role")))
            text = _ide_text(message.get("content"))
            if role is None or not text:
                continue
            if role == "user" and first_prompt is None:
                first_prompt = first_line_title(text)
            msg_id = message.get("id")
            # The IDE's documents carry no times (format notes): a turn without one
            # takes the one before it, else the document's mtime, so --since-days works.
            stamp = parse_time(message.get("timestamp") or message.get("createdAt"))
            last_time = stamp or last_time
            turns.append(
                Turn(
                    session_id=sid,
                    key=msg_id
                    if isinstance(msg_id, str) and msg_id
                    else f"{index}:{content_key(role, text)}",
                    role=role,
                    text=text,
                    timestamp=stamp or last_time or stat.st_mtime,
                    seq=index,
                    note=None if stamp or last_time else MTIME_NOTE,
                )
            )
        session = Session(
            sid,
            project=_text_field(doc, "workspacePath") or _workspace_from_folder(path.parent.name),
            title=_text_field(doc, "title") or first_prompt,
            started_at=min((t.timestamp for t in turns if t.timestamp is not None), default=None),
            updated_at=max((t.timestamp for t in turns if t.timestamp is not None), default=None),
        )
        return ReadResult(
            turns=tuple(turns),
            sessions=(session,),
            position=size,
            replace=True,
            problems=tuple(problems),
        )
