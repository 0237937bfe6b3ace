"""Zed's native agent threads: ``threads.db``, one zstd-compressed JSON row per thread.

Checked against zed-industries/zed ``crates/agent/src/db.rs`` (``DbThread``,
``DataType``, ``save_thread_sync``) and ``crates/agent/src/thread.rs``
(``Message``, ``AgentMessageContent``):

- ``threads(id, summary, updated_at, data_type, data, parent_id, folder_paths,
  folder_paths_order, created_at)``; every save replaces the row (an upsert that
  keeps ``created_at``), so a changed ``updated_at`` means "re-read
  that thread whole".
- ``data_type`` ``zstd`` (zstd frame) or ``json``; the JSON is a ``DbThread``
  with ``version: "0.3.0"``: ``messages`` are ``{"User": {id, content}}``,
  ``{"Agent": {content, tool_results}}`` or the bare string ``"Resume"``.
  Versions ``0.1.0``/``0.2.0`` (or none) are the agent-1 ``SerializedThread``
  (``role`` + ``segments``), which Zed upgrades on load.

Indexed: ``User`` ``Text`` items, ``Agent`` ``Text`` items, ``detailed_summary``
as a summary. Left out: ``Thinking``, ``RedactedThinking``, ``ToolUse``,
``tool_results``, ``Mention`` payloads (file contents), images.

Zed stores no per-message time, so turns carry no timestamp; the session has
``created_at``/``updated_at``. Zed has no resume command: the user reopens the
thread from the agent panel's history (``resume_command`` stays None).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

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
)
from backscroll.readers.hostdb import later, open_readonly

if TYPE_CHECKING:
    from backscroll.readers.hostdb import zed as zed_sql
else:
    zed_sql = later("backscroll.readers.hostdb.zed")


DB_NAME = "threads.db"
CURRENT_VERSION = "0.3.0"
LEGACY_VERSIONS = frozenset({"0.1.0", "0.2.0"})
_MAX_THREAD_BYTES = 256 * 1024 * 1024


class UnknownThreadVersion(ValueError):
    """A thread JSON of a version this reader does not know."""


@dataclass(slots=True)
class _Thread:
    """The turns and metadata of one decoded thread."""

    turns: list[Turn] = field(default_factory=list)
    title: str | None = None
    first_prompt: str | None = None


class ZedReader(BaseReader):
    host: ClassVar[str] = "zed"
    name: ClassVar[str] = "Zed"
    version: ClassVar[int] = 1
    kind: ClassVar[Kind] = "database"

    def roots(self, env: HostEnv) -> list[Path]:
        # Zed's paths::data_dir(): no variable of its own; on Linux a Flatpak
        # build moves it with FLATPAK_XDG_DATA_HOME.
        if env.is_macos:
            return [env.app_support() / "Zed" / "threads"]
        if env.is_windows:
            local = env.var("LOCALAPPDATA") or env.home / "AppData" / "Local"
            return [local / "Zed" / "threads"]
        data = env.var("FLATPAK_XDG_DATA_HOME") or env.xdg_data()
        roots = [data / "zed" / "threads"]
        flatpak = env.home / ".var" / "app" / "dev.zed.Zed" / "data" / "zed" / "threads"
        if flatpak not in roots:
            roots.append(flatpak)
        return roots

    def source_for(self, path: Path) -> Path | None:
        if path.name not in (DB_NAME, DB_NAME + "-wal"):
            return None
        if path.parent.name != "threads":
            return None
        return path.parent / DB_NAME

    def read(self, path: Path, prev: Cursor | None, opts: ReaderOptions) -> ReadResult:
        known: dict[str, str] = dict(prev.state.get("threads", {})) if prev else {}
        with open_readonly(path) as conn:
            columns = zed_sql.thread_columns(conn)
            missing = zed_sql.REQUIRED_COLUMNS - columns
            if missing:
                return ReadResult(
                    unsupported=f"unknown schema (threads lacks {', '.join(sorted(missing))}) "
                    f"in {path}"
                )
            current = zed_sql.thread_versions(conn)
            changed = [tid for tid, up in current.items() if prev is None or known.get(tid) != up]
            rows = zed_sql.threads_by_id(conn, changed, columns)

        turns: list[Turn] = []
        sessions: list[Session] = []
        replaced: set[str] = set()
        problems: list[Problem] = []
        state = {tid: up for tid, up in known.items() if tid in current}
        for row in rows:
            # Recorded even when the blob is bad: reported once per save, retried
            # when Zed saves the thread again.
            state[row.id] = row.updated_at
            try:
                doc = _decode(row)
                thread = _parse_thread(row.id, doc, subagent=row.parent_id is not None)
            except UnknownThreadVersion as exc:
                return ReadResult(unsupported=f"unknown format version {exc} in {path}")
            except ValueError as exc:
                problems.append(Problem(f"thread {row.id}: unreadable data: {exc}"))
                continue
            replaced.add(row.id)
            if row.parent_id is not None and not opts.include_subagents:
                continue
            turns.extend(thread.turns)
            sessions.append(
                Session(
                    row.id,
                    project=_project(row.folder_paths, row.folder_paths_order),
                    title=(row.summary or "").strip() or thread.title or thread.first_prompt,
                    started_at=parse_time(row.created_at),
                    updated_at=parse_time(row.updated_at),
                    # No CLI resume: reopen the thread from Zed's agent panel history.
                    resume_command=None,
                    parent_session_id=row.parent_id,
                )
            )
        removed = frozenset(known) - frozenset(current)
        return ReadResult(
            turns=tuple(turns),
            sessions=tuple(sessions),
            position=0,
            state={"threads": state},
            replaced_sessions=frozenset(replaced),
            removed_sessions=removed,
            problems=tuple(problems),
        )


# --------------------------------------------------------------------------- decoding


def _decode(row: zed_sql.ThreadRow) -> Any:
    data = row.data
    raw = data.encode("utf-8") if isinstance(data, str) else bytes(data or b"")
    if row.data_type == "zstd":
        import zstandard  # (~5 ms: only where a compressed thread is read)

        try:
            raw = zstandard.ZstdDecompressor().stream_reader(raw).read(_MAX_THREAD_BYTES + 1)
        except zstandard.ZstdError as exc:
            raise ValueError(str(exc)) from exc
        if len(raw) > _MAX_THREAD_BYTES:
            raise ValueError(f"thread larger than {_MAX_THREAD_BYTES} bytes")
    elif row.data_type != "json":
        raise UnknownThreadVersion(f"data_type {row.data_type!r} (thread {row.id})")
    doc = json.loads(raw)
    if not isinstance(doc, dict):
        raise ValueError("thread JSON is not an object")
    return doc


def _parse_thread(thread_id: str, doc: dict[str, Any], subagent: bool) -> _Thread:
    version = doc.get("version")
    if version == CURRENT_VERSION:
        thread = _Thread(turns=list(_current_turns(thread_id, doc, subagent)))
        title = doc.get("title")
    elif version is None or version in LEGACY_VERSIONS:
        thread = _Thread(turns=list(_legacy_turns(thread_id, doc, subagent)))
        title = doc.get("summary")
    else:
        raise UnknownThreadVersion(f"{version!r} (thread {thread_id})")
    thread.title = title.strip() if isinstance(title, str) and title.strip() else None
    prompts = [t.text for t in thread.turns if t.role == "user"]
    thread.first_prompt = first_line_title(prompts[0]) if prompts else None
    return thread


def _turn(
    thread_id: str, key: str, role: Role, text: str, seq: int, tainted: bool, subagent: bool
) -> Turn:
    return Turn(thread_id, key, role, text, None, seq, tainted=tainted, subagent=subagent)


def _current_turns(thread_id: str, doc: dict[str, Any], subagent: bool) -> Iterator[Turn]:
    """Turns of a ``DbThread`` 0.3.0."""
    messages = doc.get("messages")
    tainted = False
    for i, message in enumerate(messages if isinstance(messages, list) else []):
        if not isinstance(message, dict):
            continue  # "Resume" marks where the user resumed an interrupted turn
        user = message.get("User")
        agent = message.get("Agent")
        if isinstance(user, dict):
            tainted = False
            content = user.get("content")
            parts = [
                item["Text"]
                for item in (content if isinstance(content, list) else [])
                if isinstance(item, dict) and isinstance(item.get("Text"), str)
            ]
            text = clean_text("".join(parts))
            if text:
                uid = user.get("id")
                key = f"u:{uid}" if isinstance(uid, str) and uid else _pos_key(i, 0, text)
                yield _turn(thread_id, key, "user", text, i * 1000, False, subagent)
        elif isinstance(agent, dict):
            content = agent.get("content")
            for j, item in enumerate(content if isinstance(content, list) else []):
                if not isinstance(item, dict):
                    continue
                if isinstance(item.get("Text"), str):
                    text = clean_text(item["Text"])
                    if text:
                        key = _pos_key(i, j, text)
                        yield _turn(
                            thread_id, key, "assistant", text, i * 1000 + j, tainted, subagent
                        )
                elif isinstance(item.get("ToolUse"), dict):
                    tainted = tainted or is_external_tool(item["ToolUse"].get("name"))
    yield from _summary(thread_id, doc.get("detailed_summary"), subagent)


def _legacy_turns(thread_id: str, doc: dict[str, Any], subagent: bool) -> Iterator[Turn]:
    """Turns of an agent-1 ``SerializedThread`` (0.1.0/0.2.0)."""
    messages = doc.get("messages")
    tainted = False
    for i, message in enumerate(messages if isinstance(messages, list) else []):
        if not isinstance(message, dict) or message.get("is_hidden") is True:
            continue
        role = message.get("role")
        if role not in ("user", "assistant"):
            continue  # system messages are dropped by Zed's own upgrade too
        segments = message.get("segments")
        if isinstance(segments, list):
            parts = [
                s["text"]
                for s in segments
                if isinstance(s, dict)
                and s.get("type") == "text"
                and isinstance(s.get("text"), str)
            ]
        else:  # 0.1.0 messages carry a plain ``text``
            parts = [message["text"]] if isinstance(message.get("text"), str) else []
        text = clean_text("\n\n".join(parts))
        mid = message.get("id")
        if role == "user":
            tainted = False
        if text:
            key = f"id:{mid}" if isinstance(mid, int | str) else _pos_key(i, 0, text)
            out_role: Role = "user" if role == "user" else "assistant"
            yield _turn(
                thread_id,
                key,
                out_role,
                text,
                i * 1000,
                tainted and out_role == "assistant",
                subagent,
            )
        tool_uses = message.get("tool_uses")
        for use in tool_uses if isinstance(tool_uses, list) else []:
            if isinstance(use, dict):
                tainted = tainted or is_external_tool(use.get("name"))
    state = doc.get("detailed_summary_state")
    generated = state.get("Generated") if isinstance(state, dict) else None
    if isinstance(generated, dict):
        yield from _summary(thread_id, generated.get("text"), subagent)


def _summary(thread_id: str, value: Any, subagent: bool) -> Iterator[Turn]:
    if isinstance(value, str) and value.strip():
        yield _turn(
            thread_id, "detailed_summary", "summary", clean_text(value), 1 << 40, False, subagent
        )


def _pos_key(i: int, j: int, text: str) -> str:
    return f"{i}.{j}:{content_key(text)}"


def _project(paths: str | None, order: str | None) -> str | None:
    """The first folder of the thread's workspace, in the order the user opened them.

    ``folder_paths`` is the sorted path list joined by newlines; ``folder_paths_order``
    gives, for each sorted slot, its original index (util::path_list::PathList).
    """
    if not paths:
        return None
    items = [p for p in paths.split("\n") if p]
    if not items:
        return None
    try:
        ranks = [int(x) for x in (order or "").split(",") if x.strip()]
    except ValueError:
        ranks = []
    if len(ranks) == len(items) and 0 in ranks:
        return items[ranks.index(0)]
    return items[0]
