"""GitHub Copilot Chat in VS Code (also Insiders, VSCodium, Positron): chat sessions.

VS Code core writes every chat of its chat view (Copilot's ask/edit/agent
modes and other participants) under ``<userData>/User/``
(``shared/formats/vscode-copilot-chat/README.md``):

- ``workspaceStorage/<id>/chatSessions/<sessionId>.jsonl``: the mutation log
  (VS Code 1.109+), replayed by :mod:`backscroll.readers.vscode_chat_log`;
- ``…/chatSessions/<sessionId>.json``: the flat document of older builds,
  rewritten whole (ignored when a ``.jsonl`` of the same id sits beside it:
  VS Code prefers the log and leaves the old file behind);
- ``globalStorage/emptyWindowChatSessions/`` (chats of windows with no folder)
  and ``globalStorage/transferredChatSessions/`` (a chat moving between windows).

Indexed: each request's ``message.text`` (not when system-initiated, hidden
from the transcript, or a confirmation click) and its response parts that have
no ``kind`` (markdown), joined into one assistant turn. Thinking, tool
invocations, edits, progress and every other kind stay out. Keys are the
request id (``<requestId>:q`` / ``:a``), so a request the log removes or
replaces (a resend writes a push that cuts the array) leaves the index with it.

The log is appended to, and rewritten whole (a fresh kind-0 line) after about
a thousand entries or on the first save after loading a ``.json``. The saved
position is a byte offset and the state a pruned copy of the session (prose
only, see :mod:`~backscroll.readers.vscode_chat_log`), so appended lines are
applied to that copy alone, and only the requests they touched are re-derived
(every request when one is pushed with a cut, replaced or removed, or when a
turn said before is gone, e.g. an answer cut away). A rewrite shrinks the file
or changes its first bytes (or the bytes before the saved position), which the
indexer detects, and the file is replayed from the start.

Copies: when a window moves to another workspace, VS Code copies each of its
chats into the new workspace's ``chatSessions`` and goes on with the copy; the
old file stays. Copies share the file name, and only the newest (by mtime) is
indexed: an older copy yields nothing (``explain`` says which copy is indexed),
and a whole read of the newest drops what older copies alone still hold (a
request the new copy replaced). A passing copy in ``transferredChatSessions``
counts as the oldest while any other copy exists (VS Code deletes it once a
window has taken the chat). If the person goes on with both copies (the old
workspace opened again), only the newer one's requests stay indexed, as the
format notes' rule has it.

Title: ``customTitle`` (``computedTitle`` in old files); else the ``title`` of
the session's entry in ``chat.ChatSessionStore.index`` in the ``state.vscdb``
beside the ``chatSessions`` folder (the global one for empty windows); else the
first prompt. Project: ``workingDirectory`` when set (a remote window's is the
path on the remote machine), else the folder named by ``workspace.json``
beside ``chatSessions``. Times: each request's; an old flat file whose requests
have none is dated by its ``lastMessageDate``. No resume command: chats are
reopened from the editor's chat history.

Roots move with ``VSCODE_PORTABLE`` (``<dir>/user-data``) and
``VSCODE_APPDATA`` (``<dir>/<product>``), and on Linux ``XDG_CONFIG_HOME``;
``~/.vscode-server[-insiders]/data/User`` is read too (whether remote windows
ever keep chats there is unverified). Chats of VS Code before about March
2025, kept only in a workspace's ``state.vscdb`` (key ``interactive.sessions``)
until VS Code moves them to files, are read by
:mod:`~backscroll.readers.vscode_chat_db` through :func:`flat_turns` and
:func:`describe` below.
"""

from __future__ import annotations

import dataclasses
import json
import os
import sqlite3
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, ClassVar

