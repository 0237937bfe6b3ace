"""Codex CLI: ``$CODEX_HOME/sessions/YYYY/MM/DD/rollout-*.jsonl`` (and ``.jsonl.zst``).

Three eras share one reader: the wrapped JSONL (``{timestamp, type, payload}``,
``session_meta`` first), the bare JSONL of mid-2025 (first line ``{id, timestamp,
instructions}``, then bare response items) and the TypeScript CLI's ``rollout-*.json``
document (``{session, items}``, read whole).

Every prompt and every reply is written twice (a ``response_item`` and an
``event_msg``). The person's prompt is taken from the event (``user_message``, or
``item_completed`` UserMessage in paginated mode), the assistant's text from the
``response_item``; the other copy is only used while the file has shown none of the
preferred kind, and a copy that arrives first is replaced by its twin under the
same key, so fresh and incremental reads agree.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, ClassVar, TypedDict

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
    NameIndex,
    Tail,
    block_texts,
    clean_text,
    content_key,
    first_line_title,
    is_absolute_path,
    is_external_tool,
    loads,
    looks_like_id,
    next_line_number,
    open_regular,
    parse_lines,
    parse_time,
    read_json_document,
    resume_in,
    side_file_objects,
    tail_jsonl,
    unread_subagent,
)
from backscroll.readers.lean import Lean

#: Unpaired copies kept to match a prompt/reply with its twin written just after it.
PENDING_MEMORY = 16

_TITLE_INDEX, _TITLE_EVENT, _TITLE_PROMPT = 3, 2, 1
_ROLLOUT = re.compile(r"^rollout-.*\.(jsonl|jsonl\.zst|json)$")
_UUID = re.compile(r"([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$", re.I)
#: Context Codex injects as "user" messages; never typed by the person.
_INJECTED = ("<environment_context>", "<user_instructions>", "# AGENTS.md", "<turn_aborted>")
_LEADING_TAG = re.compile(r"^<[A-Za-z_][\w-]*>")
_ENV_CWD = re.compile(r"<cwd>(.*?)</cwd>", re.DOTALL)
_INJECTED_KINDS = {"user_instructions", "environment_context"}


# The fields of a record this reader reads, in either JSONL era (readers/lean.py):
# a command's output, a tool call's arguments and encrypted reasoning are skipped.
class _Block(TypedDict, total=False):
    type: Any
    text: Any


class _Item(TypedDict, total=False):
    """``item_completed``'s item."""

    type: Any
    content: str | list[_Block | str] | None


class _Payload(TypedDict, total=False):
    type: Any
    id: Any
    timestamp: Any
    cwd: Any
    source: Any
    role: Any
    name: Any
    content: str | list[_Block | str] | None
    message: Any
    kind: Any
    item: _Item
    thread_name: Any


class _Record(TypedDict, total=False):
    type: Any
    timestamp: Any
    payload: _Payload
    # (the bare era: the record is the item, or the session's first line)
    id: Any
    record_type: Any
    cwd: Any
    source: Any
    role: Any
    name: Any
    content: str | list[_Block | str] | None


_PARSE = Lean(_Record)


def _parser_for(state: _State) -> Any:
    """Records parsed lean once the file's era is known; the first whole, so
    that a file of an unknown format is named by its first record's fields."""

    def parse(raw: bytes) -> Any:
        return (_PARSE if state.era is not None else loads)(raw)

    return parse


def codex_home_of(path: Path) -> Path | None:
    """``$CODEX_HOME`` for a rollout: the parent of its ``sessions``/``archived_sessions``."""
    for parent in path.parents:
        if parent.name in ("sessions", "archived_sessions"):
            return parent.parent
    return None


def _prompt_text(raw: str, *, from_item: bool) -> str | None:
    text = clean_text(raw)
    if not text or text.startswith(_INJECTED):
        return None
    if from_item and _LEADING_TAG.match(text):
        return None  # response items also carry skill bodies and other tagged context
    return text


def _item_texts(content: Any, kinds: tuple[str, ...]) -> list[str]:
    """Texts of the given block kinds (``block_texts`` would also take bare strings)."""
    return block_texts(content, kinds) if isinstance(content, list) else []


