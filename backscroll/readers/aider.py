"""Aider: ``.aider.chat.history.md``, one append-only markdown file per repository.

The file is not under a root: the indexer looks for it in the project directories
other hosts' sessions name (``project_files``), plus configured roots.

Each ``# aider chat started at <local time>`` line starts a session (id: a hash of
the file's path plus the header's byte offset; project: the file's directory).
Aider writes every prompt line as ``#### <line>  `` (two trailing spaces), tool and
status output as ``> <line>  `` blockquotes, and the reply as plain markdown in
between. Indexed: prompts (slash commands left out: ``/code x`` is followed by
a bare ``x`` prompt anyway) and replies, minus ``<think>`` blocks and fenced
SEARCH/REPLACE edit blocks. Turns carry their session's start time.

Tailing: a block (prompt or reply) is only known to be finished when the next one
starts, so the block still open at the end of a read is emitted as it stands and
the saved position is its first byte: the next read parses it again whole and
re-emits it under the same key. Reading incrementally therefore equals reading fresh.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import Any, ClassVar

from backscroll.model import Cursor, Kind, Problem, ReaderOptions, ReadResult, Session, Turn
from backscroll.readers.base import (
    BaseReader,
    HostEnv,
    Tail,
    clean_text,
    content_key,
    first_line_title,
    next_line_number,
    resume_in,
)

HISTORY_FILE = ".aider.chat.history.md"
START_NOTE = "timestamp is the start of the aider session"

_HEADER = re.compile(r"^# aider chat started at (\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)\s*$")
_THINK = re.compile(r"<think>.*?(</think>|\Z)", re.DOTALL)
_FENCE = re.compile(r"^(```|~~~)")
_SEARCH = "<<<<<<< SEARCH"
_REPLACE = ">>>>>>> REPLACE"


def _header_time(stamp: str) -> float | None:
    """Aider writes the start in the machine's local time, without a zone."""
    try:
        return datetime.strptime(stamp, "%Y-%m-%d %H:%M:%S").timestamp()
    except (ValueError, OverflowError):
        return None


def _reply_text(lines: list[str]) -> str:
    """The reply's prose: fenced SEARCH/REPLACE edit blocks and <think> blocks removed."""
    kept: list[str] = []
    fence: list[str] | None = None
    unfenced_edit = False
    for line in lines:
        if fence is None:
            if unfenced_edit or line.strip() == _SEARCH:
                unfenced_edit = line.strip() != _REPLACE
            elif _FENCE.match(line.lstrip()):
                fence = [line]
            else:
                kept.append(line)
            continue
        fence.append(line)
        if _FENCE.match(line.lstrip()):
            if not any(part.strip() == _SEARCH for part in fence):
                kept.extend(fence)
            fence = None
    if fence is not None and not any(part.strip() == _SEARCH for part in fence):
        kept.extend(fence)
    text = _THINK.sub("", "\n".join(kept))
    return clean_text(re.sub(r"\n{3,}", "\n\n", text))


@dataclass
class _Block:
    kind: str  # "user" | "assistant"
    offset: int
    line: int
    context: dict[str, Any]  # the parse context before this block, to resume from
    lines: list[str] = field(default_factory=list)
    fenced: bool = False