from backscroll.errors import SourceBusy
from backscroll.model import (
    SKIPPED,
    Cursor,
    Kind,
    Problem,
    ReaderOptions,
    ReadResult,
    Session,
    Turn,
)
from backscroll.readers import vscode_chat_log as chatlog
from backscroll.readers.base import (
    BaseReader,
    HostEnv,
    clean_text,
    first_line_title,
    is_external_tool,
    loads,
    looks_like_id,
    next_line_number,
    parse_time,
    path_from_uri,
    read_json_document,
    tail_jsonl,
    walk_files,
)
from backscroll.readers.hostdb import open_readonly
from backscroll.readers.hostdb import vscode_chat as vscode_sql

PRODUCTS = ("Code", "Code - Insiders", "VSCodium", "Positron")
REMOTE_SERVERS = (".vscode-server", ".vscode-server-insiders")
TRANSFERRED = "transferredChatSessions"
SESSION_DIRS = ("emptyWindowChatSessions", TRANSFERRED)
#: Tool ids of VS Code's own web tools (the fetch tool and simple browser).
_WEB_TOOL_WORDS = ("fetchwebpage", "fetch_webpage", "websearch", "simplebrowser")
STATE_VERSION = 1


def user_dirs(env: HostEnv) -> list[Path]:
    """Every ``<userData>/User`` of the VS Code family, for this platform."""
    out: list[Path] = []
    portable = env.var("VSCODE_PORTABLE")
    if portable is not None:
        out.append(portable / "user-data" / "User")
    appdata = env.var("VSCODE_APPDATA")
    if env.is_macos:
        base = env.app_support()
    elif env.is_windows:
        base = env.appdata()
    else:
        base = env.xdg_config()
    for root in (appdata, base):
        if root is not None:
            out += [root / product / "User" for product in PRODUCTS]
    # Remote windows: the chat store belongs to the workbench (the client), but
    # peers also find sessions under the remote server's data (unverified).
    out += [env.home / server / "data" / "User" for server in REMOTE_SERVERS]
    return list(dict.fromkeys(out))


def _is_session_file(path: Path) -> bool:
    if path.suffix not in (".json", ".jsonl"):
        return False
    parent = path.parent
    if parent.name == "chatSessions":
        return parent.parent.parent.name == "workspaceStorage"
    return parent.name in SESSION_DIRS and parent.parent.name == "globalStorage"


def _is_web_tool(tool_id: object) -> bool:
    if not isinstance(tool_id, str):
        return False
    lowered = tool_id.lower()
    return is_external_tool(tool_id) or any(word in lowered for word in _WEB_TOOL_WORDS)


def _prompt(request: dict[str, Any]) -> str:
    message = request.get("message")
    if isinstance(message, dict):
        message = message.get("text")
    if not isinstance(message, str):
        return ""
    if (
        request.get("isSystemInitiated")
        or request.get("hiddenFromTranscript")
        or request.get("requestHiddenFromTranscript")
        or request.get("confirmation")
    ):
        return ""
    return clean_text(message)


def _answer(request: dict[str, Any]) -> tuple[str, bool]:
    """The markdown of a response, and whether a web tool ran.

    Adjacent markdown parts are one text streamed in pieces (a word can be cut
    between two), so they are joined as they are; an ``inlineReference`` inside
    such a run reads as its file name, as VS Code's own copy text has it. Any
    other part (a tool call, thinking) ends the run, and runs are paragraphs."""
    runs: list[list[str]] = [[]]
    tainted = False
    response = request.get("response")
    if isinstance(response, str):
        response = [response]  # very old files: the answer as one markdown string
    for part in response if isinstance(response, list) else []:
        if isinstance(part, str):
            runs[-1].append(part)
        elif not isinstance(part, dict):
            continue
        elif "kind" not in part:
            if isinstance(part.get("value"), str):
                runs[-1].append(part["value"])
        elif part["kind"] == "markdownVuln":
            content = part.get("content")
            if isinstance(content, dict) and isinstance(content.get("value"), str):
                runs[-1].append(content["value"])
        elif part["kind"] == "inlineReference":
            runs[-1].append(_reference_name(part))
        else:
            if _is_web_tool(part.get("toolId")):
                tainted = True
            if runs[-1]:
                runs.append([])
    text = "\n\n".join(p for p in (clean_text("".join(run)) for run in runs) if p)
    return text, tainted


