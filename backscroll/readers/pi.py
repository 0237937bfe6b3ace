"""Pi coding agent (badlogic/pi-mono) and its fork Oh My Pi (``omp``).

Append-only JSONL under ``~/.pi/agent/sessions/--<cwd>--/<time>_<uuid>.jsonl``
(``~/.omp/agent/...`` for omp). Line 1 is the session header; every later line
is an entry. Indexed: ``message`` entries of role ``user`` (text) and
``assistant`` (``text`` blocks), ``compaction`` and ``branch_summary`` summaries.
Thinking, tool calls, tool results, ``!`` shell runs and extension records stay out.

Version 1 files have no entry ids (keys fall back to byte offsets); pi migrates
them to version 3 by rewriting the file whole, which changes the header, so the
indexer re-reads the file fresh and the turns are re-keyed by the new ids.
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
    is_external_tool,
    next_line_number,
    parse_time,
    resume_in,
    tail_jsonl,
)

#: pi-mono ``CURRENT_SESSION_VERSION``; older versions are read as they are.
SUPPORTED_VERSION = 3

_FILE_ID = re.compile(r"_([0-9A-Za-z-]{8,})$")


def _id_from_name(path: Path) -> str:
    """The session uuid from ``<ISO time>_<uuid>.jsonl`` (the header repeats it)."""
    match = _FILE_ID.search(path.stem)
    return match.group(1) if match else path.stem


def _command_for(path: Path) -> str:
    """``omp`` for files kept under the fork's ``.omp`` directory, else ``pi``."""
    return "omp" if ".omp" in path.parts else "pi"


def _parent_id(value: Any) -> str | None:
    """The header's ``parentSession`` names the parent's file; keep its uuid."""
    if not isinstance(value, str) or not value:
        return None
    if value.endswith(".jsonl"):
        return _id_from_name(Path(value))
    return value


class PiReader(BaseReader):
    host: ClassVar[str] = "pi"
    name: ClassVar[str] = "Pi"
    version: ClassVar[int] = 1
    kind: ClassVar[Kind] = "append"

    def roots(self, env: HostEnv) -> list[Path]:
        # Same layout on every platform: the agent dir sits in the home directory.
        pi = env.var("PI_CODING_AGENT_DIR") or env.home / ".pi" / "agent"
        omp = env.var("OMP_CODING_AGENT_DIR") or env.home / ".omp" / "agent"
        return [pi / "sessions", omp / "sessions"]

    def source_for(self, path: Path) -> Path | None:
        parent = path.parent.name
        if path.suffix == ".jsonl" and len(parent) > 4 and parent[:2] == parent[-2:] == "--":
            return path
        return None

    def read(self, path: Path, prev: Cursor | None, opts: ReaderOptions) -> ReadResult:
        tail, records = tail_jsonl(path, prev, opts)
        state: dict[str, Any] = dict(prev.state) if prev else {}
        sid: str = state.get("sid") or _id_from_name(path)
        cwd: str | None = state.get("cwd")
        titled: str = state.get("titled", "")
        tainted: bool = bool(state.get("tainted", False))
        title: str | None = None
        started: float | None = None
        updated: float | None = None
        parent: str | None = None
        turns: list[Turn] = []
        problems: list[Problem] = []

        for line, obj in records:
            if not isinstance(obj, dict):
                problems.append(Problem("entry is not a JSON object", line.number, line.offset))
                continue
            kind = obj.get("type")
            if kind == "session":
                version = obj.get("version", 1)
                if not isinstance(version, int) or version > SUPPORTED_VERSION:
                    return ReadResult(unsupported=f"unknown format version {version} in {path}")
                if isinstance(obj.get("id"), str) and obj["id"]:
                    sid = obj["id"]
                if isinstance(obj.get("cwd"), str) and obj["cwd"]:
                    cwd = obj["cwd"]
                started = parse_time(obj.get("timestamp"))
                parent = _parent_id(obj.get("parentSession"))
                continue
            entry_id = obj.get("id")
            key = entry_id if isinstance(entry_id, str) and entry_id else f"o:{line.offset}"
            stamp = parse_time(obj.get("timestamp"))
            role: Role | None = None
            text = ""
            turn_tainted = False
            if kind == "message":
                message = obj.get("message")
                if not isinstance(message, dict):
                    problems.append(Problem("message entry without a message", line.number))
                    continue
                if stamp is None:
                    stamp = parse_time(message.get("timestamp"))
                content = message.get("content")
                if message.get("role") == "user":
                    role, text, tainted = "user", "\n\n".join(block_texts(content)), False
                    if not titled and (candidate := first_line_title(clean_text(text))):
                        title, titled = candidate, "prompt"
                elif message.get("role") == "assistant":
                    role, text, turn_tainted = (
                        "assistant",
                        "\n\n".join(block_texts(content)),
                        tainted,
                    )
                    tainted = tainted or calls_external_tool(content, "toolCall")
                elif message.get("role") == "toolResult":
                    tainted = tainted or is_external_tool(message.get("toolName"))
            elif kind in ("compaction", "branch_summary"):
                summary = obj.get("summary")
                role, text = "summary", summary if isinstance(summary, str) else ""
            elif kind == "session_info":
                name = obj.get("name")
                if isinstance(name, str) and name.strip():
                    title, titled = name.strip(), "name"
            if stamp is not None:
                updated = stamp
            text = clean_text(text)
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
            resume_command=resume_in(cwd, _command_for(path), "--session", sid),
            parent_session_id=parent,
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
            },
            replace=prev is None,
            problems=(*tail.problems, *problems),
        )
