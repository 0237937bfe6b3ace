"""Qwen Code: ``~/.qwen/projects/<sanitized-cwd>/chats/<sessionId>.jsonl``.

An append-only log of ``ChatRecord`` lines (``shared/formats/qwen-code/README.md``):
``user`` / ``assistant`` / ``tool_result`` / ``system`` records with a genai
``message`` (``role`` + ``parts``). Records form a tree through ``parentUuid``;
a rewind or branch leaves the abandoned records in the file, and they stay
indexed (they were said; every record is keyed by its own ``uuid``).

Older builds used Gemini CLI's layout, ``~/.qwen/tmp/<sha256>/chats/session-*.json``
with ``type: "qwen"`` messages; those files go through the Gemini CLI reader's
document logic.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
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
    SessionProgress,
    clean_text,
    first_line_title,
    is_external_tool,
    next_line_number,
    parse_time,
    resume_in,
    tail_jsonl,
    walk_files,
)
from backscroll.readers.gemini_cli import (
    GeminiCliReader,
    classify,
    classify_user_text,
    is_ignored_user_text,
    part_texts,
)

#: ``user`` records that carry what the person typed: a prompt, one sent while
#: the agent was busy, or a voice/realtime message. Others (notification, cron,
#: goal_runtime, …) are injected by the CLI.
_USER_SUBTYPES = (None, "mid_turn_user_message", "realtime_message")
_ASSISTANT_SUBTYPES = (None, "realtime_message")


def _command(session_id: str, project: str | None) -> str:
    # README "Resume": `qwen --resume <id>`, inherited from Gemini CLI's flags
    # and scoped to the project directory; not verified against a release.
    return resume_in(project, "qwen", "--resume", session_id)


class _QwenLegacy(GeminiCliReader):
    """The 2025 Gemini-style layout under ``~/.qwen/tmp/`` (model turns typed "qwen")."""

    host: ClassVar[str] = "qwen-code"
    name: ClassVar[str] = "Qwen Code"
    assistant_type: ClassVar[str] = "qwen"
    command: ClassVar[str] = "qwen"


def _parts(record: Mapping[str, Any]) -> list[Any]:
    message = record.get("message")
    parts = message.get("parts") if isinstance(message, dict) else None
    return parts if isinstance(parts, list) else []


def _function_calls(parts: list[Any]) -> list[str]:
    return [
        str(p["functionCall"].get("name") or "")
        for p in parts
        if isinstance(p, dict) and isinstance(p.get("functionCall"), dict)
    ]


def _compression_summary(payload: Any) -> str:
    """The summary turns of ``compressedHistory``: the user contents before the first
    model content (the Gemini-family pattern), bootstrap blocks left out."""
    history = payload.get("compressedHistory") if isinstance(payload, dict) else None
    texts: list[str] = []
    for content in history if isinstance(history, list) else []:
        if not isinstance(content, dict) or content.get("role") != "user":
            break
        text = clean_text("\n".join(part_texts(content.get("parts"))))
        if not is_ignored_user_text(text):
            texts.append(text)
    return "\n\n".join(texts)


@dataclass(slots=True)
class _Log(SessionProgress):
    def record(
        self, rec: Mapping[str, Any], offset: int, opts: ReaderOptions
    ) -> tuple[str, Role, str, float | None, bool, bool] | None:
        """Apply one record; ``(key, role, text, timestamp, tainted, subagent)`` if it is prose."""
        if isinstance(rec.get("sessionId"), str) and self.session_id is None:
            self.session_id = rec["sessionId"]
        if self.cwd is None and isinstance(rec.get("cwd"), str) and rec["cwd"]:
            self.cwd = rec["cwd"]  # the session's project: where it started
        timestamp = parse_time(rec.get("timestamp"))
        if timestamp is not None:
            self.started = self.started if self.started is not None else timestamp
            self.updated = max(self.updated or 0.0, timestamp)
        kind, subtype = rec.get("type"), rec.get("subtype")
        payload = rec.get("systemPayload")
        parts = _parts(rec)
        subagent = bool(rec.get("isSidechain") or rec.get("agentId"))
        raw_key = rec.get("uuid")
        key = raw_key if isinstance(raw_key, str) and raw_key else f"o:{offset}"
        role: Role | None = None
        text = ""
        if kind == "system" and subtype == "custom_title" and isinstance(payload, dict):
            title = payload.get("customTitle")
            if isinstance(title, str) and title.strip():
                self.title = first_line_title(title, 200)
        elif kind == "system" and subtype == "chat_compression":
            role, text = "summary", _compression_summary(payload)
        elif kind == "user" and subtype in _USER_SUBTYPES:
            shown = payload.get("displayText") if isinstance(payload, dict) else None
            text = clean_text(
                shown if isinstance(shown, str) and shown.strip() else "\n".join(part_texts(parts))
            )
            role = classify_user_text(text)
        elif kind == "assistant" and subtype in _ASSISTANT_SUBTYPES:
            role, text = "assistant", clean_text("\n".join(part_texts(parts)))
        tainted = False
        if role == "assistant":
            tainted = self.tainted
        elif role == "user" and not subagent:
            self.tainted = False
            if self.first_user is None:
                self.first_user = first_line_title(text)
        if any(is_external_tool(name) for name in _function_calls(parts)):
            self.tainted = True
        if role is None or not text or (subagent and not opts.include_subagents):
            return None
        return key, role, text, timestamp, tainted, subagent


class QwenCodeReader(BaseReader):
    host: ClassVar[str] = "qwen-code"
    name: ClassVar[str] = "Qwen Code"
    version: ClassVar[int] = 2
    kind: ClassVar[Kind] = "append"

    def __init__(self) -> None:
        self._legacy = _QwenLegacy()

    def roots(self, env: HostEnv) -> list[Path]:
        # QWEN_RUNTIME_DIR moves the runtime base (projects/, tmp/); ~/.qwen on
        # every OS (%USERPROFILE%\.qwen on Windows) is the default.
        out: list[Path] = []
        for base in (env.var("QWEN_RUNTIME_DIR"), env.home / ".qwen"):
            if base is not None:
                out += [base / "projects", base / "tmp"]
        return out

    def source_for(self, path: Path) -> Path | None:
        parent = path.parent
        if (
            parent.name == "chats"
            and parent.parent.parent.name == "projects"
            and path.suffix == ".jsonl"
            and "." not in path.stem  # not `<id>.ledger.jsonl` and other side files
        ):
            return path
        if classify(path) is not None:
            return self._legacy.source_for(path)
        return None

    def discover(self, root: Path) -> Iterator[Path]:
        for path in walk_files(root):
            source = self.source_for(path)
            if source is not None:
                yield source

    def read(self, path: Path, prev: Cursor | None, opts: ReaderOptions) -> ReadResult:
        if classify(path) is not None:
            return self._legacy.read(path, prev, opts)
        if prev is not None and not prev.state.get("sid"):
            prev = None
        log = _Log.resumed(prev.state) if prev else _Log()
        tail, records = tail_jsonl(path, prev, opts)
        said: list[tuple[str, Role, str, float | None, int, bool, bool]] = []
        problems: list[Problem] = []
        for line, rec in records:
            if not isinstance(rec, dict):
                problems.append(Problem("record is not a JSON object", line.number, line.offset))
                continue
            if line.offset == 0 and not (
                isinstance(rec.get("sessionId"), str) and isinstance(rec.get("type"), str)
            ):
                return ReadResult(unsupported=f"unknown format (not a ChatRecord) in {path.name}")
            found = log.record(rec, line.offset, opts)
            if found is not None:
                key, role, text, timestamp, tainted, subagent = found
                said.append((key, role, text, timestamp, line.offset, tainted, subagent))
        if log.session_id is None and not said:
            return ReadResult(
                position=tail.end, replace=prev is None, problems=(*tail.problems, *problems)
            )
        # `qwen --resume <id>` looks the session up by its file name, so the file
        # name is the id, whatever a (copied or forked) record says.
        sid = path.stem
        log.session_id = sid
        turns = {
            key: Turn(sid, key, role, text, ts, seq, tainted=tainted, subagent=sub)
            for key, role, text, ts, seq, tainted, sub in said
        }
        session = Session(
            sid,
            project=log.cwd,
            title=log.title or log.first_user,
            started_at=log.started,
            updated_at=log.updated,
            resume_command=_command(sid, log.cwd),
        )
        return ReadResult(
            turns=tuple(turns.values()),
            sessions=(session,),
            position=tail.end,
            state=log.state(next_line_number(tail)),
            replace=prev is None,
            problems=(*tail.problems, *problems),
        )