def _reference_name(part: dict[str, Any]) -> str:
    """An ``inlineReference``'s file name: its ``name``, else the last segment of
    its URI's path (a bare URI or a location holding one); "" when neither."""
    name = part.get("name")
    if isinstance(name, str) and name:
        return name
    ref = part.get("inlineReference")
    if isinstance(ref, dict) and isinstance(ref.get("uri"), dict):
        ref = ref["uri"]
    path = ref.get("path") if isinstance(ref, dict) else None
    return path.rstrip("/").rsplit("/", 1)[-1] if isinstance(path, str) else ""


def request_turns(request: Any, index: int, sid: str) -> tuple[str, list[Turn]]:
    """The request's key stem and its prompt and answer turns (each may be missing)."""
    if not isinstance(request, dict):
        return f"i{index}", []
    raw_id = request.get("requestId")
    rid = raw_id if looks_like_id(raw_id) else f"i{index}"
    turns: list[Turn] = []
    asked = parse_time(request.get("timestamp"))
    prompt = _prompt(request)
    if prompt:
        turns.append(Turn(sid, f"{rid}:q", "user", prompt, asked, index * 2))
    if request.get("hiddenFromTranscript"):
        return rid, turns
    answer, tainted = _answer(request)
    if answer:
        state = request.get("modelState")
        done = parse_time(state.get("completedAt")) if isinstance(state, dict) else None
        turns.append(
            Turn(sid, f"{rid}:a", "assistant", answer, done or asked, index * 2 + 1,
                 tainted=tainted)
        )  # fmt: skip
    return rid, turns


def _requests(doc: dict[str, Any]) -> list[Any]:
    requests = doc.get("requests")
    return requests if isinstance(requests, list) else []


def _first_prompt(doc: dict[str, Any]) -> str | None:
    for request in _requests(doc):
        if isinstance(request, dict) and (prompt := _prompt(request)):
            return prompt
    return None


def _flags(turns: list[Turn]) -> str:
    return "".join(t.key[-1] for t in turns)


def _copy(doc: dict[str, Any]) -> dict[str, Any]:
    """A deep copy of a JSON object (orjson; the standard library for lone surrogates)."""
    import orjson  # (here: the command that only lists the hosts' files never copies one)

    try:
        copied = loads(orjson.dumps(doc))
    except TypeError:
        copied = json.loads(json.dumps(doc))
    return dict(copied)


def _session_id(doc: dict[str, Any], fallback: str) -> str:
    raw_id = doc.get("sessionId")
    return raw_id if isinstance(raw_id, str) and raw_id else fallback


def _touched(changed: set[int], entry: dict[str, Any], before: int, after: int) -> set[int] | None:
    """``changed`` plus the requests ``entry`` touched; None when it moved or
    replaced requests (every request is re-derived)."""
    path = entry.get("k")
    if entry.get("kind") == 0:
        return None
    if not isinstance(path, list) or not path or path[0] != "requests":
        return changed  # session metadata (title...) only
    if len(path) == 1:
        if entry.get("kind") == 2 and "i" not in entry:
            return changed | set(range(before, after))  # new requests pushed
        return None
    if len(path) == 2 or not isinstance(path[1], int) or not 0 <= path[1] < after:
        return None
    return changed | {path[1]}


def workspace_folder(workspace: Path) -> str | None:
    """The folder of a ``workspaceStorage/<id>`` directory (its ``workspace.json``)."""
    try:
        doc = json.loads((workspace / "workspace.json").read_bytes())
    except (OSError, ValueError):
        return None
    if not isinstance(doc, dict):
        return None
    folder = path_from_uri(doc.get("folder"))
    if folder:
        return folder
    config = path_from_uri(doc.get("workspace"))  # a .code-workspace file
    return str(Path(config).parent) if config else None


