"""Gemini CLI: ``~/.gemini/tmp/<project-id>/chats/session-*.jsonl`` and ``*.json``.

Two eras share one module (``shared/formats/gemini-cli/README.md``):

- v0.39+ writes an append-only JSONL log: a header line, message records in
  which the same ``id`` may appear again (the last record wins), ``{"$set": …}``
  metadata updates (``$set.messages`` is a checkpoint replacing the live message
  list) and ``{"$rewindTo": id}`` (drop that message and all after it).
- Before that, ``session-*.json`` documents were rewritten whole on every update.

A checkpoint (compression, tool-output masking) only replaces what the *model*
sees: messages it drops were still said, so they stay indexed ("archived"). A
rewind is the person taking turns back, so rewound messages leave the index.
Because the store only upserts by key during an append read, an incremental
read that meets ``$rewindTo`` (or a changed session id) re-reads the file whole
and returns ``replace=True``.

``logs.json`` (typed prompts only) duplicates the chats' user prompts, so it is
indexed only as a fallback for sessions with no chat file in the same project
directory (pre-recording v0.1.x installs, or chats removed by retention).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, ClassVar, Literal, TypedDict

from backscroll.digests import sha256
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

#: User texts Gemini itself leaves out of history (``isIgnoredUserContent``):
#: slash and ``?`` commands and the injected bootstrap blocks.
_IGNORED_PREFIXES = ("/", "?", "<session_context>", "<hook_context>")
#: A compression summary is a user message holding the model's state snapshot,
#: answered by this fixed model text (which is not worth indexing).
_SNAPSHOT_MARK = "<state_snapshot>"
_COMPRESSION_ACK = "Got it. Thanks for the additional context!"
_HASH_DIR = re.compile(r"[0-9a-f]{64}")


# The fields of a JSONL record this reader reads (readers/lean.py): tool calls'
# arguments and results, thoughts and token counts are skipped unparsed.
class _Part(TypedDict, total=False):
    text: Any
    thought: Any


_Content = str | _Part | list[_Part | str] | None


class _Call(TypedDict, total=False):
    name: Any


class _Message(TypedDict, total=False):
    id: Any
    type: Any
    timestamp: Any
    content: _Content
    displayContent: _Content
    toolCalls: list[_Call] | None


class _Set(TypedDict, total=False):
    sessionId: Any
    summary: Any
    lastUpdated: Any
    messages: list[_Message] | None


_Record = TypedDict(
    "_Record",
    {
        # a header line
        "sessionId": Any,
        "projectHash": Any,
        "startTime": Any,
        "lastUpdated": Any,
        "kind": Any,
        "summary": Any,
        "messages": list[_Message] | None,
        # a metadata update, a rewind
        "$set": _Set,
        "$rewindTo": Any,
        # a message record
        "id": Any,
        "type": Any,
        "timestamp": Any,
        "content": _Content,
        "displayContent": _Content,
        "toolCalls": list[_Call] | None,
    },
    total=False,
)
_PARSE = Lean(_Record)

FileKind = Literal["session", "subagent", "logs"]


# --------------------------------------------------------------------------- layout


def classify(path: Path) -> tuple[Path, FileKind] | None:
    """``(project dir, kind)`` for a Gemini-family file under ``…/tmp/<project-id>/``."""
    name, parent = path.name, path.parent
    if name == "logs.json" and parent.parent.name == "tmp":
        return parent, "logs"
    if (
        parent.name == "chats"
        and parent.parent.parent.name == "tmp"
        and name.startswith("session-")
        and name.endswith((".json", ".jsonl"))
    ):
        return parent.parent, "session"
    if (
        parent.parent.name == "chats"
        and parent.parent.parent.parent.name == "tmp"
        and name.endswith(".jsonl")
    ):
        return parent.parent.parent, "subagent"
    return None


def project_for(project_dir: Path, project_hash: str | None = None) -> str | None:
    """The project path that owns ``tmp/<project-id>/``: its ``.project_root``
    marker, else ``projects.json`` (slug -> path, or sha256(path) for hash dirs)."""
    try:
        marker = read_side_file(project_dir / ".project_root").decode("utf-8").strip()
    except (OSError, UnicodeDecodeError):
        marker = ""
    if marker:
        return marker
    registry = project_dir.parent.parent / "projects.json"
    try:
        data = json.loads(read_side_file(registry))
    except (OSError, ValueError):
        return None
    projects = data.get("projects") if isinstance(data, dict) else None
    if not isinstance(projects, dict):
        return None
    for project, slug in projects.items():
        if slug == project_dir.name:
            return str(project)
    wanted = {project_dir.name, project_hash}
    for project in projects:
        if sha256(str(project).encode()).hexdigest() in wanted:
            return str(project)
    return None


def _has_slug_copy(path: Path, project_dir: Path) -> bool:
    """A hash-era chat file that v0.29+ copied into a slug dir (README §1)."""
    if not _HASH_DIR.fullmatch(project_dir.name):
        return False
    tmp = project_dir.parent
    try:
        siblings = [d for d in tmp.iterdir() if d.is_dir() and d != project_dir]
    except OSError:
        return False
    return any(
        not _HASH_DIR.fullmatch(d.name) and (d / "chats" / path.name).exists() for d in siblings
    )


# --------------------------------------------------------------------------- messages


def part_texts(content: Any) -> list[str]:
    """Text parts of a genai ``PartListUnion`` (string, part or list), thoughts left out."""
    if isinstance(content, str):
        return [content]
    if isinstance(content, dict):
        content = [content]
    out: list[str] = []
    if isinstance(content, list):
        for part in content:
            if isinstance(part, str):
                out.append(part)
            elif isinstance(part, dict) and not part.get("thought"):
                text = part.get("text")
                if isinstance(text, str):
                    out.append(text)
    return out


def is_ignored_user_text(text: str) -> bool:
    return not text or text.startswith(_IGNORED_PREFIXES)


def classify_user_text(text: str) -> Role | None:
    """``user`` for a typed prompt, None if ignored. A compression summary is
    told only by the model's fixed reply after it (:meth:`Conversation.message`):
    a typed prompt may quote the snapshot mark."""
    return None if is_ignored_user_text(text) else "user"


def is_compression_ack(msg: Mapping[str, Any], assistant_type: str) -> bool:
    """``msg`` is the model's fixed reply to a compression summary."""
    return (
        msg.get("type") == assistant_type
        and clean_text("\n".join(part_texts(msg.get("content")))) == _COMPRESSION_ACK
    )


