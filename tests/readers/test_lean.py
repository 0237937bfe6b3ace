"""A lean parse (readers/lean.py) reads what a full parse reads.

Each host reader that parses its lines into a declared shape (its module's
``_PARSE``) reads the host's sample transcripts, a generated bench corpus and
hand-written lines for every kind of entry it handles with that parser and
with a full parse: the results must be equal. Then the same files are read
with every parsed object recording which keys the reader asks it for, and
every key asked for must be declared in the shape at that place (a key left
out of the shape reads as absent, whatever the line holds).
"""

from __future__ import annotations

import importlib.util
import json
import re
import sys
import typing
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from backscroll.model import ReaderOptions, ReadResult
from backscroll.readers import base
from backscroll.readers.claude_code import ClaudeCodeReader
from backscroll.readers.codex import CodexReader
from backscroll.readers.copilot_cli import CopilotCliReader
from backscroll.readers.gemini_cli import GeminiCliReader
from backscroll.readers.lean import Lean
from tests.readers.util import FIXTURES

BENCH = Path(__file__).resolve().parents[2] / "bench"


def _bench_corpus() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_corpus_for_lean", BENCH / "corpus.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # (its dataclasses look their module up)
    spec.loader.exec_module(module)
    return module


def _line(**fields: Any) -> str:
    return json.dumps(fields)


def _samples(host: str) -> list[Path]:
    return sorted((FIXTURES / host).rglob("*.jsonl"))


def _written(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text + "\n", encoding="utf-8")
    return path


def _generated(tmp: Path, host: str, name: str) -> list[Path]:
    """A small bench corpus of ``host`` (bench/corpus.py): its files named ``name``."""
    home = tmp / "corpus"
    _bench_corpus().generate(home, size_mb=1, seed=3, hosts=(host,))
    found = sorted(home.rglob(name))
    assert found
    return found


_S = {"sessionId": "s-1", "cwd": "/w/p", "version": "2.1.80"}

#: A Claude Code transcript with one entry of every kind its reader handles.
CLAUDE_EVERY_KIND = "\n".join(
    [
        _line(type="user", uuid="u1", timestamp="2026-01-01T00:00:00Z",
              message={"role": "user", "content": "a prompt as a string"}, **_S),
        _line(type="user", uuid="u2", timestamp="2026-01-01T00:00:01Z", **_S,
              message={"role": "user", "content": [
                  {"type": "text", "text": "a block"}, "a bare string item",
                  {"type": "image", "source": {"data": "AAAA"}}]}),
        _line(type="assistant", uuid="a1", timestamp="2026-01-01T00:00:02Z", **_S,
              message={"model": "m", "content": [
                  {"type": "thinking", "thinking": "hidden", "signature": "x"},
                  {"type": "tool_use", "name": "WebFetch", "input": {"url": "https://x"}},
                  {"type": "text", "text": "after a web fetch"}]}),
        _line(type="user", uuid="u3", timestamp="2026-01-01T00:00:03Z", **_S,
              toolUseResult={"stdout": "big output"},
              message={"role": "user", "content": [
                  {"type": "tool_result", "tool_use_id": "t", "content": "big output"}]}),
        _line(type="assistant", uuid="a2", isApiErrorMessage=True, **_S,
              message={"content": [{"type": "text", "text": "an API error"}]}),
        _line(type="assistant", uuid="a3", **_S,
              message={"model": "<synthetic>", "content": "No response requested."}),
        _line(type="assistant", uuid="a4", **_S, message="a message that is a string"),
        _line(type="assistant", uuid="a5", **_S, message={"content": [3, {"type": "text"}]}),
        _line(type="user", uuid="u4", isMeta=True, **_S,
              message={"content": "injected by the harness"}),
        _line(type="user", uuid="u5", isCompactSummary=True, **_S,
              message={"content": [{"type": "text", "text": "the summary of a compaction"}]}),
        _line(type="attachment", uuid="q1", timestamp="2026-01-01T00:00:04Z", **_S,
              attachment={"type": "queued_command", "prompt": "queued while it ran",
                          "timestamp": "2026-01-01T00:00:04Z"}),
        _line(type="attachment", uuid="q2", **_S,
              attachment={"type": "file", "content": "a whole file"}),
        _line(type="queue-operation", operation="remove", content="removed prompt",
              timestamp="2026-01-01T00:00:05Z", sessionId="s-1"),
        _line(type="file-history-snapshot", messageId="m",
              snapshot={"timestamp": "2026-01-01T00:00:06Z", "trackedFileBackups": {"f": {}}}),
        _line(type="file-history-snapshot", snapshot="not an object"),
        _line(type="summary", summary="a summary title", leafUuid="a1"),
        _line(type="summary", summary="another session's", leafUuid="elsewhere"),
        _line(type="ai-title", aiTitle="an AI title", sessionId="s-1"),
        _line(type="custom-title", customTitle="a custom title", sessionId="s-1"),
        _line(type={"not": "a kind"}, uuid="x1", **_S),
        _line(type="user", uuid="u6", timestamp=1767225600, **_S,
              message={"content": [{"type": "text", "text": "a number as its time"}]}),
        "[1, 2, 3]",
        '{"type": "user", "uuid": "broken", "message": {"content": "cut sh',
        '{"type": "user", "uuid": "u7", "message": {"content": "after a bad line"}}',
    ]
)  # fmt: skip


