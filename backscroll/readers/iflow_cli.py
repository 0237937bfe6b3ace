"""iFlow CLI: ``~/.iflow/projects/<project>/session-<uuid>.jsonl``.

iFlow does not publish its persistence code; what is known comes from one peer
reader and one real session it published (``shared/formats/iflow-cli/README.md``),
so this reader is tolerant where the notes say **unverified**: how the project
folder is named, whether anything moves ``~/.iflow`` (no variable is known; set
``hosts.iflow-cli.roots`` to read another place), whether files are only ever
appended (a shrunk or rewritten file is re-read whole by the indexer), and the
resume command (none is given).

Lines are Claude Code-like records (``uuid``, ``parentUuid``, ``sessionId``,
``timestamp``, ``type``, ``message`` with Anthropic content blocks, ``cwd``).
Indexed: ``user`` records whose content is a string or ``text`` blocks (not
``tool_result`` ones), and the ``text`` blocks of ``assistant`` records. Out:
``tool_use``, thinking, tool results, and ``isSidechain`` lines (sub-agents,
unless asked for).

Assistant records are streaming snapshots: while a reply streams, iFlow writes
several lines with the same ``parentUuid`` within milliseconds, each a sliding
window of the blocks then active. A run of such lines (same parent, under a
second apart) is one burst, and a text block already said in the burst is not
said again. The burst is kept in the saved state, so a burst split across two
reads is merged the same way.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from backscroll.model import Cursor, Kind, Problem, ReaderOptions, ReadResult, Role, Session, Turn
from backscroll.readers.base import (
    BaseReader,
    HostEnv,
    SessionProgress,
    block_texts,
    calls_external_tool,
    clean_text,
    content_key,
    first_line_title,
    next_line_number,
    parse_time,
    tail_jsonl,
)

#: Assistant lines closer than this (seconds) with one parent are one burst.
BURST_SECONDS = 1.0


def _content(record: Mapping[str, Any]) -> Any:
    message = record.get("message")
    return message.get("content") if isinstance(message, dict) else None


def _has_tool_result(content: Any) -> bool:
    return isinstance(content, list) and any(
        isinstance(b, dict) and b.get("type") == "tool_result" for b in content
    )


@dataclass(slots=True)
class _Log(SessionProgress):
    burst_parent: str | None = None
    burst_at: float | None = None
    burst_texts: list[str] = field(default_factory=list)

    @classmethod
    def resume(cls, state: Mapping[str, Any]) -> _Log:
        log = cls.resumed(state)
        burst = state.get("burst")
        if isinstance(burst, dict):
            log.burst_parent = burst.get("parent")
            log.burst_at = burst.get("at")
            texts = burst.get("texts")
            log.burst_texts = (
                [t for t in texts if isinstance(t, str)] if isinstance(texts, list) else []
            )
        return log

    def saved(self, line: int) -> dict[str, Any]:
        burst = {"parent": self.burst_parent, "at": self.burst_at, "texts": self.burst_texts}
        return {**self.state(line), "burst": burst}

    def record(self, rec: Mapping[str, Any], offset: int, opts: ReaderOptions) -> Turn | None:
        if isinstance(rec.get("sessionId"), str) and self.session_id is None:
            self.session_id = rec["sessionId"]
        if isinstance(rec.get("cwd"), str) and rec["cwd"]:
            self.cwd = rec["cwd"]
        when = parse_time(rec.get("timestamp"))
        if when is not None:
            self.started = self.started if self.started is not None else when
            self.updated = max(self.updated or 0.0, when)
        kind = rec.get("type")
        content = _content(rec)
        subagent = bool(rec.get("isSidechain"))
        raw_key = rec.get("uuid")
        key = raw_key if isinstance(raw_key, str) and raw_key else f"o:{offset}"
        role: Role
        if kind == "user":
            self.burst_parent = None
            if _has_tool_result(content):
                return None
            role, text = "user", clean_text("\n\n".join(block_texts(content)))
            if text and not subagent:
                self.tainted = False
                self.first_user = self.first_user or first_line_title(text)
        elif kind == "assistant":
            role, text = "assistant", self._new_text(rec, content, when)
        else:
            return None
        tainted = self.tainted and role == "assistant"
        if role == "assistant" and calls_external_tool(content):
            self.tainted = True  # what is said after the tool ran
        if not text or (subagent and not opts.include_subagents):
            return None
        return Turn("", key, role, text, when, offset, tainted=tainted, subagent=subagent)

    def _new_text(self, rec: Mapping[str, Any], content: Any, when: float | None) -> str:
        """The text blocks of an assistant snapshot not yet said in its burst."""
        parent = rec.get("parentUuid")
        same = (
            isinstance(parent, str)
            and parent == self.burst_parent
            and when is not None
            and self.burst_at is not None
            and when - self.burst_at < BURST_SECONDS
        )
        if not same:
            self.burst_parent = parent if isinstance(parent, str) else None
            self.burst_texts = []
        self.burst_at = when
        fresh: list[str] = []
        for text in block_texts(content if isinstance(content, list) else []):
            text = clean_text(text)
            digest = content_key(text)
            if text and digest not in self.burst_texts:
                self.burst_texts.append(digest)
                fresh.append(text)
        return "\n\n".join(fresh)


class IflowCliReader(BaseReader):
    host: ClassVar[str] = "iflow-cli"
    name: ClassVar[str] = "iFlow CLI"
    version: ClassVar[int] = 1
    kind: ClassVar[Kind] = "append"

    def roots(self, env: HostEnv) -> list[Path]:
        # ~/.iflow on every OS (the home directory on Windows and macOS too:
        # unverified, as is any variable that moves it).
        return [env.home / ".iflow" / "projects"]

    def source_for(self, path: Path) -> Path | None:
        if (
            path.suffix == ".jsonl"
            and path.name.startswith("session-")
            and path.parent.parent.name == "projects"
        ):
            return path
        return None

    def read(self, path: Path, prev: Cursor | None, opts: ReaderOptions) -> ReadResult:
        if prev is not None and not prev.state.get("line"):
            prev = None
        log = _Log.resume(prev.state) if prev else _Log()
        tail, records = tail_jsonl(path, prev, opts)
        said: list[Turn] = []
        problems: list[Problem] = []
        for line, rec in records:
            if not isinstance(rec, dict):
                problems.append(Problem("record is not a JSON object", line.number, line.offset))
                continue
            turn = log.record(rec, line.offset, opts)
            if turn is not None:
                said.append(turn)
        sid = log.session_id or path.stem
        log.session_id = sid
        turns = tuple(
            Turn(sid, t.key, t.role, t.text, t.timestamp, t.seq, t.tainted, t.subagent)
            for t in said
        )
        session = Session(
            sid,
            project=log.cwd,
            title=log.title or log.first_user,
            started_at=log.started,
            updated_at=log.updated,
        )
        return ReadResult(
            turns=turns,
            sessions=(session,),
            position=tail.end,
            state=log.saved(next_line_number(tail)),
            replace=prev is None,
            problems=(*tail.problems, *problems),
        )
