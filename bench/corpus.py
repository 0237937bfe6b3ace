"""A synthetic but realistic transcript corpus for the benchmarks.

Run from the repository root::

    python bench/corpus.py OUT_DIR                 # ~200 MB, seed 1
    python bench/corpus.py OUT_DIR --size-mb 50 --seed 3

``OUT_DIR`` is laid out like a home directory, each host at its default
location and in its current on-disk format (see tests/fixtures/<host>):

- Claude Code: ``.claude/projects/<slug>/<uuid>.jsonl``;
- Codex: ``.codex/sessions/YYYY/MM/DD/rollout-<stamp>-<uuid>.jsonl``;
- Gemini CLI (v0.39+ JSONL recordings): ``.gemini/tmp/<slug>/chats/
  session-<YYYY-MM-DDThh-mm>-<id8>.jsonl``, with the slug dir's ``.project_root``
  and ``.gemini/projects.json``;
- Copilot CLI: ``.copilot/session-state/<uuid>/events.jsonl`` and its
  ``workspace.yaml``.

By session count the hosts get :data:`HOST_SHARES` (``--hosts`` picks a subset;
``--hosts claude-code,codex`` writes the same bytes as the two-host generator
did). As in real transcripts, tool results dominate the bytes (Claude Code
``tool_result`` blocks and their ``toolUseResult`` copies, Codex
``function_call_output`` and ``exec_command_end`` output, Gemini ``toolCalls``
results and their ``resultDisplay`` copies, Copilot ``tool.execution_complete``
results; Codex ``session_meta`` instructions and Copilot's ``system.message``,
encrypted reasoning); prose (prompts, answers, summaries) is a few percent.
Session sizes are log-normal (median ~400 KB, a few of several MB). Same seed,
same bytes.

As a module::

    from corpus import generate
    stats = generate(Path(root), size_mb=50, seed=1)  # hosts=HOSTS by default

Benches that append to transcripts use :func:`claude_user_line` /
:func:`codex_user_lines` to write lines in the host's own format.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import random
import re
import shutil
import sys
import time
import uuid
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

#: Timestamps start here (fixed, so the corpus is deterministic).
BASE_TS = 1_767_225_600.0  # 2026-01-01T00:00:00Z
#: Share of sessions per host (claude-code : codex stays 0.7 : 0.3, the old two-host split).
HOST_SHARES = {"claude-code": 0.525, "codex": 0.225, "gemini-cli": 0.15, "copilot-cli": 0.10}
HOSTS = tuple(HOST_SHARES)
MEDIAN_SESSION_BYTES = 400_000
MAX_SESSION_BYTES = 12_000_000
STAMP = ".corpus.json"

# Prose vocabulary, most frequent first (Zipf-weighted when drawn).
_WORDS = """
the to and a of is in that it we this for be with on not test file can so if
function should i will the code error then now you as at by from check config
let me run use but one change here what are add fix need it's this line value
path daemon index search query session turn reader writer socket database table
schema migration parse token line offset cursor watcher event debounce batch
commit transaction timeout retry lock thread loop async await client server
request response json yaml field option default flag argument command output
result failure pass fails passes works broken flaky slow fast memory latency
cache buffer stream chunk byte string bytes list dict tuple type class method
module package import export build install release version branch merge rebase
diff patch review comment rename refactor helper wrapper handler callback hook
signal shutdown startup ready status health log logger level debug info warning
trace stack frame exception raise catch handle ignore skip keep drop delete
update insert select where order limit offset count total sum average median
percentile benchmark profile measure compare baseline ratio target goal plan
step first second next last before after again still already maybe probably
because since while until unless although however therefore instead actually
looks seems appears means suggests confirms explains shows prints returns yields
user assistant summary prompt answer reply question idea approach design choice
tradeoff constraint requirement behaviour contract interface protocol format
encoding unicode tokenizer porter stemmer snippet excerpt highlight rank bm25
fts5 sqlite wal checkpoint vacuum optimize pragma busy locked readonly writable
inode mtime size stat hash head tail append rewrite truncate rotate compress
zstd gzip archive backup restore sync async fixture sample transcript corpus
host claude codex gemini cursor aider cline goose copilot opencode zed amp
""".split()  # noqa: SIM905
_CODE_LINES = [
    "def {n}(path: Path, *, limit: int = {k}) -> list[str]:",
    "    return [line for line in path.read_text().splitlines() if line][:limit]",
    "class {N}Error(Exception):",
    "    pass",
    "import {n}",
    "from {n}.{m} import {N}",
    "    if not isinstance(value, dict):",
    '        raise ValueError(f"{{path}}: expected a mapping, got {{value!r}}")',
    "    for i, item in enumerate(items):",
    "        out.append(item.{m}())",
    "const {n} = require('./{m}');",
    "export function {n}({m}: string): number {{ return {m}.length + {k}; }}",
    "  if (err) {{ console.error('{n} failed', err); process.exit({k}); }}",
    "fn {n}(&self, {m}: &str) -> Result<usize, Error> {{",
    "    let {n} = {m}.iter().map(|x| x * {k}).collect::<Vec<_>>();",
    "SELECT id, {n}, {m} FROM {n}s WHERE {m} > {k} ORDER BY id;",
    '        assert result == {k}, f"{n}: {{result}}"',
    "    # TODO({n}): handle the {m} case before release",
]
_LOG_LINES = [
    "{ts} INFO  [{n}] {m} completed in {k} ms",
    "{ts} DEBUG [{n}.{m}] cache hit key={h}",
    "{ts} WARN  [{n}] retrying {m} after {k} ms (attempt 2/5)",
    "tests/test_{n}.py::test_{m}_{n} PASSED                              [ {k}%]",
    "tests/test_{n}.py::test_{m} FAILED                                  [ {k}%]",
    "src/{n}/{m}.py:{k}:5: E501 line too long ({k} > 100 characters)",
    '  File "/home/user/src/{n}/{m}.py", line {k}, in {n}',
    "drwxr-xr-x  5 user user  4096 Jan {k2} 10:{k2} {n}",
    "-rw-r--r--  1 user user {k}  Jan {k2} 11:{k2} {m}.py",
    "{h}  {n}/{m}.ts",
    "+    {n} = {m}({k})",
    "-    {n} = {m}({k2})",
    "@@ -{k},7 +{k},9 @@ def {n}(",
    "npm WARN deprecated {n}@{k2}.{k2}.0: use {m} instead",
]
_NAMES = """alpha beta gamma delta parser loader writer reader store index queue
worker cache config router handler session engine bridge client server socket
buffer stream record entry shard tile frame packet vector matrix""".split()  # noqa: SIM905
_TOOLS = ("Bash", "Read", "Edit", "Grep", "Glob", "Write")
_B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"


@dataclass
class Stats:
    root: str
    size_mb: int
    seed: int
    hosts: list[str] = field(default_factory=lambda: ["claude-code", "codex"])
    files: int = 0
    bytes: int = 0
    lines: int = 0
    #: Characters of prose written (prompts, answers, summaries): what gets indexed.
    prose_chars: int = 0
    prose_turns: int = 0
    by_host: dict[str, dict[str, int]] = field(default_factory=dict)
    seconds: float = 0.0

    def add(self, host: str, session: _Session) -> None:
        h = self.by_host.setdefault(host, {"files": 0, "bytes": 0, "turns": 0})
        h["files"] += 1
        h["bytes"] += session.bytes
        h["turns"] += session.prose_turns
        self.files += 1
        self.bytes += session.bytes
        self.lines += session.lines
        self.prose_chars += session.prose_chars
        self.prose_turns += session.prose_turns


def iso(ts: float) -> str:
    dt = datetime.fromtimestamp(ts, tz=UTC)
    return dt.strftime("%Y-%m-%dT%H:%M:%S.") + f"{dt.microsecond // 1000:03d}Z"


def _uuid(rng: random.Random) -> str:
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


class Text:
    """Deterministic prose and tool output drawn from fixed pools."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        weights = [1.0 / (i + 1) ** 1.05 for i in range(len(_WORDS))]
        total = 0.0
        self._cum: list[float] = []
        for w in weights:
            total += w
            self._cum.append(total)
        self.pool = [self._fill(rng.choice(_CODE_LINES + _LOG_LINES)) for _ in range(4000)]
        self.instructions = "\n".join(self.prose(25) for _ in range(120))  # ~18 KB

    def _fill(self, template: str) -> str:
        r = self.rng
        n, m = r.choice(_NAMES), r.choice(_NAMES)
        return template.format(
            n=n,
            m=m,
            N=n.capitalize(),
            k=r.randint(1, 999),
            k2=r.randint(10, 59),
            h=f"{r.getrandbits(64):016x}",
            ts=iso(BASE_TS + r.randint(0, 86_400)),
        )

    def prose(self, words: int) -> str:
        picked = self.rng.choices(_WORDS, cum_weights=self._cum, k=words)
        out: list[str] = []
        for i in range(0, len(picked), 14):
            sentence = " ".join(picked[i : i + 14])
            out.append(sentence[:1].upper() + sentence[1:] + ".")
        return " ".join(out)

    def output(self, nbytes: int) -> str:
        lines = self.rng.choices(self.pool, k=max(1, nbytes // 48))
        return "\n".join(lines)

    def output_size(self) -> int:
        """Bytes of one tool result: mostly a few KB, sometimes tens, rarely hundreds."""
        return min(int(self.rng.lognormvariate(math.log(3000), 1.1)), 400_000)

    def blob(self, nbytes: int) -> str:
        return "".join(self.rng.choices(_B64, k=nbytes))


# --------------------------------------------------------------------------- Claude Code


def claude_user_line(
    session_id: str, cwd: str, text: str, ts: float, rng: random.Random, parent: str | None = None
) -> str:
    """One Claude Code prompt entry (a JSONL line with its newline)."""
    return _dump(
        {
            "parentUuid": parent,
            "isSidechain": False,
            "userType": "external",
            "cwd": cwd,
            "sessionId": session_id,
            "version": "2.1.38",
            "gitBranch": "main",
            "type": "user",
            "message": {"role": "user", "content": text},
            "uuid": _uuid(rng),
            "timestamp": iso(ts),
            "permissionMode": "default",
        }
    )


def _dump(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False) + "\n"


def _compact(obj: Any) -> str:
    """One line as ``JSON.stringify`` writes it (the Node hosts: Gemini CLI, Copilot CLI)."""
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":")) + "\n"


