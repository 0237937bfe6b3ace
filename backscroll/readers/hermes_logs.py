"""Hermes Agent's per-session logs in ``$HERMES_HOME/sessions/`` (``~/.hermes/sessions``).

Two kinds of file, both one session each, named by the session id
(``YYYYMMDD_HHMMSS_<hex>``), checked against NousResearch/hermes-agent
``run_agent.py`` (``_save_session_log``) and ``gateway/session.py``
(``append_to_transcript``, ``rewrite_transcript``):

- ``session_<id>.json``, written by the agent (CLI and gateway alike): older
  builds always, newer ones only with ``sessions.write_json_snapshots``. One
  object ``{session_id, model, base_url, platform, session_start,
  last_updated, system_prompt?, tools?, message_count, messages}``, rewritten
  whole after every turn. ``messages`` are OpenAI-style chat messages
  (``role``, ``content`` as a string or a list of ``{type: text}`` parts,
  ``tool_calls``, ``tool_call_id``, ``tool_name``, ``reasoning`` ...) and carry
  no time of their own. Assistant content has the model's scratchpad turned
  into ``<think>`` blocks: those are dropped.
- ``<id>.jsonl``, the messaging gateway's transcript (older builds; newer ones
  keep it in ``state.db`` only): a ``{"role": "session_meta", ...}`` line, then
  one message per line with a ``timestamp``. Appended, and rewritten whole by
  ``/retry``, ``/undo`` and ``/compress``.

Indexed as in ``state.db`` (:mod:`backscroll.readers.hermes`): ``user`` and
``assistant`` messages with text; not ``tool``/``system``/``session_meta``
messages, ``tool_calls`` or ``reasoning``, nor the background-review harness
prompts and the replies they drew. Both files are read whole on every change
(``document``); a turn's key is its message index plus a hash of its text, so a
rewrite that changes nothing re-indexes nothing. ``sessions.json`` (the
gateway's routing index) and ``request_dump_*.json`` (debug dumps) are not
transcripts and are ignored.

The same sessions are in ``state.db`` whenever the build has one: a log whose
session id ``state.db`` holds yields nothing (the database copy wins). The check
is made when the log is read; a log read before its session reached
``state.db`` keeps its turns until the log is next rewritten.

Not verified against real files: whether every build names the files exactly
so, and which time zone ``session_start``/``last_updated`` are in (Python's
naive ``datetime.now()``, so read as the machine's local time). No known build
writes a working directory; a top-level ``cwd`` is used if present, else the
first directory a tool call names, as for ``state.db``.
"""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Iterator, Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from backscroll.model import Cursor, Kind, Problem, ReaderOptions, ReadResult, Session, Turn
from backscroll.readers.base import (
    BaseReader,
    HostEnv,
    block_texts,
    clean_text,
    content_key,
    first_line_title,
    is_absolute_path,
    is_external_tool,
    parse_time,
    read_json_document,
)
from backscroll.readers.hermes import DB_NAME, HARNESS_PREFIXES, WORKDIR_KEYS
from backscroll.readers.hostdb import later, open_readonly

if TYPE_CHECKING:
    from backscroll.readers.hostdb import hermes as q
else:
    q = later("backscroll.readers.hostdb.hermes")


_ID = r"\d{8}_\d{6}_[0-9A-Za-z]{4,32}"
_SESSION_LOG = re.compile(rf"session_({_ID})\.json")
_TRANSCRIPT = re.compile(rf"({_ID})\.jsonl")
_THINK = re.compile(r"<think>.*?(?:</think>|\Z)", re.DOTALL)


def session_id_of(path: Path) -> str | None:
    """The session id a log's file name carries, or None if it is not a log."""
    match = _SESSION_LOG.fullmatch(path.name) or _TRANSCRIPT.fullmatch(path.name)
    return match.group(1) if match else None


class HermesLogReader(BaseReader):
    """``session_<id>.json`` logs and gateway ``<id>.jsonl`` transcripts."""

    host: ClassVar[str] = "hermes"
    name: ClassVar[str] = "Hermes Agent (session logs)"
    version: ClassVar[int] = 1
    kind: ClassVar[Kind] = "document"
    recursive_watch: ClassVar[bool] = False

    def roots(self, env: HostEnv) -> list[Path]:
        return [(env.var("HERMES_HOME") or env.home / ".hermes") / "sessions"]

    def source_for(self, path: Path) -> Path | None:
        if path.parent.name != "sessions" or session_id_of(path) is None:
            return None
        return path

    def read(self, path: Path, prev: Cursor | None, opts: ReaderOptions) -> ReadResult:
        size = path.stat().st_size
        sid = session_id_of(path)
        problems: list[Problem] = []
        if sid is None or _in_database(path.parent.parent / DB_NAME, sid, problems):
            # state.db holds this session: drop whatever this log gave before.
            return ReadResult(position=size, replace=True, problems=tuple(problems))
        if path.suffix == ".jsonl":
            meta, messages = _transcript(path, problems)
        else:
            doc = read_json_document(path)  # ValueError mid-write: the indexer retries
            if not isinstance(doc, dict) or not isinstance(doc.get("messages"), list):
                return ReadResult(
                    position=size,
                    unsupported=f"unknown format in {path.name}: no messages array",
                )
            meta, messages = doc, doc["messages"]
        turns = list(_turns(sid, messages, problems))
        project = _project(meta, messages)
        stamps = (_time(m.get("timestamp")) for m in messages if isinstance(m, dict))
        known = [t for t in stamps if t is not None]
        first_prompt = next((t.text for t in turns if t.role == "user"), "")
        started = _time(meta.get("session_start")) or (min(known) if known else None)
        updated = _time(meta.get("last_updated")) or (max(known) if known else None)
        session = Session(
            sid,
            project=project,
            title=first_line_title(first_prompt) or None,
            started_at=started,
            updated_at=updated,
            # As for state.db: reported by Hermes' CLI docs, not verified here.
            resume_command=f"hermes --resume {sid}",
        )
        return ReadResult(
            turns=tuple(turns),
            sessions=(session,) if turns else (),
            position=size,
            replace=True,
            problems=tuple(problems),
        )


