"""Grok Build (xAI ``grok`` CLI): ``$GROK_HOME/sessions/<url-encoded cwd>/<id>/updates.jsonl``.

``updates.jsonl`` is the authoritative, append-only log of ACP session updates
(``{"timestamp", "method", "params": {"sessionId", "update": {"sessionUpdate", ...}}}``;
very old files hold bare notifications without the envelope). Replies are
streamed: one reply is many ``agent_message_chunk`` lines, a prompt may be
several ``user_message_chunk`` lines, and both are joined into whole turns
(:mod:`backscroll.readers.streamed`) until the other role speaks, a tool is
called or the turn completes. Indexed: the person's chunks (not those marked
``_meta.hostTurn``, which are injected context; an interjection's typed text is
its ``displayText``) and the reply's chunks. Thoughts, tool calls and their
updates, plans, ``turn_completed.agent_result`` (a repeat of the reply) and
notices stay out.

``/rewind`` appends a ``rewind_marker``: the replay drops every turn from the
``target_prompt_index``-th counted prompt on (0-based: a target of 1 keeps the
first prompt and its reply), as Grok's own replay does, counting a run of user
chunks as one prompt and, once any chunk carries ``_meta.promptIndex``, only
the runs that carry it. A marker met while tailing that drops turns indexed by
an earlier read re-reads the file whole. ``compaction_checkpoint`` markers drop
nothing from the log; the summary is kept in a checkpoint file whose summary
item is not documented (unverified), so it is not read.

The files can grow to gigabytes, mostly tool output repeated in every
``tool_call_update``: lines that are tool calls, tool updates or thoughts are
recognised from their bytes and skipped without being parsed as JSON.

``summary.json`` beside it is read with every read of the log: title
(``generated_title``, else ``session_summary``, else the first prompt), project
(``info.cwd``, else the decoded directory name), start time (``created_at``),
the parent of a fork (``parent_session_id``) and ``session_kind: "subagent"``
for a sub-agent's own session, whose turns are marked as a sub-agent's and
read only when ``include_subagents`` is on. It is a sidecar read on from where
the log's last read ended (``sidecars_reread_whole`` is False): Grok rewrites it
on every save (``num_messages`` counts updates), and a log of gigabytes cannot
be read again whole for that; every read returns the session with its metadata,
so a rename shows at once. Only a change of ``session_kind`` (a summary written
after the first updates) reads the log again whole: its turns are then marked as
a sub-agent's, or dropped with the session while ``include_subagents`` is off.
``chat_history.jsonl`` is derived from ``updates.jsonl`` and truncated at each
compaction: not read. A fork copies the parent's log, so forked turns appear in
both sessions.

Resume: ``grok --resume <id>``. Windows' location (``%USERPROFILE%\\.grok``) is
unverified.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any, ClassVar
from urllib.parse import unquote

from backscroll.model import Cursor, Kind, Problem, ReaderOptions, ReadResult, Role, Session
from backscroll.readers.base import (
    BaseReader,
    HostEnv,
    Line,
    Tail,
    first_line_title,
    is_absolute_path,
    is_external_tool,
    next_line_number,
    parse_lines,
    parse_time,
    read_json_document,
    resume_in,
    unread_subagent,
)
from backscroll.readers.streamed import Runs

UPDATES = "updates.jsonl"
SUMMARY = "summary.json"
#: Lines that are never prose, told from their bytes (a JSON string cannot hold
#: these unescaped quotes, so prose that mentions them does not match), and
#: whether each ends the reply being streamed (a thought does not).
_SKIPPED = (
    (b'"sessionUpdate":"tool_call_update"', True),
    (b'"sessionUpdate":"agent_thought_chunk"', False),
    (b'"sessionUpdate":"plan"', True),
    (b'"sessionUpdate":"available_commands_update"', True),
)


def _summary(session_dir: Path) -> dict[str, Any]:
    try:
        doc = read_json_document(session_dir / SUMMARY, max_bytes=64 * 1024 * 1024)
    except (OSError, ValueError):
        return {}
    return doc if isinstance(doc, dict) else {}


def _chunk_text(update: dict[str, Any]) -> str | None:
    content = update.get("content")
    if isinstance(content, dict) and content.get("type") == "text":
        text = content.get("text")
        return text if isinstance(text, str) else None
    return None


def _meta(obj: Any) -> dict[str, Any]:
    meta = obj.get("_meta") if isinstance(obj, dict) else None
    return meta if isinstance(meta, dict) else {}


class _Replay:
    """The conversation as Grok replays it, carried from one read to the next."""

    def __init__(self, runs: Runs, state: dict[str, Any]) -> None:
        self.runs = runs
        self.prompts = int(state.get("prompts", 0))  # counted prompts so far
        self.seen_marker = bool(state.get("marked", False))
        self.in_user = bool(state.get("in_user", False))
        self.run_index = state.get("run_pi")
        self.tainted = bool(state.get("tainted", False))
        self.first_prompt: str | None = state.get("prompt")
        self.started: float | None = state.get("started")
        self.updated: float | None = state.get("updated")
        self.seen = bool(state.get("seen", False))
        #: Prompt number (0-based) each turn of this read belongs to.
        self.owner: dict[str, int] = {}
        #: Counted prompts when this read began: a rewind below it reaches back.
        self.prompts_before_read = self.prompts
        #: A rewind dropped turns that an earlier read indexed.
        self.rewound_earlier = False

    def dump(self) -> dict[str, Any]:
        return {
            "prompts": self.prompts,
            "marked": self.seen_marker,
            "in_user": self.in_user,
            "run_pi": self.run_index,
            "tainted": self.tainted,
            "prompt": self.first_prompt,
            "started": self.started,
            "updated": self.updated,
            "seen": self.seen,
        }

    def line(self, obj: dict[str, Any], offset: int) -> None:
        params = obj.get("params") if "method" in obj else obj
        update = params.get("update") if isinstance(params, dict) else None
        if not isinstance(update, dict):
            return
        self.seen = True
        ts = parse_time(_meta(params).get("agentTimestampMs")) or parse_time(obj.get("timestamp"))
        if ts is not None:
            self.started = ts if self.started is None else min(self.started, ts)
            self.updated = ts if self.updated is None else max(self.updated, ts)
        kind = update.get("sessionUpdate")
        if kind == "user_message_chunk":
            self.user_chunk(update, offset, ts)
            return
        self.in_user, self.run_index = False, None
        if kind == "agent_message_chunk":
            text = _chunk_text(update)
            if text is not None and not _meta(update).get("hostTurn"):
                self.piece("assistant", text, offset, ts)
            elif _meta(update).get("hostTurn"):
                self.runs.close()
        elif kind == "agent_thought_chunk":
            return
        elif kind == "rewind_marker":
            target = update.get("target_prompt_index")
            if isinstance(target, int) and not isinstance(target, bool) and target >= 0:
                self.rewind(target)
        else:
            if kind == "tool_call" and (
                is_external_tool(update.get("title")) or is_external_tool(update.get("kind"))
            ):
                self.tainted = True
            self.runs.close()

    def skipped(self, *, ends_reply: bool) -> None:
        """A line recognised, unparsed, as a tool update, a thought or a plan."""
        self.seen = True
        self.in_user, self.run_index = False, None
        if ends_reply:
            self.runs.close()

    def user_chunk(self, update: dict[str, Any], offset: int, ts: float | None) -> None:
        meta = _meta(update)
        if meta.get("hostTurn"):
            self.in_user, self.run_index = False, None
            self.runs.close()
            return
        index = meta.get("promptIndex")
        index = index if isinstance(index, int) and not isinstance(index, bool) else None
        if index is not None:
            self.seen_marker = True
        counts = index is not None if self.seen_marker else True
        new_run = not self.in_user or (
            (self.seen_marker or index is not None) and index != self.run_index
        )
        self.in_user = True
        if new_run:
            self.run_index = index
            if counts:
                self.prompts += 1
                self.tainted = False
            self.runs.close()
        text = meta.get("displayText") if meta.get("interjection") else None
        text = text if isinstance(text, str) else _chunk_text(update)
        if text is not None:
            self.piece("user", text, offset, ts)

    def piece(self, role: Role, text: str, offset: int, ts: float | None) -> None:
        before = self.runs.open
        self.runs.piece(
            role, text, key=f"o:{offset}", timestamp=ts, seq=offset, tainted=self.tainted
        )
        opened = self.runs.open
        if opened is not None and opened is not before:
            self.owner[opened.key] = self.prompts - 1

    def rewind(self, target: int) -> None:
        """Drop every turn of the ``target``-th counted prompt (0-based) and later."""
        if target >= self.prompts:
            return
        if target < self.prompts_before_read:
            self.rewound_earlier = True  # an earlier read indexed some of what is dropped
        self.runs.close()
        self.runs.turns = {
            k: t for k, t in self.runs.turns.items() if self.owner.get(k, -1) < target
        }
        self.prompts = target
        self.in_user, self.run_index = False, None


class GrokReader(BaseReader):
    host: ClassVar[str] = "grok"
    name: ClassVar[str] = "Grok Build"
    version: ClassVar[int] = 1
    kind: ClassVar[Kind] = "append"

    def roots(self, env: HostEnv) -> list[Path]:
        # GROK_HOME moves everything; else ~/.grok on every OS.
        home = env.var("GROK_HOME") or env.home / ".grok"
        return [home / "sessions"]

    #: Every read returns the session with summary.json's metadata, and Grok
    #: rewrites summary.json at every save: no whole re-read for that.
    sidecars_reread_whole: ClassVar[bool] = False

    def sidecars(self, path: Path) -> list[Path]:
        return [path.parent / SUMMARY] if self.source_for(path) == path else []

    def source_for(self, path: Path) -> Path | None:
        if path.name not in (UPDATES, SUMMARY) or "subagents" in path.parts:
            return None
        if path.parent.parent.parent.name != "sessions":
            return None
        return path.with_name(UPDATES)  # (a summary.json: its session's log is read on)

    def discover(self, root: Path) -> Iterator[Path]:
        for path in super().discover(root):
            if path.is_file():
                yield path

    def read(self, path: Path, prev: Cursor | None, opts: ReaderOptions) -> ReadResult:
        session_dir = path.parent
        summary = _summary(session_dir)
        subagent = summary.get("session_kind") == "subagent"
        if subagent and not opts.include_subagents:
            # (a summary that came after the first updates: what they gave goes)
            return replace(unread_subagent(), removed_sessions=frozenset({session_dir.name}))
        if prev is not None and bool(prev.state.get("subagent", False)) != subagent:
            prev = None  # summary.json changed the session's kind: its turns are re-marked
        result = self._replay(path, prev, opts, summary, subagent)
        if result is None:  # a rewind reached back past this read: replay it all
            result = self._replay(path, None, opts, summary, subagent)
            assert result is not None
        return result

    def _replay(
        self,
        path: Path,
        prev: Cursor | None,
        opts: ReaderOptions,
        summary: dict[str, Any],
        subagent: bool,
    ) -> ReadResult | None:
        state = dict(prev.state) if prev else {}
        sid = path.parent.name
        runs = Runs.resumed(sid, state.get("run"), subagent=subagent)
        replay = _Replay(runs, state)
        if runs.open is not None:
            owner = state.get("run_owner")
            replay.owner[runs.open.key] = owner if isinstance(owner, int) else replay.prompts - 1
        start = prev.position if prev else 0
        first = int(state.get("line", 1))
        tail = Tail(path, start=start, first_line_number=first, max_line_bytes=opts.max_line_bytes)
        problems: list[Problem] = []
        for line, obj in parse_lines(tail, _prose_lines(tail, replay)):
            if not isinstance(obj, dict):
                problems.append(Problem("record is not a JSON object", line.number, line.offset))
                continue
            replay.line(obj, line.offset)
            if replay.rewound_earlier and prev is not None:
                return None
        open_owner = replay.owner.get(runs.open.key) if runs.open is not None else None
        turns, carried = runs.finish()
        first_prompt = replay.first_prompt
        if first_prompt is None:
            still_open = carried[0] if carried else None
            first_prompt = next(
                (t.text for t in turns if t.role == "user" and t.key != still_open), None
            )
            replay.first_prompt = first_prompt
        new_state = replay.dump()
        new_state.update(
            line=next_line_number(tail), run=carried, run_owner=open_owner, subagent=subagent
        )
        return ReadResult(
            turns=turns,
            sessions=(self._session(path, summary, replay),) if replay.seen else (),
            position=tail.end,
            state=new_state,
            replace=prev is None or prev.position == 0,
            problems=(*tail.problems, *problems),
        )

    def _session(self, path: Path, summary: dict[str, Any], replay: _Replay) -> Session:
        sid = path.parent.name
        info = summary.get("info")
        cwd = info.get("cwd") if isinstance(info, dict) else None
        if not is_absolute_path(cwd):
            cwd = _group_cwd(path.parent.parent)
        title = next(
            (
                t
                for t in (summary.get("generated_title"), summary.get("session_summary"))
                if isinstance(t, str) and t.strip()
            ),
            replay.first_prompt,
        )
        parent = summary.get("parent_session_id")
        return Session(
            sid,
            project=cwd,
            title=first_line_title(title) if title else None,
            started_at=parse_time(summary.get("created_at")) or replay.started,
            updated_at=parse_time(summary.get("last_active_at")) or replay.updated,
            resume_command=resume_in(cwd, "grok", "--resume", sid),
            parent_session_id=parent if isinstance(parent, str) and parent else None,
        )


def _prose_lines(tail: Tail, replay: _Replay) -> Iterator[Line]:
    """The tail's lines, minus those that are never prose: those are not parsed
    at all (a tool update can repeat megabytes of output), only noted as the
    boundary they are."""
    for line in tail:
        skipped = next((ends for marker, ends in _SKIPPED if marker in line.raw), None)
        if skipped is None:
            yield line
        else:
            replay.skipped(ends_reply=skipped)


def _group_cwd(group: Path) -> str | None:
    """The working directory a session group stands for: its ``.cwd`` file (long
    paths), else its URL-decoded name."""
    try:
        text = (group / ".cwd").read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        text = ""
    if is_absolute_path(text):
        return text
    decoded = unquote(group.name)
    return decoded if is_absolute_path(decoded) else None