class _Session:
    """One transcript being written: its file, clock, and what went into it."""

    def __init__(self, text: Text, fh: TextIO, sid: str, cwd: str, ts: float) -> None:
        self.t, self.fh, self.sid, self.cwd, self.ts = text, fh, sid, cwd, ts
        self.bytes = self.lines = self.prose_chars = self.prose_turns = 0

    def write(self, data: str, lines: int = 1) -> None:
        self.fh.write(data)
        self.bytes += len(data.encode())
        self.lines += lines

    def said(self, prose: str) -> None:
        """Count one indexable turn (a prompt, an answer, a note)."""
        self.prose_chars += len(prose)
        self.prose_turns += 1

    def tool_output(self, cap: int = 400_000) -> str:
        return self.t.output(min(self.t.output_size(), cap))


class _Claude(_Session):
    def __init__(self, text: Text, fh: TextIO, session_id: str, cwd: str, ts: float) -> None:
        super().__init__(text, fh, session_id, cwd, ts)
        self.parent: str | None = None

    def emit(self, line: str) -> None:
        self.write(line)

    def base(self, kind: str) -> dict[str, Any]:
        self.ts += self.t.rng.uniform(0.2, 20)
        uid = _uuid(self.t.rng)
        obj = {
            "parentUuid": self.parent,
            "isSidechain": False,
            "userType": "external",
            "cwd": self.cwd,
            "sessionId": self.sid,
            "version": "2.1.38",
            "gitBranch": "main",
            "type": kind,
            "uuid": uid,
            "timestamp": iso(self.ts),
        }
        self.parent = uid
        return obj

    def assistant(self, content: list[dict[str, Any]]) -> None:
        r = self.t.rng
        obj = self.base("assistant")
        obj["message"] = {
            "model": "claude-opus-4-6",
            "id": f"msg_{self.t.blob(24)}",
            "type": "message",
            "role": "assistant",
            "content": content,
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {
                "input_tokens": r.randint(1, 9),
                "cache_read_input_tokens": r.randint(1000, 90000),
                "output_tokens": r.randint(10, 2000),
            },
        }
        obj["requestId"] = f"req_{self.t.blob(24)}"
        self.emit(_dump(obj))

    def exchange(self) -> None:
        t, r = self.t, self.t.rng
        if r.random() < 0.5:
            snap = {
                "type": "file-history-snapshot",
                "messageId": _uuid(r),
                "snapshot": {
                    "messageId": _uuid(r),
                    "trackedFileBackups": {},
                    "timestamp": iso(self.ts),
                },
                "isSnapshotUpdate": False,
            }
            self.emit(_dump(snap))
        prompt = t.prose(r.randint(8, 90))
        self.emit(claude_user_line(self.sid, self.cwd, prompt, self.ts, r, self.parent))
        self.ts += 1
        self.parent = None
        self.said(prompt)
        for _ in range(r.randint(1, 10)):
            content: list[dict[str, Any]] = []
            if r.random() < 0.4:
                content.append(
                    {
                        "type": "thinking",
                        "thinking": t.prose(r.randint(20, 150)),
                        "signature": t.blob(r.randint(200, 800)),
                    }
                )
            if r.random() < 0.3:
                note = t.prose(r.randint(5, 30))
                content.append({"type": "text", "text": note})
                self.said(note)
            tool_id = f"toolu_{t.blob(24)}"
            name = r.choice(_TOOLS)
            args = (
                {"command": r.choice(t.pool), "description": t.prose(6)}
                if name == "Bash"
                else {"file_path": f"{self.cwd}/src/{r.choice(_NAMES)}.py"}
            )
            content.append({"type": "tool_use", "id": tool_id, "name": name, "input": args})
            self.assistant(content)
            if r.random() < 0.5:
                prog = self.base("progress")
                prog["data"] = {
                    "type": "hook_progress",
                    "hookEvent": "PostToolUse",
                    "hookName": f"PostToolUse:{name}",
                    "command": "callback",
                }
                prog["toolUseID"] = prog["parentToolUseID"] = tool_id
                self.emit(_dump(prog))
            out = t.output(t.output_size())
            res = self.base("user")
            res["message"] = {
                "role": "user",
                "content": [
                    {
                        "tool_use_id": tool_id,
                        "type": "tool_result",
                        "content": out,
                        "is_error": r.random() < 0.05,
                    }
                ],
            }
            if name == "Bash":  # the harness keeps a second copy of command output
                res["toolUseResult"] = {
                    "stdout": out,
                    "stderr": "",
                    "interrupted": False,
                    "isImage": False,
                }
            self.emit(_dump(res))
        answer = t.prose(r.randint(30, 400))
        self.assistant([{"type": "text", "text": answer}])
        self.said(answer)

    def finish(self, title: str) -> None:
        self.emit(_dump({"type": "ai-title", "aiTitle": title, "sessionId": self.sid}))