def _user_dir(session_file: Path) -> Path | None:
    """The ``<userData>/User`` holding a session file."""
    if session_file.parent.name == "chatSessions":
        return session_file.parents[3]
    if session_file.parent.name in SESSION_DIRS:
        return session_file.parents[2]
    return None


#: Session file names per User dir, listed at most once per this many seconds
#: (a cold index asks once per file): user dir -> (listed at, name -> paths).
_LISTING_SECONDS = 5.0
_listings: dict[Path, tuple[float, dict[str, list[Path]]]] = {}


def _session_files(user: Path, fresh_for: str) -> dict[str, list[Path]]:
    """Every chat session file under ``user``, by file name without suffix (listed
    again unless listed lately with ``fresh_for`` among them)."""
    now = time.monotonic()
    cached = _listings.get(user)
    if cached is not None and now - cached[0] < _LISTING_SECONDS and fresh_for in cached[1]:
        return cached[1]
    found: dict[str, list[Path]] = {}
    dirs = [user / "globalStorage" / name for name in SESSION_DIRS]
    try:
        with os.scandir(user / "workspaceStorage") as entries:
            dirs += [Path(e.path) / "chatSessions" for e in entries if e.is_dir()]
    except OSError:
        pass
    for folder in dirs:
        try:
            with os.scandir(folder) as entries:
                for e in entries:
                    stem, dot, suffix = e.name.rpartition(".")
                    if dot and suffix in ("json", "jsonl"):
                        found.setdefault(stem, []).append(Path(e.path))
        except OSError:
            continue
    _listings[user] = (now, found)
    return found


def _copies(
    path: Path, source_for: Callable[[Path], Path | None]
) -> tuple[Path | None, list[Path]]:
    """The newer copy of this chat (None: this file is the newest), and the older
    ones. VS Code copies every chat of a window that moves to another workspace
    and goes on with the copy; ``transferredChatSessions`` holds a passing copy.
    Copies share the file name; the newest (by mtime) is the chat (the format
    notes: dedupe by session id, prefer the newest)."""
    user = _user_dir(path)
    if user is None:
        return None, []
    listed = _session_files(user, path.stem).get(path.stem, [])
    others = [p for p in listed if p.parent != path.parent]
    if not others:
        return None, []
    dated: list[tuple[bool, int, str, Path]] = []
    for candidate in [path, *others]:
        if candidate != path and source_for(candidate) != candidate:
            continue  # (a flat file left beside its log)
        try:
            mtime = candidate.stat().st_mtime_ns
        except OSError:
            continue
        # A chat in flight between windows is the newest only while no window's
        # copy exists: the window that takes it writes its own and VS Code
        # deletes the passing one.
        kept = candidate.parent.name != TRANSFERRED
        dated.append((kept, mtime, str(candidate), candidate))
    dated.sort()
    newest = dated[-1][3] if dated else path
    if newest != path:
        return newest, []
    return None, [p for *_, p in dated[:-1]]


def _older_copy(path: Path, newer: Path) -> ReadResult:
    """An older copy: nothing of it is indexed (its turns are dropped)."""
    try:
        size = path.stat().st_size
    except OSError:
        size = 0
    reason = f"an older copy of this chat: the newer copy {newer} is the one indexed"
    return ReadResult(position=size, replace=True, state={SKIPPED: reason})


def state_db(session_file: Path) -> Path:
    """The workspace's ``state.vscdb`` beside ``<workspace>/chatSessions/``."""
    return session_file.parent.parent / "state.vscdb"


