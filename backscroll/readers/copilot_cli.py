"""GitHub Copilot CLI: ``$COPILOT_HOME/session-state/<id>/events.jsonl``.

The transcript is an append-only stream of typed events
(``shared/formats/copilot-cli/README.md``); ``workspace.yaml`` next to it holds
the title (``name``) and ``cwd`` and is rewritten in place, so a change to it
reads the session's ``events.jsonl`` on from where the last read ended (no new
lines, fresh metadata).
Older layouts: a flat ``session-state/<id>.jsonl`` with the same events, and
``history-session-state/*.json`` documents (best effort).

``/rewind`` and ``/undo`` truncate ``events.jsonl``; the indexer then re-reads
the shorter file whole. A ``session.snapshot_rewind`` event met while tailing
also triggers a whole re-read, which drops the rewound events.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, TypedDict

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
    read_json_document,
    read_side_file,
    resume_in,
    tail_jsonl,
    walk_files,
)
from backscroll.readers.lean import Lean

if TYPE_CHECKING:
    import yaml

#: The event-stream schema version this reader knows (``session.start.data.version``).
SCHEMA_VERSION = 1
_PLAIN_ID = re.compile(r"[A-Za-z0-9_.:-]{1,128}")


# The fields of an event this reader reads (readers/lean.py): tool calls'
# arguments and results are skipped unparsed.
class _Context(TypedDict, total=False):
    cwd: Any


class _Request(TypedDict, total=False):
    name: Any


class _Data(TypedDict, total=False):
    version: Any
    sessionId: Any
    startTime: Any
    context: _Context
    title: Any
    source: Any
    isAutopilotContinuation: Any
    content: Any
    success: Any
    summaryContent: Any
    parentToolCallId: Any
    toolRequests: list[_Request] | None
    toolName: Any
    upToEventId: Any


class _Event(TypedDict, total=False):
    type: Any
    id: Any
    timestamp: Any
    agentId: Any
    data: _Data


_PARSE = Lean(_Event)


def _resume(session_id: str) -> str:
    # Sessions are global (not per project), and the id is one argv element.
    return resume_in(None, "copilot", f"--resume={session_id}")


def _event_key(event: Mapping[str, Any], offset: int) -> str:
    """The event's own id, or the byte offset where the id is missing or a placeholder."""
    raw = event.get("id")
    return raw if isinstance(raw, str) and _PLAIN_ID.fullmatch(raw) else f"o:{offset}"


def yaml_loader() -> type[yaml.SafeLoader] | type[yaml.CSafeLoader]:
    """PyYAML's safe loader, in C (libyaml) where the wheel has it: 7x faster on
    a workspace.yaml, which is read again with every change to its session.
    (PyYAML is imported on first use: a cold index reads these in its workers.)"""
    import yaml

    loader: type[yaml.SafeLoader] | type[yaml.CSafeLoader]
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return loader


def _workspace(events: Path) -> dict[str, Any]:
    """``workspace.yaml`` next to ``events.jsonl`` (empty when absent or unreadable)."""
    import yaml

    try:
        text = read_side_file(events.parent / "workspace.yaml").decode("utf-8")
        data = yaml.load(text, Loader=yaml_loader())  # (a safe loader: see above)
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return {}
    return data if isinstance(data, dict) else {}


def _tool_names(event: Mapping[str, Any], data: Mapping[str, Any]) -> list[str]:
    names: list[str] = []
    requests = data.get("toolRequests")
    if isinstance(requests, list):
        names += [str(r.get("name") or "") for r in requests if isinstance(r, dict)]
    if event.get("type") == "tool.execution_start":
        names.append(str(data.get("toolName") or ""))
    return names


