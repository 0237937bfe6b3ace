"""cursor-agent, the Cursor CLI (closed source): its JSONL agent transcripts.

``~/.cursor/projects/<project-slug>/agent-transcripts/<chatId>/<chatId>.jsonl``
(older builds: ``agent-transcripts/<chatId>.jsonl``; sub-agents under
``<chatId>/subagents/<name>.jsonl``). Lines are Anthropic-style
``{"role", "message": {"content": [blocks]}}``; the typed prompt sits inside
``<user_query>`` in the user text. Indexed: that prompt and assistant ``text``
blocks. Tool calls/results and injected context blocks stay out.

Lines carry no ids and no times: keys are byte offsets, and each turn is stamped
with the file's modification time when it was read (for a growing file, close
to when it was written), noted on the turn. The project slug is lossy (every
``/`` became ``-``), so the project is left unknown; the cursor IDE's
``state.vscdb`` is another reader's. No format version is recorded, so no file
is reported unsupported.
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
    MTIME_NOTE,
    BaseReader,
    HostEnv,
    block_texts,
    calls_external_tool,
    clean_text,
    first_line_title,
    next_line_number,
    tag_blocks,
    tail_jsonl,
    unread_subagent,
)

_QUERY = re.compile(r"<user_query>(.*?)</user_query>", re.DOTALL)
# Context cursor-agent wraps around a prompt when there is no <user_query>.
_INJECTED = tag_blocks(
    "user_info",
    "attached_files",
    "additional_data",
    "system_reminder",
    "system-reminder",
    "rules",
    "open_and_recently_viewed_files",
    "git_status",
    "terminal_files_information",
)


_PLACEHOLDER = "[REDACTED]"


def _user_prompt(content: Any) -> str:
    texts = block_texts(content)
    joined = "\n\n".join(texts)
    queries = _QUERY.findall(joined)
    if queries:
        return clean_text("\n\n".join(q.strip() for q in queries))
    return clean_text(_INJECTED.sub("", joined))


def _identity(path: Path) -> tuple[str, str | None]:
    """(chat id, sub-agent name or None) from the transcript's place on disk."""
    parts = path.parts
    if len(parts) >= 3 and parts[-2] == "subagents":
        return parts[-3], path.stem
    return path.stem, None


class CursorAgentReader(BaseReader):
    host: ClassVar[str] = "cursor-agent"
    name: ClassVar[str] = "cursor-agent"
    version: ClassVar[int] = 2
    kind: ClassVar[Kind] = "append"

    def roots(self, env: HostEnv) -> list[Path]:
        # ``~/.cursor`` on every OS; CURSOR_CONFIG_DIR moves the CLI's config dir
        # (whether transcripts follow it is unverified, so both are watched).
        home = env.home / ".cursor" / "projects"
        moved = env.var("CURSOR_CONFIG_DIR")
        return [moved / "projects", home] if moved and moved / "projects" != home else [home]

    def source_for(self, path: Path) -> Path | None:
        if path.suffix == ".jsonl" and "agent-transcripts" in path.parts:
            return path
        return None

    def read(self, path: Path, prev: Cursor | None, opts: ReaderOptions) -> ReadResult:
        sid, subagent = _identity(path)
        if subagent is not None and not opts.include_subagents:
            return unread_subagent()
        mtime = path.stat().st_mtime
        tail, records = tail_jsonl(path, prev, opts)
        state: dict[str, Any] = dict(prev.state) if prev else {}
        titled = bool(state.get("titled", False))
        started = bool(state.get("started", False))
        tainted = bool(state.get("tainted", False))
        title: str | None = None
        prefix = f"{subagent}:" if subagent else ""
        turns: list[Turn] = []
        problems: list[Problem] = []

        for line, obj in records:
            if not isinstance(obj, dict):
                problems.append(Problem("line is not a JSON object", line.number, line.offset))
                continue
            if "role" not in obj:  # bookkeeping lines such as turn_ended
                continue
            message = obj.get("message")
            if not isinstance(message, dict):
                problems.append(Problem("role line without a message", line.number, line.offset))
                continue
            content = message.get("content")
            role: Role | None = None
            text = ""
            turn_tainted = False
            if obj.get("role") == "user":
                text = _user_prompt(content)
                if text:
                    role, tainted = "user", False
                    if not titled:
                        title, titled = first_line_title(text), True
            elif obj.get("role") == "assistant":
                role, turn_tainted = "assistant", tainted
                # Cursor writes a literal ``[REDACTED]`` block where it withholds
                # the model's reasoning: a placeholder, not something said.
                said = [t for t in block_texts(content) if t.strip() != _PLACEHOLDER]
                text = clean_text("\n\n".join(said))
                tainted = tainted or calls_external_tool(content)
            if role is None or not text:
                continue
            turns.append(
                Turn(
                    session_id=sid,
                    key=f"{prefix}o:{line.offset}",
                    role=role,
                    text=text,
                    timestamp=mtime,
                    seq=line.offset,
                    tainted=turn_tainted,
                    subagent=subagent is not None,
                    note=MTIME_NOTE,
                )
            )

        sessions: tuple[Session, ...] = ()
        if subagent is None and tail.lines_read:
            sessions = (
                Session(
                    sid,
                    title=title,
                    started_at=None if started else mtime,
                    updated_at=mtime,
                    # Chats are stored per working directory: run it from the project.
                    resume_command=f"cursor-agent --resume {sid}",
                ),
            )
        return ReadResult(
            turns=tuple(turns),
            sessions=sessions,
            position=tail.end,
            state={
                "line": next_line_number(tail),
                "titled": titled,
                "tainted": tainted,
                "started": started or bool(sessions),
            },
            replace=prev is None,
            problems=(*tail.problems, *problems),
        )
