"""Kimi CLI (``kimi``, Python) and its successor Kimi Code (``~/.kimi-code``).

Two stores, one host (``shared/formats/kimi-cli/README.md``):

- **Kimi CLI**: ``$KIMI_SHARE_DIR`` (else ``~/.kimi``) ``/sessions/<md5(workdir)>/
  <session id>/wire.jsonl``, an append-only event log of ``{"timestamp",
  "message": {"type", "payload"}}`` records (seconds). Prompts are ``TurnBegin``
  and ``SteerInput``; assistant text is ``ContentPart`` records of type ``text``,
  consecutive ones joined; ``think`` parts, tools, approvals, status and
  sub-agent mirrors stay out. The compaction summary is not in the wire: the
  session's ``context.jsonl`` is rotated to ``context_<n>.jsonl`` and restarts
  with a user message whose first part is the compaction marker, and then the
  wire records ``CompactionEnd``. The wire's read gives each summary there, with
  that record's time, after the turns it summarises: the latest ``CompactionEnd``
  takes the latest summary of the context files, the one before it the one
  before, and so on. A session is read from its context files (and the flat
  ``<id>.jsonl`` of a session kimi-cli has not opened since) where its wire does
  not reach back (:mod:`backscroll.readers.kimi_context`): all of a session
  from before wires, and the history before the resume of one resumed since,
  whose wire records only what came after; the summaries there are the
  context's, the ones after it the wire's. The project is the ``kimi.json`` work
  dir whose MD5 names the session's parent directory; the title is
  ``state.json`` ``custom_title``, else the first prompt (the wire's, once it
  has one, as kimi-cli shows it). Resume: ``kimi -r <id>`` in the work dir.
- **Kimi Code**: ``$KIMI_CODE_HOME`` (else ``~/.kimi-code``) ``/sessions/wd_<slug>_
  <hash>/<session>/agents/<agent>/wire.jsonl`` with ``{"type", "time"(ms)}``
  records: prompts are ``context.append_message`` user messages whose
  ``origin.kind`` is ``user`` (a message without ``origin``, as in a peer
  fixture, is taken as typed); assistant text is ``context.append_loop_event``
  ``content.part`` events of type ``text``, joined per step; the summary is
  ``context.apply_compaction`` ``summary``/``contextSummary``. ``state.json``
  gives ``title`` and ``workDir``. Kimi Work's internal sessions (``ctitle-*``,
  ``sklsum-*``, ``dvlt-*``) are not read. Resume: ``kimi --session <id>``
  (from a peer; unverified).

Which vocabulary a wire speaks is told by its first record after the header.
Sub-agent wires (Kimi CLI ``subagents/<agent>/``, Kimi Code agents other than
``main``) belong to their session, marked as a sub-agent's, and are read only
when ``include_subagents`` is on. ``state.json`` is the main wire's sidecar: a
rename (``/title``) has the wire read again from where the last read ended
(every read returns the session with the title), with the daemon running or at
the next pass. ``kimi.json`` is read again when it changes, at the next read of a wire.
``/undo`` and ``/fork`` copy a wire into a new session, so such turns appear in
both sessions. Kimi Work's desktop home is not a default root (its path is
only partly known): point ``hosts.kimi-cli.roots`` at its ``sessions``.
"""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path
from typing import Any, ClassVar

from backscroll.digests import md5
from backscroll.model import Cursor, Kind, Problem, ReaderOptions, ReadResult, Session, Turn
from backscroll.readers.base import (
    BaseReader,
    HostEnv,
    NameIndex,
    Tail,
    block_texts,
    clean_text,
    content_key,
    first_line_title,
    is_absolute_path,
    is_external_tool,
    loads,
    next_line_number,
    parse_time,
    read_json_document,
    resume_in,
    tail_jsonl,
    unread_subagent,
)
from backscroll.readers.kimi_context import (
    CONTEXT,
    MEDIA,
    ContextProse,
    covered_from,
    file_cut,
    is_context_file,
    place,
    shared_head,
    stamp,
    summaries,
)
from backscroll.readers.streamed import Runs

WIRE = "wire.jsonl"
#: Beside a session's wire: its title (a rename rewrites it, not the wire).
STATE = "state.json"
_INTERNAL = ("ctitle-", "sklsum-", "dvlt-")
#: The Kimi CLI wire records that carry a prompt.
_PROMPTED = ("TurnBegin", "SteerInput")
#: kimi-cli's flat context file from before session directories: ``<uuid>.jsonl``
#: in a work dir's sessions directory (``<md5>``, or ``<kaos>_<md5>``).
_FLAT = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\.jsonl$")
_WORK_DIR = re.compile(r"^(?:.+_)?[0-9a-f]{32}$")