@dataclass(frozen=True, slots=True)
class Said:
    """One indexable message, before the session id is known for sure."""

    key: str
    role: Role
    text: str
    timestamp: float | None
    seq: int
    tainted: bool

    def turn(self, session_id: str, subagent: bool) -> Turn:
        return Turn(
            session_id,
            self.key,
            self.role,
            self.text,
            self.timestamp,
            self.seq,
            tainted=self.tainted,
            subagent=subagent,
        )


@dataclass(slots=True)
class Conversation:
    """Replays a Gemini-family recording the way the CLI does (a map keyed by
    message id), keeping messages a checkpoint dropped as ``archived``."""

    assistant_type: str = "gemini"
    tainted: bool = False
    first_user: str | None = None
    #: The message ``first_user`` came from (None: carried over from a read before).
    first_user_key: str | None = None
    live: dict[str, Said | None] = field(default_factory=dict)
    archived: dict[str, Said] = field(default_factory=dict)

    def message(self, msg: Mapping[str, Any], seq: int, fallback_key: str) -> Said | None:
        """Apply one message record; returns what it makes indexable (or None).
        The compression reply turns the message before it, a prompt holding the
        snapshot mark, into the summary it is (:meth:`_summary`)."""
        key = self._key_of(msg, fallback_key)
        said = self._said(msg, key, seq)
        self.archived.pop(key, None)
        self.live[key] = said
        if said is None and is_compression_ack(msg, self.assistant_type):
            keys = list(self.live)
            at = keys.index(key)
            if at > 0:
                self._summary(keys[at - 1])
        return said

    def messages(self, messages: Iterable[Any], seq: int, prefix: str) -> list[Said]:
        """Apply a list of messages in order (a checkpoint, a whole document), the
        n-th keyed ``<prefix><n>`` when it has no id; returns what they make
        indexable, as it stands after the whole list."""
        keys: list[str] = []
        for i, msg in enumerate(messages):
            if isinstance(msg, dict) and self.message(msg, seq + i, f"{prefix}{i}") is not None:
                keys.append(self._key_of(msg, f"{prefix}{i}"))
        return [said for said in map(self.live.get, keys) if said is not None]

    @staticmethod
    def _key_of(msg: Mapping[str, Any], fallback_key: str) -> str:
        raw_id = msg.get("id")
        return raw_id if isinstance(raw_id, str) and raw_id else fallback_key

    def _summary(self, key: str) -> None:
        """The message at ``key``, answered by the compression reply: a prompt
        holding the snapshot mark is the compression summary, not a prompt."""
        said = self.live.get(key)
        if said is None or said.role != "user" or _SNAPSHOT_MARK not in said.text:
            return
        self.live[key] = replace(said, role="summary")
        if self.first_user_key == key:
            self._first_user_again()

    def _first_user_again(self) -> None:
        """The prompt that named the session is gone (or was a summary): the next one does."""
        users = sorted((s for s in self.said() if s.role == "user"), key=lambda s: s.seq)
        first = users[0] if users else None
        self.first_user = first.text if first else None
        self.first_user_key = first.key if first else None

    def _said(self, msg: Mapping[str, Any], key: str, seq: int) -> Said | None:
        kind = msg.get("type")
        timestamp = parse_time(msg.get("timestamp"))
        if kind == "user":
            shown = msg.get("displayContent")
            source = shown if shown is not None else msg.get("content")
            text = clean_text("\n".join(part_texts(source)))
            role = classify_user_text(text)
            if role is None:
                return None
            self.tainted = False
            if role == "user" and self.first_user is None:
                self.first_user, self.first_user_key = text, key
            return Said(key, role, text, timestamp, seq, False)
        if kind == self.assistant_type:
            tainted = self.tainted
            calls = msg.get("toolCalls")
            if isinstance(calls, list) and any(
                isinstance(c, dict) and is_external_tool(str(c.get("name") or "")) for c in calls
            ):
                self.tainted = True
            text = clean_text("\n".join(part_texts(msg.get("content"))))
            if not text or text == _COMPRESSION_ACK:
                return None
            return Said(key, "assistant", text, timestamp, seq, tainted)
        return None  # info / error / warning notices

    def checkpoint(self, messages: list[Any], seq: int) -> list[Said]:
        """``$set.messages``: the live list becomes ``messages``; dropped ones are archived."""
        old = self.live
        self.live = {}
        out = self.messages(messages, seq, f"o:{seq}#")
        for key, said in old.items():
            if key not in self.live and said is not None:
                self.archived[key] = said
        return out

    def rewind(self, target: Any) -> None:
        """``$rewindTo``: drop ``target`` and everything after it (all if unknown)."""
        keys = list(self.live)
        cut = keys.index(target) if isinstance(target, str) and target in keys else 0
        for key in keys[cut:]:
            del self.live[key]
        if self.first_user_key in keys[cut:]:
            self._first_user_again()  # the prompt that named the session was taken back

    def said(self) -> list[Said]:
        return [*self.archived.values(), *(s for s in self.live.values() if s is not None)]


