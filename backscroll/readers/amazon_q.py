"""Amazon Q Developer CLI (``q chat``, the predecessor of Kiro CLI): ``data.sqlite3``.

One SQLite database (``shared/formats/amazon-q/README.md``) with a
``conversations(key, value)`` table: the key is the working directory, the
value the whole ``ConversationState`` JSON, rewritten after every reply. A new
chat in the same directory overwrites the row, ``/compact`` drops old history
entries and ``/clear`` empties it. So the source forgets, and the index must
not: every read upserts what the row holds now, keyed so that the same entry
gets the same key before and after an overwrite, and never drops turns it no
longer sees (``ReadResult.retain``). A row whose JSON did not change since the
last read is not parsed again.

Indexed from ``history[]`` (serde externally tagged enums):
``user.content.Prompt.prompt`` and ``CancelledToolUses.prompt`` as prompts,
``assistant.Response.content`` and ``assistant.ToolUse.content`` (the prose
said before tool calls) as assistant text, and ``latest_summary`` (written by
``/compact``) as a summary. Left out: tool uses and results,
``additional_context``/``env_context``, the ``transcript`` duplicate and
``tangent_state``.

Older builds stored each history entry as a ``[user, assistant]`` pair and
``latest_summary`` as a bare string (it is now ``[summary, metadata]``); both
are read. Keys: the assistant ``message_id``; a prompt by its timestamp and text; a
summary by its text. Session: ``conversation_id``; project: the row key. The
``conversations_v2`` table of release branches (several conversations per
directory; which builds shipped it is unverified) is read as well.

Roots: ``$XDG_DATA_HOME/amazon-q`` (``~/.local/share``) on Linux, ``~/Library/
Application Support/amazon-q`` on macOS, ``%LOCALAPPDATA%\\amazon-q`` on
Windows; no Q-specific variable moves it. Resume: ``q chat --resume`` in the
directory.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from backscroll.digests import blake2b
from backscroll.model import Cursor, Kind, Problem, ReaderOptions, ReadResult, Role, Session, Turn
from backscroll.readers.base import (
    HostEnv,
    OneDatabase,
    clean_text,
    content_key,
    first_line_title,
    is_external_tool,
    looks_like_id,
    parse_time,
    resume_in,
)
from backscroll.readers.hostdb import later, open_readonly, snapshot

if TYPE_CHECKING:
    from backscroll.readers.hostdb import amazon_q as q
else:
    q = later("backscroll.readers.hostdb.amazon_q")


DB_NAME = "data.sqlite3"
STATE_VERSION = 1


def _digest(text: str) -> str:
    return blake2b(text.encode("utf-8", "surrogatepass"), digest_size=12).hexdigest()


def _variant(value: Any) -> tuple[str, dict[str, Any]]:
    """``{"Variant": {...}}`` -> ``("Variant", {...})`` (serde external tagging)."""
    if isinstance(value, dict) and len(value) == 1:
        name, body = next(iter(value.items()))
        if isinstance(body, dict):
            return str(name), body
    return "", {}


@dataclass(slots=True)
class _Conversation:
    """The turns one row's JSON holds."""

    sid: str
    turns: list[Turn] = field(default_factory=list)
    first_prompt: str | None = None
    started: float | None = None

    def add(
        self, key: str, role: Role, text: str, when: float | None, seq: int, tainted: bool
    ) -> None:
        text = clean_text(text)
        if text:
            self.turns.append(Turn(self.sid, key, role, text, when, seq, tainted=tainted))


