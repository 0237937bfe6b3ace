"""Factory Droid (``droid`` CLI, factory.ai; closed source).

Append-only JSONL at ``~/.factory/sessions/<cwd-slug>/<sessionId>.jsonl``, Claude
Code-like: a ``session_start`` record (id, cwd, title), ``message`` records with
Anthropic content blocks, and ``compaction_state`` records whose ``summaryText``
is indexed as a summary. Indexed: user and assistant ``text`` blocks, minus
``<system-reminder>`` injections; messages marked ``visibility: "llm_only"``
(context injected for the model), tool_use/tool_result/thinking blocks,
``todo_state`` and ``session_event`` stay out. The ``<id>.settings.json`` sidecar
holds model and usage only, so it is not read.

The format carries no documented format version (``session_start.version`` is
undocumented), so no file is reported unsupported.
"""

from __future__ import annotations

import re
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
    calls_external_tool,
    clean_text,
    first_line_title,
    next_line_number,
    parse_time,
    resume_in,
    tag_blocks,
    tail_jsonl,
)

_INJECTED = tag_blocks("system-reminder", ignore_case=True)
# An @-mentioned file is expanded into a further text block of the user message:
# ``Contents of <path> (lines a-b):`` and the file's text. It is context, not prompt.
_MENTION = re.compile(r"\AContents of \S[^\n]*")
# Titles droid gives a session before it names it; the first prompt is better.
_PLACEHOLDER_TITLES = frozenset({"new session", "untitled", "new chat"})


def _prose(content: Any, *, prompt: bool = False) -> str:
    texts = [t for t in (_INJECTED.sub("", text).strip() for text in block_texts(content)) if t]
    if prompt:
        texts = [t for i, t in enumerate(texts) if i == 0 or not _MENTION.match(t)]
    return clean_text("\n\n".join(texts))


def _real_title(named: Any) -> str | None:
    if not isinstance(named, str) or not named.strip():
        return None
    return None if named.strip().lower() in _PLACEHOLDER_TITLES else named.strip()


class FactoryDroidReader(BaseReader):
    host: ClassVar[str] = "factory-droid"
    name: ClassVar[str] = "Factory Droid"
    version: ClassVar[int] = 2
    kind: ClassVar[Kind] = "append"

    def roots(self, env: HostEnv) -> list[Path]:
        # No env var moves it; the same path under the home directory on every OS.
        return [env.home / ".factory" / "sessions"]

    def source_for(self, path: Path) -> Path | None:
        # ``<id>.settings.json`` is not ours to index (model and usage only).
        return path if path.suffix == ".jsonl" else None

    def read(self, path: Path, prev: Cursor | None, opts: ReaderOptions) -> ReadResult:
        tail, records = tail_jsonl(path, prev, opts)
        state: dict[str, Any] = dict(prev.state) if prev else {}
        sid: str = state.get("sid") or path.stem
        cwd: str | None = state.get("cwd")
        titled: str = state.get("titled", "")
        tainted: bool = bool(state.get("tainted", False))
        title: str | None = None
        started: float | None = None
        updated: float | None = None
        turns: list[Turn] = []
        problems: list[Problem] = []

        for line, obj in records:
            if not isinstance(obj, dict):
                problems.append(Problem("record is not a JSON object", line.number, line.offset))
                continue
            kind = obj.get("type")
            if kind == "session_start":
                if isinstance(obj.get("id"), str) and obj["id"]:
                    sid = obj["id"]
                if isinstance(obj.get("cwd"), str) and obj["cwd"]:
                    cwd = obj["cwd"]
                named = _real_title(obj.get("sessionTitle")) or _real_title(obj.get("title"))
                if named:
                    title, titled = named, "start"
                continue
            stamp = parse_time(obj.get("timestamp"))
            if stamp is not None:
                if started is None and not state.get("started"):
                    started = stamp  # the first timestamped record of the file
                updated = stamp
            record_id = obj.get("id")
            key = record_id if isinstance(record_id, str) and record_id else f"o:{line.offset}"
            role: Role | None = None
            text = ""
            turn_tainted = False
            if kind == "message":
                message = obj.get("message")
                if not isinstance(message, dict):
                    problems.append(Problem("message record without a message", line.number))
                    continue
                if obj.get("visibility") == "llm_only":
                    continue
                content = message.get("content")
                if message.get("role") == "user":
                    text = _prose(content, prompt=True)
                    if text:  # a tool_result carrier is not a prompt
                        role, tainted = "user", False
                        if not titled and (candidate := first_line_title(text)):
                            title, titled = candidate, "prompt"
                elif message.get("role") == "assistant":
                    role, text, turn_tainted = "assistant", _prose(content), tainted
                    tainted = tainted or calls_external_tool(content)
            elif kind == "compaction_state":
                summary = obj.get("summaryText")
                role, text = "summary", clean_text(summary) if isinstance(summary, str) else ""
            if role is None or not text:
                continue
            turns.append(
                Turn(
                    session_id=sid,
                    key=key,
                    role=role,
                    text=text,
                    timestamp=stamp,
                    seq=line.offset,
                    tainted=turn_tainted,
                )
            )

        session = Session(
            sid,
            project=cwd,
            title=title,
            started_at=started,
            updated_at=updated,
            resume_command=resume_in(cwd, "droid", "--resume", sid),
        )
        return ReadResult(
            turns=tuple(turns),
            sessions=(session,) if tail.lines_read else (),
            position=tail.end,
            state={
                "line": next_line_number(tail),
                "sid": sid,
                "cwd": cwd,
                "titled": titled,
                "tainted": tainted,
                "started": bool(state.get("started")) or started is not None,
            },
            replace=prev is None,
            problems=(*tail.problems, *problems),
        )
