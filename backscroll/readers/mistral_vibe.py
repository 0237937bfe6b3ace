"""Mistral Vibe (``vibe`` CLI): ``$VIBE_HOME/logs/session/<prefix>_<UTC ts>_<8>/``.

Each session directory holds ``messages.jsonl`` (OpenAI-style chat messages,
append-only, tailed by byte offset) and ``meta.json`` (rewritten atomically on
every save: session id, parent id, title, working directory, start/end time),
which is a :meth:`sidecar <MistralVibeReader.sidecars>`: a change to it
re-reads the messages whole with fresh metadata. That happens after every
save, which is affordable because compaction keeps each directory's log to one
context window's worth of messages.

Indexed: ``user`` lines with ``injected: false`` (prompts), the ``content`` of
``assistant`` lines, and the ``<compaction_summary>`` inside the first injected
line of a session that compaction started (as a summary). Other injected lines,
``tool`` lines, tool calls and reasoning fields stay out. Messages carry no
time: turns have none, the session's times come from ``meta.json``.

Compaction (and fork and rewind) start a new session directory whose
``meta.json`` names the old one in ``parent_session_id``, kept as the session's
parent. Sub-agent sessions (``<session>/agents/<agent>_<ts>_<8>/``) are their own
sessions with the parent's id as parent; their turns are marked as a
sub-agent's and only read when ``include_subagents`` is on.

Tolerated: a peer fixture without ``injected`` (taken as not injected), tool
arguments as an object or a JSON string, a missing ``meta.json`` (the session id
is then the folder's 8-character suffix until ``meta.json`` appears; its
arrival re-reads the file under the real id and removes the session under the
folder's). The ``session_logging.save_dir`` setting that moves the directory
lives in Vibe's own config and is not read: point ``hosts.mistral-vibe.roots``
at it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
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
    BaseReader,
    HostEnv,
    block_texts,
    clean_text,
    first_line_title,
    is_absolute_path,
    is_external_tool,
    looks_like_id,
    next_line_number,
    parse_time,
    read_json_document,
    resume_in,
    tail_jsonl,
    unread_subagent,
)

MESSAGES = "messages.jsonl"
META = "meta.json"
_SUMMARY = re.compile(r"<compaction_summary>(.*?)</compaction_summary>", re.DOTALL)
_FOLDER = re.compile(r"_(\d{8}_\d{6})_([0-9A-Za-z]{1,16})$")


def _meta(session_dir: Path) -> dict[str, Any]:
    try:
        doc = read_json_document(session_dir / META, max_bytes=64 * 1024 * 1024)
    except (OSError, ValueError):
        return {}
    return doc if isinstance(doc, dict) else {}


def _content(message: dict[str, Any]) -> str:
    return clean_text("\n\n".join(block_texts(message.get("content"))))


def _calls_external(message: dict[str, Any]) -> bool:
    calls = message.get("tool_calls")
    if not isinstance(calls, list):
        return False
    for call in calls:
        function = call.get("function") if isinstance(call, dict) else None
        if isinstance(function, dict) and is_external_tool(function.get("name")):
            return True
    return False


def _is_subagent(path: Path) -> bool:
    return path.parent.parent.name == "agents"


class MistralVibeReader(BaseReader):
    host: ClassVar[str] = "mistral-vibe"
    name: ClassVar[str] = "Mistral Vibe"
    version: ClassVar[int] = 1
    kind: ClassVar[Kind] = "append"

    def roots(self, env: HostEnv) -> list[Path]:
        # VIBE_HOME moves everything; else ~/.vibe on every OS.
        home = env.var("VIBE_HOME") or env.home / ".vibe"
        return [home / "logs" / "session"]

    def sidecars(self, path: Path) -> list[Path]:
        return [path.parent / META] if path.name == MESSAGES else []

    def source_for(self, path: Path) -> Path | None:
        if path.name == MESSAGES:
            return path
        if path.name == META:
            return path.parent / MESSAGES
        return None

    def discover(self, root: Path) -> Iterator[Path]:
        for path in super().discover(root):
            if path.is_file():
                yield path

    def read(self, path: Path, prev: Cursor | None, opts: ReaderOptions) -> ReadResult:
        subagent = _is_subagent(path)
        if subagent and not opts.include_subagents:
            return unread_subagent()
        meta = _meta(path.parent)
        meta_id = meta.get("session_id")
        state = dict(prev.state) if prev else {}
        sid: str = state.get("sid") or (meta_id if looks_like_id(meta_id) else _folder_id(path))
        if prev is not None and looks_like_id(meta_id) and meta_id != sid:
            prev, state, sid = None, {}, meta_id  # meta.json arrived late: start over
        # Read whole under meta.json's id: the session an earlier read gave the
        # folder's id (before meta.json existed) goes, its turns moved to this one.
        folder_id = _folder_id(path)
        whole = prev is None or prev.position == 0
        superseded = frozenset({folder_id}) if whole and sid != folder_id else frozenset()
        tail, lines = tail_jsonl(path, prev, opts)
        tainted = bool(state.get("tainted", False))
        first_prompt: str | None = state.get("prompt")
        seen_line: bool = bool(state.get("seen", False))
        turns: list[Turn] = []
        problems: list[Problem] = []
        for line, obj in lines:
            if not isinstance(obj, dict):
                problems.append(Problem("message is not a JSON object", line.number, line.offset))
                continue
            first_line, seen_line = not seen_line, True
            role_in, injected = obj.get("role"), obj.get("injected") is True
            role: Role | None = None
            text = ""
            if role_in == "user" and not injected:
                role, text = "user", _content(obj)
                tainted = False
                if text and first_prompt is None:
                    first_prompt = text
            elif role_in == "user" and first_line:
                match = _SUMMARY.search(_content(obj))
                role, text = "summary", clean_text(match.group(1)) if match else ""
            elif role_in == "assistant":
                role, text = "assistant", _content(obj)
            if role is not None and text:
                message_id = obj.get("message_id")
                key = message_id if looks_like_id(message_id) else f"o:{line.offset}"
                turns.append(
                    Turn(
                        sid,
                        key,
                        role,
                        text,
                        None,
                        line.offset,
                        tainted=tainted and role == "assistant",
                        subagent=subagent,
                    )
                )
            if role_in == "assistant" and _calls_external(obj):
                tainted = True
        return ReadResult(
            turns=tuple(turns),
            sessions=(self._session(sid, meta, first_prompt),) if seen_line else (),
            position=tail.end,
            state={
                "line": next_line_number(tail),
                "sid": sid,
                "tainted": tainted,
                "prompt": first_prompt,
                "seen": seen_line,
            },
            replace=whole,
            removed_sessions=superseded,
            problems=(*tail.problems, *problems),
        )

    def _session(self, sid: str, meta: dict[str, Any], first_prompt: str | None) -> Session:
        env = meta.get("environment")
        cwd = env.get("working_directory") if isinstance(env, dict) else None
        project = cwd if is_absolute_path(cwd) else None
        title = meta.get("title")
        parent = meta.get("parent_session_id")
        return Session(
            sid,
            project=project,
            title=first_line_title(title)
            if isinstance(title, str) and title.strip()
            else (first_line_title(first_prompt) if first_prompt else None),
            started_at=parse_time(meta.get("start_time")),
            updated_at=parse_time(meta.get("end_time")),
            resume_command=resume_in(project, "vibe", "--resume", sid),
            parent_session_id=parent if looks_like_id(parent) else None,
        )


def _folder_id(path: Path) -> str:
    match = _FOLDER.search(path.parent.name)
    return match.group(2) if match else path.parent.name
