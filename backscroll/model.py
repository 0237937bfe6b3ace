"""The contract between readers and the store.

Readers turn a transcript file into a :class:`ReadResult`; the store writes it.
Both import this module and never each other. Every type here is immutable so it
can cross the thread boundary between a parsing thread and the writer thread.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from operator import attrgetter
from typing import Any, Literal

Role = Literal["user", "assistant", "summary"]

#: The note on a turn whose host stored no time for it (its timestamp is the file's).
MTIME_NOTE = "timestamp is the file's modification time"
ROLES: tuple[Role, ...] = ("user", "assistant", "summary")

#: How a host's files change on disk, which decides how the indexer re-reads them.
#: ``append``: lines are only ever appended (read from the saved byte position).
#: ``document``: the file is rewritten whole (re-read whole, diffed by turn key).
#: ``database``: another application's SQLite file (reader decides what changed).
Kind = Literal["append", "document", "database"]


@dataclass(frozen=True, slots=True, init=False)
class Turn:
    """One indexed piece of prose: a user prompt, assistant text or a summary."""

    session_id: str
    #: Stable and unique within the session: the host's message/entry id where it
    #: has one, else a byte offset (``o:<offset>``) or position + content hash.
    key: str
    role: Role
    text: str
    #: Unix seconds (UTC), or None when the host records no time for it.
    timestamp: float | None = None
    #: Orders turns within a session (byte offset, or index in a document).
    seq: int = 0
    #: The assistant wrote this after reading content from outside the machine
    #: (web fetch/search, a browser tool): weaker evidence.
    tainted: bool = False
    #: Written by a sub-agent on behalf of the session, not by the person.
    subagent: bool = False
    #: Free-form note about the turn, e.g. "timestamp is the file's mtime".
    note: str | None = None

    def __init__(
        self,
        session_id: str,
        key: str,
        role: Role,
        text: str,
        timestamp: float | None = None,
        seq: int = 0,
        tainted: bool = False,
        subagent: bool = False,
        note: str | None = None,
    ) -> None:
        # Written out: a cold index builds every turn twice (in a reader process,
        # then from its pickle in the writer), and setting the slots through
        # their descriptors takes a third of the generated frozen __init__'s
        # time (object.__setattr__ per field). tests/test_model.py keeps the
        # parameters equal to the fields.
        s0, s1, s2, s3, s4, s5, s6, s7, s8 = _TURN_SLOTS
        s0(self, session_id)
        s1(self, key)
        s2(self, role)
        s3(self, text)
        s4(self, timestamp)
        s5(self, seq)
        s6(self, tainted)
        s7(self, subagent)
        s8(self, note)

    def __reduce__(self) -> tuple[type[Turn], tuple[Any, ...]]:
        # Pickled as its constructor's arguments: a cold index sends every turn
        # from a reader process to the writer, and the default for a frozen
        # slotted dataclass (a state dict, restored one attribute at a time)
        # costs ~10x more.
        return (Turn, _TURN_FIELDS(self))


@dataclass(frozen=True, slots=True)
class Session:
    """Metadata about one conversation. ``None`` means "unknown, keep what is stored"."""

    session_id: str
    project: str | None = None
    title: str | None = None
    started_at: float | None = None
    updated_at: float | None = None
    resume_command: str | None = None
    parent_session_id: str | None = None
    #: ``project`` is a guess (Cursor's chat bubbles): it is stored only while no
    #: other project is, and never replaces one.
    project_guess: bool = False

    def __reduce__(self) -> tuple[type[Session], tuple[Any, ...]]:
        return (Session, _SESSION_FIELDS(self))


#: Every field, in declaration order: what ``__reduce__`` hands the constructor.
TURN_FIELD_NAMES = tuple(f.name for f in fields(Turn))
#: Each field's slot setter, in field order (Turn.__init__).
_TURN_SLOTS: tuple[Any, ...] = tuple(getattr(Turn, name).__set__ for name in TURN_FIELD_NAMES)
SESSION_FIELD_NAMES = tuple(f.name for f in fields(Session))
_TURN_FIELDS = attrgetter(*TURN_FIELD_NAMES)
_SESSION_FIELDS = attrgetter(*SESSION_FIELD_NAMES)


@dataclass(frozen=True, slots=True)
class Cursor:
    """Where a reader stopped last time, as saved by the store.

    ``position`` is a byte offset for append-only files (just after the last
    complete line). ``state`` is the reader's own small JSON-serialisable memo
    (session id, cwd, title candidates, fingerprints...), opaque to the store.
    """

    position: int = 0
    state: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Problem:
    """A record the reader could not use. Logged with the file; never fatal."""

    message: str
    line: int | None = None
    offset: int | None = None


#: The memo of a sub-agent's transcript that a reader claimed without reading it
#: (``include_subagents`` is off): the indexer leaves the file alone, however it
#: grows, until the option is turned on, and then reads it whole.
UNREAD_SUBAGENT = "unread_subagent"
#: The memo key of a file a reader read and chose to index nothing of, holding
#: why (an older copy of a file indexed elsewhere): ``explain`` shows it.
SKIPPED = "skipped"


@dataclass(frozen=True, slots=True)
class ReadResult:
    """What one read of one file produced."""

    turns: tuple[Turn, ...] = ()
    sessions: tuple[Session, ...] = ()
    #: Saved for the next read: byte offset (append), size (document) or 0.
    position: int = 0
    state: Mapping[str, Any] = field(default_factory=dict)
    #: The turns are everything this file holds now: the store drops this
    #: file's other turns and rewrites only new or changed ones.
    replace: bool = False
    #: These sessions' turns (from this file) are complete in ``turns``: the
    #: store drops their other turns from this file. For database readers.
    replaced_sessions: frozenset[str] = frozenset()
    #: Sessions that vanished from the source (database readers), or that a
    #: read no longer claims (an id given before the host wrote the real one):
    #: their turns from this file go, and each is removed once it holds none.
    removed_sessions: frozenset[str] = frozenset()
    #: Older copies of this file (paths), whose turns of this read's sessions
    #: the store drops: the host copied the file and this copy is the one it
    #: goes on with (VS Code, when a window changes workspace). Only on a read
    #: that yields every turn of its sessions (``replace``).
    supersedes: tuple[str, ...] = ()
    #: The source forgets what it once held (Amazon Q overwrites its one row per
    #: directory): this file's turns that the read did not yield are kept, even
    #: on a read from the start.
    retain: bool = False
    problems: tuple[Problem, ...] = ()
    #: Set when the file is not to be read: a format version the reader does not
    #: understand ("unknown format version 7"; the store leaves the file's turns
    #: alone), or, with ``replace``, a file none of which is to stay indexed (the
    #: store drops its turns). Either way the reason is kept for ``explain``.
    unsupported: str | None = None
    #: A sub-agent's transcript, whose turns join its parent's session: the
    #: directory it ran in. Not stored (the parent's file owns the session's
    #: project); its turns are kept out with that project (``exclude.projects``,
    #: ``forget --and-exclude``).
    ran_in: str | None = None


@dataclass(frozen=True, slots=True)
class ReaderOptions:
    """Per-host settings handed to a reader (readers never read config)."""

    include_subagents: bool = False
    max_line_bytes: int = 16 * 1024 * 1024
    #: Whole JSON documents larger than this are skipped (logged, naming the file).
    max_document_bytes: int = 64 * 1024 * 1024
    #: Documents a reader can stream (Gemini CLI ``session-*.json``) larger than
    #: this are read one item at a time, with no size cap; smaller ones whole.
    stream_document_bytes: int = 8 * 1024 * 1024