# --------------------------------------------------------------------------- reader


@dataclass(slots=True)
class _Meta:
    session_id: str | None = None
    summary: str | None = None
    started: float | None = None
    updated: float | None = None
    kind: str | None = None
    project_hash: str | None = None

    def header(self, obj: Mapping[str, Any]) -> None:
        self.set(obj)
        if isinstance(obj.get("kind"), str):
            self.kind = obj["kind"]
        if isinstance(obj.get("projectHash"), str):
            self.project_hash = obj["projectHash"]
        self.started = parse_time(obj.get("startTime")) or self.started

    def touch(self, said: Said | None) -> None:
        if said is not None and said.timestamp is not None:
            self.updated = max(self.updated or 0.0, said.timestamp)

    def set(self, patch: Mapping[str, Any]) -> None:
        sid = patch.get("sessionId")
        if isinstance(sid, str) and sid:
            self.session_id = sid
        summary = patch.get("summary")
        if isinstance(summary, str) and summary.strip():
            self.summary = first_line_title(summary, 200)
        updated = parse_time(patch.get("lastUpdated"))
        if updated is not None:
            self.updated = max(self.updated or 0.0, updated)


def _is_header(obj: Mapping[str, Any]) -> bool:
    return isinstance(obj.get("sessionId"), str) and "type" not in obj and "id" not in obj