@dataclass(slots=True)
class _Stream(SessionProgress):
    """What reading events teaches us; ``state()`` is the small part kept between reads."""

    turns: dict[str, Turn] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)
    unsupported: str | None = None

    def event(self, event: Mapping[str, Any], offset: int, opts: ReaderOptions) -> None:
        kind = event.get("type")
        data = event.get("data")
        if not isinstance(data, dict):
            data = {}
        timestamp = parse_time(event.get("timestamp"))
        if timestamp is not None:
            self.updated = max(self.updated or 0.0, timestamp)
        if kind == "session.start":
            version = data.get("version")
            if isinstance(version, int) and version > SCHEMA_VERSION:
                self.unsupported = f"unknown format version {version}"
                return
            if isinstance(data.get("sessionId"), str):
                self.session_id = data["sessionId"]
            self.started = parse_time(data.get("startTime")) or timestamp
        if kind in ("session.start", "session.resume"):
            context = data.get("context")
            if isinstance(context, dict) and isinstance(context.get("cwd"), str):
                self.cwd = context["cwd"]
            return
        if kind == "session.title_changed" and isinstance(data.get("title"), str):
            self.title = data["title"].strip() or self.title
            return
        self._prose(event, data, offset, timestamp, opts)
        if any(is_external_tool(name) for name in _tool_names(event, data)):
            self.tainted = True  # what is written after this tool ran, not with its request

    def _prose(
        self,
        event: Mapping[str, Any],
        data: Mapping[str, Any],
        offset: int,
        timestamp: float | None,
        opts: ReaderOptions,
    ) -> None:
        kind = event.get("type")
        subagent = bool(event.get("agentId") or data.get("parentToolCallId"))
        if subagent and not opts.include_subagents:
            return
        role: Role
        if kind == "user.message":
            # What was typed has no `source` (or "user"); skills, autopilot and
            # other agents inject theirs with one. Queued/steering prompts count.
            source = data.get("source")
            if source not in (None, "user") or data.get("isAutopilotContinuation"):
                return
            role, text = "user", data.get("content")
        elif kind == "assistant.message":
            role, text = "assistant", data.get("content")
        elif kind == "session.compaction_complete" and data.get("success"):
            role, text = "summary", data.get("summaryContent")
        else:
            return
        if not isinstance(text, str) or not (text := clean_text(text)):
            return
        tainted = False
        if role == "user" and not subagent:  # a sub-agent's prompt does not end the exchange
            self.tainted = False
            if self.first_user is None:
                self.first_user = first_line_title(text)
        elif role == "assistant":
            tainted = self.tainted
        key = _event_key(event, offset)
        self.turns[key] = Turn(
            str(self.session_id),
            key,
            role,
            text,
            timestamp,
            offset,
            tainted=tainted,
            subagent=subagent,
        )