def conversation_turns(state: Mapping[str, Any], sid: str) -> _Conversation:
    out = _Conversation(sid)
    history = state.get("history")
    last_ms = 0
    step = 0
    when: float | None = None  # tool-result entries carry no time: the last one seen
    tainted = False
    for entry in history if isinstance(history, list) else []:
        if isinstance(entry, list) and len(entry) >= 2:
            entry = {"user": entry[0], "assistant": entry[1]}  # older builds: (user, assistant)
        if not isinstance(entry, dict):
            continue
        raw_user = entry.get("user")
        user: dict[str, Any] = raw_user if isinstance(raw_user, dict) else {}
        stamp = parse_time(user.get("timestamp"))
        if stamp is not None:
            last_ms, step, when = int(stamp * 1000), 0, stamp
        # Ordered by time across overwrites (history indices shift on /compact).
        seq = last_ms * 1000 + step
        step += 2
        variant, body = _variant(user.get("content"))
        prompt = body.get("prompt") if variant in ("Prompt", "CancelledToolUses") else None
        if isinstance(prompt, str) and clean_text(prompt):
            tainted = False
            out.first_prompt = out.first_prompt or clean_text(prompt)
            out.started = out.started or stamp
            out.add(f"u:{content_key(user.get('timestamp'), prompt)}", "user", prompt, when, seq,
                    False)  # fmt: skip
        variant, body = _variant(entry.get("assistant"))
        text = body.get("content") if variant in ("Response", "ToolUse") else None
        if isinstance(text, str):
            mid = body.get("message_id")
            key = f"a:{mid}" if looks_like_id(mid) else f"a:{content_key(text)}"
            out.add(key, "assistant", text, when, seq + 1, tainted)
        uses = body.get("tool_uses") if variant == "ToolUse" else None
        for use in uses if isinstance(uses, list) else []:
            if isinstance(use, dict) and is_external_tool(use.get("name")):
                tainted = True
    summary = state.get("latest_summary")
    if isinstance(summary, list) and summary:
        summary = summary[0]
    if isinstance(summary, str):
        out.add(f"s:{content_key(summary)}", "summary", summary, None, last_ms * 1000 + step, False)
    return out


class AmazonQReader(OneDatabase):
    db_name: ClassVar[str] = DB_NAME
    host: ClassVar[str] = "amazon-q"
    name: ClassVar[str] = "Amazon Q Developer CLI"
    version: ClassVar[int] = 1
    kind: ClassVar[Kind] = "database"
    recursive_watch: ClassVar[bool] = False

    def roots(self, env: HostEnv) -> list[Path]:
        if env.is_macos:
            base = env.app_support()
        elif env.is_windows:
            base = env.var("LOCALAPPDATA") or env.home / "AppData" / "Local"
        else:
            base = env.xdg_data()
        return [base / "amazon-q"]

    def read(self, path: Path, prev: Cursor | None, opts: ReaderOptions) -> ReadResult:
        old = prev.state if prev and prev.state.get("v") == STATE_VERSION else {}
        seen: Mapping[str, str] = old.get("rows", {}) if isinstance(old.get("rows"), dict) else {}
        # The first prompt is the title; /compact drops it from the row, so keep it.
        titles: dict[str, str] = (
            dict(old.get("titles", {})) if isinstance(old.get("titles"), dict) else {}
        )
        with open_readonly(path) as conn, snapshot(conn):
            if not q.tables(conn):
                return ReadResult(unsupported=f"unknown schema (no conversations table) in {path}")
            rows = q.conversation_rows(conn)
        digests: dict[str, str] = {}
        turns: list[Turn] = []
        sessions: list[Session] = []
        problems: list[Problem] = []
        for row in rows:
            digests[row.row_key] = digest = _digest(row.value)
            if seen.get(row.row_key) == digest:
                continue
            try:
                state = json.loads(row.value)
            except (ValueError, RecursionError) as exc:
                problems.append(Problem(f"conversation for {row.directory}: malformed JSON: {exc}"))
                continue
            if not isinstance(state, dict):
                problems.append(Problem(f"conversation for {row.directory} is not a JSON object"))
                continue
            cid = state.get("conversation_id")
            sid = cid if isinstance(cid, str) and cid else f"dir:{row.directory}"
            found = conversation_turns(state, sid)
            turns += found.turns
            if sid not in titles and found.first_prompt:
                titles[sid] = first_line_title(found.first_prompt)
            sessions.append(
                Session(
                    sid,
                    project=row.directory,
                    title=titles.get(sid),
                    started_at=parse_time(row.created_at) or found.started,
                    resume_command=resume_in(row.directory, "q", "chat", "--resume"),
                )
            )
        return ReadResult(
            turns=tuple(turns),
            sessions=tuple(sessions),
            position=0,
            state={"v": STATE_VERSION, "rows": digests, "titles": titles},
            retain=True,
            problems=tuple(problems),
        )