def _texts(value: Any) -> str:
    """Text parts of a user input / message content (a string or a part list)."""
    return clean_text("\n\n".join(t for t in block_texts(value) if t.strip()))


def _json_file(path: Path) -> dict[str, Any]:
    try:
        doc = read_json_document(path, max_bytes=16 * 1024 * 1024)
    except (OSError, ValueError):
        return {}
    return doc if isinstance(doc, dict) else {}


def _layout(path: Path) -> tuple[str, Path, str | None] | None:
    """``(store, session dir, sub-agent id or None)`` for a wire file, else None."""
    parent = path.parent
    if parent.parent.name == "agents":  # Kimi Code: <session>/agents/<agent>/wire.jsonl
        session_dir = parent.parent.parent
        if session_dir.name.startswith(_INTERNAL):
            return None
        return "code", session_dir, None if parent.name == "main" else parent.name
    if parent.parent.name == "subagents":  # Kimi CLI: <session>/subagents/<agent>/wire.jsonl
        return "cli", parent.parent.parent, parent.name
    if parent.parent.parent.name == "sessions":  # Kimi CLI: sessions/<hash>/<id>/wire.jsonl
        return "cli", parent, None
    return None


def _main_source(session_dir: Path) -> Path | None:
    """The transcript that carries a session directory's title: the wire of its
    top agent (Kimi Code's ``agents/main`` or Kimi CLI's own), else Kimi CLI's
    ``context.jsonl``; None for Kimi Work's internal sessions and before either
    exists (its own creation will be seen)."""
    if session_dir.name.startswith(_INTERNAL):
        return None
    for source in (session_dir / "agents" / "main" / WIRE, session_dir / WIRE):
        if source.exists():
            return source
    context = session_dir / CONTEXT
    return context if context.exists() else None


def _prompt_token(value: Any) -> str | None:
    """A prompt as the wire's start is matched by: its text, else :data:`MEDIA`
    for an image (audio, video) alone."""
    text = _texts(value)
    if text:
        return text
    parts = value if isinstance(value, list) else []
    media = any(isinstance(p, dict) and p.get("type") not in ("text", "think") for p in parts)
    return MEDIA if media else None


def _wire_prompts(path: Path, start: int = 0) -> tuple[list[str], int]:
    """The prompts a Kimi CLI wire records from byte ``start`` (``TurnBegin``,
    ``SteerInput``), each as :func:`_prompt_token` takes it, and where its last
    whole line ends; none without a wire."""
    prompts: list[str] = []
    tail = Tail(path, start=start)
    try:
        for line in tail:
            if b'"TurnBegin"' not in line.raw and b'"SteerInput"' not in line.raw:
                continue
            try:
                obj = loads(line.raw)
            except (ValueError, RecursionError):
                continue
            message = obj.get("message") if isinstance(obj, dict) else None
            if not isinstance(message, dict) or message.get("type") not in _PROMPTED:
                continue
            payload = message.get("payload")
            token = _prompt_token(payload.get("user_input")) if isinstance(payload, dict) else None
            if token is not None:
                prompts.append(token)
    except OSError:
        return prompts, start
    return prompts, tail.end


def _covered(session_dir: Path, memo: Any = None) -> tuple[int | None, dict[str, Any]]:
    """Where the session's wire starts in its context files (``covered_from``),
    and the memo that decided it: while the context files are the same and the
    wire has grown by no prompt since, it is the memo's answer, and no context
    file is read again."""
    files = stamp(session_dir)
    wire = session_dir / WIRE
    try:
        st = wire.stat()
        inode: int | None = st.st_ino
        size = st.st_size
    except OSError:
        inode, size = None, 0
    if (
        isinstance(memo, dict)
        and _appended_only(memo.get("files"), files)
        and memo.get("wire") == inode
        and isinstance(memo.get("scanned"), int)
        and size >= memo["scanned"]
    ):
        # The same files, grown at their ends (kimi-cli appends each step) and the
        # wire with no new prompt: no user message came that a prompt made, so the
        # place is the same (a message a prompt made that arrives late takes the
        # place the count already gave it).
        since, end = _wire_prompts(wire, memo["scanned"]) if inode else ([], 0)
        if not since:
            covered = memo.get("covered")
            return (covered if isinstance(covered, int) else None), {
                **memo,
                "files": files,
                "scanned": end,
            }
    prompts, end = _wire_prompts(wire)
    covered = covered_from(session_dir, prompts)
    return covered, {"files": files, "wire": inode, "scanned": end, "covered": covered}


