"""Kimi CLI's context files: the model's message history beside a session's wire.

``sessions/<md5>/<id>/context.jsonl``, the ``context_<n>.jsonl`` it is renamed
to when undo-to-checkpoint, ``/clear`` or compaction starts a new one, and the
flat ``sessions/<md5>/<id>.jsonl`` of kimi-cli before its session directories
(moved into ``<id>/context.jsonl`` when kimi-cli next lists or opens the
session). One message per line, ``{"role", "content", "tool_calls"?}``, beside
``_system_prompt`` / ``_checkpoint`` / ``_usage`` marker lines
(``shared/formats/kimi-cli/README.md``, A1, A4, A5).

A session is read from its wire as far as the wire goes back, and from these
files before that (:func:`covered_from`): a session from before wires, or one
kimi-cli has listed (which moves the flat file into its directory) but not
resumed, has no wire; one resumed since has a wire that starts at the resume,
beside a ``context.jsonl`` that keeps the history before it and receives the
new messages too. In the part the wire does not cover, a user message is a
prompt once the parts kimi-cli injects (``<system>…</system>``,
``<system-reminder>``, ``CHECKPOINT n``) are dropped, an assistant message's
text parts are its reply (``think`` parts stay out), and a user message that
opens with the compaction marker is a summary. The wire's read takes the text
of the summaries in the part it covers (:func:`summaries`).

Where the wire starts is found the way kimi-cli's ``/fork`` lines a context up
with its wire: by its prompts (``TurnBegin``, ``SteerInput``) and the context's
user messages. Every message said since the resume is in both, so the wire's
part is the context's last messages, as many as the wire has prompts that put
one there (a slash command puts none, a ``/skill:`` turn the skill's text, an
image alone a message without text): the wire's first prompts, in order, must be
those messages, the last one or two of the wire allowed to be not yet in the
context. Counted from the end, a history that said the same words before the
resume stays its own, and a session whose wire was there from its first message
(whatever that message is) gives nothing here. Where they do not line up the
count alone decides. A wire with no such prompt yet covers nothing; one with no
prompt at all leaves the session to these files, title included.

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
from collections.abc import Generator, Iterable
from pathlib import Path
from typing import Any

from backscroll.model import MTIME_NOTE, Role, Turn
from backscroll.readers.base import (
    Tail,
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
#: The place of what no wire covers: after every message of every context file.
BEYOND = 1 << 62
#: A slash command as kimi-cli parses one (``/name`` or ``/skill:name``, then
#: white space or the end): the shell or the soul runs it, not the model.
_SLASH = re.compile(r"^/([A-Za-z0-9_-]+(?::[A-Za-z0-9_-]+)*)(?:\s|$)")
#: How many of the wire's last prompts may be in the wire and not yet in the context.
_LAG = 2
#: A prompt or user message with no text but an image (audio, video) part.
MEDIA = "\x00media"


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


def _files(session_dir: Path) -> list[tuple[int, Path]]:
    """The session's context files in rotation order, each with its place in it
    (``context.jsonl`` after the last rotated file)."""
    rotated = _rotations(session_dir)
    files = [(n, rotated[n]) for n in sorted(rotated)]
    return [*files, (max(rotated, default=0) + 1, session_dir / CONTEXT)]


def summaries(session_dir: Path) -> list[tuple[int, str]]:
    """The compaction summaries of a session, oldest first, each with its place
    (as a turn's ``seq``): the text each context file restarts with after a
    compaction (a copy counted once)."""
    out: list[tuple[int, str]] = []
    for order, path in _files(session_dir):
        found = _opening_summary(path)
        if found and found[1] and all(found[1] != text for _, text in out):
            out.append(((order << _ORDER_SHIFT) + found[0], found[1]))
    return out


def _opening_summary(path: Path) -> tuple[int, str] | None:
    """The summary a context file opens with and its offset: its first message,
    after the markers and the ``CHECKPOINT n`` note kimi-cli writes before it."""
    offset = 0
    try:
        with open_regular(path) as fh:
            for raw in fh:
                start, offset = offset, offset + len(raw)
                try:
                    obj = loads(raw) if raw.strip() else None
                except (ValueError, RecursionError):
                    return None
                if not isinstance(obj, dict) or obj.get("role") not in ("user", "assistant"):
                    continue
                summary = summary_of(obj)
                if summary is not None or obj.get("role") != "user" or _said(obj.get("content")):
                    return None if summary is None else (start, summary)
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


# ---------------------------------------------------------------------- the wire's start


def _norm(text: str) -> str:
    return " ".join(text.split())


def _media(content: Any) -> bool:
    """Content with a part other than text or thinking (an image, audio, video)."""
    parts = content if isinstance(content, list) else []
    return any(isinstance(p, dict) and p.get("type") not in ("text", "think") for p in parts)


def _typed(session_dir: Path) -> Generator[tuple[int, str], None, None]:
    """The session's user messages in its context files, in the order they were
    said and each once (a copied head, the messages a compaction kept): ``(place,
    text)``, the place as the message's turn ``seq``, the text :data:`MEDIA` for
    a message with no text but an image or the like."""
    earlier: Path | None = None
    for order, path in _files(session_dir):
        copied = shared_head(path, earlier) if earlier else 0
        prose = ContextProse(session_dir.name, order, 0.0, {}, first=earlier is None)
        earlier = path
        try:
            for line in Tail(path):
                if line.offset < copied:
                    continue
                try:
                    obj = loads(line.raw)
                except (ValueError, RecursionError):
                    continue
                if not isinstance(obj, dict):
                    continue
                kept = prose.kept
                prose.message(obj, line.offset)
                for turn in prose.turns:
                    if turn.role == "user":
                        yield turn.seq, _norm(turn.text)
                media = obj.get("role") == "user" and _media(obj.get("content"))
                if media and not prose.turns and not kept and summary_of(obj) is None:
                    yield (order << _ORDER_SHIFT) + line.offset, MEDIA
                prose.turns.clear()
        except OSError:
            continue


def stamp(session_dir: Path) -> list[list[Any]]:
    """What the session's context files are now (name, size, mtime, inode): the
    same stamp, the same messages."""
    out: list[list[Any]] = []
    for _, path in _files(session_dir):
        try:
            st = path.stat()
        except OSError:
            continue
        out.append([path.name, st.st_size, st.st_mtime_ns, st.st_ino])
    return out


def _is_skill(prompt: str) -> bool:
    """A ``/skill:<name>`` turn: kimi-cli gives the model the skill's text as
    one user message in its place (``KimiSoul._make_skill_runner``)."""
    slash = _SLASH.match(prompt)
    return slash is not None and slash.group(1).startswith("skill:")


def _agrees(prompt: str, said: str) -> bool:
    """A wire prompt that could have put ``said`` into the context."""
    return _is_skill(prompt) if _SLASH.match(prompt) else _norm(prompt) == said


def covered_from(session_dir: Path, prompts: Iterable[str]) -> int | None:
    """The place (a turn ``seq``) of the first context message the session's
    wire records, given all the wire's prompts in order (:data:`MEDIA` for one
    without text); :data:`BEYOND` when none is in the context yet, None when the
    wire has no prompt. See the module's docstring."""
    wire = list(prompts)
    if not wire:
        return None
    # The prompts that put a message into the context (a slash command puts none).
    leaving = [p for p in wire if _is_skill(p) or not _SLASH.match(p)]
    if not leaving:
        return BEYOND
    said = list(_typed(session_dir))
    m, k = len(said), len(leaving)
    start = max(m - k, 0)  # (the wire's count, where its prompts do not line up)
    for lag in range(min(_LAG, k) + 1):
        n = k - lag  # the wire's first n prompts are the context's last n messages
        tail = said[m - n :]
        if n <= m and all(_agrees(p, s) for p, (_, s) in zip(leaving[:n], tail, strict=True)):
            start = m - n
            break
    return said[start][0] if start < m else BEYOND


def file_cut(covered: int | None, order: int) -> int | None:
    """Where in the context file at ``order`` the wire's part starts (a byte
    offset), or None when the whole file comes before it."""
    if covered is None or covered >> _ORDER_SHIFT > order:
        return None
    return covered & ((1 << _ORDER_SHIFT) - 1) if covered >> _ORDER_SHIFT == order else 0
