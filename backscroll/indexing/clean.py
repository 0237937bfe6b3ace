"""What happens to a read before it is stored: secrets redacted, excluded
projects dropped, and lone surrogates (valid JSON escapes that SQLite cannot
encode as UTF-8) replaced, so one such prompt cannot fail a whole batch.

Redaction covers every piece of prose that is stored: a turn's text and note,
a session's title and resume command, and the prose in the reader's saved memo
(``files.state``: a title candidate, the first prompt; see backscroll.memo).
Ids, keys, paths and project directories are stored as they are: they are how a
turn is found again."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Iterator, Mapping
from typing import Any, Protocol, TypeVar

from backscroll.memo import map_prose, without_prose
from backscroll.model import ReadResult, Session, Turn
from backscroll.paths import under_any

_T = TypeVar("_T", Turn, Session)


class Redactor(Protocol):
    """Anything with ``redact(text) -> text`` (see backscroll.redact)."""

    def redact(self, text: str) -> str: ...


class LazyRedactor:
    """backscroll's secret redactor, built on its first use: its vendor patterns
    take ~70 ms to compile, which a pass that finds nothing new (the refresh
    before a search without the daemon) never needs."""

    def __init__(self, patterns: Mapping[str, str]) -> None:
        self._patterns = dict(patterns)
        self._real: Redactor | None = None

    def redact(self, text: str) -> str:
        real = self._real
        if real is None:
            from backscroll.redact import Redactor as SecretRedactor

            real = self._real = SecretRedactor(self._patterns)
        return real.redact(text)


def clean(
    result: ReadResult, redactor: Redactor | None, excluded_projects: Iterable[str]
) -> ReadResult:
    """Redact secrets, drop excluded projects (and everything under them) and
    replace lone surrogates before anything is stored. A read that held an
    excluded session keeps no prose in its memo: the title candidate or first
    prompt may be that session's."""
    excluded = tuple(excluded_projects)
    drop = {s.session_id for s in result.sessions if s.project and under_any(s.project, excluded)}
    if result.ran_in and under_any(result.ran_in, excluded):
        drop |= {t.session_id for t in result.turns} | {s.session_id for s in result.sessions}
    if redactor is None and not drop and not _has_surrogates(result):
        return result

    def turn(t: Turn) -> Turn:
        # Once per turn of a cold index: the usual turn (ASCII ids, no note) in few steps.
        sid, key = t.session_id, t.key
        if not (type(sid) is str and sid.isascii() and type(key) is str and key.isascii()) or (
            t.note is not None
        ):
            t = _scrubbed(t, "session_id", "key", "note")
            if redactor is not None:
                t = _redacted(t, redactor, "note")
        text = t.text
        if isinstance(text, str) and text:
            new = text if text.isascii() else scrub(text)
            if redactor is not None:
                new = redactor.redact(new)
            if new != text:
                t = dataclasses.replace(t, text=new)
        return t

    def session(s: Session) -> Session:
        s = _scrubbed(s, "session_id", "project", "title", "resume_command", "parent_session_id")
        if redactor is None:
            return s
        s = _redacted(s, redactor, "resume_command")
        if s.title:  # (a title is often a prompt cut short, a quote left open)
            title = redact_cut(redactor, s.title)
            s = dataclasses.replace(s, title=title) if title != s.title else s
        return s

    state = without_prose(result.state) if drop else result.state
    extra: dict[str, Any] = {}
    if redactor is not None:
        # An error quotes what it could not use (a version field, a key): redacted too.
        if result.unsupported:
            extra["unsupported"] = redactor.redact(scrub(result.unsupported))
        if result.problems:
            extra["problems"] = tuple(
                dataclasses.replace(p, message=redactor.redact(scrub(p.message)))
                for p in result.problems
            )
    return dataclasses.replace(
        result,
        state=redact_state(state, redactor) if redactor else state,
        turns=tuple(turn(t) for t in result.turns if t.session_id not in drop),
        sessions=tuple(session(s) for s in result.sessions if s.session_id not in drop),
        replaced_sessions=frozenset(map(scrub, result.replaced_sessions)),
        removed_sessions=frozenset(map(scrub, result.removed_sessions)),
        **extra,
    )


def redact_cut(redactor: Redactor, text: str) -> str:
    """``text`` redacted as if a quote it leaves open were closed: a title cut from
    ``DB_PASSWORD="purple monkey dishwasher"`` ends inside the quoted value, which
    the rules for quoted secrets match only when it is closed."""
    for quote in ('"', "'"):
        if text.count(quote) % 2:
            redacted = redactor.redact(text + quote)
            return redacted[: -len(quote)] if redacted.endswith(quote) else redacted
    return redactor.redact(text)


def _redacted(obj: _T, redactor: Redactor, *names: str) -> _T:
    changes: dict[str, Any] = {}
    for name in names:
        value = getattr(obj, name)
        if isinstance(value, str) and value:
            new = redactor.redact(value)
            if new != value:
                changes[name] = new
    return dataclasses.replace(obj, **changes) if changes else obj


def redact_state(state: Any, redactor: Redactor) -> Any:
    """A reader's saved memo with its prose redacted (backscroll.memo): ids,
    paths and fingerprints stay as the reader wrote them, so that its next read
    finds the same session and project. Its prose is often cut short (a title
    candidate): an open quote is read as closed (:func:`redact_cut`)."""
    return map_prose(state, lambda text: redact_cut(redactor, text))


_SURROGATE = re.compile("[\ud800-\udfff]")


def scrub(text: str) -> str:
    """``text`` with lone surrogates (a JSON ``"\\udc80"`` escape, an undecodable
    file name) replaced by U+FFFD, so it can be encoded as UTF-8 and stored."""
    if text.isascii() or not _SURROGATE.search(text):
        return text
    return text.encode("utf-8", "surrogatepass").decode("utf-8", "replace")


def _scrubbed(obj: _T, *names: str) -> _T:
    changes: dict[str, Any] = {}
    for name in names:
        value = getattr(obj, name)
        if isinstance(value, str) and scrub(value) is not value:
            changes[name] = scrub(value)
    return dataclasses.replace(obj, **changes) if changes else obj


def _has_surrogates(result: ReadResult) -> bool:
    texts: Iterator[str | None] = (
        v for t in result.turns for v in (t.session_id, t.key, t.text, t.note)
    )
    sessions: Iterator[str | None] = (
        v
        for s in result.sessions
        for v in (s.session_id, s.project, s.title, s.resume_command, s.parent_session_id)
    )
    ids = (*result.replaced_sessions, *result.removed_sessions)
    return any(v is not None and scrub(v) is not v for v in (*texts, *sessions, *ids))