class GeminiCliReader(BaseReader):
    host: ClassVar[str] = "gemini-cli"
    name: ClassVar[str] = "Gemini CLI"
    version: ClassVar[int] = 1
    kind: ClassVar[Kind] = "append"

    #: The message ``type`` of the model's turns (Qwen Code's old layout says "qwen").
    assistant_type: ClassVar[str] = "gemini"
    #: The command that resumes a session, run in its project directory.
    command: ClassVar[str] = "gemini"

    def roots(self, env: HostEnv) -> list[Path]:
        # GEMINI_CLI_HOME replaces the home directory `.gemini` is looked up in.
        # Windows: %USERPROFILE%\.gemini, i.e. the same path under the home dir.
        base = env.var("GEMINI_CLI_HOME") or env.home
        return [base / ".gemini" / "tmp"]

    def source_for(self, path: Path) -> Path | None:
        found = classify(path)
        if found is None:
            return None
        project_dir, kind = found
        if kind == "session" and _has_slug_copy(path, project_dir):
            return None  # the same chat exists in the v0.29+ slug dir: index that one
        return path

    def discover(self, root: Path) -> Iterator[Path]:
        for path in walk_files(root):
            source = self.source_for(path)
            if source is not None:
                yield source

    # ----------------------------------------------------------------- read

    def read(self, path: Path, prev: Cursor | None, opts: ReaderOptions) -> ReadResult:
        found = classify(path)
        project_dir, kind = found if found else (path.parent, "session")
        if kind == "logs":
            return self._read_logs(path, project_dir, opts)
        if kind == "subagent" and not opts.include_subagents:
            return ReadResult(position=path.stat().st_size, replace=True)
        if path.suffix == ".json":
            return self._read_document(path, project_dir, kind == "subagent", opts)
        if prev is None or not prev.state.get("sid"):
            return self._read_log_whole(path, project_dir, kind == "subagent", opts)
        return self._read_log_tail(path, prev, project_dir, kind == "subagent", opts)

    def _session(self, meta: _Meta, first_user: str | None, project_dir: Path) -> Session:
        assert meta.session_id is not None
        project = project_for(project_dir, meta.project_hash)
        return Session(
            meta.session_id,
            project=project,
            title=meta.summary or (first_line_title(first_user) if first_user else None),
            started_at=meta.started,
            updated_at=meta.updated,
            resume_command=resume_in(project, self.command, "--resume", meta.session_id),
        )

    def _read_document(
        self, path: Path, project_dir: Path, subagent: bool, opts: ReaderOptions
    ) -> ReadResult:
        size = path.stat().st_size
        if path.with_suffix(".jsonl").exists():
            # Resumed after v0.39: the CLI copied it into `<stem>.jsonl` and goes on there.
            return ReadResult(position=size, replace=True)
        if size > min(opts.stream_document_bytes, opts.max_document_bytes):
            # Too big to parse whole cheaply (or at all): one message at a time.
            return self._stream_document(path, project_dir, subagent, size)
        doc = read_json_document(path, opts.max_document_bytes)
        if not (
            isinstance(doc, dict)
            and isinstance(doc.get("sessionId"), str)
            and isinstance(doc.get("messages"), list)
        ):
            return ReadResult(unsupported=f"unknown format (no sessionId/messages) in {path.name}")
        meta = _Meta()
        convo = Conversation(self.assistant_type)
        for said in convo.messages(doc["messages"], 0, "i:"):
            meta.touch(said)
        return self._document_result(doc, meta, convo, project_dir, subagent, size)

    def _stream_document(
        self, path: Path, project_dir: Path, subagent: bool, size: int
    ) -> ReadResult:
        """A big ``session-*.json`` read one message at a time (bounded memory,
        not subject to ``index.max_document_bytes``); the same turns as a whole read."""
        from backscroll.readers.stream import ARRAY_START, NotAnObject, stream_members

        top: dict[str, Any] = {}
        meta = _Meta()
        convo = Conversation(self.assistant_type)
        listed = False

        def items() -> Iterator[Any]:
            nonlocal listed
            for key, value in stream_members(path, "messages"):
                if key == "messages.item":
                    yield value
                elif value is ARRAY_START:
                    listed = True
                else:
                    top[key] = value

        try:
            for said in convo.messages(items(), 0, "i:"):
                meta.touch(said)
        except NotAnObject:
            listed = False  # a ValueError (truncated mid-write) propagates: retried
        if not (listed and isinstance(top.get("sessionId"), str)):
            return ReadResult(unsupported=f"unknown format (no sessionId/messages) in {path.name}")
        return self._document_result(top, meta, convo, project_dir, subagent, size)

    def _document_result(
        self,
        top: Mapping[str, Any],
        meta: _Meta,
        convo: Conversation,
        project_dir: Path,
        subagent: bool,
        size: int,
    ) -> ReadResult:
        meta.header(top)
        sid = top["sessionId"]
        subagent = subagent or meta.kind == "subagent"
        return ReadResult(
            turns=tuple(s.turn(sid, subagent) for s in convo.said()),
            sessions=(self._session(meta, convo.first_user, project_dir),),
            position=size,
            replace=True,
        )

    def _read_log_whole(
        self, path: Path, project_dir: Path, subagent: bool, opts: ReaderOptions
    ) -> ReadResult:
        tail, records = tail_jsonl(path, None, opts, _PARSE)
        meta = _Meta()
        convo = Conversation(self.assistant_type)
        problems: list[Problem] = []
        for line, obj in records:
            if not isinstance(obj, dict):
                problems.append(Problem("record is not a JSON object", line.number, line.offset))
                continue
            if line.offset == 0:
                if not _is_header(obj):
                    return ReadResult(unsupported=f"unknown format (no header line) in {path.name}")
                meta.header(obj)
                if isinstance(obj.get("messages"), list):
                    convo.checkpoint(obj["messages"], 0)
                continue
            if "$rewindTo" in obj:
                convo.rewind(obj["$rewindTo"])
            elif isinstance(obj.get("$set"), dict):
                patch = obj["$set"]
                meta.set(patch)
                if isinstance(patch.get("messages"), list):
                    convo.checkpoint(patch["messages"], line.offset)
            elif "type" in obj:
                meta.touch(convo.message(obj, line.offset, f"o:{line.offset}"))
        if meta.session_id is None:
            return ReadResult(position=0, problems=(*tail.problems, *problems))
        subagent = subagent or meta.kind == "subagent"
        sid = meta.session_id
        return ReadResult(
            turns=tuple(s.turn(sid, subagent) for s in convo.said()),
            sessions=(self._session(meta, convo.first_user, project_dir),),
            position=tail.end,
            state=self._state(tail_line=next_line_number(tail), meta=meta, convo=convo),
            replace=True,
            problems=(*tail.problems, *problems),
        )

    @staticmethod
    def _state(tail_line: int, meta: _Meta, convo: Conversation) -> dict[str, Any]:
        return {
            "line": tail_line,
            "sid": meta.session_id,
            "summary": meta.summary,
            "started": meta.started,
            "updated": meta.updated,
            "kind": meta.kind,
            "hash": meta.project_hash,
            "first_user": first_line_title(convo.first_user) if convo.first_user else None,
            "tainted": convo.tainted,
        }

    def _read_log_tail(
        self,
        path: Path,
        prev: Cursor,
        project_dir: Path,
        subagent: bool,
        opts: ReaderOptions,
    ) -> ReadResult:
        st = prev.state
        meta = _Meta(
            session_id=str(st["sid"]),
            summary=st.get("summary"),
            started=st.get("started"),
            updated=st.get("updated"),
            kind=st.get("kind"),
            project_hash=st.get("hash"),
        )
        convo = Conversation(
            self.assistant_type,
            tainted=bool(st.get("tainted")),
            first_user=st.get("first_user"),
        )
        tail, records = tail_jsonl(path, prev, opts, _PARSE)
        fresh: dict[str, Said] = {}
        problems: list[Problem] = []
        for line, obj in records:
            if not isinstance(obj, dict):
                problems.append(Problem("record is not a JSON object", line.number, line.offset))
                continue
            if "$rewindTo" in obj:
                return self._read_log_whole(path, project_dir, subagent, opts)
            if isinstance(obj.get("$set"), dict):
                patch = obj["$set"]
                sid = patch.get("sessionId")
                if isinstance(sid, str) and sid and sid != meta.session_id:
                    return self._read_log_whole(path, project_dir, subagent, opts)
                meta.set(patch)
                if isinstance(patch.get("messages"), list):
                    for kept in convo.checkpoint(patch["messages"], line.offset):
                        fresh[kept.key] = kept
            elif "type" in obj:
                said = convo.message(obj, line.offset, f"o:{line.offset}")
                if said is None and is_compression_ack(obj, self.assistant_type):
                    # It makes the message before it a summary, which may have
                    # come in an earlier read: read the file again whole.
                    return self._read_log_whole(path, project_dir, subagent, opts)
                meta.touch(said)
                if said is not None:
                    fresh[said.key] = said
        subagent = subagent or meta.kind == "subagent"
        sid = str(meta.session_id)
        return ReadResult(
            turns=tuple(s.turn(sid, subagent) for s in fresh.values()),
            sessions=(self._session(meta, convo.first_user, project_dir),),
            position=tail.end,
            state=self._state(tail_line=next_line_number(tail), meta=meta, convo=convo),
            problems=(*tail.problems, *problems),
        )

    # ----------------------------------------------------------------- logs.json

    def _read_logs(self, path: Path, project_dir: Path, opts: ReaderOptions) -> ReadResult:
        size = path.stat().st_size
        entries = read_json_document(path, opts.max_document_bytes)
        if not isinstance(entries, list):
            return ReadResult(unsupported=f"unknown format (not a list) in {path.name}")
        recorded = _recorded_sessions(project_dir / "chats")
        project = project_for(project_dir)
        turns: list[Turn] = []
        sessions: dict[str, Session] = {}
        problems: list[Problem] = []
        for i, entry in enumerate(entries):
            if not isinstance(entry, dict):
                problems.append(Problem(f"entry {i} is not a JSON object"))
                continue
            sid, text = entry.get("sessionId"), entry.get("message")
            if not isinstance(sid, str) or not sid or sid[:8] in recorded:
                continue
            if entry.get("type") != "user" or not isinstance(text, str):
                continue
            text = clean_text(text)
            if classify_user_text(text) != "user":
                continue
            timestamp = parse_time(entry.get("timestamp"))
            msg_id = entry.get("messageId")
            key = f"log:{msg_id}" if isinstance(msg_id, int) else f"log:i{i}"
            turns.append(Turn(sid, key, "user", text, timestamp, i, note="from logs.json"))
            if sid not in sessions:
                # No chat file, so nothing for `gemini --resume` to load: no command.
                sessions[sid] = Session(
                    sid, project=project, title=first_line_title(text), started_at=timestamp
                )
            elif timestamp is not None:
                old = sessions[sid]
                sessions[sid] = Session(
                    sid,
                    project=old.project,
                    title=old.title,
                    started_at=old.started_at,
                    updated_at=timestamp,
                )
        return ReadResult(
            turns=tuple(turns),
            sessions=tuple(sessions.values()),
            position=size,
            replace=True,
            problems=tuple(problems),
        )


def _recorded_sessions(chats: Path) -> set[str]:
    """Short ids (first 8 characters) of the sessions that have a chat file."""
    out: set[str] = set()
    try:
        names = [p.name for p in chats.iterdir()]
    except OSError:
        return out
    for name in names:
        stem = name.split(".", 1)[0]
        if name.startswith("session-"):
            out.add(stem.rsplit("-", 1)[-1])
        else:
            out.add(stem[:8])  # a `<parentSessionId>/` sub-agent directory
    return out