def _in_database(db: Path, sid: str, problems: list[Problem]) -> bool:
    """Whether ``state.db`` beside ``sessions/`` holds session ``sid``. A locked
    database raises SourceBusy (the log is read again on its next change)."""
    if not db.is_file():
        return False
    try:
        with open_readonly(db) as conn:
            return q.has_session(conn, sid)
    except FileNotFoundError:
        return False
    except (sqlite3.DatabaseError, OSError) as exc:
        problems.append(
            Problem(f"could not look session {sid} up in {db.name} ({exc}); indexed from this log")
        )
        return False


def _transcript(path: Path, problems: list[Problem]) -> tuple[dict[str, Any], list[Any]]:
    """The ``session_meta`` line and the messages of a gateway transcript."""
    meta: dict[str, Any] = {}
    messages: list[Any] = []
    lines = path.read_bytes().split(b"\n")
    offset = 0
    for number, raw in enumerate(lines, start=1):
        line_offset = offset
        offset += len(raw) + 1
        if not raw.strip():
            continue
        try:
            obj = json.loads(raw)
        except (ValueError, RecursionError) as exc:
            if number == len(lines):  # caught mid-write: keep what is indexed, retry later
                raise ValueError(f"{path} ends in a partial line") from exc
            problems.append(Problem(f"malformed JSON: {exc}", number, line_offset))
            continue
        if not isinstance(obj, dict):
            problems.append(Problem("line is not a JSON object", number, line_offset))
        elif obj.get("role") == "session_meta":
            meta = meta or obj
        else:
            messages.append(obj)
    return meta, messages


def _turns(sid: str, messages: Sequence[Any], problems: list[Problem]) -> Iterator[Turn]:
    tainted = False
    in_harness = False  # inside a background-review exchange: its replies stay out
    for index, message in enumerate(messages):
        if not isinstance(message, dict):
            problems.append(Problem(f"message #{index} is not an object"))
            continue
        role = message.get("role")
        text = clean_text("\n\n".join(block_texts(message.get("content"))))
        if role == "system":
            in_harness = in_harness or text.startswith(HARNESS_PREFIXES)
        elif role == "user":
            in_harness = text.startswith(HARNESS_PREFIXES)
            tainted = False
            if text and not in_harness:
                yield _turn(sid, index, "user", text, message)
        elif role == "assistant":
            text = clean_text(_THINK.sub("", text))
            if text and not in_harness:
                yield _turn(sid, index, "assistant", text, message, tainted=tainted)
            if any(is_external_tool(_call_name(call)) for call in _calls(message)):
                tainted = True
        elif role == "tool" and is_external_tool(message.get("tool_name")):
            tainted = True


def _turn(
    sid: str, index: int, role: str, text: str, message: dict[str, Any], tainted: bool = False
) -> Turn:
    return Turn(
        sid,
        f"{index}:{content_key(role, text)}",
        "user" if role == "user" else "assistant",
        text,
        _time(message.get("timestamp")),
        index,
        tainted=tainted,
    )


def _time(value: Any) -> float | None:
    """Unix seconds; a naive ISO time (Python's ``datetime.now()``) is local time."""
    if isinstance(value, str):
        try:
            stamp = datetime.fromisoformat(value.strip())
        except ValueError:
            return parse_time(value)
        if stamp.tzinfo is None:
            try:
                return stamp.timestamp()  # naive: the machine's local time
            except (OverflowError, OSError, ValueError):
                return None
        return stamp.timestamp()
    return parse_time(value)


def _calls(message: dict[str, Any]) -> list[dict[str, Any]]:
    calls = message.get("tool_calls")
    if isinstance(calls, str):
        try:
            calls = json.loads(calls)
        except (ValueError, RecursionError):
            return []
    return [c for c in calls if isinstance(c, dict)] if isinstance(calls, list) else []


def _call_name(call: dict[str, Any]) -> str | None:
    function = call.get("function")
    name = function.get("name") if isinstance(function, dict) else call.get("name")
    return name if isinstance(name, str) else None


def _call_arguments(call: dict[str, Any]) -> dict[str, Any]:
    function = call.get("function")
    arguments = function.get("arguments") if isinstance(function, dict) else None
    if arguments is None:
        arguments = call.get("arguments")
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except (ValueError, RecursionError):
            return {}
    return arguments if isinstance(arguments, dict) else {}


def _project(meta: dict[str, Any], messages: Sequence[Any]) -> str | None:
    """A top-level ``cwd`` if the log has one, else the first directory a tool call names."""
    for key in ("cwd", *WORKDIR_KEYS):
        if is_absolute_path(meta.get(key)):
            return str(meta[key])
    for message in messages:
        if not isinstance(message, dict):
            continue
        for call in _calls(message):
            arguments = _call_arguments(call)
            for key in WORKDIR_KEYS:
                value = arguments.get(key)
                if isinstance(value, str) and (is_absolute_path(value) or value.startswith("~")):
                    return value
    return None