class _TitleIndex:
    """Thread names from ``session_index.jsonl`` (last non-blank line per id wins),
    re-read only when the file changes."""

    def __init__(self) -> None:
        self._names = NameIndex(self._load)

    def lookup(self, codex_home: Path | None, session_id: str) -> str | None:
        if codex_home is None:
            return None
        return self._names.lookup(codex_home / "session_index.jsonl", session_id)

    @staticmethod
    def _load(path: Path) -> dict[str, str]:
        names: dict[str, str] = {}
        try:
            for entry in side_file_objects(path):
                sid, name = entry.get("id"), entry.get("thread_name")
                if isinstance(sid, str) and isinstance(name, str) and name.strip():
                    names[sid] = name.strip()
        except OSError:
            return {}
        return names


@dataclass
class _State:
    line: int = 1
    session_id: str | None = None
    era: str | None = None  # "wrapped" | "bare"
    cwd: str | None = None
    started_at: float | None = None
    updated_at: float | None = None
    title: str | None = None
    title_rank: int = 0
    tainted: bool = False
    #: The file has shown a user event / an assistant response item: from then on
    #: the other copy of each prompt / reply is ignored.
    user_events: bool = False
    assistant_items: bool = False
    #: Less trusted copies still waiting for their twin: [fingerprint, key].
    pending: list[list[Any]] = field(default_factory=list)
    #: A spawned sub-agent thread: its parent's id. Its records before its own first
    #: ``turn_context`` are a copy of the parent's history (``own`` turns True after).
    parent: str | None = None
    own: bool = False

    @classmethod
    def load(cls, prev: Cursor | None) -> _State:
        if prev is None:
            return cls()
        s = prev.state
        return cls(
            line=int(s.get("line", 1)),
            session_id=s.get("sid"),
            era=s.get("era"),
            cwd=s.get("cwd"),
            started_at=s.get("started"),
            updated_at=s.get("updated"),
            title=s.get("title"),
            title_rank=int(s.get("rank", 0)),
            tainted=bool(s.get("taint", False)),
            user_events=bool(s.get("ue", False)),
            assistant_items=bool(s.get("ai", False)),
            pending=[list(p) for p in s.get("pending", [])],
            parent=s.get("parent"),
            own=bool(s.get("own", False)),
        )

    def dump(self) -> dict[str, Any]:
        return {
            "line": self.line,
            "sid": self.session_id,
            "era": self.era,
            "cwd": self.cwd,
            "started": self.started_at,
            "updated": self.updated_at,
            "title": self.title,
            "rank": self.title_rank,
            "taint": self.tainted,
            "ue": self.user_events,
            "ai": self.assistant_items,
            "pending": self.pending[-PENDING_MEMORY:],
            "parent": self.parent,
            "own": self.own,
        }

    def offer_title(self, title: str, rank: int) -> None:
        title = first_line_title(title)
        if title and (rank > self.title_rank or (rank == self.title_rank > _TITLE_PROMPT)):
            self.title, self.title_rank = title, rank