def _wrapped(kind: str, payload: Any, ts: str = "2026-01-01T00:00:00Z") -> str:
    return _line(timestamp=ts, type=kind, payload=payload)


_META = {
    "id": "0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b",
    "cwd": "/w/p",
    "timestamp": "2026-01-01T00:00:00Z",
}

_ENV = "<environment_context><cwd>/w/p</cwd></environment_context>"

#: A Codex rollout with a record of every kind its reader handles.
CODEX_EVERY_KIND = "\n".join(
    [
        _wrapped("session_meta", {**_META, "source": "cli", "instructions": "long"}),
        _wrapped("turn_context", {"cwd": "/w/p", "model": "m"}),
        _wrapped("response_item", {"type": "message", "role": "user", "content": [
            {"type": "input_text", "text": _ENV},
            {"type": "input_text", "text": "a prompt from an item"}]}),
        _wrapped("event_msg", {"type": "user_message", "message": "a prompt from an event"}),
        _wrapped("event_msg", {"type": "user_message", "message": _ENV,
                               "kind": "environment_context"}),
        _wrapped("response_item", {"type": "reasoning", "encrypted_content": "AAAA"}),
        _wrapped("response_item", {"type": "function_call", "name": "web_search", "arguments": "{}",
                                   "call_id": "c1"}),
        _wrapped("response_item", {"type": "function_call_output", "call_id": "c1",
                                   "output": "big output"}),
        _wrapped("response_item", {"type": "custom_tool_call", "name": "apply_patch"}),
        _wrapped("response_item", {"type": "web_search_call", "action": {"query": "q"}}),
        _wrapped("event_msg", {"type": "exec_command_end", "aggregated_output": "big"}),
        _wrapped("event_msg", {"type": "agent_message", "message": "a reply from an event"}),
        _wrapped("response_item", {"type": "message", "role": "assistant", "content": [
            {"type": "output_text", "text": "a reply from an event"}, "a bare string"]}),
        _wrapped("response_item", {"type": "message", "role": "assistant", "content": "a string"}),
        _wrapped("event_msg", {"type": "item_completed", "item": {"type": "UserMessage",
                                   "content": [{"type": "text", "text": "a completed prompt"}]}}),
        _wrapped("event_msg", {"type": "item_completed", "item": {"type": "AgentMessage",
                                   "content": "content as a string"}}),
        _wrapped("event_msg", {"type": "item_completed", "item": "not an object"}),
        _wrapped("event_msg", {"type": "thread_name_updated", "thread_name": "a thread name"}),
        _wrapped("event_msg", {"type": "task_complete"}),
        _wrapped("event_msg", {"type": "turn_aborted"}),
        _wrapped("compacted", {"message": "the summary of a compaction", "history": []}),
        _line(timestamp="2026-01-01T00:00:09Z", type="event_msg", payload="not an object"),
        "[1]",
        '{"timestamp": "2026-01-01T00:00:10Z", "type": "event_msg", "payload": {"type": "cut',
    ]
)  # fmt: skip

