"""Whole turns from streamed pieces, for hosts that log a reply chunk by chunk
(Grok Build's ``agent_message_chunk`` lines, Kimi's ``ContentPart`` records).

A :class:`Runs` joins consecutive pieces of one role into one turn keyed by the
byte offset of its first piece. A run still open when a read ends is emitted as
it stands and carried in the reader's state; the next read appends to it and
emits it again under the same key, so the store's upsert keeps one whole turn
and an incremental read agrees with a fresh one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from backscroll.model import Role, Turn
from backscroll.readers.base import clean_text

#: A run longer than this is cut and a new one started (a runaway stream must
#: not grow the carried state without bound).
MAX_RUN_CHARS = 1 << 20


@dataclass(slots=True)
class Run:
    key: str
    role: Role
    text: str
    timestamp: float | None
    seq: int
    tainted: bool = False
    #: What the host groups by (a step id); a piece with another group starts a new run.
    group: str | None = None

    def dump(self) -> list[Any]:
        return [self.key, self.role, self.text, self.timestamp, self.seq, self.tainted, self.group]

    @classmethod
    def load(cls, raw: Any) -> Run | None:
        if not isinstance(raw, list) or len(raw) != 7:
            return None
        key, role, text, ts, seq, tainted, group = raw
        if role not in ("user", "assistant", "summary") or not isinstance(text, str):
            return None
        return cls(str(key), role, text, ts, int(seq), bool(tainted), group)


@dataclass(slots=True)
class Runs:
    """Collects the turns of one read; ``open`` survives into the next read."""

    session_id: str
    subagent: bool = False
    open: Run | None = None
    turns: dict[str, Turn] = field(default_factory=dict)

    @classmethod
    def resumed(cls, session_id: str, raw: Any, *, subagent: bool = False) -> Runs:
        return cls(session_id, subagent, Run.load(raw))

    def piece(
        self,
        role: Role,
        text: str,
        *,
        key: str,
        timestamp: float | None,
        seq: int,
        tainted: bool = False,
        group: str | None = None,
    ) -> None:
        """One streamed piece; joins the open run of the same role and group."""
        run = self.open
        if (
            run is not None
            and run.role == role
            and run.group == group
            and len(run.text) + len(text) <= MAX_RUN_CHARS
        ):
            run.text += text
            return
        self.close()
        self.open = Run(key, role, text, timestamp, seq, tainted, group)

    def close(self) -> None:
        """End the open run (a tool call, a turn end, the other role's piece)."""
        run, self.open = self.open, None
        if run is not None:
            self._emit(run)

    def whole(
        self,
        role: Role,
        text: str,
        *,
        key: str,
        timestamp: float | None,
        seq: int,
        tainted: bool = False,
    ) -> None:
        """A turn that arrives whole (a prompt, a summary); ends the open run."""
        self.close()
        self._emit(Run(key, role, text, timestamp, seq, tainted))

    def _emit(self, run: Run) -> None:
        text = clean_text(run.text)
        if text:
            self.turns[run.key] = Turn(
                self.session_id,
                run.key,
                run.role,
                text,
                run.timestamp,
                run.seq,
                tainted=run.tainted and run.role == "assistant",
                subagent=self.subagent,
            )
        else:
            self.turns.pop(run.key, None)

    def finish(self) -> tuple[tuple[Turn, ...], list[Any] | None]:
        """The turns of this read (the open run included, as it stands) and the
        open run to carry over."""
        carried = self.open.dump() if self.open is not None else None
        if self.open is not None:
            self._emit(self.open)
        return tuple(self.turns.values()), carried