def _index_title(db: Path, sid: str) -> str | None:
    """The session's title in the ``chat.ChatSessionStore.index`` of ``db`` (best effort)."""
    if not db.is_file():
        return None
    try:
        with open_readonly(db) as conn:
            raw = vscode_sql.chat_index(conn)
        index = json.loads(raw) if raw is not None else None
    except (OSError, ValueError, sqlite3.Error, SourceBusy):
        return None
    entries = index.get("entries") if isinstance(index, dict) else None
    entry = entries.get(sid) if isinstance(entries, dict) else None
    title = entry.get("title") if isinstance(entry, dict) else None
    return title.strip() or None if isinstance(title, str) else None


class VsCodeCopilotChatReader(BaseReader):
    host: ClassVar[str] = "vscode-copilot-chat"
    name: ClassVar[str] = "GitHub Copilot Chat (VS Code)"
    version: ClassVar[int] = 2
    kind: ClassVar[Kind] = "append"

    def roots(self, env: HostEnv) -> list[Path]:
        out: list[Path] = []
        for user in user_dirs(env):
            out.append(user / "workspaceStorage")
            out += [user / "globalStorage" / name for name in SESSION_DIRS]
        return out

    def database_dirs(self, env: HostEnv) -> list[Path]:
        # Titles come from each workspace's state.vscdb (WAL where VS Code turns it on).
        return [user / "workspaceStorage" for user in user_dirs(env)]

    def source_for(self, path: Path) -> Path | None:
        if not _is_session_file(path):
            return None
        if path.suffix == ".json" and path.with_suffix(".jsonl").exists():
            return None  # VS Code reads the log; the flat file is left over
        return path

    def discover(self, root: Path) -> Iterator[Path]:
        if root.name != "workspaceStorage":
            yield from super().discover(root)
            return
        # Only <id>/chatSessions/: the rest of workspaceStorage is other state.
        try:
            workspaces = sorted(p for p in root.iterdir() if p.is_dir())
        except OSError:
            return
        for workspace in workspaces:
            for path in walk_files(workspace / "chatSessions"):
                source = self.source_for(path)
                if source is not None:
                    yield source

    def read(self, path: Path, prev: Cursor | None, opts: ReaderOptions) -> ReadResult:
        newer, older = _copies(path, self.source_for)
        if newer is not None:
            return _older_copy(path, newer)
        if path.suffix == ".json":
            result = self._read_flat(path)
        else:
            result = self._read_log(path, prev, opts)
        if older and result.replace:
            result = dataclasses.replace(result, supersedes=tuple(str(p) for p in older))
        return result

    def _read_flat(self, path: Path) -> ReadResult:
        size = path.stat().st_size
        doc = read_json_document(path)  # ValueError mid-write: the indexer retries
        if not isinstance(doc, dict) or not isinstance(doc.get("requests"), list):
            return ReadResult(
                position=size, unsupported=f"unknown format in {path.name}: no requests array"
            )
        skeleton, turns = flat_turns(doc, path.stem)
        return self._result(path, skeleton, turns, size, {}, replace=True, problems=[])

    def _read_log(self, path: Path, prev: Cursor | None, opts: ReaderOptions) -> ReadResult:
        saved = prev.state.get("doc") if prev and prev.state.get("v") == STATE_VERSION else None
        if prev is not None and not isinstance(saved, dict):
            prev = None  # nothing to apply new entries to: replay from the start
        # A private copy: entries are applied to it in place.
        doc: dict[str, Any] | None = _copy(saved) if saved else None
        tail, records = tail_jsonl(path, prev, opts)
        problems: list[Problem] = []
        #: Requests the new entries touched; None when every request must be re-derived.
        changed: set[int] | None = set() if doc is not None else None
        for line, entry in records:
            before = len(_requests(doc)) if doc is not None else 0
            try:
                doc = chatlog.apply(doc, entry)
            except chatlog.LogError as exc:
                problems.append(Problem(f"entry not applied: {exc}", line.number, line.offset))
                continue
            if changed is not None:
                changed = _touched(changed, entry, before, len(_requests(doc)))
        problems = [*tail.problems, *problems]
        if doc is None:  # no initial entry yet (an empty file, or one mid-write)
            return ReadResult(position=0, state={}, problems=tuple(problems))
        raw_emitted = prev.state.get("emitted") if prev else None
        emitted: dict[str, str] = dict(raw_emitted) if isinstance(raw_emitted, dict) else {}
        turns: list[Turn] | None = None
        sid = _session_id(doc, path.stem)
        if changed is not None:
            turns = []
            for index in sorted(changed):
                rid, found = request_turns(_requests(doc)[index], index, sid)
                if set(emitted.get(rid, "")) - set(_flags(found)):
                    turns = None  # a turn said before is gone: re-derive them all
                    break
                emitted[rid] = _flags(found)
                turns += found
        replace = turns is None
        if turns is None:
            turns, emitted = [], {}
            for index, request in enumerate(_requests(doc)):
                rid, found = request_turns(request, index, sid)
                emitted[rid] = _flags(found)
                turns += found
        state = {"v": STATE_VERSION, "line": next_line_number(tail), "doc": doc,
                 "emitted": emitted}  # fmt: skip
        return self._result(path, doc, turns, tail.end, state, replace=replace, problems=problems)

    def _result(
        self,
        path: Path,
        doc: dict[str, Any],
        turns: list[Turn],
        position: int,
        state: dict[str, Any],
        *,
        replace: bool,
        problems: list[Problem],
    ) -> ReadResult:
        in_workspace = path.parent.name == "chatSessions"
        session = describe(
            doc, _session_id(doc, path.stem), turns,
            index=state_db(path), workspace=path.parent.parent if in_workspace else None,
        )  # fmt: skip
        return ReadResult(
            turns=tuple(turns),
            sessions=(session,),
            position=position,
            state=state,
            replace=replace,
            problems=tuple(problems),
        )