#: A spawned sub-agent's rollout, the bare era, and a format nobody knows.
CODEX_OTHERS = {
    "sub": "\n".join([
        _wrapped("session_meta", {**_META, "id": "0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5c",
                                  "source": {"subagent": {"thread_spawn": {
                                      "parent_thread_id": _META["id"]}}}}),
        _wrapped("response_item", {"type": "message", "role": "assistant",
                                   "content": [{"type": "output_text", "text": "a sub-agent's"}]}),
    ]),
    "bare": "\n".join([
        _line(id=_META["id"], timestamp="2026-01-01T00:00:00Z", instructions="long"),
        _line(record_type="state"),
        _line(type="message", role="user", content=[{"type": "input_text", "text": "bare prompt"}]),
        _line(type="message", role="assistant",
              content=[{"type": "output_text", "text": "bare reply"}]),
        _line(type="function_call_output", call_id="c", output="big"),
    ]),
    "unknown": _line(kind="new", version=9, records=[], zeta=1, alpha=2, beta=3, gamma=4),
}  # fmt: skip


def _codex_files(tmp: Path) -> list[Path]:
    day = tmp / ".codex" / "sessions" / "2026" / "01" / "01"
    written = [
        _written(day / f"rollout-2026-01-01T00-00-0{n}-0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a{n:02d}"
                 ".jsonl", text)
        for n, text in enumerate([CODEX_EVERY_KIND, *CODEX_OTHERS.values()])
    ]  # fmt: skip
    return [*_samples("codex"), *written, *_generated(tmp, "codex", "rollout-*.jsonl")]


_T = "2026-01-01T00:00:0{}Z"

#: A Gemini CLI JSONL recording with a record of every kind its reader handles.
GEMINI_EVERY_KIND = "\n".join(
    [
        _line(sessionId="g-1", projectHash="0" * 64, startTime=_T.format(0), kind="main",
              lastUpdated=_T.format(0), summary="a header summary",
              messages=[{"id": "h1", "type": "user", "content": "a prompt in the header"}]),
        _line(id="m1", type="user", timestamp=_T.format(1), content=[{"text": "a prompt"}]),
        _line(id="m2", type="user", timestamp=_T.format(1), content="shown instead",
              displayContent=[{"text": "what the person typed"}, "and a string part"]),
        _line(id="m3", type="gemini", timestamp=_T.format(2), model="m", tokens={"input": 1},
              thoughts=[{"subject": "s", "description": "hidden"}],
              content=[{"text": "thinking", "thought": True}, {"text": "a reply"}],
              toolCalls=[{"name": "google_web_search", "args": {"q": "x"},
                          "result": [{"functionResponse": {"response": {"output": "big"}}}],
                          "resultDisplay": "big"}]),
        _line(id="m4", type="gemini", content={"text": "content as one part"}),
        _line(id="m5", type="info", content="a notice"),
        _line(**{"$set": {"lastUpdated": _T.format(3), "summary": "a better summary"}}),
        _line(id="m6", type="user", content="<state_snapshot>the summary</state_snapshot>"),
        _line(id="m7", type="gemini", content="Got it. Thanks for the additional context!"),
        _line(**{"$set": {"messages": [{"id": "m1", "type": "user", "content": "kept"},
                                       "not a message"]}}),
        _line(id="m8", type="user", content="taken back"),
        _line(**{"$rewindTo": "m8"}),
        _line(id="m9", type="gemini", content=[3, {"text": "a number part"}]),
        _line(id="m10", type="gemini", content="calls", toolCalls={"not": "a list"}),
        "[1]",
        '{"id": "m11", "type": "user", "content": "cut',
    ]
)  # fmt: skip


def _gemini_files(tmp: Path) -> list[Path]:
    chats = tmp / ".gemini" / "tmp" / "proj" / "chats"
    every = _written(chats / "session-2026-01-01T00-00-g0000001.jsonl", GEMINI_EVERY_KIND)
    headless = _written(
        chats / "session-2026-01-01T00-01-g0000002.jsonl",
        _line(id="m1", type="user", content="no header"),
    )
    generated = _generated(tmp, "gemini-cli", "session-*.jsonl")
    return [*_samples("gemini-cli"), every, headless, *generated]


def _event(kind: str, n: int, data: Any, **extra: Any) -> str:
    return _line(type=kind, id=f"e{n}", timestamp=_T.format(n % 10), data=data, **extra)


