"""Amp (Sourcegraph): one JSON document per thread, ``amp/threads/<id>.json``.

``{id, title, created, messages: [{role, messageId, content: [...], meta?}],
env: {initial: {trees: [{uri}]}}}``, rewritten whole as the thread changes.
Indexed: ``text`` blocks of ``user`` and ``assistant`` messages. Left out:
``thinking``, ``tool_use`` (name, input and any text on it), ``tool_result``
and the ``usageLedger``. A user message holding only tool results is not a prompt.

Roots: ``$XDG_DATA_HOME/amp/threads`` (``~/.local/share``, used on every
platform), with the platform data-dir fallbacks ``~/Library/Application
Support/amp/threads`` and ``%APPDATA%\\amp\\threads``. The VS Code extension's
cache under ``globalStorage/sourcegraph.amp/`` is not read: its layout is not
described in the format notes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

from backscroll.model import Cursor, Kind, Problem, ReaderOptions, ReadResult, Role, Session, Turn
from backscroll.readers.base import (
    MTIME_NOTE,
    BaseReader,
    HostEnv,
    block_texts,
    calls_external_tool,
    clean_text,
    content_key,
    first_line_title,
    parse_time,
    path_from_uri,
    read_json_document,
    resume_in,
)


def _project(doc: dict[str, Any]) -> str | None:
    env = doc.get("env")
    initial = env.get("initial") if isinstance(env, dict) else None
    trees = initial.get("trees") if isinstance(initial, dict) else None
    if isinstance(trees, list) and trees and isinstance(trees[0], dict):
        return path_from_uri(trees[0].get("uri"), plain_paths=True)
    return None


class AmpReader(BaseReader):
    host: ClassVar[str] = "amp"
    name: ClassVar[str] = "Amp"
    version: ClassVar[int] = 2
    kind: ClassVar[Kind] = "document"

    def roots(self, env: HostEnv) -> list[Path]:
        roots = [env.xdg_data() / "amp" / "threads"]
        if env.is_macos:
            roots.append(env.app_support() / "amp" / "threads")
        elif env.is_windows:
            roots.append(env.appdata() / "amp" / "threads")
        return roots

    def source_for(self, path: Path) -> Path | None:
        threads = path.parent
        if path.suffix == ".json" and threads.name == "threads" and threads.parent.name == "amp":
            return path
        return None

    def read(self, path: Path, prev: Cursor | None, opts: ReaderOptions) -> ReadResult:
        stat = path.stat()
        doc = read_json_document(path, opts.max_document_bytes)  # ValueError mid-write: retried
        if not isinstance(doc, dict) or not isinstance(doc.get("messages"), list):
            return ReadResult(
                position=stat.st_size,
                unsupported=f"unknown format in {path.name}: no messages array",
            )
        raw_id = doc.get("id")
        sid = raw_id if isinstance(raw_id, str) and raw_id else path.stem
        turns: list[Turn] = []
        problems: list[Problem] = []
        tainted = False
        first_prompt: str | None = None
        created = parse_time(doc.get("created"))
        # A message without ``meta.sentAt`` takes the time before it, else the thread's
        # creation time, so --since-days still finds it.
        last_time = created
        for index, msg in enumerate(doc["messages"]):
            if not isinstance(msg, dict) or msg.get("role") not in ("user", "assistant"):
                problems.append(Problem(f"malformed message #{index}: no user/assistant role"))
                continue
            content = msg.get("content")
            text = clean_text("\n\n".join(block_texts(content)))
            role: Role = "user" if msg["role"] == "user" else "assistant"
            if role == "user" and text:
                tainted = False
                first_prompt = first_prompt or text
            # An assistant message's text precedes its tool calls; only later text is tainted.
            after_external = tainted
            if role == "assistant" and calls_external_tool(content):
                tainted = True
            if not text:
                continue
            message_id = msg.get("messageId")
            has_id = isinstance(message_id, int | str) and not isinstance(message_id, bool)
            meta = msg.get("meta")
            sent = parse_time(meta.get("sentAt")) if isinstance(meta, dict) else None
            last_time = sent or last_time
            turns.append(
                Turn(
                    session_id=sid,
                    key=str(message_id) if has_id else f"i{index}:{content_key(role, text)}",
                    role=role,
                    text=text,
                    timestamp=last_time if last_time is not None else stat.st_mtime,
                    note=None if last_time is not None else MTIME_NOTE,
                    seq=index,
                    tainted=after_external and role == "assistant",
                )
            )
        title = doc.get("title")
        if not isinstance(title, str) or not title.strip():
            title = first_line_title(first_prompt) if first_prompt else None
        project = _project(doc)
        session = Session(
            sid,
            project=project,
            title=title,
            started_at=created,
            updated_at=stat.st_mtime,
            # Unverified against the current CLI's help (format notes, "Resume").
            resume_command=resume_in(project, "amp", "threads", "continue", sid),
        )
        return ReadResult(
            turns=tuple(turns),
            sessions=(session,),
            position=stat.st_size,
            replace=True,
            problems=tuple(problems),
        )