def flat_turns(doc: dict[str, Any], fallback_id: str) -> tuple[dict[str, Any], list[Turn]]:
    """A whole serialized session (a flat ``.json`` file, or one chat of the old
    ``interactive.sessions`` key): its skeleton (the fields read, see
    :func:`~backscroll.readers.vscode_chat_log.prune`) and its turns. The id is
    the session's ``sessionId``, else ``fallback_id``."""
    skeleton: dict[str, Any] = chatlog.prune("root", doc)
    sid = _session_id(skeleton, fallback_id)
    turns = [t for i, r in enumerate(_requests(skeleton)) for t in request_turns(r, i, sid)[1]]
    return skeleton, turns


def describe(
    doc: dict[str, Any], sid: str, turns: list[Turn], *, index: Path | None, workspace: Path | None
) -> Session:
    """The session's metadata: the title is ``customTitle`` (``computedTitle`` in
    old files), else its entry's in the chat index of the ``index`` database,
    else the first prompt's first line; the project is ``workingDirectory``, else
    the folder of ``workspace`` (a ``workspaceStorage/<id>`` directory)."""
    title = next(
        (t.strip() for t in (doc.get("customTitle"), doc.get("computedTitle"))
         if isinstance(t, str) and t.strip()),
        None,
    )  # fmt: skip
    if title is None:
        first = _first_prompt(doc)
        # An untitled chat shows its first prompt's first line, up to 200
        # characters (VS Code's getDefaultTitle).
        listed = _index_title(index, sid) if index is not None else None
        title = listed or (first_line_title(first, 200) if first else None)
    project = path_from_uri(doc.get("workingDirectory"), plain_paths=True)
    if not project and workspace is not None:
        project = workspace_folder(workspace)
    # (Old flat files may hold no request times, only the last message's.)
    times = [t.timestamp for t in turns if t.timestamp is not None]
    last = parse_time(doc.get("lastMessageDate"))
    return Session(
        sid,
        project=project,
        title=title,
        started_at=parse_time(doc.get("creationDate")),
        updated_at=max([*times, last] if last is not None else times, default=None),
    )