def write_claude_session(
    path: Path, target_bytes: int, text: Text, ts: float, cwd: str = "/home/user/projects/app"
) -> _Claude:
    """Write one Claude Code session of about ``target_bytes`` to ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    sid = path.name[: -len(".jsonl")]
    with open(path, "w", encoding="utf-8") as fh:
        s = _Claude(text, fh, sid, cwd, ts)
        while s.bytes < target_bytes:
            s.exchange()
        s.finish(text.prose(5))
    return s


# --------------------------------------------------------------------------- Codex


def codex_user_lines(text: str, ts: float) -> str:
    """A Codex prompt as the CLI writes it: the response item and its event twin."""
    stamp = iso(ts)
    item = {
        "timestamp": stamp,
        "type": "response_item",
        "payload": {
            "type": "message",
            "role": "user",
            "content": [{"type": "input_text", "text": text}],
        },
    }
    event = {
        "timestamp": stamp,
        "type": "event_msg",
        "payload": {
            "type": "user_message",
            "message": text,
            "images": [],
            "local_images": [],
            "text_elements": [],
        },
    }
    return _dump(item) + _dump(event)


class _Codex(_Session):
    def emit(self, kind: str, payload: dict[str, Any]) -> None:
        self.ts += self.t.rng.uniform(0.05, 8)
        self.write(_dump({"timestamp": iso(self.ts), "type": kind, "payload": payload}))

    def meta(self) -> None:
        self.emit(
            "session_meta",
            {
                "id": self.sid,
                "timestamp": iso(self.ts),
                "cwd": self.cwd,
                "originator": "codex-tui",
                "cli_version": "0.125.0",
                "source": "cli",
                "model_provider": "openai",
                "base_instructions": {"text": self.t.instructions},
            },
        )

    def turn(self, first: bool) -> None:
        t, r = self.t, self.t.rng
        turn_id = _uuid(r)
        self.emit(
            "event_msg",
            {"type": "task_started", "turn_id": turn_id, "model_context_window": 258400},
        )
        if first:
            env = f"<environment_context>\n  <cwd>{self.cwd}</cwd>\n</environment_context>"
            self.emit(
                "response_item",
                {
                    "type": "message",
                    "role": "user",
                    "content": [{"type": "input_text", "text": env}],
                },
            )
        self.emit(
            "turn_context",
            {
                "turn_id": turn_id,
                "cwd": self.cwd,
                "approval_policy": "on-request",
                "model": "gpt-5.5",
                "sandbox_policy": {"type": "workspace-write", "network_access": False},
            },
        )
        prompt = t.prose(r.randint(8, 90))
        self.write(codex_user_lines(prompt, self.ts), lines=2)
        self.said(prompt)
        for _ in range(r.randint(1, 10)):
            self.emit(
                "response_item",
                {
                    "type": "reasoning",
                    "summary": [],
                    "content": None,
                    "encrypted_content": t.blob(r.randint(600, 3000)),
                },
            )
            call_id = f"call_{t.blob(24)}"
            cmd = r.choice(t.pool)
            self.emit(
                "response_item",
                {
                    "type": "function_call",
                    "name": "exec_command",
                    "arguments": json.dumps({"cmd": cmd, "workdir": self.cwd}),
                    "call_id": call_id,
                },
            )
            self.emit(
                "event_msg",
                {
                    "type": "token_count",
                    "info": {
                        "total_token_usage": {
                            "input_tokens": r.randint(1000, 90000),
                            "output_tokens": r.randint(10, 999),
                        }
                    },
                },
            )
            out = t.output(t.output_size())
            self.emit(
                "response_item",
                {
                    "type": "function_call_output",
                    "call_id": call_id,
                    "output": f"Chunk ID: {t.blob(6)}\nWall time: 0.4 seconds\n"
                    f"Process exited with code 0\nOutput:\n{out}",
                },
            )
            self.emit(
                "event_msg",
                {
                    "type": "exec_command_end",
                    "call_id": call_id,
                    "turn_id": turn_id,
                    "command": ["/bin/bash", "-lc", cmd],
                    "cwd": self.cwd,
                    "aggregated_output": out,
                    "exit_code": 0,
                },
            )
        answer = t.prose(r.randint(30, 400))
        self.emit("event_msg", {"type": "agent_message", "message": answer})
        self.emit(
            "response_item",
            {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": answer}],
            },
        )
        self.emit(
            "event_msg", {"type": "task_complete", "turn_id": turn_id, "last_agent_message": answer}
        )
        self.said(answer)


def write_codex_session(
    home: Path, target_bytes: int, text: Text, ts: float, sid: str, cwd: str
) -> tuple[Path, _Codex]:
    dt = datetime.fromtimestamp(ts, tz=UTC)
    day = home / ".codex" / "sessions" / f"{dt:%Y}" / f"{dt:%m}" / f"{dt:%d}"
    day.mkdir(parents=True, exist_ok=True)
    path = day / f"rollout-{dt:%Y-%m-%dT%H-%M-%S}-{sid}.jsonl"
    with open(path, "w", encoding="utf-8") as fh:
        s = _Codex(text, fh, sid, cwd, ts)
        s.meta()
        first = True
        while s.bytes < target_bytes:
            s.turn(first)
            first = False
    return path, s


# --------------------------------------------------------------------------- Gemini CLI

#: Gemini CLI tools: (name, displayName); the shell's output is shown again in ``resultDisplay``.
_GEMINI_TOOLS = (
    ("run_shell_command", "Shell"),
    ("read_file", "ReadFile"),
    ("search_file_content", "SearchText"),
    ("replace", "Edit"),
    ("list_directory", "ReadFolder"),
    ("glob", "FindFiles"),
)
#: Gemini truncates a tool result to this (``MAX_TOOL_OUTPUT_SIZE``).
GEMINI_MAX_TOOL_OUTPUT = 50_000


def gemini_slug(cwd: str) -> str:
    """The v0.29+ project dir name: the basename, lower-cased, non-alphanumerics as ``-``."""
    return re.sub(r"[^a-z0-9]+", "-", cwd.rsplit("/", 1)[-1].lower()).strip("-") or "project"


class _Gemini(_Session):
    """A v0.39+ JSONL recording: header, message records (a ``gemini`` message is
    appended with its thoughts first, then again complete), ``$set`` updates."""

    def record(self, obj: dict[str, Any]) -> None:
        self.write(_compact(obj))

    def stamp(self) -> str:
        self.ts += self.t.rng.uniform(0.2, 20)
        return iso(self.ts)

    def header(self) -> None:
        self.record(
            {
                "sessionId": self.sid,
                "projectHash": hashlib.sha256(self.cwd.encode()).hexdigest(),
                "startTime": iso(self.ts),
                "lastUpdated": iso(self.ts),
                "kind": "main",
            }
        )

    def model_turn(self, content: str, calls: list[dict[str, Any]] | None = None) -> None:
        t, r = self.t, self.t.rng
        mid, stamp = _uuid(r), self.stamp()
        thoughts = [
            {"subject": t.prose(4), "description": t.prose(r.randint(20, 150)), "timestamp": stamp}
            for _ in range(r.randint(0, 2))
        ]
        tokens = {"input": r.randint(2000, 90000), "output": r.randint(10, 2000), "cached": 0}
        tokens |= {"thoughts": r.randint(0, 500), "tool": 0}
        tokens["total"] = tokens["input"] + tokens["output"] + tokens["thoughts"]
        msg: dict[str, Any] = {"id": mid, "timestamp": stamp, "type": "gemini", "content": ""}
        msg |= {"thoughts": thoughts, "tokens": tokens, "model": "gemini-3-pro-preview"}
        if calls is not None:
            self.record(msg)  # streamed first with its thoughts, completed below
            msg["toolCalls"] = calls
        msg["content"] = content
        self.record(msg)
        if content:
            self.said(content)

    def tool_call(self) -> dict[str, Any]:
        t, r = self.t, self.t.rng
        name, display = r.choice(_GEMINI_TOOLS)
        call_id = f"{name}-{int(self.ts * 1000)}-{r.getrandbits(52):013x}"
        out = self.tool_output(GEMINI_MAX_TOOL_OUTPUT)
        if name == "run_shell_command":
            args: dict[str, Any] = {"command": r.choice(t.pool), "description": t.prose(6)}
            shown = out
        else:
            args = {"file_path": f"{self.cwd}/src/{r.choice(_NAMES)}.py"}
            shown = f"Read {out.count(chr(10)) + 1} lines."
        response = {"id": call_id, "name": name, "response": {"output": out}}
        return {
            "id": call_id,
            "name": name,
            "args": args,
            "result": [{"functionResponse": response}],
            "status": "error" if r.random() < 0.05 else "success",
            "timestamp": iso(self.ts),
            "resultDisplay": shown,
            "displayName": display,
            "description": t.prose(8),
            "renderOutputAsMarkdown": name != "run_shell_command",
        }

    def exchange(self) -> None:
        t, r = self.t, self.t.rng
        prompt = t.prose(r.randint(8, 90))
        stamp = self.stamp()
        self.record(
            {"id": _uuid(r), "timestamp": stamp, "type": "user", "content": [{"text": prompt}]}
        )
        self.said(prompt)
        self.record({"$set": {"lastUpdated": stamp}})
        for _ in range(r.randint(1, 10)):
            note = t.prose(r.randint(5, 30)) if r.random() < 0.3 else ""
            self.model_turn(note, [self.tool_call()])
        self.model_turn(t.prose(r.randint(30, 400)))
        self.record({"$set": {"lastUpdated": iso(self.ts)}})


def gemini_user_line(text: str, ts: float, rng: random.Random) -> str:
    """One Gemini CLI prompt record of a JSONL recording (with its newline)."""
    record = {"id": _uuid(rng), "timestamp": iso(ts), "type": "user", "content": [{"text": text}]}
    return _compact(record)


def write_gemini_session(
    home: Path, target_bytes: int, text: Text, ts: float, sid: str, cwd: str
) -> tuple[Path, _Gemini]:
    gemini = home / ".gemini"
    project = gemini / "tmp" / gemini_slug(cwd)
    chats = project / "chats"
    chats.mkdir(parents=True, exist_ok=True)
    (project / ".project_root").write_text(cwd)
    registry = gemini / "projects.json"
    projects = json.loads(registry.read_text())["projects"] if registry.exists() else {}
    if cwd not in projects:
        projects[cwd] = gemini_slug(cwd)
        registry.write_text(json.dumps({"projects": projects}, indent=2))
    dt = datetime.fromtimestamp(ts, tz=UTC)
    path = chats / f"session-{dt:%Y-%m-%dT%H-%M}-{sid[:8]}.jsonl"
    with open(path, "w", encoding="utf-8") as fh:
        s = _Gemini(text, fh, sid, cwd, ts)
        s.header()
        while s.bytes < target_bytes:
            s.exchange()
        s.record({"$set": {"summary": text.prose(5)}})
    return path, s


# --------------------------------------------------------------------------- Copilot CLI

#: Copilot CLI tools and the argument each takes.
_COPILOT_TOOLS = (("bash", "command"), ("view", "path"), ("edit", "path"), ("grep", "pattern"))
COPILOT_VERSION = "1.0.78"
COPILOT_MODEL = "claude-sonnet-4.6"


class _Copilot(_Session):
    """``events.jsonl``: typed events chained by ``parentId``."""

    def __init__(self, text: Text, fh: TextIO, sid: str, cwd: str, ts: float) -> None:
        super().__init__(text, fh, sid, cwd, ts)
        self.parent: str | None = None
        self.first_prompt = ""

    def event(self, kind: str, data: dict[str, Any]) -> None:
        self.ts += self.t.rng.uniform(0.05, 8)
        eid = _uuid(self.t.rng)
        self.write(
            _compact(
                {
                    "type": kind,
                    "data": data,
                    "id": eid,
                    "timestamp": iso(self.ts),
                    "parentId": self.parent,
                }
            )
        )
        self.parent = eid

    def start(self) -> None:
        context = {"cwd": self.cwd, "gitRoot": self.cwd, "branch": "main"}
        self.event(
            "session.start",
            {
                "sessionId": self.sid,
                "version": 1,
                "producer": "copilot-agent",
                "copilotVersion": COPILOT_VERSION,
                "startTime": iso(self.ts),
                "context": context,
                "alreadyInUse": False,
            },
        )
        self.event("session.model_change", {"newModel": COPILOT_MODEL})
        self.event("system.message", {"role": "system", "content": self.t.instructions})

    def exchange(self) -> None:
        t, r = self.t, self.t.rng
        interaction = _uuid(r)
        prompt = t.prose(r.randint(8, 90))
        self.first_prompt = self.first_prompt or prompt
        transformed = (
            f"<current_datetime>{iso(self.ts)}</current_datetime>\n\n{prompt}\n\n"
            "<system_reminder>\n<sql_tables>Available tables: todos, todo_deps</sql_tables>\n"
            "</system_reminder>"
        )
        self.event(
            "user.message",
            {
                "content": prompt,
                "transformedContent": transformed,
                "attachments": [],
                "delivery": "idle",
                "interactionId": interaction,
            },
        )
        self.said(prompt)
        steps = r.randint(1, 10)
        for turn in range(steps + 1):
            ids = {"interactionId": interaction, "turnId": str(turn)}
            self.event("assistant.turn_start", ids)
            if turn < steps:
                note = t.prose(r.randint(5, 30)) if r.random() < 0.3 else ""
                self.tool_turn(note, ids)
            else:
                self.message(t.prose(r.randint(30, 400)), ids)
            self.event("assistant.turn_end", {"turnId": str(turn)})

    def message(self, content: str, ids: dict[str, str], **extra: Any) -> None:
        t, r = self.t, self.t.rng
        msg: dict[str, Any] = {"messageId": _uuid(r), "model": COPILOT_MODEL, "content": content}
        msg |= extra
        if r.random() < 0.4:
            msg["reasoningText"] = t.prose(r.randint(20, 150))
        self.event("assistant.message", msg | ids | {"outputTokens": r.randint(10, 2000)})
        if content:
            self.said(content)

    def tool_turn(self, note: str, ids: dict[str, str]) -> None:
        t, r = self.t, self.t.rng
        name, arg = r.choice(_COPILOT_TOOLS)
        call_id = f"toolu_{t.blob(24)}"
        args = {arg: r.choice(t.pool) if name == "bash" else f"src/{r.choice(_NAMES)}.py"}
        request = {"toolCallId": call_id, "name": name, "arguments": args, "type": "function"}
        self.message(note, ids, toolRequests=[request | {"intentionSummary": t.prose(3)}])
        start = {"toolCallId": call_id, "toolName": name, "arguments": args}
        self.event("tool.execution_start", start | {"turnId": ids["turnId"]})
        out = self.tool_output()
        self.event(
            "tool.execution_complete",
            {
                "toolCallId": call_id,
                "model": COPILOT_MODEL,
                **ids,
                "success": True,
                "result": {"content": out, "detailedContent": out},
                "toolTelemetry": {"properties": {"tool": name}},
            },
        )

    def workspace(self, created: str) -> str:
        """``workspace.yaml``: the title (``name``) is the first prompt."""
        return (
            f"id: {self.sid}\ncwd: {self.cwd}\ngit_root: {self.cwd}\nbranch: main\n"
            f"client_name: github/cli\nname: {json.dumps(self.first_prompt[:80])}\n"
            f"user_named: false\nsummary_count: 0\ncreated_at: {created}\n"
            f"updated_at: {iso(self.ts)}\n"
        )


def copilot_user_line(text: str, ts: float, rng: random.Random) -> str:
    """One Copilot CLI ``user.message`` event (with its newline)."""
    data = {"content": text, "transformedContent": text, "attachments": [], "delivery": "idle"}
    data["interactionId"] = _uuid(rng)
    event = {"type": "user.message", "data": data, "id": _uuid(rng), "timestamp": iso(ts)}
    return _compact(event | {"parentId": None})


def write_copilot_session(
    home: Path, target_bytes: int, text: Text, ts: float, sid: str, cwd: str
) -> tuple[Path, _Copilot]:
    folder = home / ".copilot" / "session-state" / sid
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "events.jsonl"
    with open(path, "w", encoding="utf-8") as fh:
        s = _Copilot(text, fh, sid, cwd, ts)
        s.start()
        while s.bytes < target_bytes:
            s.exchange()
        s.event("session.shutdown", {"shutdownType": "routine", "currentModel": COPILOT_MODEL})
    (folder / "workspace.yaml").write_text(s.workspace(iso(ts)))
    return path, s


# --------------------------------------------------------------------------- corpus


#: What the generator writes under its root (and removes to regenerate).
_OWNED = (STAMP, ".claude", ".codex", ".gemini", ".copilot")


def parse_hosts(spec: str) -> tuple[str, ...]:
    """``"claude-code,codex"`` -> the hosts in :data:`HOSTS` order; unknown names are an error."""
    wanted = {h.strip() for h in spec.split(",") if h.strip()}
    unknown = sorted(wanted - set(HOSTS))
    if unknown or not wanted:
        raise ValueError(
            f"--hosts {spec!r}: unknown host {', '.join(unknown) or '(none given)'};"
            f" choose from {','.join(HOSTS)}"
        )
    return tuple(h for h in HOSTS if h in wanted)


def _thresholds(hosts: tuple[str, ...]) -> list[tuple[float, str]]:
    """Cumulative shares: one ``rng.random()`` draw per session picks its host."""
    total = sum(HOST_SHARES[h] for h in hosts)
    out: list[tuple[float, str]] = []
    acc = 0.0
    for host in hosts:
        acc += HOST_SHARES[host]
        out.append((round(acc / total, 12), host))  # 0.525 / 0.75 is exactly 0.7
    return out


def _reuse(root: Path, size_mb: int, seed: int, hosts: tuple[str, ...]) -> Stats | None:
    """The stats of a corpus already in ``root`` made with these parameters; an
    older one made with others is removed (the directory must hold nothing else)."""
    stamp = root / STAMP
    if not stamp.exists():
        return None
    old = json.loads(stamp.read_text())
    old_hosts = tuple(old.get("hosts", ("claude-code", "codex")))  # stamps before --hosts
    if (old.get("size_mb"), old.get("seed"), old_hosts) == (size_mb, seed, hosts):
        return Stats(**old)
    others = sorted(p.name for p in root.iterdir() if p.name not in _OWNED)
    if others:
        raise SystemExit(
            f"{root} holds another corpus ({stamp}) and other files ({', '.join(others)});"
            " use an empty directory"
        )
    for name in _OWNED:
        path = root / name
        if path.is_dir():
            shutil.rmtree(path)
        elif path.exists():
            path.unlink()
    return None


def generate(root: Path, size_mb: int, seed: int, hosts: tuple[str, ...] = HOSTS) -> Stats:
    """Write about ``size_mb`` MB of ``hosts``' transcripts under ``root`` (used as ``$HOME``).

    Reuses an existing corpus generated with the same size, seed and hosts, and
    regenerates one made with others.
    """
    hosts = parse_hosts(",".join(hosts))
    reused = _reuse(root, size_mb, seed, hosts)
    if reused is not None:
        return reused
    started = time.monotonic()
    rng = random.Random(seed)
    text = Text(rng)
    stats = Stats(root=str(root), size_mb=size_mb, seed=seed, hosts=list(hosts))
    target = size_mb * 1_000_000
    projects = [f"{rng.choice(_NAMES)}-{rng.choice(_NAMES)}-{i}" for i in range(12)]
    shares = _thresholds(hosts)
    ts = BASE_TS
    while stats.bytes < target:
        size = int(rng.lognormvariate(math.log(MEDIAN_SESSION_BYTES), 1.0))
        size = max(20_000, min(size, MAX_SESSION_BYTES, target - stats.bytes + 20_000))
        project = rng.choice(projects)
        cwd = f"/home/user/projects/{project}"
        ts += rng.uniform(600, 20_000)
        sid = _uuid(rng)
        draw = rng.random()
        host = next((h for limit, h in shares if draw < limit), hosts[-1])
        session: _Session
        if host == "claude-code":
            slug = cwd.replace("/", "-")
            path = root / ".claude" / "projects" / slug / f"{sid}.jsonl"
            session = write_claude_session(path, size, text, ts, cwd)
        elif host == "codex":
            _path, session = write_codex_session(root, size, text, ts, sid, cwd)
        elif host == "gemini-cli":
            _path, session = write_gemini_session(root, size, text, ts, sid, cwd)
        else:
            _path, session = write_copilot_session(root, size, text, ts, sid, cwd)
        stats.add(host, session)
    stats.seconds = round(time.monotonic() - started, 2)
    stamp = root / STAMP
    stamp.write_text(json.dumps(asdict(stats), indent=1))
    return stats


def transcripts(root: Path) -> list[Path]:
    """Every transcript of a generated corpus, in a stable order."""
    found = list((root / ".claude" / "projects").glob("*/*.jsonl"))
    found += list((root / ".codex" / "sessions").glob("*/*/*/rollout-*.jsonl"))
    found += list((root / ".gemini" / "tmp").glob("*/chats/session-*.jsonl"))
    found += list((root / ".copilot" / "session-state").glob("*/events.jsonl"))
    return sorted(found)


def common_words(n: int = 5) -> list[str]:
    """Frequent prose words (after the commonest glue words), most frequent first."""
    return [w for w in _WORDS[16:] if w.isalpha() and len(w) > 3][:n]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("root", type=Path, help="directory to fill (used as $HOME by the benches)")
    ap.add_argument("--size-mb", type=int, default=200)
    ap.add_argument("--seed", type=int, default=1)
    add_hosts_option(ap)
    args = ap.parse_args(argv)
    args.root.mkdir(parents=True, exist_ok=True)
    stats = generate(args.root, args.size_mb, args.seed, args.hosts)
    prose_pct = 100 * stats.prose_chars / max(stats.bytes, 1)
    print(
        f"{stats.files} sessions, {stats.bytes / 1e6:.1f} MB, {stats.lines} lines, "
        f"{stats.prose_turns} prose turns ({stats.prose_chars / 1e6:.1f} MB, "
        f"{prose_pct:.1f} % of bytes), in {stats.seconds} s"
    )
    for host, h in sorted(stats.by_host.items()):
        print(
            f"  {host:<12} {h['files']:>5} files {h['bytes'] / 1e6:>8.1f} MB"
            f" {h.get('turns', 0):>8} prose turns"
        )
    return 0


def add_corpus_options(ap: argparse.ArgumentParser, size_mb: int = 240) -> None:
    """``--corpus DIR`` (required), ``--size-mb`` and ``--seed``: the corpus a bench
    generates into, or reuses when DIR already holds it."""
    ap.add_argument("--corpus", type=Path, required=True, help="generate into / reuse")
    ap.add_argument("--size-mb", type=int, default=size_mb)
    ap.add_argument("--seed", type=int, default=1)


def add_hosts_option(ap: argparse.ArgumentParser) -> None:
    """``--hosts a,b``: which hosts the corpus holds (the benches share this option)."""

    def hosts(spec: str) -> tuple[str, ...]:
        try:
            return parse_hosts(spec)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    ap.add_argument(
        "--hosts",
        type=hosts,
        default=HOSTS,
        help=f"comma list of hosts to write (default {','.join(HOSTS)}; shares {HOST_SHARES})",
    )


if __name__ == "__main__":
    sys.exit(main())
