"""Replay of VS Code's chat session mutation log, kept to what is prose.

A ``chatSessions/<id>.jsonl`` file is a log of entries against one session
object (microsoft/vscode ``common/model/objectMutationLog.ts``):

- ``{"kind":0,"v":...}`` sets the whole state (the first line, and again on a
  whole-file rewrite);
- ``{"kind":1,"k":path,"v":...}`` sets the value at ``path`` (no ``v``:
  undefined, i.e. the key goes away); an empty path changes nothing, as in
  VS Code's own reader;
- ``{"kind":2,"k":path,"v":[...]?,"i":n?}`` pushes on the array at ``path``
  (created when missing), first cutting it to length ``n`` when ``i`` is given
  (a longer length pads with holes, as a JavaScript ``length =`` does);
- ``{"kind":3,"k":path}`` deletes (sets undefined) the value at ``path``.

The state kept is a *skeleton* of the session: the fields the reader indexes
(request ids, times, prompt text, the flags that hide a prompt, the response
parts' ``kind`` and markdown ``value``, tool ids for taint, inline file
references), with everything
else (tool output, ``result.metadata``, input state, variables) dropped as it
is applied. A mutation whose path runs into a dropped field is skipped, so the
skeleton stays equal to the full replay restricted to the kept fields. It is
small enough to save between reads, which makes an appended line cost the same
however long the log already is.
"""

from __future__ import annotations

from typing import Any, Literal

#: What a path leads to in the session object.
Node = Literal["root", "requests", "request", "message", "response", "part", "leaf", "drop"]

ROOT_KEYS = frozenset(
    {"version", "sessionId", "creationDate", "customTitle", "computedTitle", "requests",
     "workingDirectory", "lastMessageDate"}
)  # fmt: skip
REQUEST_KEYS = frozenset(
    {"requestId", "timestamp", "message", "response", "modelState", "isCanceled",
     "isSystemInitiated", "hiddenFromTranscript", "requestHiddenFromTranscript", "confirmation"}
)  # fmt: skip
#: Fields kept on a response part: its kind, markdown value, a vulnerability
#: part's content, a tool call's id (for taint) and an inline file reference
#: (its name or URI: the answer reads it as the file name).
PART_KEYS = frozenset({"kind", "value", "content", "toolId", "name", "inlineReference"})


class LogError(ValueError):
    """An entry that cannot be applied (VS Code itself would refuse the file)."""


def child(node: Node, key: object) -> Node:
    """The node below ``node`` at ``key``."""
    if node == "leaf" or node == "drop":
        return node
    if node == "root":
        if key == "requests":
            return "requests"
        return "leaf" if key in ROOT_KEYS else "drop"
    if node == "requests":
        return "request" if isinstance(key, int) else "drop"
    if node == "request":
        if key == "message":
            return "message"
        if key == "response":
            return "response"
        return "leaf" if key in REQUEST_KEYS else "drop"
    if node == "message":
        return "leaf" if key == "text" else "drop"
    if node == "response":
        return "part" if isinstance(key, int) else "drop"
    # part
    return "leaf" if key in PART_KEYS else "drop"


def prune(node: Node, value: Any) -> Any:
    """``value`` as it would stand at ``node``, with the dropped fields removed."""
    if node == "leaf" or value is None:
        return value
    if node in ("requests", "response"):
        if not isinstance(value, list):
            return value
        item: Node = "request" if node == "requests" else "part"
        return [prune(item, v) for v in value]
    if node == "message" and isinstance(value, str):
        return value  # very old files keep the prompt as a plain string
    if not isinstance(value, dict):
        return value
    out: dict[str, Any] = {}
    for key, sub in value.items():
        below = child(node, key)
        if below != "drop":
            out[key] = prune(below, sub)
    return out


def _walk(state: Any, path: list[Any]) -> tuple[Any, Node] | None:
    """The container holding ``path[-1]`` and its node, or None when the path
    runs into a dropped field (the mutation does not concern the skeleton)."""
    node: Node = "root"
    current = state
    for key in path[:-1]:
        node = child(node, key)
        if node == "drop":
            return None
        current = _get(current, key)
        if current is None:
            raise LogError(f"path {path!r} leads through a missing value")
    return current, node


def _get(container: Any, key: Any) -> Any:
    if isinstance(container, dict) and isinstance(key, str):
        return container.get(key)
    if isinstance(container, list) and isinstance(key, int) and 0 <= key < len(container):
        return container[key]
    return None


def _set(container: Any, key: Any, value: Any, *, remove: bool) -> None:
    if isinstance(container, dict) and isinstance(key, str):
        if remove:
            container.pop(key, None)
        else:
            container[key] = value
    elif isinstance(container, list) and isinstance(key, int) and key >= 0:
        if key >= len(container):
            container.extend([None] * (key + 1 - len(container)))
        container[key] = None if remove else value
    else:
        raise LogError(f"cannot set {key!r} on a {type(container).__name__}")


def apply(state: dict[str, Any] | None, entry: Any) -> dict[str, Any]:
    """The skeleton after ``entry``. Raises LogError for an entry that is not one."""
    if not isinstance(entry, dict):
        raise LogError("entry is not a JSON object")
    kind = entry.get("kind")
    if kind == 0:
        value = entry.get("v")
        if not isinstance(value, dict):
            raise LogError("initial entry holds no session object")
        return dict(prune("root", value))
    if kind not in (1, 2, 3):
        raise LogError(f"unknown entry kind {kind!r}")
    if state is None:
        raise LogError("entry before the initial one (kind 0)")
    path = entry.get("k")
    if not isinstance(path, list) or not all(
        isinstance(k, str) or (isinstance(k, int) and not isinstance(k, bool)) for k in path
    ):
        raise LogError(f"entry has no valid path: {path!r}")
    if not path:
        return state  # VS Code's reader leaves the root alone too
    found = _walk(state, path)
    if found is None:
        return state
    container, parent = found
    key = path[-1]
    node = child(parent, key)
    if node == "drop":
        return state
    if kind == 1 and "v" in entry:
        _set(container, key, prune(node, entry["v"]), remove=False)
    elif kind in (1, 3):
        _set(container, key, None, remove=True)
    else:
        _push(container, key, node, entry)
    return state


def _push(container: Any, key: Any, node: Node, entry: dict[str, Any]) -> None:
    array = _get(container, key)
    if array is None:
        array = []
    if not isinstance(array, list):
        raise LogError(f"push on {entry.get('k')!r}, which is not an array")
    cut = entry.get("i")
    if isinstance(cut, int) and not isinstance(cut, bool) and cut >= 0:
        if cut <= len(array):
            del array[cut:]
        else:
            array.extend([None] * (cut - len(array)))
    values = entry.get("v")
    if isinstance(values, list):
        array.extend(prune(node, values) if node in ("requests", "response") else values)
    _set(container, key, array, remove=False)