@dataclass
class _Parse:
    path: Path
    ctx: dict[str, Any]
    turns: dict[tuple[str, str], Turn] = field(default_factory=dict)
    sessions: dict[str, Session] = field(default_factory=dict)
    block: _Block | None = None

    @property
    def project(self) -> str:
        return str(self.path.parent)

    def session(self, sid: str, **values: Any) -> None:
        old = self.sessions.get(sid) or Session(
            sid,
            project=self.project,
            resume_command=resume_in(self.project, "aider", "--restore-chat-history"),
        )
        merged = {k: v for k, v in values.items() if v is not None}
        self.sessions[sid] = Session(
            sid,
            project=old.project,
            title=merged.get("title", old.title),
            started_at=merged.get("started_at", old.started_at),
            resume_command=old.resume_command,
        )

    def feed(self, offset: int, number: int, text: str) -> None:
        block = self.block
        fenced = block is not None and block.fenced
        header = _HEADER.match(text)
        if header:
            self.close()
            self.ctx.update(
                sid=f"{content_key(self.path)}-{offset}",
                started=_header_time(header.group(1)),
                titled=False,
                tainted=False,
                replied=False,
                tool_run=False,
            )
            self.session(self.ctx["sid"], started_at=self.ctx["started"])
        elif _is_prompt(text, fenced):
            self.ctx["tool_run"] = False
            if block is None or block.kind != "user":
                block = self.open("user", offset, number)
            block.lines.append(text[4:].strip())
        elif _is_tool_output(text, fenced) or (not text.strip() and _is_user(block)):
            self.close()  # tool/status output ends any block; a blank line ends a prompt
            # Aider quotes only the first line of a multi-line message it logs: its
            # failed-edit message runs on unquoted (tool_output(..., blockquote=True)).
            self.ctx["tool_run"] = bool(_FAILED_EDITS.match(text))
        elif self.ctx.get("tool_run"):
            if text.startswith(_FAILED_EDITS_END):
                self.ctx["tool_run"] = False  # (its last line; the rest is aider's own)
        else:
            if block is None or block.kind != "assistant":
                if not text.strip():
                    return
                block = self.open("assistant", offset, number)
            block.lines.append(text)
            if _FENCE.match(text.lstrip()):
                block.fenced = not block.fenced

    def open(self, kind: str, offset: int, number: int) -> _Block:
        self.close()
        self.block = _Block(kind, offset, number, dict(self.ctx))
        return self.block

    def close(self) -> None:
        block, self.block = self.block, None
        if block is not None:
            self.emit(block)

    def emit(self, block: _Block) -> None:
        ctx = self.ctx
        sid: str = ctx["sid"]
        tainted = False
        if block.kind == "user":
            text = clean_text("\n".join(block.lines))
            if text.startswith("/"):
                if text.split(maxsplit=1)[0] == "/web":
                    ctx.update(tainted=True, replied=False)
                return
            if ctx["replied"]:
                ctx.update(tainted=False, replied=False)
            if text and not ctx["titled"]:
                ctx["titled"] = True
                self.session(sid, title=first_line_title(text))
        else:
            text = _reply_text(block.lines)
            tainted = bool(ctx["tainted"])
            ctx["replied"] = True
        if not text:
            return
        self.session(sid)
        key = f"o:{block.offset}"
        self.turns[(sid, key)] = Turn(
            session_id=sid,
            key=key,
            role="user" if block.kind == "user" else "assistant",
            text=text,
            timestamp=ctx["started"],
            seq=block.offset,
            tainted=tainted,
            note=START_NOTE if ctx["started"] is not None else None,
        )


#: The first line of aider's message about edit blocks that did not apply, and its
#: last (aider/coders/editblock_coder.py); the lines between are not quoted.
_FAILED_EDITS = re.compile(r"> # \d+ SEARCH/REPLACE blocks? failed to match!")
_FAILED_EDITS_END = "Just reply with fixed versions of the block"


def _is_prompt(text: str, fenced: bool) -> bool:
    if not (text.startswith("#### ") or text.rstrip() == "####"):
        return False
    # Aider ends every prompt line with two spaces; a markdown heading in a reply
    # has none. Bare slash commands are accepted from files written without them.
    return text.endswith("  ") or (not fenced and text[5:].startswith("/"))


def _is_user(block: _Block | None) -> bool:
    return block is not None and block.kind == "user"


def _is_tool_output(text: str, fenced: bool) -> bool:
    """``> `` blockquote lines; inside a code fence only aider's own (two trailing spaces)."""
    quoted = text.startswith("> ") or text.rstrip() == ">"
    return quoted and (not fenced or text.endswith("  "))


