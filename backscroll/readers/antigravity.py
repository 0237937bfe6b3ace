"""Google Antigravity ``agy`` CLI: ``brain/<id>/.system_generated/logs/transcript.jsonl``
(under ``~/.gemini/antigravity-cli``).

One JSON object per step: ``{step_index, source, type, status, created_at,
content?, thinking?, tool_calls?}``. Indexed: ``USER_EXPLICIT``/``USER_INPUT``
steps as prompts (the text inside their ``<USER_REQUEST>`` blocks, or the whole
content when there is no wrapper; ``<ADDITIONAL_METADATA>`` and
``<USER_SETTINGS_CHANGE>`` are harness text), another ``USER_EXPLICIT`` step
only when it carries ``<USER_REQUEST>``, and the ``content`` of
``MODEL``/``PLANNER_RESPONSE`` steps as assistant text. Thinking, tool calls,
tool steps (every other ``MODEL`` type, known or new) and ``SYSTEM`` steps stay
out. A turn's key is its ``step_index`` (a step written again replaces it).

Antigravity is closed source; what is known comes from peer readers
(``shared/formats/antigravity/README.md``), and these facts are unverified and
tolerated:

- whether the CLI only appends to the transcript: it is tailed by byte offset,
  and the indexer re-reads it whole when it shrinks or its first bytes change;
- ``transcript_full.jsonl`` (said to hold fields the transcript clips) is not
  read: in the one public pair the two files are identical;
- the project comes from ``history.jsonl`` (``workspace`` of the rows naming the
  conversation) or ``cache/last_conversations.json`` beside ``brain/``; else
  from the older ``history.jsonl`` rows that name no conversation, matched by
  prompt text and time (:data:`MATCH_SECONDS`); none is known when nothing
  matches. Both files are :meth:`sidecars <AntigravityReader.sidecars>`: a
  change to either has the transcript read on from where it stopped, and its
  session written again with the project looked up afresh;
- no environment variable is known to move the directory.

Out of reach, and not read: the per-conversation SQLite ``conversations/<id>.db``
(protobuf blobs with an undocumented schema), the AES-encrypted ``.pb`` files of
older releases, and the Antigravity IDE's stores (``~/.gemini/antigravity``,
``~/.gemini/antigravity-ide``), which hold only those forms and markdown
artifacts. Resume: ``agy --conversation <id>``.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

from backscroll.model import Cursor, Kind, Problem, ReaderOptions, ReadResult, Role, Session, Turn
from backscroll.readers.base import (
    BaseReader,
    HostEnv,
    NameIndex,
    clean_text,
    first_line_title,
    is_absolute_path,
    is_external_tool,
    next_line_number,
    parse_time,
    read_json_document,
    resume_in,
    side_file_objects,
    tail_jsonl,
)

TRANSCRIPT = "transcript.jsonl"
_OUTSIDE = re.compile(r"WEB|URL|BROWSER", re.IGNORECASE)
_REQUEST = re.compile(r"<USER_REQUEST>(.*?)</USER_REQUEST>", re.DOTALL)
_HARNESS = re.compile(r"<(ADDITIONAL_METADATA|USER_SETTINGS_CHANGE)>.*?</\1>", re.DOTALL)
#: How far an older ``history.jsonl`` row (no ``conversationId``; ``timestamp``
#: in epoch ms, taken when the prompt was typed) may be from the first prompt's
#: step (``created_at``, whole seconds) and still be that prompt. The format
#: notes give no figure; their source for the match (agentsview) allows 60 s.
#: The samples stamp the prompt step in the very second its own
#: ``<ADDITIONAL_METADATA>`` gives as the local time, so a true pair is seconds
#: apart; 60 s leaves room for the dropped fraction and a slow start. Rows of the
#: same text in the window that name different workspaces match nothing (two
#: conversations opened with the same words a moment apart), so the answer never
#: depends on the rows' order.
MATCH_SECONDS = 60.0


def _conversation_dir(path: Path) -> Path | None:
    """``brain/<id>`` for ``brain/<id>/.system_generated/logs/transcript.jsonl``."""
    if path.name != TRANSCRIPT or path.parent.name != "logs":
        return None
    generated = path.parent.parent
    if generated.name != ".system_generated" or generated.parent.parent.name != "brain":
        return None
    return generated.parent


def _prompt(content: str, *, explicit_input: bool) -> str | None:
    requests = _REQUEST.findall(content)
    if requests:
        return clean_text("\n\n".join(r.strip() for r in requests if r.strip())) or None
    if not explicit_input:
        return None
    return clean_text(_HARNESS.sub("", content)) or None


_Typed = tuple[tuple[float, str], ...]


class _Workspaces:
    """Conversation id -> workspace from ``history.jsonl`` (which wins) and
    ``cache/last_conversations.json``; else the older ``history.jsonl`` rows
    with no id, matched by prompt text and time. Each file is re-read only when
    it changes."""

    def __init__(self) -> None:
        self._history = NameIndex(self._load_history)
        self._typed = NameIndex(self._load_typed)
        self._last = NameIndex(self._load_last)

    def lookup(
        self, home: Path, conversation: str, prompt: str | None, prompt_at: float | None
    ) -> str | None:
        history = home / "history.jsonl"
        return (
            self._history.lookup(history, conversation)
            or self._last.lookup(home / "cache" / "last_conversations.json", conversation)
            or self._matched(history, prompt, prompt_at)
        )

    def _matched(self, history: Path, prompt: str | None, at: float | None) -> str | None:
        """The one workspace of the id-less rows typed as ``prompt`` within
        :data:`MATCH_SECONDS` of ``at``; None when there is none, or several."""
        if prompt is None or at is None:
            return None
        rows = self._typed.lookup(history, prompt) or ()
        found = {workspace for when, workspace in rows if abs(when - at) <= MATCH_SECONDS}
        return found.pop() if len(found) == 1 else None

    @staticmethod
    def _load_last(path: Path) -> dict[str, str]:
        try:
            doc = read_json_document(path, max_bytes=16 * 1024 * 1024)
        except (OSError, ValueError):
            return {}
        if not isinstance(doc, dict):  # workspace -> last conversation id (shape unverified)
            return {}
        return {
            conv: workspace
            for workspace, conv in doc.items()
            if isinstance(conv, str) and is_absolute_path(workspace)
        }

    @staticmethod
    def _load_history(path: Path) -> dict[str, str]:
        found: dict[str, str] = {}
        for row in _history_rows(path):
            conv, workspace = row.get("conversationId"), row.get("workspace")
            if isinstance(conv, str) and isinstance(workspace, str) and is_absolute_path(workspace):
                found[conv] = workspace
        return found

    @staticmethod
    def _load_typed(path: Path) -> dict[str, _Typed]:
        """Prompt text -> (time, workspace) of each row that names no conversation."""
        found: dict[str, list[tuple[float, str]]] = {}
        for row in _history_rows(path):
            conv, workspace, display = (
                row.get("conversationId"),
                row.get("workspace"),
                row.get("display"),
            )
            when = parse_time(row.get("timestamp"))
            if (isinstance(conv, str) and conv) or not isinstance(display, str) or when is None:
                continue
            text = clean_text(display)
            if text and isinstance(workspace, str) and is_absolute_path(workspace):
                found.setdefault(text, []).append((when, workspace))
        return {text: tuple(rows) for text, rows in found.items()}


def _history_rows(path: Path) -> Iterator[dict[str, Any]]:
    """Each JSON object line of ``history.jsonl``; anything else is skipped."""
    with contextlib.suppress(OSError):  # (what was read stands; the next change reads it again)
        yield from side_file_objects(path)


class AntigravityReader(BaseReader):
    host: ClassVar[str] = "antigravity"
    name: ClassVar[str] = "Google Antigravity CLI"
    #: 2: a conversation named by no ``history.jsonl`` row gets the project of
    #: the older row matching its first prompt (read again).
    version: ClassVar[int] = 2
    kind: ClassVar[Kind] = "append"
    #: Every read returns the session with the project looked up again.
    sidecars_reread_whole: ClassVar[bool] = False

    def __init__(self) -> None:
        self._workspaces = _Workspaces()

    def roots(self, env: HostEnv) -> list[Path]:
        # The home directory on every OS (%USERPROFILE% on Windows); no variable moves it.
        return [env.home / ".gemini" / "antigravity-cli" / "brain"]

    def sidecars(self, path: Path) -> list[Path]:
        """``history.jsonl`` and ``cache/last_conversations.json``, which name the
        project: shared by every conversation, and beside ``brain/`` (outside the
        root), so a stat-only pass sees their changes, not the watcher."""
        conversation = _conversation_dir(path)
        if conversation is None:
            return []
        home = conversation.parent.parent
        return [home / "history.jsonl", home / "cache" / "last_conversations.json"]

    def source_for(self, path: Path) -> Path | None:
        return path if _conversation_dir(path) is not None else None

    def read(self, path: Path, prev: Cursor | None, opts: ReaderOptions) -> ReadResult:
        conversation = _conversation_dir(path)
        sid = conversation.name if conversation is not None else path.parent.name
        state = dict(prev.state) if prev else {}
        tainted = bool(state.get("tainted", False))
        first_prompt: str | None = state.get("prompt")
        prompt_at: float | None = state.get("prompt_at")
        started: float | None = state.get("started")
        updated: float | None = state.get("updated")
        seen = bool(state.get("seen", False))
        tail, lines = tail_jsonl(path, prev, opts)
        turns: dict[str, Turn] = {}
        problems: list[Problem] = []
        for line, obj in lines:
            if not isinstance(obj, dict):
                problems.append(Problem("step is not a JSON object", line.number, line.offset))
                continue
            seen = True
            ts = parse_time(obj.get("created_at"))
            if ts is not None:
                started = ts if started is None else min(started, ts)
                updated = ts if updated is None else max(updated, ts)
            source, kind, content = obj.get("source"), obj.get("type"), obj.get("content")
            role: Role | None = None
            text: str | None = None
            if source == "USER_EXPLICIT" and isinstance(content, str):
                text = _prompt(content, explicit_input=kind == "USER_INPUT")
                role = "user"
            elif source == "MODEL" and kind == "PLANNER_RESPONSE":
                calls = obj.get("tool_calls")
                if isinstance(content, str):
                    role, text = "assistant", clean_text(content)
                if isinstance(calls, list) and any(
                    isinstance(c, dict) and is_external_tool(c.get("name")) for c in calls
                ):
                    tainted = True  # what the model writes after the call read outside content
            elif source == "MODEL" and isinstance(kind, str) and _OUTSIDE.search(kind):
                tainted = True  # SEARCH_WEB, READ_URL, BROWSER_* steps bring outside content in
            if role is None or not text:
                continue
            if role == "user":
                tainted = False
                if first_prompt is None:
                    first_prompt, prompt_at = text, ts
            step = obj.get("step_index")
            valid_step = isinstance(step, int) and not isinstance(step, bool) and step >= 0
            key = f"s{step}" if valid_step else f"o:{line.offset}"
            turns.pop(key, None)
            turns[key] = Turn(
                sid, key, role, text, ts, line.offset, tainted=tainted and role == "assistant"
            )
        project = None
        if conversation is not None:
            home = conversation.parent.parent
            project = self._workspaces.lookup(home, sid, first_prompt, prompt_at)
        session = Session(
            sid,
            project=project,
            title=first_line_title(first_prompt) if first_prompt else None,
            started_at=started,
            updated_at=updated,
            resume_command=resume_in(project, "agy", "--conversation", sid),
        )
        return ReadResult(
            turns=tuple(turns.values()),
            sessions=(session,) if seen else (),
            position=tail.end,
            state={
                "line": next_line_number(tail),
                "tainted": tainted,
                "prompt": first_prompt,
                "prompt_at": prompt_at,
                "started": started,
                "updated": updated,
                "seen": seen,
            },
            replace=prev is None or prev.position == 0,
            problems=(*tail.problems, *problems),
        )
