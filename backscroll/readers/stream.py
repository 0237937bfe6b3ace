"""Streaming a big JSON document: one top-level array's items at a time.

A whole-document reader (:func:`~backscroll.readers.base.read_json_document`)
holds the raw bytes and the parsed tree at once, about twice the document. A
document rewritten whole by its host (a Gemini CLI ``session-*.json``) can pass
100 MB; :func:`stream_members` walks it with ijson (its C backend, yajl2_c, when
the wheel has it) so only one array item is built at a time and memory stays
bounded by the largest item, not the document.

ijson is imported on first use: nothing on a thin client's path loads it.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

from backscroll.readers.base import open_regular

_backend: ModuleType | None = None

#: The marker :func:`stream_members` yields for the array's start, before its items.
ARRAY_START = object()


def _ijson() -> ModuleType:
    global _backend
    if _backend is None:
        import ijson

        try:
            _backend = ijson.get_backend("yajl2_c")
        except ImportError:  # pragma: no cover - a platform without the C backend
            _backend = ijson
    return _backend


def stream_members(path: Path, array_key: str) -> Iterator[tuple[str, Any]]:
    """``(key, value)`` for each member of the top-level JSON object in ``path``,
    in file order, except the ``array_key`` array when it is one: that yields
    ``(array_key, ARRAY_START)`` and then ``(array_key + ".item", item)`` for each
    of its items, built one at a time. Numbers come out as ``json.loads`` gives
    them (int or float).

    Raises OSError when the file cannot be opened or is not a regular file, and
    ValueError naming the file when it is not a JSON object or is truncated or
    garbled (a document caught mid-write)."""
    backend = _ijson()
    import ijson.common

    item_key = f"{array_key}.item"
    with open_regular(path) as fh:
        events = backend.parse(fh, use_float=True)
        try:
            yield from _members(events, array_key, item_key, ijson.common.ObjectBuilder)
        except (ijson.common.JSONError, _EndsEarly) as exc:
            raise ValueError(f"{path}: not valid JSON ({exc or 'it ends early'})") from exc
        except _NotAnObject as exc:
            raise NotAnObject(f"{path}: the document is not a JSON object") from exc


class NotAnObject(ValueError):
    """The document is well-formed so far but its root is not a JSON object."""


class _NotAnObject(Exception):
    pass


class _EndsEarly(Exception):
    pass


def _members(
    events: Iterator[tuple[str, str, Any]], array_key: str, item_key: str, builder_type: Any
) -> Iterator[tuple[str, Any]]:
    started = in_array = False
    key = ""
    builder: Any = None
    nest = 0
    target = ""
    for _prefix, event, value in events:
        if builder is not None:
            builder.event(event, value)
            if event in ("start_map", "start_array"):
                nest += 1
            elif event in ("end_map", "end_array"):
                nest -= 1
                if nest == 0:
                    yield target, builder.value
                    builder = None
            continue
        if not started:
            if event != "start_map":
                raise _NotAnObject
            started = True
            continue
        if in_array:
            if event == "end_array":
                in_array = False
                continue
            target = item_key
        elif event == "map_key":
            key = value
            continue
        elif event == "end_map":
            return
        elif key == array_key and event == "start_array":
            in_array = True
            yield array_key, ARRAY_START
            continue
        else:
            target = key
        if event in ("start_map", "start_array"):
            builder = builder_type()
            builder.event(event, value)
            nest = 1
        else:
            yield target, value
    raise _EndsEarly  # pragma: no cover - ijson raises IncompleteJSONError first