class AiderReader(BaseReader):
    host: ClassVar[str] = "aider"
    name: ClassVar[str] = "Aider"
    #: 3: a history committed to its repository, or another user's, is not read
    #: (indexed before, its turns go at the next pass).
    #: 4: aider's failed-edit message, quoted on its first line only, left out.
    version: ClassVar[int] = 4
    kind: ClassVar[Kind] = "append"
    project_files: ClassVar[tuple[str, ...]] = (HISTORY_FILE,)

    def roots(self, env: HostEnv) -> list[Path]:
        # Histories live in each repository; the indexer finds them via project_files.
        return []

    def source_for(self, path: Path) -> Path | None:
        return path if path.name == HISTORY_FILE else None

    def read(self, path: Path, prev: Cursor | None, opts: ReaderOptions) -> ReadResult:
        st = path.stat()
        foreign = _not_the_users(path, st.st_uid)
        if foreign is not None:
            # Nothing of it stays indexed (an earlier version's turns go too), the
            # reason is kept for explain, and position 0 has it looked at again at
            # each pass: once it is the user's (`git rm --cached`), it is read whole.
            return ReadResult(position=0, replace=True, unsupported=foreign)
        if prev is not None and prev.position > st.st_size:
            prev = None  # truncated behind our back: start over
        start_ctx = {
            "sid": f"{content_key(path)}-0",
            "started": None,
            "titled": False,
            "tainted": False,
            "replied": False,
        }
        ctx = dict(prev.state.get("ctx", start_ctx)) if prev else start_ctx
        tail = Tail(
            path,
            start=prev.position if prev else 0,
            first_line_number=int(prev.state.get("line", 1)) if prev else 1,
            max_line_bytes=opts.max_line_bytes,
        )
        parse = _Parse(path, ctx)
        problems: list[Problem] = []
        fed = tail.first_line_number - 1
        for line in tail:
            if line.number > fed + 1:  # Tail skips blank lines; they end prompts
                parse.feed(line.offset, fed + 1, "")
            fed = line.number
            raw = line.raw.rstrip(b"\r")
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                problems.append(Problem(f"invalid UTF-8: {exc.reason}", line.number, line.offset))
                text = raw.decode("utf-8", errors="replace")
            parse.feed(line.offset, line.number, text)
        if next_line_number(tail) > fed + 1:
            parse.feed(tail.end, fed + 1, "")

        open_block = parse.block
        if open_block is not None:  # may still grow: emit it now, re-read it next time
            parse.close()
            position, line_no, saved = open_block.offset, open_block.line, open_block.context
        else:
            position, line_no, saved = tail.end, next_line_number(tail), parse.ctx
        last = parse.sessions.get(parse.ctx["sid"])
        if last is not None:
            # Turns carry no time of their own: the file's mtime is the last
            # session's last activity (the format notes).
            parse.sessions[last.session_id] = replace(last, updated_at=st.st_mtime)
        return ReadResult(
            turns=tuple(parse.turns.values()),
            sessions=tuple(parse.sessions.values()),
            position=position,
            state={"line": line_no, "ctx": saved},
            replace=prev is None,
            problems=(*tail.problems, *problems),
        )


def _not_the_users(path: Path, owner: int) -> str | None:
    """Why the history at ``path`` is not this user's own, or None. Aider ignores
    its history files in git; one a repository carries came with a clone, and
    one another user owns is theirs: indexed, its text would reach agents (the
    recall hook) as this user's own past sessions."""
    if hasattr(os, "getuid") and owner != os.getuid():
        return f"{path.name} belongs to uid {owner}, not this user: not indexed as yours"
    if _committed(path):
        return (
            f"{path.name} is committed to its git repository: a clone brings someone else's "
            "history, so it is not indexed as yours (aider's own is git-ignored; "
            "`git rm --cached` it if it is yours)"
        )
    return None


def _committed(path: Path) -> bool:
    """Whether git tracks ``path``. Run so that the repository's own config runs
    nothing (``core.fsmonitor`` would run a command of its choosing) and the
    environment names no other repository. False when git is missing, the
    directory is no repository, or git takes too long."""
    import subprocess

    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    try:
        done = subprocess.run(
            ["git", "-c", "core.fsmonitor=false", "-c", "core.untrackedCache=false",
             "-C", str(path.parent), "ls-files", "--error-unmatch", "--", path.name],
            capture_output=True, timeout=10, check=False, env=env,
            stdin=subprocess.DEVNULL,
        )  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0