def _appended_only(before: Any, now: list[list[Any]]) -> bool:
    """The context files are the ones stamped ``before`` (names and inodes, in
    order), none shorter: appended to, not rotated, replaced or cut."""
    if not isinstance(before, list) or len(before) != len(now):
        return False
    for old, new in zip(before, now, strict=True):
        if not isinstance(old, list) or len(old) != 4:
            return False
        if old[0] != new[0] or old[3] != new[3] or new[1] < old[1]:
            return False
    return True


def _is_flat(path: Path) -> bool:
    """kimi-cli's flat ``sessions/<md5>/<id>.jsonl`` from before session directories."""
    parent = path.parent
    return (
        _FLAT.match(path.name) is not None
        and parent.parent.name == "sessions"
        and _WORK_DIR.match(parent.name) is not None
    )


class _WorkDirs:
    """``kimi.json``'s work dirs by the hash that names their sessions directory,
    re-read only when the file changes."""

    def __init__(self) -> None:
        self._dirs = NameIndex(self._load)

    def lookup(self, share: Path, hashed: str) -> str | None:
        return self._dirs.lookup(share / "kimi.json", hashed)

    @staticmethod
    def _load(path: Path) -> dict[str, str]:
        dirs = _json_file(path).get("work_dirs")
        out: dict[str, str] = {}
        for entry in dirs if isinstance(dirs, list) else []:
            work = entry.get("path") if isinstance(entry, dict) else None
            if not isinstance(work, str) or not work:
                continue
            digest = md5(work.encode("utf-8"), usedforsecurity=False).hexdigest()
            kaos = entry.get("kaos")
            out[digest if kaos in (None, "local") else f"{kaos}_{digest}"] = work
            out.setdefault(digest, work)
        return out


