"""Parse a transcript line into the fields its reader reads, and nothing else.

Most of a transcript's bytes are what no reader indexes: tool output (a Claude
Code tool result, a Codex command's output), file snapshots, thinking. A full
parse builds a Python string for every one of them only to drop it. A
:class:`Lean` parser decodes a line with msgspec into the ``TypedDict`` shape
its reader declares: keys the shape does not name are skipped in C without
building anything, the rest come out as the same dicts, lists and values a
full parse gives (a field typed ``Any`` is parsed whole).

A line that does not fit the shape (a ``message`` that is a string, a content
list holding a number) or does not parse is parsed whole by
:func:`backscroll.readers.base.loads`, so what a reader sees, and which lines
count as malformed, is as before; with one difference: msgspec does not check
that a *skipped* string is UTF-8, so a line with stray bytes inside its tool
output is read for the fields it has instead of being skipped as malformed.

Declare every key the reader reads, at every level it reads one: a key left
out reads as absent. ``tests/readers/test_lean.py`` reads each host's samples,
a generated corpus and a transcript with every kind of entry its reader handles
with the lean parser and with a full parse and requires the same result, then
reads them with objects that record every key the reader asks for, each of
which must be declared in the shape.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

from backscroll.readers.base import loads


class Lean:
    """A line parser for the ``TypedDict`` ``shape`` (msgspec's decoder is
    built, and msgspec imported, at the first line parsed)."""

    def __init__(self, shape: type) -> None:
        self.shape = shape
        self._decode: Callable[[bytes], Any] | None = None

    def __call__(self, raw: bytes) -> Any:
        decode = self._decode
        if decode is None:
            decode = self._decode = _decoder(self.shape)
        try:
            return decode(raw)
        except (ValueError, RecursionError):  # (msgspec's errors are ValueErrors)
            return loads(raw)


def preload() -> None:
    """Import both parsers now, ahead of the first line: in the first reader
    process of a cold index, while it waits for its first files, so that the
    reader processes it forks next start with them (each imported them at its
    first line, ~6 ms)."""
    loads(b"0")  # (orjson is imported at the first parse)
    with contextlib.suppress(ImportError):
        import msgspec  # noqa: F401


def _decoder(shape: type) -> Callable[[bytes], Any]:
    try:
        import msgspec
    except ImportError:  # pragma: no cover - a platform without a msgspec wheel
        return loads
    decode: Callable[[bytes], Any] = msgspec.json.Decoder(shape).decode
    return decode