class CodexReader(BaseReader):
    host: ClassVar[str] = "codex"
    name: ClassVar[str] = "Codex CLI"
    version: ClassVar[int] = 2
    kind: ClassVar[Kind] = "append"
    #: The program whose ``resume <id>`` reopens a session (TRAE CLI: ``traex``).
    resume_program: ClassVar[str] = "codex"

    def __init__(self) -> None:
        self._titles = _TitleIndex()

    def roots(self, env: HostEnv) -> list[Path]:
        home = env.var("CODEX_HOME") or env.home / ".codex"
        return [home / "sessions", home / "archived_sessions"]

    def source_for(self, path: Path) -> Path | None:
        if not _ROLLOUT.match(path.name) or codex_home_of(path) is None:
            return None
        if path.name.endswith(".zst"):
            plain = path.with_name(path.name[: -len(".zst")])
            if plain.exists():
                return plain  # both exist mid-(de)compression: the plain file wins
        return path

    def read(self, path: Path, prev: Cursor | None, opts: ReaderOptions) -> ReadResult:
        if path.name.endswith(".json"):
            return self._read_document(path, opts)
        compressed = path.name.endswith(".zst")
        if compressed:
            prev = None  # never appended to: always read whole
        state = _State.load(prev)
        parser = _Parser(path, state, self.resume_program)
        problems: list[Problem] = []
        if compressed:
            import zstandard  # (~5 ms: only where an archived rollout is read)

            tail = Tail(path, max_line_bytes=opts.max_line_bytes)
            with open_regular(path) as fh, zstandard.ZstdDecompressor().stream_reader(fh) as zst:
                try:
                    raw_lines = tail.iter_stream(zst)
                    for line, obj in parse_lines(tail, raw_lines, _parser_for(state)):
                        if (bad := parser.record(obj, line.offset)) is not None:
                            return ReadResult(unsupported=bad)
                        if state.parent is not None and not opts.include_subagents:
                            return unread_subagent()  # (known from its first line)
                except zstandard.ZstdError as exc:
                    problems.append(Problem(f"corrupt zstd stream: {exc}", offset=tail.end))
            position = path.stat().st_size
        else:
            tail, lines = tail_jsonl(path, prev, opts, _parser_for(state))
            for line, obj in lines:
                if (bad := parser.record(obj, line.offset)) is not None:
                    return ReadResult(unsupported=bad)
                if state.parent is not None and not opts.include_subagents:
                    return unread_subagent()  # (known from its first line)
            position = tail.end
        state.line = next_line_number(tail)
        if state.parent is not None:
            return self._subagent(state, parser, position, prev, opts)
        self._title_from_index(path, state)
        return ReadResult(
            turns=parser.result_turns(),
            sessions=parser.sessions(),
            position=position,
            state=state.dump(),
            replace=prev is None or prev.position == 0,
            problems=(*tail.problems, *problems),
        )

    @staticmethod
    def _subagent(
        state: _State, parser: _Parser, position: int, prev: Cursor | None, opts: ReaderOptions
    ) -> ReadResult:
        """A spawned sub-agent's turns belong to its parent's session (opt-in, like
        Claude Code's). Its user-role messages are the parent agent's task text or a
        copy of the parent's prompt, never typed by the person, so they stay out."""
        if not opts.include_subagents:
            return unread_subagent()
        assert state.parent is not None
        child = state.session_id or parser.file_session_id()
        turns = tuple(
            replace(t, session_id=state.parent, key=f"{child}:{t.key}", subagent=True)
            for t in parser.result_turns()
            if t.role != "user"
        )
        return ReadResult(
            turns=turns,
            position=position,
            state=state.dump(),
            replace=prev is None or prev.position == 0,
            ran_in=state.cwd,
        )

    def _title_from_index(self, path: Path, state: _State) -> None:
        if state.session_id:
            name = self._titles.lookup(codex_home_of(path), state.session_id)
            if name:
                state.offer_title(name, _TITLE_INDEX)

    def _read_document(self, path: Path, opts: ReaderOptions) -> ReadResult:
        """The TypeScript CLI's ``{session, items}`` document (rewritten whole)."""
        doc = read_json_document(path, opts.max_document_bytes)
        session = doc.get("session") if isinstance(doc, dict) else None
        items = doc.get("items") if isinstance(doc, dict) else None
        if not isinstance(session, dict) or not isinstance(items, list):
            return ReadResult(unsupported=f"unknown format version in {path.name}")
        state = _State(era="bare")
        parser = _Parser(path, state, self.resume_program)
        parser.first_record(session)
        for i, item in enumerate(items):
            if isinstance(item, dict):
                parser.response_item(item, i, None, key=_document_key(item, i))
        self._title_from_index(path, state)
        return ReadResult(
            turns=parser.result_turns(),
            sessions=parser.sessions(),
            position=path.stat().st_size,
            replace=True,
        )


def _document_key(item: dict[str, Any], index: int) -> str:
    item_id = item.get("id")
    if looks_like_id(item_id):
        return item_id
    return f"i{index}:{content_key(json.dumps(item.get('content'), sort_keys=True))}"


def _spawned_by(source: Any) -> str | None:
    """The parent thread of a spawned sub-agent: ``source.subagent.thread_spawn``."""
    sub = source.get("subagent") if isinstance(source, dict) else None
    spawn = sub.get("thread_spawn") if isinstance(sub, dict) else None
    parent = spawn.get("parent_thread_id") if isinstance(spawn, dict) else None
    return parent if looks_like_id(parent) else None


