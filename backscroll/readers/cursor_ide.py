"""Cursor (the IDE): chats in the VS Code ``state.vscdb`` key/value stores.

Cursor is closed source; the layout here is what third-party readers agree on
(Dicklesworthstone/franken_agent_detection ``connectors/cursor.rs``, a Go
reader's ``composerData``/``bubbleData`` structs, tony/agentgrep): in the global
``cursorDiskKV`` table,

- ``composerData:<composerId>``: one chat — ``name`` (title), ``createdAt`` and
  ``lastUpdatedAt`` (epoch ms), ``status``, ``fullConversationHeadersOnly``
  (``[{bubbleId, type}]``, the order), or an inline ``conversation`` array in older
  rows, ``latestConversationSummary.summary.summary`` (Cursor's own summary),
  ``subagentComposerIds``;
- ``bubbleId:<composerId>:<bubbleId>``: one message; ``type`` 1 is the user and
  2 the assistant (all three readers agree), prose in ``text`` (older builds:
  ``rawText``/``content``, or only the Lexical ``richText`` for prompts). Thinking
  (``thinking``), tool steps (``toolFormerData``: name, params, result) and code
  block diffs stay out; tool-only and thinking-only bubbles have empty text.

Workspace databases (``workspaceStorage/<hash>/state.vscdb``) list the chats
opened in that folder (``ItemTable`` ``composer.composerData`` -> ``allComposers``)
and hold the pre-Composer chat panel (``workbench.panel.aichat.view.aichat.chatdata``,
tabs of ``user``/``ai`` bubbles); ``workspace.json`` beside them names the folder.
Reading a workspace database therefore yields the project of its chats and its
legacy tabs.

A chat is re-read only when its ``lastUpdatedAt``, size or status changed, while
it is still generating, and for two minutes after its last update (a streamed
reply's last write to its bubble can come after the chat record's last write);
the per-chat fingerprints are the state.

Cursor has no resume command: the user reopens a chat from the chat history in
the Agent/Composer panel, so ``resume_command`` is None.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from backscroll.digests import sha1
from backscroll.model import (
    Cursor,
    Kind,
    Problem,
    ReaderOptions,
    ReadResult,
    Role,
    Session,
    Turn,
)
from backscroll.readers.base import (
    BaseReader,
    HostEnv,
    clean_text,
    content_key,
    first_line_title,
    is_external_tool,
    parse_time,
    path_from_uri,
    read_side_file,
)
from backscroll.readers.hostdb import later, open_readonly

if TYPE_CHECKING:
    from backscroll.readers.hostdb import cursor as cursor_sql
else:
    cursor_sql = later("backscroll.readers.hostdb.cursor")


DB_NAME = "state.vscdb"
CHATDATA_KEY = "workbench.panel.aichat.view.aichat.chatdata"
COMPOSER_LIST_KEY = "composer.composerData"
_USER_TYPES: frozenset[object] = frozenset({1, "user"})
_ASSISTANT_TYPES: frozenset[object] = frozenset({2, "ai", "assistant"})
_GENERATING = "generating"
#: A chat is read again, changed or not, for this long after its last update:
#: the last write of a streamed reply can land in its bubble after the chat's
#: own record was written for the last time.
SETTLING_MS = 120_000


def _after(stamp: str | None, ms: float) -> bool:
    try:
        return stamp is not None and float(stamp) > ms
    except ValueError:
        return False


class CursorReader(BaseReader):
    host: ClassVar[str] = "cursor"
    name: ClassVar[str] = "Cursor"
    #: 2: a chat's bubble directory is a guess the workspace folder replaces (read again).
    version: ClassVar[int] = 2
    kind: ClassVar[Kind] = "database"

    def roots(self, env: HostEnv) -> list[Path]:
        # No variable moves Cursor's data (only VS Code's --user-data-dir flag).
        # Under WSL, Cursor runs on Windows and keeps its databases there.
        users = [next(d for d in env.editor_user_dirs() if d.parent.name == "Cursor")]
        users += [h / "AppData" / "Roaming" / "Cursor" / "User" for h in env.windows_homes()]
        return [user / sub for user in users for sub in ("globalStorage", "workspaceStorage")]

    def source_for(self, path: Path) -> Path | None:
        if path.name not in (DB_NAME, DB_NAME + "-wal") or "Cursor" not in path.parts:
            return None
        db = path.parent / DB_NAME
        if db.parent.name == "globalStorage" or db.parent.parent.name == "workspaceStorage":
            return db
        return None

    def read(self, path: Path, prev: Cursor | None, opts: ReaderOptions) -> ReadResult:
        old: Mapping[str, Any] = prev.state if prev else {}
        folder = _workspace_folder(path)
        out = _Output()
        with open_readonly(path) as conn:
            tables = cursor_sql.tables(conn)
            if not tables & {"cursorDiskKV", "ItemTable"}:
                return ReadResult(
                    unsupported=f"unknown schema (no cursorDiskKV/ItemTable) in {path}"
                )
            composers: dict[str, str] = {}
            if "cursorDiskKV" in tables:
                composers = _read_composers(conn, old.get("composers", {}), prev is None, opts, out)
            items = {}
            if "ItemTable" in tables:
                items = cursor_sql.item_values(conn, [CHATDATA_KEY, COMPOSER_LIST_KEY])
        tabs = _read_tabs(items.get(CHATDATA_KEY), old.get("tabs", {}), prev is None, folder, out)
        listing = _digest(items.get(COMPOSER_LIST_KEY))
        if folder and listing != old.get("listing"):
            out.sessions.extend(_listed_sessions(items.get(COMPOSER_LIST_KEY), folder))
        return ReadResult(
            turns=tuple(out.turns),
            sessions=tuple(out.sessions),
            position=0,
            state={"composers": composers, "tabs": tabs, "listing": listing},
            replaced_sessions=frozenset(out.replaced),
            removed_sessions=frozenset(out.removed),
            problems=tuple(out.problems),
        )


@dataclass(slots=True)
class _Output:
    turns: list[Turn]
    sessions: list[Session]
    replaced: set[str]
    removed: set[str]
    problems: list[Problem]

    def __init__(self) -> None:
        self.turns, self.sessions, self.problems = [], [], []
        self.replaced, self.removed = set(), set()


# --------------------------------------------------------------------------- composers


def _read_composers(
    conn: Any, known: Mapping[str, str], fresh: bool, opts: ReaderOptions, out: _Output
) -> dict[str, str]:
    prints = cursor_sql.composer_prints(conn)
    parents: dict[str, str] = {}
    for p in prints:
        for child in _json_list(p.subagents):
            parents[str(child)] = p.composer_id
    # Each chat's memo: its fingerprint, then (after "#") a hash of the turns it gave.
    state = {p.composer_id: f"{p.last_updated}|{p.size}|{p.status}" for p in prints}
    lately = time.time() * 1000 - SETTLING_MS
    settling: set[str] = set()
    changed: list[str] = []
    for p in prints:
        cid = p.composer_id
        same = not fresh and known.get(cid, "").partition("#")[0] == state[cid]
        if not same or p.status == _GENERATING:
            changed.append(cid)
        elif _after(p.last_updated, lately):
            changed.append(cid)  # (read again while it settles: yielded only if it changed)
            settling.add(cid)
    values = cursor_sql.composer_values(conn, changed)
    for cid in changed:
        raw = values.get(cid)
        if raw is None:
            out.replaced.add(cid)
            state.pop(cid, None)  # deleted meanwhile: seen as removed next time
            continue
        parent = parents.get(cid)
        if parent is not None and not opts.include_subagents:
            if cid not in settling:
                out.replaced.add(cid)
            continue
        try:
            doc = _loads(raw)
        except ValueError as exc:
            out.replaced.add(cid)
            out.problems.append(Problem(f"composer {cid}: {exc}"))
            continue
        chat = _Output()
        _composer_turns(cid, doc, _ordered_bubbles(conn, cid, doc), parent, chat)
        given = _hash(repr((chat.turns, chat.sessions)))  # (every field of both)
        state[cid] += "#" + given
        if cid in settling and known.get(cid, "").partition("#")[2] == given:
            continue  # read again while settling, and nothing changed: nothing rewritten
        out.replaced.add(cid)
        out.turns += chat.turns
        out.sessions += chat.sessions
        out.problems += chat.problems
    out.removed.update(set(known) - set(state))
    return state


def _ordered_bubbles(conn: Any, cid: str, doc: dict[str, Any]) -> list[tuple[str | None, Any]]:
    headers = doc.get("fullConversationHeadersOnly")
    if isinstance(headers, list) and headers:
        rows = cursor_sql.bubble_values(conn, cid)
        ordered: list[tuple[str | None, Any]] = []
        for header in headers:
            bid = header.get("bubbleId") if isinstance(header, dict) else None
            if isinstance(bid, str) and bid in rows:
                try:
                    ordered.append((bid, _loads(rows[bid])))
                except ValueError:
                    continue
        return ordered
    inline = doc.get("conversation")
    if isinstance(inline, list):
        return [(b.get("bubbleId") if isinstance(b, dict) else None, b) for b in inline]
    return []


def _composer_turns(
    cid: str,
    doc: dict[str, Any],
    bubbles: list[tuple[str | None, Any]],
    parent: str | None,
    out: _Output,
) -> None:
    sub = parent is not None
    turns = list(_bubble_turns(cid, bubbles, sub))
    summary = _summary_text(doc)
    if summary:
        turns.append(
            Turn(
                cid,
                "summary",
                "summary",
                summary,
                parse_time(doc.get("lastUpdatedAt")),
                1 << 40,
                subagent=sub,
            )
        )
    if not turns:
        return
    out.turns.extend(turns)
    name = doc.get("name")
    prompts = [t.text for t in turns if t.role == "user"]
    title = name.strip() if isinstance(name, str) and name.strip() else None
    out.sessions.append(
        Session(
            cid,
            project=_bubble_project(b for _, b in bubbles),
            # (the workspace database that lists the chat names its folder: that wins)
            project_guess=True,
            title=title or (first_line_title(prompts[0]) if prompts else None),
            started_at=parse_time(doc.get("createdAt")),
            updated_at=parse_time(doc.get("lastUpdatedAt")),
            # No resume command: the chat is reopened from Cursor's chat history.
            resume_command=None,
            parent_session_id=parent,
        )
    )


def _bubble_turns(sid: str, bubbles: list[tuple[str | None, Any]], sub: bool) -> Iterator[Turn]:
    tainted = False
    for i, (bid, bubble) in enumerate(bubbles):
        if not isinstance(bubble, dict):
            continue
        kind = bubble.get("type")
        role: Role
        if kind in _USER_TYPES:
            role = "user"
        elif kind in _ASSISTANT_TYPES:
            role = "assistant"
        else:
            continue
        text = _bubble_text(bubble, role)
        if role == "user" and text:
            tainted = False
        if text:
            key = bid or (bubble.get("id") if isinstance(bubble.get("id"), str) else None)
            yield Turn(
                sid,
                key or f"{i}:{content_key(text)}",
                role,
                text,
                parse_time(bubble.get("createdAt") or bubble.get("timestamp")),
                i,
                tainted=tainted and role == "assistant",
                subagent=sub,
            )
        tool = bubble.get("toolFormerData")
        if isinstance(tool, dict) and is_external_tool(str(tool.get("name") or "")):
            tainted = True


def _bubble_text(bubble: dict[str, Any], role: Role) -> str:
    for field in ("text", "rawText", "content"):
        value = bubble.get(field)
        if isinstance(value, str) and value.strip():
            return clean_text(value)
    rich = bubble.get("richText")
    if role == "user" and isinstance(rich, str) and rich.strip():
        return clean_text(_lexical_text(rich))
    return ""


def _lexical_text(rich: str) -> str:
    """The plain text of a Lexical editor state (paragraphs on their own lines)."""
    try:
        doc = json.loads(rich)
    except ValueError:
        return ""
    lines: list[str] = []

    def walk(node: Any) -> str:
        if not isinstance(node, dict):
            return ""
        if isinstance(node.get("text"), str):
            return str(node["text"])
        children = node.get("children")
        return "".join(walk(c) for c in children) if isinstance(children, list) else ""

    root = doc.get("root") if isinstance(doc, dict) else None
    children = root.get("children") if isinstance(root, dict) else None
    for block in children if isinstance(children, list) else []:
        lines.append(walk(block))
    return "\n".join(lines)


def _summary_text(doc: dict[str, Any]) -> str:
    state = doc.get("latestConversationSummary")
    summary = state.get("summary") if isinstance(state, dict) else None
    text = summary.get("summary") if isinstance(summary, dict) else None
    return clean_text(text) if isinstance(text, str) else ""


def _bubble_project(bubbles: Iterator[Any]) -> str | None:
    for bubble in bubbles:
        if not isinstance(bubble, dict):
            continue
        direct = bubble.get("workspaceProjectDir")
        if isinstance(direct, str) and direct.strip():
            return direct.strip()
        for uri in _json_list(bubble.get("workspaceUris")):
            path = path_from_uri(uri)
            if path:
                return path
    return None


# --------------------------------------------------------------------------- workspace DBs


def _listed_sessions(raw: bytes | str | None, folder: str) -> Iterator[Session]:
    """The project of every chat a workspace database lists."""
    try:
        doc = _loads(raw) if raw is not None else {}
    except ValueError:
        return
    listed = doc.get("allComposers") if isinstance(doc, dict) else None
    for item in listed if isinstance(listed, list) else []:
        cid = item.get("composerId") if isinstance(item, dict) else None
        if isinstance(cid, str) and cid:
            yield Session(cid, project=folder)


def _read_tabs(
    raw: bytes | str | None,
    known: Mapping[str, str],
    fresh: bool,
    folder: str | None,
    out: _Output,
) -> dict[str, str]:
    """The pre-Composer chat panel's tabs (legacy ``aichat`` chat data)."""
    tabs: list[Any] = []
    if raw is not None:
        try:
            doc = _loads(raw)
            tabs = _json_list(doc.get("tabs")) if isinstance(doc, dict) else []
        except ValueError as exc:
            out.problems.append(Problem(f"{CHATDATA_KEY}: {exc}"))
            return dict(known)
    state: dict[str, str] = {}
    for tab in tabs:
        tid = tab.get("tabId") if isinstance(tab, dict) else None
        if not isinstance(tid, str) or not tid:
            continue
        state[tid] = _hash(json.dumps(tab, sort_keys=True))
        if not fresh and known.get(tid) == state[tid]:
            continue
        out.replaced.add(tid)
        bubbles = tab.get("bubbles")
        turns = list(
            _bubble_turns(
                tid, [(None, b) for b in bubbles] if isinstance(bubbles, list) else [], False
            )
        )
        if not turns:
            continue
        out.turns.extend(turns)
        title = tab.get("chatTitle")
        out.sessions.append(
            Session(
                tid,
                project=folder,
                title=title.strip()
                if isinstance(title, str) and title.strip()
                else first_line_title(turns[0].text),
                updated_at=parse_time(tab.get("lastSendTime")),
                resume_command=None,
            )
        )
    out.removed.update(set(known) - set(state))
    return state


def _workspace_folder(db: Path) -> str | None:
    """The folder a workspace database belongs to (``workspace.json`` beside it)."""
    if db.parent.parent.name != "workspaceStorage":
        return None
    try:
        doc = json.loads(read_side_file(db.parent / "workspace.json"))
    except (OSError, ValueError):
        return None
    if not isinstance(doc, dict):
        return None
    for field in ("folder", "workspace"):
        uri = doc.get(field)
        if isinstance(uri, str) and uri:
            return path_from_uri(uri)
    return None


# --------------------------------------------------------------------------- values


def _loads(raw: bytes | str) -> Any:
    return json.loads(raw.decode("utf-8") if isinstance(raw, bytes) else raw)


def _json_list(value: Any) -> list[Any]:
    if isinstance(value, list):
        return value
    if isinstance(value, str):
        try:
            parsed = json.loads(value)
        except ValueError:
            return []
        return parsed if isinstance(parsed, list) else []
    return []


def _digest(raw: bytes | str | None) -> str | None:
    return None if raw is None else _hash(raw)


def _hash(raw: bytes | str) -> str:
    data = raw.encode("utf-8") if isinstance(raw, str) else raw
    return sha1(data, usedforsecurity=False).hexdigest()[:16]