#: A Copilot CLI event stream with an event of every kind its reader handles.
COPILOT_EVERY_KIND = "\n".join(
    [
        _event("session.start", 1, {"sessionId": "c-1", "version": 1, "startTime": _T.format(0),
                                    "context": {"cwd": "/w/p", "branch": "main"}}),
        _event("session.resume", 2, {"context": {"cwd": "/w/q"}}),
        _event("session.title_changed", 3, {"title": "  a title  "}),
        _event("user.message", 4, {"content": "a prompt", "attachments": [{"path": "x"}]}),
        _event("user.message", 5, {"content": "injected", "source": "skill"}),
        _event("user.message", 6, {"content": "go on", "isAutopilotContinuation": True}),
        _event("assistant.message", 7, {"content": "calling a tool", "toolRequests": [
            {"name": "web_fetch", "arguments": {"url": "https://x"}}, "not a request"]}),
        _event("tool.execution_start", 8, {"toolName": "bash", "arguments": {"c": "ls"}}),
        _event("tool.execution_complete", 9, {"success": True, "result": {"content": "big"}}),
        _event("assistant.message", 10, {"content": "after the tool"}),
        _event("assistant.message", 11, {"content": "a sub-agent's", "parentToolCallId": "t"}),
        _event("assistant.message", 12, {"content": "an agent's"}, agentId="a-1"),
        _event("session.compaction_complete", 13, {"success": True, "summaryContent": "summary"}),
        _event("session.snapshot_rewind", 14, {"upToEventId": "e10"}),
        _event("assistant.message", 15, "data that is a string"),
        _event("session.start", 16, {"context": "not an object", "version": 1}),
        "[1]",
        '{"type": "user.message", "id": "e17", "data": {"content": "cut',
    ]
)  # fmt: skip


def _copilot_files(tmp: Path) -> list[Path]:
    state = tmp / ".copilot" / "session-state"
    events = _written(state / "c-1" / "events.jsonl", COPILOT_EVERY_KIND)
    newer = _written(state / "c-2" / "events.jsonl", _event("session.start", 1, {"version": 99}))
    generated = _generated(tmp, "copilot-cli", "events.jsonl")
    return [*_samples("copilot-cli"), events, newer, *generated]


def _claude_files(tmp: Path) -> list[Path]:
    every = _written(tmp / ".claude" / "projects" / "-w-p" / "s-1.jsonl", CLAUDE_EVERY_KIND)
    return [*_samples("claude-code"), every, *_generated(tmp, "claude-code", "*.jsonl")]


#: Host -> its reader, the module holding its lean parser ``_PARSE``, and the files
#: it is checked on.
LEAN_READERS: dict[str, tuple[type[Any], str, Callable[[Path], list[Path]]]] = {
    "claude-code": (ClaudeCodeReader, "backscroll.readers.claude_code", _claude_files),
    "codex": (CodexReader, "backscroll.readers.codex", _codex_files),
    "gemini-cli": (GeminiCliReader, "backscroll.readers.gemini_cli", _gemini_files),
    "copilot-cli": (CopilotCliReader, "backscroll.readers.copilot_cli", _copilot_files),
}


def _lean_host(host: str, tmp: Path) -> tuple[type[Any], ModuleType, list[Path]]:
    """The host's reader class, its module and the files it is read on."""
    cls, module_name, files = LEAN_READERS[host]
    return cls, sys.modules[module_name], files(tmp)


def _read_all(reader: Any, files: list[Path]) -> list[ReadResult]:
    opts = ReaderOptions(include_subagents=True)
    return [reader.read(path, None, opts) for path in files]