class _Parser:
    def __init__(self, path: Path, state: _State, resume_program: str = "codex") -> None:
        self.path = path
        self.state = state
        self.resume_program = resume_program
        self.turns: dict[str, Turn] = {}
        self.saw_record = False

    # ------------------------------------------------------------------ records

    def record(self, obj: Any, offset: int) -> str | None:
        """Handle one JSONL record; returns a reason when the file is not understood."""
        if not isinstance(obj, dict):
            return None
        state = self.state
        if state.era is None:
            if isinstance(obj.get("type"), str) and isinstance(obj.get("payload"), dict):
                state.era = "wrapped"
            elif "id" in obj and "timestamp" in obj and "type" not in obj:
                state.era = "bare"
                self.first_record(obj)
                return None
            else:
                fields = ", ".join(sorted(obj)[:6])
                return f"unknown format version (first record has {fields}) in {self.path.name}"
        self.saw_record = True
        if state.era == "bare":
            if "record_type" not in obj:
                self.response_item(obj, offset, None)
            return None
        ts = parse_time(obj.get("timestamp"))
        if ts is not None:
            if state.started_at is None:
                state.started_at = ts
            state.updated_at = ts if state.updated_at is None else max(state.updated_at, ts)
        kind, payload = obj.get("type"), obj.get("payload")
        if not isinstance(payload, dict):
            return None
        if kind == "session_meta":
            self.session_meta(payload)
        elif kind == "turn_context":
            state.own = True
            if is_absolute_path(payload.get("cwd")):
                state.cwd = payload["cwd"]
        elif state.parent is not None and not state.own:
            return None  # a sub-agent's copy of its parent's history
        elif kind == "response_item":
            self.response_item(payload, offset, ts)
        elif kind == "event_msg":
            self.event(payload, offset, ts)
        elif kind == "compacted":
            message = payload.get("message")
            text = clean_text(message) if isinstance(message, str) else ""
            if text:
                self.add(f"o:{offset}", "summary", text, ts, offset)
        return None

    def first_record(self, meta: dict[str, Any]) -> None:
        """The bare era's first line / the TypeScript document's ``session``."""
        self.saw_record = True
        self.session_meta(meta)

    def session_meta(self, payload: dict[str, Any]) -> None:
        state = self.state
        if state.session_id is not None:
            return  # a fork / sub-agent repeats its parent's meta later on
        spawn = _spawned_by(payload.get("source"))
        if spawn is not None:
            state.parent = spawn
        sid = payload.get("id")
        if looks_like_id(sid):
            state.session_id = sid
        else:
            state.session_id = self.file_session_id()
        if is_absolute_path(payload.get("cwd")):
            state.cwd = payload["cwd"]
        started = parse_time(payload.get("timestamp"))
        if started is not None:
            state.started_at = started

    def response_item(
        self, item: dict[str, Any], offset: int, ts: float | None, *, key: str | None = None
    ) -> None:
        kind = item.get("type")
        tool = kind in ("function_call", "custom_tool_call") and is_external_tool(item.get("name"))
        if kind == "web_search_call" or tool:
            self.state.tainted = True
        elif kind == "message" and item.get("role") == "assistant":
            self.state.assistant_items = True
            text = clean_text("\n\n".join(_item_texts(item.get("content"), ("output_text",))))
            if text:
                self.offer("assistant", text, ts, offset, preferred=True, key=key)
        elif kind == "message" and item.get("role") == "user":
            if self.state.user_events:
                return
            raws = _item_texts(item.get("content"), ("input_text",))
            for raw in raws:
                self._recover_cwd(raw)
            prompts = [
                (i, p) for i, raw in enumerate(raws) if (p := _prompt_text(raw, from_item=True))
            ]
            for i, prompt in prompts:
                part_key = key if key is None or len(prompts) == 1 else f"{key}#{i}"
                self.offer("user", prompt, ts, offset + i, preferred=False, key=part_key)

    def event(self, payload: dict[str, Any], offset: int, ts: float | None) -> None:
        kind = payload.get("type")
        if kind == "user_message":
            message = payload.get("message")
            if payload.get("kind") in _INJECTED_KINDS or not isinstance(message, str):
                return
            self.state.user_events = True
            text = _prompt_text(message, from_item=False)
            if text:
                self.offer("user", text, ts, offset, preferred=True)
        elif kind == "agent_message":
            message = payload.get("message")
            if isinstance(message, str) and not self.state.assistant_items:
                text = clean_text(message)
                if text:
                    self.offer("assistant", text, ts, offset, preferred=False)
        elif kind == "item_completed":
            self.completed_item(payload.get("item"), offset, ts)
        elif kind == "thread_name_updated":
            name = payload.get("thread_name")
            if isinstance(name, str):
                self.state.offer_title(name, _TITLE_EVENT)
        elif kind in ("task_complete", "turn_aborted"):
            self.state.pending.clear()

    def completed_item(self, item: Any, offset: int, ts: float | None) -> None:
        """Paginated history mode: ``item_completed`` replaces the legacy events."""
        if not isinstance(item, dict):
            return
        texts = [
            b["text"]
            for b in item.get("content") or []
            if isinstance(b, dict) and isinstance(b.get("text"), str)
        ]
        if item.get("type") == "UserMessage":
            self.state.user_events = True
            text = _prompt_text("\n\n".join(texts), from_item=False)
            if text:
                self.offer("user", text, ts, offset, preferred=True)
        elif item.get("type") == "AgentMessage" and not self.state.assistant_items:
            text = clean_text("\n\n".join(texts))
            if text:
                self.offer("assistant", text, ts, offset, preferred=False)

    def _recover_cwd(self, raw: str) -> None:
        """Bare-era files name the cwd only inside the injected environment context."""
        if self.state.cwd is None and raw.lstrip().startswith("<environment_context>"):
            match = _ENV_CWD.search(raw)
            if match and is_absolute_path(match.group(1).strip()):
                self.state.cwd = match.group(1).strip()

    # ------------------------------------------------------------------ output

    def offer(
        self,
        role: Role,
        text: str,
        ts: float | None,
        offset: int,
        *,
        preferred: bool,
        key: str | None = None,
    ) -> None:
        """Index one copy of a prompt/reply, pairing it with an unpaired twin."""
        state = self.state
        if role == "user":
            state.tainted = False  # the person's prompt starts a new exchange
            state.offer_title(text, _TITLE_PROMPT)
        tainted = state.tainted if role == "assistant" else False
        fingerprint = content_key(role, text)
        if preferred:
            for entry in state.pending:
                if entry[0] == fingerprint:  # its less trusted twin came first:
                    state.pending.remove(entry)  # replace it under the same key
                    self.add(entry[1], role, text, ts, offset, tainted=tainted)
                    return
        turn_key = key or f"o:{offset}"
        if not preferred:
            # Once a preferred copy has been seen, later less trusted copies are
            # ignored before they get here, so only these wait for a twin.
            state.pending.append([fingerprint, turn_key])
            del state.pending[:-PENDING_MEMORY]
        self.add(turn_key, role, text, ts, offset, tainted=tainted)

    def add(
        self,
        key: str,
        role: Role,
        text: str,
        ts: float | None,
        seq: int,
        *,
        tainted: bool = False,
    ) -> None:
        session_id = self.state.session_id or self.file_session_id()
        self.turns.pop(key, None)  # a replaced copy moves to where its twin was written
        self.turns[key] = Turn(session_id, key, role, text, ts, seq, tainted=tainted)

    def result_turns(self) -> tuple[Turn, ...]:
        return tuple(self.turns.values())

    def file_session_id(self) -> str:
        stem = self.path.name.split(".", 1)[0]
        match = _UUID.search(stem)
        return match.group(1) if match else stem

    def sessions(self) -> tuple[Session, ...]:
        state = self.state
        if not self.saw_record and not self.turns:
            return ()
        sid = state.session_id or self.file_session_id()
        return (
            Session(
                sid,
                project=state.cwd,
                title=state.title,
                started_at=state.started_at,
                updated_at=state.updated_at,
                resume_command=resume_in(None, self.resume_program, "resume", sid),
            ),
        )
