"""A synthetic but realistic transcript corpus for the benchmarks.

Run from the repository root::

    python bench/corpus.py OUT_DIR                 # ~200 MB, seed 1
    python bench/corpus.py OUT_DIR --size-mb 50 --seed 3

``OUT_DIR`` is laid out like a home directory: Claude Code sessions under
``.claude/projects/<slug>/<uuid>.jsonl`` (about 70 % of sessions) and Codex
rollouts under ``.codex/sessions/YYYY/MM/DD/rollout-<stamp>-<uuid>.jsonl``, in the
real line formats (see tests/fixtures/claude-code and tests/fixtures/codex). As
in real transcripts, tool results dominate the bytes (Claude Code ``tool_result``
blocks and their ``toolUseResult`` copies, Codex ``function_call_output`` and
``exec_command_end`` output, Codex ``session_meta`` instructions, encrypted
reasoning); prose (prompts, answers, summaries) is a few percent. Session sizes
are log-normal (median ~400 KB, a few of several MB). Same seed, same bytes.

As a module::

    from corpus import generate
    stats = generate(Path(root), size_mb=50, seed=1)

Benches that append to transcripts use :func:`claude_user_line` /
:func:`codex_user_lines` to write lines in the host's own format.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import sys
import time
import uuid
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

#: Timestamps start here (fixed, so the corpus is deterministic).
BASE_TS = 1_767_225_600.0  # 2026-01-01T00:00:00Z
CLAUDE_SHARE = 0.7
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
    files: int = 0
    bytes: int = 0
    lines: int = 0
    #: Characters of prose written (prompts, answers, summaries): what gets indexed.
    prose_chars: int = 0
    prose_turns: int = 0
    by_host: dict[str, dict[str, int]] = field(default_factory=dict)
    seconds: float = 0.0

    def add(self, host: str, nbytes: int, lines: int) -> None:
        h = self.by_host.setdefault(host, {"files": 0, "bytes": 0})
        h["files"] += 1
        h["bytes"] += nbytes
        self.files += 1
        self.bytes += nbytes
        self.lines += lines


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


class _Claude:
    def __init__(self, text: Text, fh: TextIO, session_id: str, cwd: str, ts: float) -> None:
        self.t, self.fh, self.sid, self.cwd, self.ts = text, fh, session_id, cwd, ts
        self.parent: str | None = None
        self.bytes = self.lines = self.prose_chars = self.prose_turns = 0

    def emit(self, line: str) -> None:
        self.fh.write(line)
        self.bytes += len(line.encode())
        self.lines += 1

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
        self.prose_chars += len(prompt)
        self.prose_turns += 1
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
                self.prose_chars += len(note)
                self.prose_turns += 1
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
        self.prose_chars += len(answer)
        self.prose_turns += 1

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


class _Codex:
    def __init__(self, text: Text, fh: TextIO, sid: str, cwd: str, ts: float) -> None:
        self.t, self.fh, self.sid, self.cwd, self.ts = text, fh, sid, cwd, ts
        self.bytes = self.lines = self.prose_chars = self.prose_turns = 0

    def emit(self, kind: str, payload: dict[str, Any]) -> None:
        self.ts += self.t.rng.uniform(0.05, 8)
        line = _dump({"timestamp": iso(self.ts), "type": kind, "payload": payload})
        self.fh.write(line)
        self.bytes += len(line.encode())
        self.lines += 1

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
        lines = codex_user_lines(prompt, self.ts)
        self.fh.write(lines)
        self.bytes += len(lines.encode())
        self.lines += 2
        self.prose_chars += len(prompt)
        self.prose_turns += 1
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
        self.prose_chars += len(answer)
        self.prose_turns += 1


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


# --------------------------------------------------------------------------- corpus


def generate(root: Path, size_mb: int, seed: int) -> Stats:
    """Write about ``size_mb`` MB of transcripts under ``root`` (used as ``$HOME``).

    Reuses an existing corpus generated with the same size and seed.
    """
    stamp = root / STAMP
    if stamp.exists():
        old = json.loads(stamp.read_text())
        if old.get("size_mb") == size_mb and old.get("seed") == seed:
            return Stats(**old)
        raise SystemExit(f"{root} holds another corpus ({stamp}); use an empty directory")
    started = time.monotonic()
    rng = random.Random(seed)
    text = Text(rng)
    stats = Stats(root=str(root), size_mb=size_mb, seed=seed)
    target = size_mb * 1_000_000
    projects = [f"{rng.choice(_NAMES)}-{rng.choice(_NAMES)}-{i}" for i in range(12)]
    ts = BASE_TS
    while stats.bytes < target:
        size = int(rng.lognormvariate(math.log(MEDIAN_SESSION_BYTES), 1.0))
        size = max(20_000, min(size, MAX_SESSION_BYTES, target - stats.bytes + 20_000))
        project = rng.choice(projects)
        cwd = f"/home/user/projects/{project}"
        ts += rng.uniform(600, 20_000)
        sid = _uuid(rng)
        host: str
        session: _Claude | _Codex
        if rng.random() < CLAUDE_SHARE:
            host = "claude-code"
            slug = cwd.replace("/", "-")
            path = root / ".claude" / "projects" / slug / f"{sid}.jsonl"
            session = write_claude_session(path, size, text, ts, cwd)
        else:
            host = "codex"
            path, session = write_codex_session(root, size, text, ts, sid, cwd)
        stats.add(host, session.bytes, session.lines)
        stats.prose_chars += session.prose_chars
        stats.prose_turns += session.prose_turns
    stats.seconds = round(time.monotonic() - started, 2)
    stamp.write_text(json.dumps(asdict(stats), indent=1))
    return stats


def transcripts(root: Path) -> list[Path]:
    """Every transcript of a generated corpus, in a stable order."""
    found = list((root / ".claude" / "projects").glob("*/*.jsonl"))
    found += list((root / ".codex" / "sessions").glob("*/*/*/rollout-*.jsonl"))
    return sorted(found)


def common_words(n: int = 5) -> list[str]:
    """Frequent prose words (after the commonest glue words), most frequent first."""
    return [w for w in _WORDS[16:] if w.isalpha() and len(w) > 3][:n]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("root", type=Path, help="directory to fill (used as $HOME by the benches)")
    ap.add_argument("--size-mb", type=int, default=200)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args(argv)
    args.root.mkdir(parents=True, exist_ok=True)
    stats = generate(args.root, args.size_mb, args.seed)
    prose_pct = 100 * stats.prose_chars / max(stats.bytes, 1)
    print(
        f"{stats.files} sessions, {stats.bytes / 1e6:.1f} MB, {stats.lines} lines, "
        f"{stats.prose_turns} prose turns ({stats.prose_chars / 1e6:.1f} MB, "
        f"{prose_pct:.1f} % of bytes), in {stats.seconds} s"
    )
    for host, h in sorted(stats.by_host.items()):
        print(f"  {host:<12} {h['files']:>5} files {h['bytes'] / 1e6:>8.1f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