@pytest.mark.parametrize("host", sorted(LEAN_READERS))
def test_a_lean_read_equals_a_full_read(
    host: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cls, module, files = _lean_host(host, tmp_path)
    assert isinstance(module._PARSE, Lean)
    lean = _read_all(cls(), files)
    monkeypatch.setattr(module, "_PARSE", base.loads)
    full = _read_all(cls(), files)
    assert lean == full
    assert sum(len(r.turns) for r in lean) > 20


class _Asked(dict[str, Any]):
    """A parsed object that notes every key asked of it, by where it is."""

    asked: set[tuple[tuple[str, ...], str]] = set()

    def __init__(self, data: dict[str, Any], where: tuple[str, ...]) -> None:
        super().__init__({k: _asking(v, (*where, k)) for k, v in data.items()})
        self.where = where

    def get(self, key: str, default: Any = None) -> Any:
        _Asked.asked.add((self.where, key))
        return super().get(key, default)

    def __getitem__(self, key: str) -> Any:
        _Asked.asked.add((self.where, key))
        return super().__getitem__(key)

    def __contains__(self, key: object) -> bool:
        _Asked.asked.add((self.where, str(key)))
        return super().__contains__(key)


def _asking(value: Any, where: tuple[str, ...]) -> Any:
    if isinstance(value, dict):
        return _Asked(value, where)
    if isinstance(value, list):  # (a list's items are where the list is)
        return [_asking(v, where) for v in value]
    return value


def _declared(shape: Any, where: tuple[str, ...] = ()) -> set[tuple[tuple[str, ...], str]]:
    """Every (place, key) the shape keeps; a key typed Any keeps all below it."""
    out: set[tuple[tuple[str, ...], str]] = set()
    for key, hint in typing.get_type_hints(shape).items():
        out.add((where, key))
        for inner in _shapes(hint):
            out |= _declared(inner, (*where, key))
    return out


def _open_below(shape: Any, where: tuple[str, ...] = ()) -> set[tuple[str, ...]]:
    """Places under a key typed Any (parsed whole: every key there is kept)."""
    out: set[tuple[str, ...]] = set()
    for key, hint in typing.get_type_hints(shape).items():
        if hint is Any:
            out.add((*where, key))
        for inner in _shapes(hint):
            out |= _open_below(inner, (*where, key))
    return out


def _shapes(hint: Any) -> list[Any]:
    if typing.is_typeddict(hint):
        return [hint]
    return [s for arg in typing.get_args(hint) for s in _shapes(arg)]


@pytest.mark.parametrize("host", sorted(LEAN_READERS))
def test_every_key_a_reader_asks_for_is_in_its_shape(
    host: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cls, module, files = _lean_host(host, tmp_path)
    shape = module._PARSE.shape
    _Asked.asked = set()

    def parse(raw: bytes) -> Any:
        return _asking(base.loads(raw), ())

    monkeypatch.setattr(module, "_PARSE", parse)
    _read_all(cls(), files)
    declared, open_below = _declared(shape), _open_below(shape)
    missing = {
        (where, key)
        for where, key in _Asked.asked
        if (where, key) not in declared and not any(where[: len(p)] == p for p in open_below)
    }
    assert _Asked.asked, "the reader asked no key: the recording parse was not used"
    assert not missing, f"keys the {host} reader reads but its shape leaves out: {missing}"


def test_every_reader_with_a_lean_parse_is_checked_here() -> None:
    readers = Path(base.__file__).parent
    lean = {
        f"backscroll.readers.{path.stem}"
        for path in readers.glob("*.py")
        if re.search(r"^_PARSE = Lean\(", path.read_text(encoding="utf-8"), re.MULTILINE)
    }
    assert lean == {module for _cls, module, _files in LEAN_READERS.values()}


class _Shape(typing.TypedDict, total=False):
    type: Any
    message: _Message


class _Message(typing.TypedDict, total=False):
    content: str | list[Any]


def test_a_line_that_does_not_fit_the_shape_is_parsed_whole() -> None:
    parse = Lean(_Shape)
    assert parse(b'{"type": "x", "message": {"content": "c", "big": "skipped"}, "n": 1}') == {
        "type": "x",
        "message": {"content": "c"},
    }
    odd = b'{"type": "x", "message": "a string", "n": 1}'
    assert parse(odd) == {"type": "x", "message": "a string", "n": 1}
    assert parse(b"[1, 2]") == [1, 2]


def test_a_malformed_line_is_still_an_error() -> None:
    parse = Lean(_Shape)
    for raw in (b'{"type": "x", "message": {"content": "cut', b'{"type": 1} trailing'):
        with pytest.raises(ValueError):
            parse(raw)
    assert parse(b'{"type": NaN}') == base.loads(b'{"type": NaN}')  # (what json allows)


def test_stray_bytes_in_a_skipped_field_leave_the_line_readable() -> None:
    """msgspec does not check the UTF-8 of what it skips: a line whose tool
    output holds bytes that are not UTF-8 is read for the fields the reader
    reads (a full parse refused the whole line)."""
    raw = b'{"type": "user", "big": "\xff\xfe", "message": {"content": "kept"}}'
    with pytest.raises(ValueError):
        base.loads(raw)
    assert Lean(_Shape)(raw) == {"type": "user", "message": {"content": "kept"}}
    with pytest.raises(ValueError):  # (where the reader reads it, it is checked)
        Lean(_Shape)(b'{"type": "\xff", "message": {"content": "kept"}}')