class KimiCliReader(BaseReader):
    host: ClassVar[str] = "kimi-cli"
    name: ClassVar[str] = "Kimi CLI / Kimi Code"
    version: ClassVar[int] = 6
    kind: ClassVar[Kind] = "append"

    def __init__(self) -> None:
        self._work_dirs = _WorkDirs()

    def roots(self, env: HostEnv) -> list[Path]:
        # Both homes sit under the home directory on every OS (%USERPROFILE% on Windows).
        share = env.var("KIMI_SHARE_DIR") or env.home / ".kimi"
        code = env.var("KIMI_CODE_HOME") or env.home / ".kimi-code"
        return [share / "sessions", code / "sessions"]

    def source_for(self, path: Path) -> Path | None:
        if path.name == WIRE:
            return path if _layout(path) is not None else None
        if path.name == STATE and path.parent.parent.parent.name == "sessions":
            return _main_source(path.parent)  # a rename: the session is read again
        if is_context_file(path.name) and path.parent.parent.parent.name == "sessions":
            return path  # Kimi CLI context files: the summary, or a wireless session's prose
        if _is_flat(path):
            return path
        return None

    #: Every read returns the session with state.json's title (the parser's state
    #: carries the rest), and Kimi Code rewrites state.json at every prompt.
    sidecars_reread_whole: ClassVar[bool] = False

    def sidecars(self, path: Path) -> list[Path]:
        if is_context_file(path.name):
            # The wire appearing turns the session's context files off.
            return [path.parent / WIRE, path.parent / STATE]
        layout = _layout(path) if path.name == WIRE else None
        if layout is None or layout[2] is not None:
            return []  # (a sub-agent's wire names no title)
        return [layout[1] / STATE]

    def read(self, path: Path, prev: Cursor | None, opts: ReaderOptions) -> ReadResult:
        if path.name != WIRE:
            return self._read_context(path, prev, opts)
        layout = _layout(path)
        if layout is None:
            return ReadResult(unsupported=f"not a Kimi session wire: {path}")
        store, session_dir, agent = layout
        if agent is not None and not opts.include_subagents:
            return unread_subagent()
        state = dict(prev.state) if prev else {}
        sid = session_dir.name
        runs = Runs.resumed(sid, state.get("run"), subagent=agent is not None)
        prefix = f"{agent}:" if agent else ""
        parser = _Parser(runs, prefix, state)
        tail, lines = tail_jsonl(path, prev, opts)
        problems: list[Problem] = []
        for line, obj in lines:
            if not isinstance(obj, dict):
                problems.append(Problem("record is not a JSON object", line.number, line.offset))
                continue
            parser.record(obj, line.offset)
        turns, carried = runs.finish()
        if parser.compacted and store == "cli" and agent is None:
            turns += self._summaries(sid, session_dir, parser)
        new_state = parser.dump()
        new_state.update(line=next_line_number(tail), run=carried)
        sessions: tuple[Session, ...] = ()
        if parser.seen:
            sessions = (
                (Session(sid),)
                if agent is not None
                else (self._session(store, session_dir, parser.first_prompt, parser),)
            )
        return ReadResult(
            turns=turns,
            sessions=sessions,
            position=tail.end,
            state=new_state,
            replace=prev is None or prev.position == 0,
            problems=(*tail.problems, *problems),
            # A sub-agent's wire is kept out with its parent's project.
            ran_in=self._project(store, session_dir, parser.cwd) if agent else None,
        )

    @staticmethod
    def _summaries(sid: str, session_dir: Path, parser: _Parser) -> tuple[Turn, ...]:
        """The summaries of the compactions this read found (``CompactionEnd``),
        matched from the latest back: compactions and summaries are added one
        for one, so a read as the wire grows matches as a whole read does. The
        summaries before the part of the context the wire covers are the
        context's (a resumed session's history, a ``/compact`` before the first
        prompt after the resume)."""
        found = summaries(session_dir)
        covered, _ = _covered(session_dir)
        theirs = sum(1 for seq, _ in found if covered is None or seq < covered)
        out = []
        before = parser.compactions - len(parser.compacted)  # (found by earlier reads)
        for n, (offset, ts) in enumerate(parser.compacted, before):
            i = len(found) - parser.compactions + n
            if theirs <= i < len(found):
                text = found[i][1]
                key = f"compaction:{content_key(text)}"
                out.append(Turn(sid, key, "summary", text, ts, offset))
        return tuple(out)

    def _project(self, store: str, session_dir: Path, cwd: str | None) -> str | None:
        if store == "code":
            work = _json_file(session_dir / STATE).get("workDir")
            return work if is_absolute_path(work) else cwd
        share = session_dir.parent.parent.parent
        return self._work_dirs.lookup(share, session_dir.parent.name)

    def _session(
        self,
        store: str,
        session_dir: Path,
        prompt: str | None,
        parser: _Parser | None = None,
    ) -> Session:
        """The session with its title: ``state.json``'s, else ``prompt`` (the
        first one, where it is known)."""
        sid = session_dir.name
        meta = _json_file(session_dir / STATE)
        project = self._project(store, session_dir, parser.cwd if parser else None)
        started = parser.started if parser else None
        if store == "code":
            named = meta.get("title")
            resume = resume_in(project, "kimi", "--session", sid)
            started = parse_time(meta.get("createdAt")) or started
        else:
            named = meta.get("custom_title")
            resume = resume_in(project, "kimi", "-r", sid)
        if isinstance(named, str) and named.strip():
            title: str | None = first_line_title(named)
        elif prompt:
            # Kimi CLI shows the first prompt cut to 50 characters (the format notes).
            title = first_line_title(prompt, 50) if store != "code" else first_line_title(prompt)
        else:
            title = None
        return Session(
            sid,
            project=project,
            title=title,
            started_at=started,
            updated_at=parser.updated if parser else None,
            resume_command=resume,
        )

    def _read_context(self, path: Path, prev: Cursor | None, opts: ReaderOptions) -> ReadResult:
        """A Kimi CLI context file (or the flat file from before session
        directories): its prose before the part the session's wire covers (all
        of it while the session has no wire); nothing from a flat file kimi-cli
        has since moved into the session's directory (opening the session, and
        so writing a wire, moves it first)."""
        flat = not is_context_file(path.name)
        session_dir = path.with_suffix("") if flat else path.parent
        wire = session_dir / WIRE
        moved = flat and ((session_dir / CONTEXT).exists() or wire.exists())
        mode = "moved" if moved else "prose"
        order, earlier = place(path, session_dir) if mode == "prose" and not flat else (1, None)
        state = dict(prev.state) if prev else {}
        covered, memo = _covered(session_dir, state.get("memo")) if not flat else (None, None)
        cut = file_cut(covered, order)
        if (
            state.get("mode") != mode
            or state.get("order", order) != order
            or state.get("copy")
            or state.get("cut") != cut
        ):
            # Read whole again: the file was moved, a rotation moved its place,
            # all of it was a copy of the file before it so far, or the wire now
            # reaches back to another point in it.
            prev, state = None, {}
        if mode == "prose":
            read = self._read_prose(
                path, session_dir, prev, state, opts, (order, earlier), cut, covered is None
            )
            return dataclasses.replace(read, state={**read.state, "memo": memo})
        tail, _ = tail_jsonl(path, prev, opts)
        for _line in tail:  # (to its end, unparsed)
            pass
        return ReadResult(
            position=tail.end,
            state={"line": next_line_number(tail), "mode": mode},
            replace=True,
            problems=tuple(tail.problems),
        )

    def _read_prose(
        self,
        path: Path,
        session_dir: Path,
        prev: Cursor | None,
        state: dict[str, Any],
        opts: ReaderOptions,
        where: tuple[int, Path | None],
        cut: int | None,
        titled: bool,
    ) -> ReadResult:
        """A context file's prompts, replies and summaries before ``cut`` (where
        the wire's part starts, if in this file); ``titled``: the session has no
        wire prompt to take its title from."""
        sid = session_dir.name
        order, earlier = where  # (its place in the rotation, the file rotated before it)
        mtime = path.stat().st_mtime
        copied = shared_head(path, earlier) if earlier and prev is None else 0
        copied = max(copied, int(state.get("copied", 0)))
        tail, lines = tail_jsonl(path, prev, opts)
        prose = ContextProse(sid, order, mtime, state, first=earlier is None)
        problems: list[Problem] = []
        for line, obj in lines:
            if not isinstance(obj, dict):
                problems.append(Problem("record is not a JSON object", line.number, line.offset))
            elif line.offset >= copied and (cut is None or line.offset < cut):
                prose.message(obj, line.offset)  # (before: the earlier file's; after: the wire's)
        new_state = prose.dump()
        new_state.update(
            line=next_line_number(tail),
            mode="prose",
            order=order,
            copied=copied,
            copy=earlier is not None and copied >= tail.end,
            cut=cut,
        )
        # The first file of a session without a wire prompt names it by its
        # first prompt (else the wire's does, as kimi-cli does); every file
        # gives the title kimi-cli was given.
        prompt = prose.first_prompt if earlier is None and titled else None
        return ReadResult(
            turns=tuple(prose.turns),
            sessions=(self._session("cli", session_dir, prompt),) if prose.seen else (),
            position=tail.end,
            state=new_state,
            replace=prev is None or prev.position == 0,
            problems=(*tail.problems, *problems),
        )