class CopilotCliReader(BaseReader):
    host: ClassVar[str] = "copilot-cli"
    name: ClassVar[str] = "GitHub Copilot CLI"
    version: ClassVar[int] = 1
    kind: ClassVar[Kind] = "append"

    def roots(self, env: HostEnv) -> list[Path]:
        # COPILOT_HOME moves everything; ~/.copilot on every OS (%USERPROFILE%
        # on Windows); 0.0.x builds wrote under $XDG_STATE_HOME/.copilot.
        bases = [env.var("COPILOT_HOME"), env.home / ".copilot"]
        state = env.var("XDG_STATE_HOME")
        if state is not None:
            bases.append(state / ".copilot")
        out: list[Path] = []
        for base in bases:
            for sub in ("session-state", "history-session-state"):
                if base is not None and base / sub not in out:
                    out.append(base / sub)
        return out

    #: Every read returns the session with workspace.yaml's name and cwd (the
    #: saved progress carries the rest), and workspace.yaml is rewritten as its
    #: metadata changes (``updated_at``): no whole re-read for that.
    sidecars_reread_whole: ClassVar[bool] = False

    def sidecars(self, path: Path) -> list[Path]:
        return [path.parent / "workspace.yaml"] if path.name == "events.jsonl" else []

    def source_for(self, path: Path) -> Path | None:
        parent = path.parent
        if parent.parent.name == "session-state":
            if path.name == "events.jsonl":
                return path
            if path.name == "workspace.yaml":
                return parent / "events.jsonl"
            return None
        if parent.name == "session-state" and path.suffix == ".jsonl":
            return path
        if parent.name == "history-session-state" and path.suffix == ".json":
            return path
        return None

    def discover(self, root: Path) -> Iterator[Path]:
        seen: set[Path] = set()
        for path in walk_files(root):
            source = self.source_for(path)
            if source is not None and source not in seen and source.exists():
                seen.add(source)
                yield source

    def read(self, path: Path, prev: Cursor | None, opts: ReaderOptions) -> ReadResult:
        if path.suffix == ".json":
            return self._read_history(path, opts)
        if prev is not None and prev.state.get("sid"):
            result = self._read_events(path, prev, opts)
            if result is not None:
                return result
        result = self._read_events(path, None, opts)
        assert result is not None
        return result

    def _read_events(
        self, path: Path, prev: Cursor | None, opts: ReaderOptions
    ) -> ReadResult | None:
        """Events from ``prev`` on; None when a rewind means the file must be read whole."""
        stream = _Stream.resumed(prev.state) if prev else _Stream()
        tail, records = tail_jsonl(path, prev, opts, _PARSE)
        order: list[tuple[str, int]] = []  # (event id, offset), whole reads only
        for line, event in records:
            if not isinstance(event, dict):
                stream.problems.append(Problem("event is not a JSON object", line.number))
                continue
            if event.get("type") == "session.snapshot_rewind":
                if prev is not None:
                    return None
                _rewind(stream, order, event, line.offset)
            if prev is None and isinstance(event.get("id"), str):
                order.append((event["id"], line.offset))
            stream.event(event, line.offset, opts)
            if stream.unsupported:
                return ReadResult(unsupported=f"{stream.unsupported} in {path.name}")
        fallback = path.parent.name if path.name == "events.jsonl" else path.stem
        sid: str = stream.session_id or fallback
        stream.session_id = sid
        workspace = _workspace(path) if path.name == "events.jsonl" else {}
        turns = tuple(
            t if t.session_id == sid else Turn(sid, *_fields(t)) for t in stream.turns.values()
        )
        name = workspace.get("name")
        cwd = workspace.get("cwd")
        session = Session(
            sid,
            project=cwd if isinstance(cwd, str) and cwd else stream.cwd,
            title=(name.strip() if isinstance(name, str) and name.strip() else None)
            or stream.title
            or stream.first_user,
            started_at=stream.started or parse_time(workspace.get("created_at")),
            updated_at=stream.updated,
            resume_command=_resume(sid),
        )
        return ReadResult(
            turns=turns,
            sessions=(session,),
            position=tail.end,
            state=stream.state(next_line_number(tail)),
            replace=prev is None,
            problems=(*tail.problems, *stream.problems),
        )

    def _read_history(self, path: Path, opts: ReaderOptions) -> ReadResult:
        """Best effort for the earliest ``history-session-state/*.json`` documents."""
        size = path.stat().st_size
        doc = read_json_document(path, opts.max_document_bytes)
        messages = None
        if isinstance(doc, dict):
            messages = doc.get("chatMessages", doc.get("history"))
        if not isinstance(messages, list):
            return ReadResult(unsupported=f"unknown format (no chatMessages) in {path.name}")
        assert isinstance(doc, dict)
        raw_sid = doc.get("sessionId")
        sid = raw_sid if isinstance(raw_sid, str) and raw_sid else path.stem
        started = parse_time(doc.get("startTime"))
        turns: list[Turn] = []
        tainted = False
        title: str | None = None
        for i, msg in enumerate(messages):
            if not isinstance(msg, dict):
                continue
            calls = msg.get("tool_calls")
            if isinstance(calls, list):
                for call in calls:
                    fn = call.get("function") if isinstance(call, dict) else None
                    if isinstance(fn, dict) and is_external_tool(str(fn.get("name") or "")):
                        tainted = True
            role = {"user": "user", "human": "user", "assistant": "assistant"}.get(
                str(msg.get("role"))
            )
            text = msg.get("content")
            if role is None or not isinstance(text, str) or not (text := clean_text(text)):
                continue
            if role == "user":
                tainted = False
                title = title or first_line_title(text)
            turns.append(
                Turn(
                    sid,
                    f"i:{i}",
                    "user" if role == "user" else "assistant",
                    text,
                    parse_time(msg.get("timestamp")),
                    i,
                    tainted=tainted and role == "assistant",
                )
            )
        session = Session(sid, title=title, started_at=started, resume_command=_resume(sid))
        return ReadResult(turns=tuple(turns), sessions=(session,), position=size, replace=True)


def _fields(turn: Turn) -> tuple[Any, ...]:
    return (
        turn.key,
        turn.role,
        turn.text,
        turn.timestamp,
        turn.seq,
        turn.tainted,
        turn.subagent,
        turn.note,
    )


def _rewind(
    stream: _Stream, order: list[tuple[str, int]], event: Mapping[str, Any], at: int
) -> None:
    """``session.snapshot_rewind``: the event ``upToEventId`` and all after it are gone."""
    data = event.get("data")
    target = data.get("upToEventId") if isinstance(data, dict) else None
    start = next((offset for eid, offset in order if eid == target), None)
    if start is None:
        return
    for key in [k for k, t in stream.turns.items() if start <= t.seq < at]:
        del stream.turns[key]
