"""Kimi CLI's context files: the model's message history beside a session's wire.

``sessions/<md5>/<id>/context.jsonl``, the ``context_<n>.jsonl`` it is renamed
to when undo-to-checkpoint, ``/clear`` or compaction starts a new one, and the
flat ``sessions/<md5>/<id>.jsonl`` of kimi-cli before its session directories
(moved into ``<id>/context.jsonl`` when kimi-cli next lists or opens the
session). One message per line, ``{"role", "content", "tool_calls"?}``, beside
``_system_prompt`` / ``_checkpoint`` / ``_usage`` marker lines
(``shared/formats/kimi-cli/README.md``, A1, A4, A5).

A session that has a wire is read from its wire, and these files only lend it
the text of its compaction summaries (:func:`summaries`). They carry the prose
only of a session that has none: one from before wires, or one kimi-cli has
listed (which moves the flat file into its directory) but not resumed. There a
user message is a prompt once the parts kimi-cli injects (``<system>…</system>``,
``<system-reminder>``, ``CHECKPOINT n``) are dropped, an assistant message's
text parts are its reply (``think`` parts stay out), and a user message that
opens with the compaction marker is a summary.

Rotation keeps every message once. The n-th rotated file holds what the session
said before its n-th restart, and ``context.jsonl`` holds what comes after the
last: a file's place in that order names its turns (``c<n>:o:<offset>``), so
``context.jsonl`` keys its turns as the ``context_<n>.jsonl`` it will be renamed
to, and the flat file as the ``context.jsonl`` it will become. What a file
copies from the file before it is that file's, not this one's: the lines it
starts with that are byte for byte that file's lines (what undo-to-checkpoint
copies back), and the messages a compaction keeps after its summary, up to the
next ``_checkpoint`` (kimi-cli's ``SimpleCompaction`` keeps the last two).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from backscroll.model import MTIME_NOTE, Role, Turn
from backscroll.readers.base import (
    block_texts,
    clean_text,
    is_external_tool,
    loads,
    open_regular,
)

CONTEXT = "context.jsonl"
_ROTATED = re.compile(r"^context_(\d+)\.jsonl$")
COMPACTED = "<system>Previous context has been compacted."
#: A part kimi-cli adds to a user message: a ``system()`` note (``CHECKPOINT n``
#: among them) or a reminder.
_INJECTED = re.compile(r"^\s*<(system|system-reminder)>.*</\1>\s*$", re.DOTALL)
#: Turns of a file sort after those of every file rotated before it.
_ORDER_SHIFT = 40


def is_context_file(name: str) -> bool:
    return name == CONTEXT or _ROTATED.match(name) is not None


def _rotations(session_dir: Path) -> dict[int, Path]:
    """The session's rotated context files by number."""
    try:
        names = [p.name for p in session_dir.iterdir()]
    except OSError:
        return {}
    found = {}
    for name in names:
        m = _ROTATED.match(name)
        if m:
            found[int(m.group(1))] = session_dir / name
    return found


def summaries(session_dir: Path) -> list[str]:
    """The compaction summaries of a session, oldest first: the text each
    context file restarts with after a compaction (a copy counted once)."""
    rotated = _rotations(session_dir)
    files = [rotated[n] for n in sorted(rotated)] + [session_dir / CONTEXT]
    out: list[str] = []
    for path in files:
        summary = _opening_summary(path)
        if summary and summary not in out:
            out.append(summary)
    return out


def _opening_summary(path: Path) -> str | None:
    """The summary a context file opens with: its first message, after the
    markers and the ``CHECKPOINT n`` note kimi-cli writes before it."""
    try:
        with open_regular(path) as fh:
            for raw in fh:
                try:
                    obj = loads(raw) if raw.strip() else None
                except (ValueError, RecursionError):
                    return None
                if not isinstance(obj, dict) or obj.get("role") not in ("user", "assistant"):
                    continue
                summary = summary_of(obj)
                if summary is not None or obj.get("role") != "user" or _said(obj.get("content")):
                    return summary
    except OSError:
        return None
    return None


def place(path: Path, session_dir: Path) -> tuple[int, Path | None]:
    """A context file's place in its session's rotation order (the number it
    has, or will have once rotated) and the file rotated just before it."""
    rotated = _rotations(session_dir)
    m = _ROTATED.match(path.name)
    order = int(m.group(1)) if m else max(rotated, default=0) + 1
    earlier = [n for n in rotated if n < order]
    return order, rotated[max(earlier)] if earlier else None


def shared_head(path: Path, earlier: Path) -> int:
    """How many bytes ``path`` starts with that are whole lines of ``earlier``,
    in the same places (what undo-to-checkpoint copies into the new file)."""
    shared = 0
    try:
        with open_regular(path) as mine, open_regular(earlier) as theirs:
            for line in mine:
                if not line.endswith(b"\n") or line != theirs.readline():
                    break
                shared += len(line)
    except OSError:
        return 0
    return shared


def summary_of(message: dict[str, Any]) -> str | None:
    """The compaction summary a user message carries, if it opens with the marker."""
    parts = block_texts(message.get("content"))
    if message.get("role") != "user" or not parts or not parts[0].lstrip().startswith(COMPACTED):
        return None
    return clean_text("\n\n".join(t for t in parts[1:] if t.strip()))


def _said(content: Any) -> str:
    """A message's text parts, less what kimi-cli injects."""
    texts = block_texts(content)
    return clean_text("\n\n".join(t for t in texts if t.strip() and not _INJECTED.match(t)))


class ContextProse:
    """The prose of one context file of a session without a wire."""

    def __init__(
        self, session_id: str, order: int, mtime: float, state: dict[str, Any], *, first: bool
    ) -> None:
        self.session_id = session_id
        self.order = order
        self.mtime = mtime
        #: No file was rotated before this one: nothing in it is a copy.
        self.first = first
        self.turns: list[Turn] = []
        self.first_prompt: str | None = state.get("prompt")
        self.tainted = bool(state.get("tainted", False))
        self.seen = bool(state.get("seen", False))
        #: Between a summary and the next checkpoint: the messages compaction kept.
        self.kept = bool(state.get("kept", False))

    def dump(self) -> dict[str, Any]:
        return {
            "prompt": self.first_prompt,
            "tainted": self.tainted,
            "seen": self.seen,
            "kept": self.kept,
        }

    def message(self, obj: dict[str, Any], offset: int) -> None:
        role = obj.get("role")
        if role == "_checkpoint":
            self.kept = False
            return
        summary = summary_of(obj)
        if summary is not None:
            self._turn("summary", summary, offset)
            self.kept = not self.first
            return
        if self.kept:
            return  # (said in the file before this one, and read there)
        if role == "user":
            text = _said(obj.get("content"))
            if text:
                self.tainted = False
                if self.first_prompt is None:
                    self.first_prompt = text
                self._turn("user", text, offset)
        elif role == "assistant":
            self._turn("assistant", _said(obj.get("content")), offset)
            calls = obj.get("tool_calls")
            for call in calls if isinstance(calls, list) else []:
                function = call.get("function") if isinstance(call, dict) else None
                if isinstance(function, dict) and is_external_tool(function.get("name")):
                    self.tainted = True

    def _turn(self, role: Role, text: str, offset: int) -> None:
        if not text:
            return
        self.seen = True
        self.turns.append(
            Turn(
                self.session_id,
                f"c{self.order}:o:{offset}",
                role,
                text,
                self.mtime,
                (self.order << _ORDER_SHIFT) + offset,
                tainted=self.tainted and role == "assistant",
                note=MTIME_NOTE,
            )
        )