class _Parser:
    """One wire's records, in either vocabulary."""

    def __init__(self, runs: Runs, prefix: str, state: dict[str, Any]) -> None:
        self.runs = runs
        self.prefix = prefix
        self.vocabulary: str | None = state.get("voc")
        self.first_prompt: str | None = state.get("prompt")
        self.cwd: str | None = state.get("cwd")
        self.started: float | None = state.get("started")
        self.updated: float | None = state.get("updated")
        self.tainted = bool(state.get("tainted", False))
        self.seen = bool(state.get("seen", False))
        #: Kimi CLI compactions so far, and those of this read: (offset, time).
        self.compactions = int(state.get("compactions", 0))
        self.compacted: list[tuple[int, float | None]] = []

    def dump(self) -> dict[str, Any]:
        return {
            "voc": self.vocabulary,
            "prompt": self.first_prompt,
            "cwd": self.cwd,
            "started": self.started,
            "updated": self.updated,
            "tainted": self.tainted,
            "seen": self.seen,
            "compactions": self.compactions,
        }

    def record(self, obj: dict[str, Any], offset: int) -> None:
        kind = obj.get("type")
        if kind == "metadata" and "message" not in obj:
            if self.started is None:
                self.started = parse_time(obj.get("created_at"))
            return
        if self.vocabulary is None:
            self.vocabulary = "cli" if isinstance(obj.get("message"), dict) else "code"
        self.seen = True
        if self.vocabulary == "cli":
            ts = parse_time(obj.get("timestamp"))
            self._when(ts)
            message = obj.get("message")
            if isinstance(message, dict):
                self._cli(message, offset, ts)
        else:
            ts = parse_time(obj.get("time"))
            self._when(ts)
            self._code(obj, offset, ts)

    def _when(self, ts: float | None) -> None:
        if ts is not None:
            self.started = ts if self.started is None else min(self.started, ts)
            self.updated = ts if self.updated is None else max(self.updated, ts)

    def _prompt(self, text: str, offset: int, ts: float | None) -> None:
        if not text:  # an image-only input: no prose, but a new turn all the same
            self.runs.close()
            return
        self.tainted = False
        if self.first_prompt is None:
            self.first_prompt = text
        self.runs.whole("user", text, key=f"{self.prefix}o:{offset}", timestamp=ts, seq=offset)

    def _assistant(self, text: str, offset: int, ts: float | None, group: str | None) -> None:
        key = f"{self.prefix}o:{offset}"
        self.runs.piece(
            "assistant", text, key=key, timestamp=ts, seq=offset, tainted=self.tainted, group=group
        )

    # ------------------------------------------------------------------ Kimi CLI

    def _cli(self, message: dict[str, Any], offset: int, ts: float | None) -> None:
        kind, payload = message.get("type"), message.get("payload")
        if not isinstance(payload, dict):
            payload = {}
        if kind in _PROMPTED:
            self._prompt(_texts(payload.get("user_input")), offset, ts)
        elif kind == "ContentPart":
            if payload.get("type") == "text" and isinstance(payload.get("text"), str):
                self._assistant(payload["text"], offset, ts, None)
            elif payload.get("type") != "think":
                self.runs.close()
        elif kind == "StatusUpdate":
            return  # usage between pieces of one reply
        else:
            if kind == "CompactionEnd":  # (its summary is in the restarted context)
                self.compactions += 1
                self.compacted.append((offset, ts))
            if kind == "ToolCall":
                function = payload.get("function")
                if isinstance(function, dict) and is_external_tool(function.get("name")):
                    self.tainted = True
            self.runs.close()

    # ------------------------------------------------------------------ Kimi Code

    def _code(self, obj: dict[str, Any], offset: int, ts: float | None) -> None:
        kind = obj.get("type")
        if kind == "config.update" and is_absolute_path(obj.get("cwd")):
            self.cwd = obj["cwd"]
        elif kind == "context.append_message":
            message = obj.get("message")
            if not isinstance(message, dict) or message.get("role") != "user":
                self.runs.close()
                return
            origin = message.get("origin")
            typed = not isinstance(origin, dict) or origin.get("kind") == "user"
            if typed:
                self._prompt(_texts(message.get("content")), offset, ts)
            else:
                self.runs.close()
        elif kind == "context.append_loop_event":
            self._loop_event(obj.get("event"), offset, ts)
        elif kind == "context.apply_compaction":
            summary = obj.get("summary") or obj.get("contextSummary")
            if isinstance(summary, str) and clean_text(summary):
                key = f"{self.prefix}o:{offset}"
                self.runs.whole("summary", clean_text(summary), key=key, timestamp=ts, seq=offset)
        elif kind in ("tool.call", "turn.ended", "turn.cancel", "turn.prompt", "turn.steer"):
            if kind == "tool.call" and _names_external(obj):
                self.tainted = True
            self.runs.close()

    def _loop_event(self, event: Any, offset: int, ts: float | None) -> None:
        if not isinstance(event, dict):
            return
        if event.get("type") != "content.part":
            if _names_external(event):
                self.tainted = True
            self.runs.close()
            return
        part = event.get("part")
        if not isinstance(part, dict) or part.get("type") != "text":
            return  # think parts
        text = part.get("text")
        if isinstance(text, str):
            group = event.get("stepUuid") or json.dumps([event.get("turnId"), event.get("step")])
            self._assistant(text, offset, ts, str(group))


def _names_external(obj: dict[str, Any]) -> bool:
    """A tool call record naming an external tool (``name`` / ``toolName`` /
    ``toolCall.name``; the shape is not in the format notes, so all are tried)."""
    candidates = [obj.get("name"), obj.get("toolName")]
    for nested in ("toolCall", "call", "tool"):
        inner = obj.get(nested)
        if isinstance(inner, dict):
            candidates += [inner.get("name"), inner.get("toolName")]
    return any(is_external_tool(c) for c in candidates)
