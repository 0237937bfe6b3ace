"""Claude Code: ``~/.claude/projects/<slug>/<session>.jsonl``, append-only JSONL.

Indexed: what the person typed (plain user entries and prompts queued while a turn
ran), the assistant's ``text`` blocks and compaction summaries. Tool calls, tool
results, thinking, ``isMeta`` injections, slash-command and shell wrappers, hook
output and bookkeeping lines stay out. Sub-agent transcripts (``<session>/subagents/
agent-*.jsonl``, a workflow's ``<session>/subagents/workflows/<id>/agent-*.jsonl`` and
the older flat ``agent-*.jsonl``) are claimed but only produce turns, under the parent
session, when ``include_subagents`` is on.

A session run from Claude Desktop's "Code" tab is an ordinary transcript here; its
title is the one the app shows, from the app's sidecar (claude_desktop.py), over the
transcript's own. The sidecar is a :meth:`sidecars <ClaudeCodeReader.sidecars>`
entry: a rename has the transcript read on from where it stopped, and every read
returns the session, titled afresh.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, TypedDict

from backscroll.model import Cursor, Kind, ReaderOptions, ReadResult, Role, Session, Turn
from backscroll.readers.base import (
    BaseReader,
    HostEnv,
    block_texts,
    clean_text,
    content_key,
    first_line_title,
    is_absolute_path,
    is_external_tool,
    looks_like_id,
    next_line_number,
    open_regular,
    parse_time,
    resume_in,
    tag_blocks,
    tail_jsonl,
    unread_subagent,
)
from backscroll.readers.claude_desktop import CODE_TAB
from backscroll.readers.lean import Lean

#: Entries from a Claude Code version whose major number is above this are not
#: read: the transcript format is only known up to 2.x.
MAX_MAJOR_VERSION = 2
#: How many recent queued-prompt fingerprints are kept to pair a ``queued_command``
#: attachment with the ``queue-operation remove`` written for the same prompt.
QUEUE_MEMORY = 32

_TITLE_RANKS = {"custom-title": 4, "ai-title": 3, "summary": 2}
_TITLE_FIELDS = {"custom-title": "customTitle", "ai-title": "aiTitle", "summary": "summary"}
_PROMPT_RANK = 1

_STRIPPED_BLOCKS = tag_blocks(
    "system-reminder", "ide_opened_file", "ide_selection", trailing_space=True
)
_WRAPPERS = (
    "<command-name>",
    "<command-message>",
    "<command-args>",
    "<local-command-stdout>",
    "<local-command-stderr>",
    "<local-command-caveat>",
    "<bash-input>",
    "<bash-stdout>",
    "<bash-stderr>",
    "<task-notification>",
)
#: Written by the harness into the user's turn when the person pressed Esc.
_INTERRUPTED = re.compile(r"^\[Request interrupted by user[^\]]*\]$")
_VERSION = re.compile(r"^(\d+)\.\d+")


# The fields of an entry this reader reads (readers/lean.py): a tool result's
# output, a tool call's input, thinking, ``toolUseResult`` are skipped unparsed.
class _Block(TypedDict, total=False):
    type: Any
    text: Any
    name: Any


class _Message(TypedDict, total=False):
    model: Any
    content: str | list[_Block | str] | None


class _Snapshot(TypedDict, total=False):
    timestamp: Any


class _Attachment(TypedDict, total=False):
    type: Any
    isMeta: Any
    prompt: Any
    timestamp: Any


class _Entry(TypedDict, total=False):
    type: Any
    timestamp: Any
    snapshot: _Snapshot
    cwd: Any
    sessionId: Any
    version: Any
    uuid: Any
    isMeta: Any
    isCompactSummary: Any
    isApiErrorMessage: Any
    message: _Message
    customTitle: Any
    aiTitle: Any
    summary: Any
    leafUuid: Any
    attachment: _Attachment
    operation: Any
    content: Any


_PARSE = Lean(_Entry)


def user_text(raw: str) -> str | None:
    """The prose of a user text, or None for harness wrappers and empty texts."""
    text = clean_text(_STRIPPED_BLOCKS.sub("", raw))
    if not text or text.startswith(_WRAPPERS) or _INTERRUPTED.match(text):
        return None
    return text


@dataclass
class _State:
    """What a read carries over to the next one (kept small and JSON-friendly)."""

    line: int = 1
    session_id: str | None = None
    cwd: str | None = None
    started_at: float | None = None
    updated_at: float | None = None
    title: str | None = None
    title_rank: int = 0
    tainted: bool = False
    #: An entry was read (in this read or an earlier one): the session exists.
    seen: bool = False
    #: Fingerprints of queued prompts indexed from attachments / from ``remove``
    #: lines, not yet paired with their twin.
    queued: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    #: ``summary`` titles waiting for their ``leafUuid`` to show up in this file (a
    #: summary may describe another session's file): leaf uuid -> title.
    summaries: dict[str, str] = field(default_factory=dict)

    @classmethod
    def load(cls, prev: Cursor | None) -> _State:
        if prev is None:
            return cls()
        s = prev.state
        return cls(
            line=int(s.get("line", 1)),
            session_id=s.get("sid"),
            cwd=s.get("cwd"),
            started_at=s.get("started"),
            updated_at=s.get("updated"),
            title=s.get("title"),
            title_rank=int(s.get("rank", 0)),
            tainted=bool(s.get("taint", False)),
            seen=bool(s.get("seen", False)),
            queued=list(s.get("q", [])),
            removed=list(s.get("r", [])),
            summaries=dict(s.get("ps", {})),
        )

    def dump(self) -> dict[str, Any]:
        return {
            "line": self.line,
            "sid": self.session_id,
            "cwd": self.cwd,
            "started": self.started_at,
            "updated": self.updated_at,
            "title": self.title,
            "rank": self.title_rank,
            "taint": self.tainted,
            "seen": self.seen,
            "q": self.queued[-QUEUE_MEMORY:],
            "r": self.removed[-QUEUE_MEMORY:],
            "ps": dict(list(self.summaries.items())[-QUEUE_MEMORY:]),
        }

    def offer_title(self, title: str, rank: int) -> None:
        # A rename (same rank, newer line) wins; the first prompt is only a fallback.
        if rank > self.title_rank or (rank == self.title_rank and rank > _PROMPT_RANK):
            title = first_line_title(title)  # (only for a title that wins: every prompt offers)
            if title:
                self.title, self.title_rank = title, rank


_UUID_FIELD = re.compile(rb'"uuid"\s*:\s*"([^"\\]*)"')
#: Bytes read at a time when searching the part of a file read before.
_PIECE = 1 << 20


def _uuids_before(path: Path, end: int) -> set[bytes]:
    """Every entry uuid in the file's first ``end`` bytes, read once in pieces
    (a summary's leaf is looked up there: one pass however many summaries)."""
    found: set[bytes] = set()
    carry: list[bytes] = []  # (the start of a line that goes on in the next piece)
    left = end
    try:
        with open_regular(path) as fh:
            while left > 0:
                piece = fh.read(min(left, _PIECE))
                if not piece:
                    break
                left -= len(piece)
                cut = piece.rfind(b"\n") + 1
                if cut == 0:
                    carry.append(piece)
                    continue
                found.update(_UUID_FIELD.findall(b"".join([*carry, piece[:cut]])))
                carry = [piece[cut:]]
            found.update(_UUID_FIELD.findall(b"".join(carry)))
    except OSError:
        pass
    return found


def _in_workflow(path: Path) -> bool:
    """A sub-agent of a workflow, one level deeper than the others."""
    parents = path.parents
    return len(parents) >= 3 and parents[1].name == "workflows" and parents[2].name == "subagents"


@dataclass(frozen=True, slots=True)
class _File:
    """Which kind of transcript a path is and which session its turns belong to."""

    session_id: str | None  # None: learn it from the entries (old flat sub-agent files)
    subagent: bool
    key_prefix: str


def _classify(path: Path) -> _File:
    stem = path.name[: -len(".jsonl")]
    if path.parent.name == "subagents":
        return _File(path.parent.parent.name, True, f"{stem}:")
    if _in_workflow(path):
        # <session>/subagents/workflows/<workflow-id>/agent-<id>.jsonl
        return _File(path.parents[3].name, True, f"{path.parent.name}/{stem}:")
    if stem.startswith("agent-"):
        return _File(None, True, f"{stem}:")
    return _File(stem, False, "")


class ClaudeCodeReader(BaseReader):
    host: ClassVar[str] = "claude-code"
    name: ClassVar[str] = "Claude Code"
    #: 2: a summary titles its file only when its leafUuid is there (read again).
    #: 3: a Desktop Code-tab session takes the app's title (read again).
    version: ClassVar[int] = 3
    kind: ClassVar[Kind] = "append"
    #: A renamed Code-tab session costs no whole re-read: every read returns the
    #: session with the sidecar's title.
    sidecars_reread_whole: ClassVar[bool] = False

    def roots(self, env: HostEnv) -> list[Path]:
        config_dir = env.var("CLAUDE_CONFIG_DIR") or env.home / ".claude"
        roots = [config_dir / "projects", env.xdg_config() / "claude" / "projects"]
        return list(dict.fromkeys(roots))

    def sidecars(self, path: Path) -> list[Path]:
        """The Desktop app's Code-tab sidecars naming this session (outside the
        roots: a stat-only pass sees a rename, not the watcher)."""
        return CODE_TAB.of(path)

    def source_for(self, path: Path) -> Path | None:
        if path.suffix != ".jsonl" or "tool-results" in path.parts:
            return None
        parents = path.parents
        if len(parents) >= 2 and parents[1].name == "projects":
            return path  # projects/<slug>/<session>.jsonl or the old flat agent-*.jsonl
        if (
            len(parents) >= 4
            and parents[0].name == "subagents"
            and path.name.startswith("agent-")
            and parents[3].name == "projects"
        ):
            return path  # projects/<slug>/<session>/subagents/agent-<id>.jsonl
        if (
            len(parents) >= 6
            and _in_workflow(path)
            and path.name.startswith("agent-")
            and parents[5].name == "projects"
        ):
            return path  # projects/<slug>/<session>/subagents/workflows/<wf>/agent-<id>.jsonl
        return None

    def read(self, path: Path, prev: Cursor | None, opts: ReaderOptions) -> ReadResult:
        file = _classify(path)
        if file.subagent and not opts.include_subagents:
            return unread_subagent()
        state = _State.load(prev)
        if state.session_id is None:
            state.session_id = file.session_id
        parser = _Parser(path, file, state)
        parser.start = prev.position if prev else 0
        tail, lines = tail_jsonl(path, prev, opts, _PARSE)
        for line, obj in lines:
            if not isinstance(obj, dict):
                continue
            if obj.get("version") != parser.known_version:  # (every entry repeats it)
                unsupported = parser.check_version(obj)
                if unsupported:
                    return ReadResult(unsupported=f"{unsupported} in {path.name}")
            parser.entry(obj, line.offset)
        state.line = next_line_number(tail)
        sessions = parser.sessions()
        if sessions and not file.subagent:
            title = CODE_TAB.title(path)
            if title is not None:  # the title the app shows wins (format notes §2, §7)
                sessions = (dataclasses.replace(sessions[0], title=title),)
        return ReadResult(
            turns=tuple(parser.turns),
            sessions=sessions,
            position=tail.end,
            state=state.dump(),
            replace=prev is None or prev.position == 0,
            problems=tuple(tail.problems),
            ran_in=state.cwd if file.subagent else None,
        )


class _Parser:
    """Turns entries into turns, updating the carried-over state as it goes."""

    def __init__(self, path: Path, file: _File, state: _State) -> None:
        self.path = path
        self.file = file
        self.state = state
        self.turns: list[Turn] = []
        self.saw_entry = False
        self.known_version: str | None = None
        #: Entry uuids seen in this read (a summary's leaf may come before it), and
        #: where this read started (the entries before it are searched for a leaf).
        self.uuids: set[str] = set()
        self.start = 0
        #: The uuids in the part of the file read before this read, gathered at
        #: the first summary that needs them (None: not gathered yet).
        self.before: set[bytes] | None = None

    def earlier(self, uuid: str) -> bool:
        """Whether an entry with this uuid is in the part of the file read before
        this read (a byte search; only for a summary's leaf, which is rare)."""
        if self.start <= 0:
            return False
        if self.before is None:
            self.before = _uuids_before(self.path, self.start)
        return uuid.encode("utf-8", "surrogatepass") in self.before  # (JSON allows "\ud800")

    def check_version(self, obj: dict[str, Any]) -> str | None:
        version = obj.get("version")
        if version == self.known_version:
            return None  # (every entry repeats it: checked once per value)
        if isinstance(version, str):
            match = _VERSION.match(version)
            if match and int(match.group(1)) > MAX_MAJOR_VERSION:
                return f"unknown format version {version}"
            self.known_version = version
        return None

    # ------------------------------------------------------------------ entries

    def entry(self, obj: dict[str, Any], offset: int) -> None:
        self.saw_entry = True
        state = self.state
        kind = obj.get("type")
        if not isinstance(kind, str):
            kind = None  # (an object or a list there is no record kind)
        ts = parse_time(obj.get("timestamp"))
        if ts is None and kind == "file-history-snapshot":
            snapshot = obj.get("snapshot")
            ts = parse_time(snapshot.get("timestamp")) if isinstance(snapshot, dict) else None
        if ts is not None:
            if state.started_at is None:
                state.started_at = ts
            state.updated_at = ts if state.updated_at is None else max(state.updated_at, ts)
        if state.cwd is None and is_absolute_path(obj.get("cwd")):
            state.cwd = obj["cwd"]
        if state.session_id is None and isinstance(obj.get("sessionId"), str):
            state.session_id = obj["sessionId"]

        if kind == "user":
            self.user(obj, offset, ts)
        elif kind == "assistant":
            self.assistant(obj, offset, ts)
        elif kind == "attachment":
            self.queued_command(obj, offset, ts)
        elif kind == "queue-operation":
            self.queue_remove(obj, offset, ts)
        elif kind in _TITLE_RANKS and not self.file.subagent:
            title = obj.get(_TITLE_FIELDS[kind])
            leaf = obj.get("leafUuid") if kind == "summary" else None
            if not isinstance(title, str):
                pass
            elif isinstance(leaf, str) and leaf not in self.uuids and not self.earlier(leaf):
                # A summary names the last message it summarises, which may be in
                # another session's file: its title counts once that message is here.
                state.summaries[leaf] = title
            else:
                state.offer_title(title, _TITLE_RANKS[kind])
        uuid = obj.get("uuid")
        if isinstance(uuid, str):
            self.uuids.add(uuid)
            if state.summaries and uuid in state.summaries:
                state.offer_title(state.summaries.pop(uuid), _TITLE_RANKS["summary"])

    def user(self, obj: dict[str, Any], offset: int, ts: float | None) -> None:
        if obj.get("isMeta"):
            return
        message = obj.get("message")
        content = message.get("content") if isinstance(message, dict) else None
        if obj.get("isCompactSummary"):
            text = clean_text("\n\n".join(block_texts(content)))
            if text:
                self.add(self.entry_key(obj, offset), "summary", text, ts, offset)
            return
        raws = block_texts(content)
        if not raws:
            return  # (tool results only)
        texts = [t for t in map(user_text, raws) if t]
        if not texts:
            return
        self.state.tainted = False  # a new exchange starts with the person's prompt
        base = self.entry_key(obj, offset)
        for i, text in enumerate(texts):
            key = base if len(texts) == 1 else f"{base}#{i}"
            self.add(key, "user", text, ts, offset + i)
        if not self.file.subagent:
            self.state.offer_title(texts[0], _PROMPT_RANK)

    def assistant(self, obj: dict[str, Any], offset: int, ts: float | None) -> None:
        message = obj.get("message")
        if obj.get("isApiErrorMessage") or not isinstance(message, dict):
            return
        if message.get("model") == "<synthetic>":
            return  # harness-written stand-ins ("No response requested."), not model prose
        content = message.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        if not isinstance(blocks, list):
            return
        found: list[tuple[str, bool]] = []
        for block in blocks:
            if not isinstance(block, dict):
                continue
            if block.get("type") == "tool_use" and is_external_tool(block.get("name")):
                self.state.tainted = True
            elif block.get("type") == "text" and isinstance(block.get("text"), str):
                text = clean_text(block["text"])
                if text:
                    found.append((text, self.state.tainted))
        base = self.entry_key(obj, offset)
        for i, (text, tainted) in enumerate(found):
            key = base if len(found) == 1 else f"{base}#{i}"
            self.add(key, "assistant", text, ts, offset + i, tainted=tainted)

    def queued_command(self, obj: dict[str, Any], offset: int, ts: float | None) -> None:
        attachment = obj.get("attachment")
        if not isinstance(attachment, dict) or attachment.get("type") != "queued_command":
            return
        if obj.get("isMeta") or attachment.get("isMeta"):
            return
        texts = [t for t in (user_text(raw) for raw in block_texts(attachment.get("prompt"))) if t]
        if not texts:
            return
        text = "\n\n".join(texts)
        fingerprint = content_key(text)
        if fingerprint in self.state.removed:  # its ``remove`` twin came first
            self.state.removed.remove(fingerprint)
            return
        self.state.queued.append(fingerprint)
        when = ts if ts is not None else parse_time(attachment.get("timestamp"))
        self.add(self.entry_key(obj, offset), "user", text, when, offset)

    def queue_remove(self, obj: dict[str, Any], offset: int, ts: float | None) -> None:
        if obj.get("operation") != "remove" or not isinstance(obj.get("content"), str):
            return
        text = user_text(obj["content"])
        if not text:
            return
        fingerprint = content_key(text)
        if fingerprint in self.state.queued:  # already indexed from its attachment
            self.state.queued.remove(fingerprint)
            return
        self.state.removed.append(fingerprint)
        self.add(f"{self.file.key_prefix}o:{offset}", "user", text, ts, offset)

    # ------------------------------------------------------------------ output

    def entry_key(self, obj: dict[str, Any], offset: int) -> str:
        uuid = obj.get("uuid")
        base = uuid if looks_like_id(uuid) else f"o:{offset}"
        return f"{self.file.key_prefix}{base}"

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
        session_id = self.state.session_id or self.path.name[: -len(".jsonl")]
        self.turns.append(
            Turn(
                session_id=session_id,
                key=key,
                role=role,
                text=text,
                timestamp=ts,
                seq=seq,
                tainted=tainted,
                subagent=self.file.subagent,
            )
        )

    def sessions(self) -> tuple[Session, ...]:
        state = self.state
        state.seen = state.seen or self.saw_entry
        if not state.seen or state.session_id is None:
            return ()
        if self.file.subagent:
            # The parent's own file owns its metadata; a sub-agent may run elsewhere.
            return (Session(state.session_id),)
        return (
            Session(
                state.session_id,
                project=state.cwd,
                title=state.title,
                started_at=state.started_at,
                updated_at=state.updated_at,
                resume_command=resume_in(state.cwd, "claude", "--resume", state.session_id),
            ),
        )
