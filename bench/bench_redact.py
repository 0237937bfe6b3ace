"""Secret redaction: detect-secrets (Yelp) against backscroll's compiled rule set.

Run from the repository root::

    python bench/bench_redact.py            # ~4 MB synthetic transcript corpus
    python bench/bench_redact.py --mb 1     # smaller, quicker
    git show REV:backscroll/redact.py > old_redact.py
    python bench/bench_redact.py --compare old_redact.py   # an older rule set too

Prints, side by side: how many of backscroll's secret kinds each arm catches
(a planted fake secret per kind), how many findings each makes on clean text
(false positives), and throughput in MB/s of UTF-8 text. Then the compiled
rules alone on clean and on secret-bearing text, and an indexing proxy: the
same turns inserted into an SQLite FTS5 table with redaction off and on.

Times are CPU time of this process (``time.process_time``), so other work on a
shared machine skews them less than wall time; SQLite runs in-process, so the
store's work is counted too.

``--corpus DIR`` (a ``bench/corpus.py`` directory, as ``bench_index.py`` uses)
adds an in-process A/B of the cold index of that corpus, redaction off and on
alternating, which the load of a shared machine skews less than timing
separate processes.

``--compare FILE`` loads another redaction module (one that defines
``Redactor``, e.g. an older revision's) and prints, beside the current rules,
how many of today's kinds it catches and its throughput on the same texts.

The library arm is skipped with a message when detect-secrets is not installed
(``pip install detect-secrets``). It reports findings line by line; the glue
that would turn them into a redaction (replace each reported value in its
line) is included in its timing, since backscroll would need it.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import random
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from backscroll.model import ReadResult, Session, Turn
from backscroll.redact import Redactor, plant_examples, planted_secrets
from backscroll.store.writer import FileStat, IndexWriter, Update

_NEUTRAL = [
    "I'll start by reading the configuration loader to see how the defaults are merged.",
    "The test fails because the fixture writes the file after the watcher has started.",
    "This looks like a race between the debounce timer and the shutdown signal handler.",
    "I've updated the migration so the FTS table is rebuilt with the new stemmer.",
    "Running the suite again to confirm nothing else depended on the old behaviour.",
    "Now the reader yields one turn per message and skips the tool results entirely.",
    "Let me look at how the CLI formats the snippet before it prints the results.",
    "That change is in; the remaining failure is a flaky timing assertion in the daemon.",
    "Could you rename the helper so it says what it returns rather than how?",
    "I removed the retry loop since the writer already waits on the busy timeout.",
    "The diff is small, three files, and the type checker is happy with it now.",
    "Should we keep the old behaviour behind a flag, or drop it in this release?",
    "The log line now carries the path and the number of turns as extra fields.",
    "Here is the plan. Parse, group by session, then write everything in one batch.",
]
_KEYWORDY = [
    "Let me check whether the token count includes the system prompt before we trim it.",
    "Good catch: the password prompt only appears when the keyring backend is missing.",
    "We should pass the session key through to the writer instead of recomputing it.",
    "The API key lookup falls back to the environment when the config file has none.",
]
_PROSE = _NEUTRAL + _KEYWORDY
_CODE = [
    "def load(path: Path) -> Config:\n    with path.open() as fh:\n        return parse(fh.read())",
    "password = getpass.getpass()\ntoken = tokens[0]\napi_key = os.environ['API_KEY']",
    "for i, turn in enumerate(turns):\n    key = (turn.session_id, turn.key)\n    seen[key] = i",
    "tokenizer = AutoTokenizer.from_pretrained('bert-base-uncased')\nmax_tokens = 4096",
    "conn.execute('INSERT INTO turns_fts(rowid, text) VALUES (?, ?)', (rowid, text))",
    "@dataclass(frozen=True)\nclass Hit:\n    session: str\n    rank: float\n    snippet: str",
    "if not rows:\n    raise DatabaseError(f'no index at {path}: run backscroll index')",
    "async def serve(self) -> None:\n    server = await asyncio.start_unix_server(self.handle)",
    "parser.add_argument('--limit', type=int, default=20, help='results to show')",
    "return [Turn(sid, str(i), 'user', text) for i, text in enumerate(lines)]",
]
_TOOL = [
    "commit {sha}\nAuthor: Dev <dev@example.com>\nDate:   Tue Jun 11 10:{mm}:00 2024\n",
    '{{"id": "{uuid}", "type": "message", "input_tokens": {n}, "model": "m-1"}}',
    "src/backscroll/store/writer.py:{n}: error: Missing return statement  [return]",
    "-rw-r--r--  1 dev dev {n} Jun 11 10:{mm} /srv/app/releases/{sha}/manifest.json",
    "tests/store/test_writer.py::test_index_file_is_idempotent PASSED [{mm}%]",
]


def _hex(rng: random.Random, n: int) -> str:
    return "".join(rng.choice("0123456789abcdef") for _ in range(n))


def _turn(rng: random.Random) -> str:
    parts: list[str] = []
    for _ in range(rng.randint(4, 12)):
        pick = rng.random()
        if pick < 0.55:
            parts.append(" ".join(rng.choices(_PROSE, k=rng.randint(1, 4))))
        elif pick < 0.8:
            parts.append("```python\n" + rng.choice(_CODE) + "\n```")
        else:
            u = _hex(rng, 32)
            uuid = f"{u[:8]}-{u[8:12]}-{u[12:16]}-{u[16:20]}-{u[20:]}"
            parts.append(
                rng.choice(_TOOL).format(
                    sha=_hex(rng, 40), uuid=uuid, n=rng.randint(1, 99999), mm=rng.randint(10, 59)
                )
            )
    return "\n\n".join(parts)


def corpus(megabytes: float, seed: int = 7) -> list[str]:
    """Deterministic transcript-like turns: prose, code blocks, tool output."""
    rng = random.Random(seed)
    turns: list[str] = []
    size = 0
    while size < megabytes * 1_000_000:
        turns.append(_turn(rng))
        size += len(turns[-1].encode())
    return turns


def with_secrets(turns: list[str], every: int = 10) -> list[str]:
    """Every ``every``-th turn gets one planted example (kinds in rotation)."""
    examples = list(plant_examples().values())
    out = list(turns)
    for n, i in enumerate(range(0, len(out), every)):
        out[i] = out[i] + "\n\n" + examples[n % len(examples)] + "\n"
    return out


def mb(turns: list[str]) -> float:
    return sum(len(t.encode()) for t in turns) / 1_000_000


def best_rate(fn: Callable[[], object], megabytes: float, repeat: int = 3) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.process_time()
        fn()
        best = min(best, time.process_time() - start)
    return megabytes / best


# --- the library arm ------------------------------------------------------------


class DetectSecrets:
    """detect-secrets' file scan (non-eager, as ``detect-secrets scan`` runs), fed one
    turn's lines at a time, plus replace-what-it-reports glue.

    ``scan_line`` (its ad-hoc API) turns on eager search, which reports every
    short hex run ("ec", "7E") in ordinary text, so the file path is used.
    """

    def __init__(self) -> None:
        from detect_secrets.core import scan
        from detect_secrets.settings import default_settings, get_settings

        self._scan = scan
        self._default_settings = default_settings
        self._get_settings = get_settings

    @contextmanager
    def session(self) -> Iterator[None]:
        with self._default_settings():
            # The transcript is not a file on disk: skip the "is it a file" filter.
            self._get_settings().disable_filters("detect_secrets.filters.common.is_invalid_file")
            self._scan.get_filters.cache_clear()
            yield

    def findings(self, text: str) -> Iterator[tuple[str, str]]:
        lines = list(enumerate(text.splitlines(), start=1))
        for secret in self._scan._process_line_based_plugins(lines, "transcript.txt"):
            if secret.secret_value:
                yield secret.type, secret.secret_value

    def redact(self, text: str) -> str:
        for kind, value in sorted(self.findings(text), key=lambda f: -len(f[1])):
            text = text.replace(value, f"[REDACTED:{kind}]")
        return text


def caught(secret: str, findings: list[str]) -> bool:
    """A finding covers the planted secret (or at least half of it)."""
    return any(secret in v or (v in secret and 2 * len(v) >= len(secret)) for v in findings)


def load_library() -> DetectSecrets | None:
    try:
        return DetectSecrets()
    except ImportError:
        return None


# --- measurements -----------------------------------------------------------------


def coverage_compiled(redactor: Redactor) -> list[str]:
    """The kinds whose planted secret survives redaction."""
    secrets = planted_secrets()
    return [
        kind
        for kind, snippet in plant_examples().items()
        if secrets[kind] in redactor.redact(snippet)
    ]


def coverage_library(lib: DetectSecrets) -> list[str]:
    """The kinds whose planted secret no finding of the library covers."""
    secrets = planted_secrets()
    with lib.session():
        return [
            kind
            for kind, snippet in plant_examples().items()
            if not caught(secrets[kind], [v for _, v in lib.findings(snippet)])
        ]


def store_index(turns: list[str], redact: Callable[[str], str] | None, per_file: int = 50) -> float:
    """Seconds to cold-index ``turns`` into a fresh on-disk index with the real store
    writer (FTS5 porter, content table, triggers), ``per_file`` turns per file."""
    with tempfile.TemporaryDirectory() as tmp:
        writer = IndexWriter(Path(tmp) / "index.db")
        start = time.process_time()
        for n in range(0, len(turns), per_file):
            sid = f"s{n}"
            result = ReadResult(
                turns=tuple(
                    Turn(sid, f"k{i}", "assistant", redact(text) if redact else text, seq=i)
                    for i, text in enumerate(turns[n : n + per_file])
                ),
                sessions=(Session(sid, project="/srv/p"),),
            )
            stat = FileStat(size=n, mtime_ns=n, inode=n)
            writer.apply(Update(f"/t/{sid}.jsonl", "bench", stat, 1, None, True, result))
        elapsed = time.process_time() - start
        writer.close()
    return elapsed


def write_claude_sessions(root: Path, turns: list[str], per_session: int = 40) -> int:
    """Claude Code-shaped JSONL: user prompts, assistant text plus a tool call and its
    output (not indexed, as in real files). Returns the bytes written."""
    total = 0
    for n in range(0, len(turns), per_session):
        sid = f"00000000-0000-4000-8000-{n:012d}"
        lines = []
        for i, text in enumerate(turns[n : n + per_session]):
            base = {"sessionId": sid, "cwd": "/srv/p", "timestamp": "2026-01-02T03:04:05.000Z"}
            if i % 2 == 0:
                msg: dict[str, object] = {"role": "user", "content": text}
                lines.append({**base, "type": "user", "uuid": f"u{n}-{i}", "message": msg})
            else:
                content = [
                    {"type": "text", "text": text},
                    {"type": "tool_use", "id": f"t{i}", "name": "Bash", "input": {"command": "ls"}},
                ]
                msg = {"role": "assistant", "content": content}
                lines.append({**base, "type": "assistant", "uuid": f"a{n}-{i}", "message": msg})
                result = {"type": "tool_result", "tool_use_id": f"t{i}", "content": text[:400]}
                msg = {"role": "user", "content": [result]}
                lines.append({**base, "type": "user", "uuid": f"r{n}-{i}", "message": msg})
        data = "".join(json.dumps(line) + "\n" for line in lines)
        path = root / "-srv-p" / f"{sid}.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(data)
        total += len(data.encode())
    return total


def cold_index(turns: list[str], redaction: bool) -> tuple[float, int, int]:
    """Seconds, turns added and file bytes for a cold ``backscroll index`` (the no-daemon
    path, the real Claude Code reader and store) of ``turns``."""
    from backscroll import direct
    from backscroll.config import Config, HostConfig, RedactionConfig
    from backscroll.readers import READERS

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "projects"
        size = write_claude_sessions(root, turns)
        hosts = {
            r.host: HostConfig(enabled=r.host == "claude-code", roots=(str(root),)) for r in READERS
        }
        config = Config(
            data_dir=str(Path(tmp) / "data"),
            hosts=hosts,
            redaction=RedactionConfig(enabled=redaction),
        )
        start = time.process_time()
        summary, _ = direct.index(config)
        return time.process_time() - start, summary.turns_added, size


def corpus_ab(home: Path, rounds: int) -> None:
    """Cold ``backscroll index`` of a bench corpus in this process, off and on."""
    import dataclasses
    import os
    import statistics

    from backscroll import config as config_module
    from backscroll import direct
    from backscroll.config import RedactionConfig

    os.environ["HOME"] = str(home)
    for name in ("BACKSCROLL_CONFIG", "BACKSCROLL_HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME"):
        os.environ.pop(name, None)
    base = config_module.load()
    times: dict[bool, list[float]] = {False: [], True: []}
    for _ in range(rounds):
        for enabled in (False, True):
            with tempfile.TemporaryDirectory() as tmp:
                cfg = dataclasses.replace(
                    base, data_dir=tmp, redaction=RedactionConfig(enabled=enabled)
                )
                start = time.process_time()
                summary, _ = direct.index(cfg)
                times[enabled].append(time.process_time() - start)
    off, on = min(times[False]), min(times[True])
    pairs = statistics.median(b / a for a, b in zip(times[False], times[True], strict=True))
    print(f"\ncold index of {home} in-process, {summary.turns_added} turns, best of {rounds}")
    print(f"  redaction off {off:6.2f} s   on {on:6.2f} s CPU   on/off {on / off:.2f}x", end="")
    print(f"   (median of the {rounds} alternating pairs {pairs:.2f}x)")


def load_redactor(path: Path) -> Callable[[str], str]:
    """``Redactor().redact`` of the module in ``path``."""
    spec = importlib.util.spec_from_file_location("compared_redact", path)
    if spec is None or spec.loader is None:
        raise SystemExit(f"{path}: not a Python module — give the path of a redact.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    redact: Callable[[str], str] = module.Redactor().redact
    return redact


def compare(path: Path, redactor: Redactor, sets: list[tuple[str, list[str]]]) -> None:
    other = load_redactor(path)
    secrets = planted_secrets()
    kinds = len(secrets)
    missed = [k for k, snippet in plant_examples().items() if secrets[k] in other(snippet)]
    print(f"\ncompared with {path.name}: catches {kinds - len(missed)}/{kinds} of today's kinds")
    print(f"  {'MB/s':36}{'compared':>10}{'current':>10}")
    for label, turns in sets:
        size = mb(turns)
        # Alternate, so that a load change on the machine hits both alike.
        rates = [
            (
                best_rate(lambda t=turns: [other(x) for x in t], size, 1),
                best_rate(lambda t=turns: [redactor.redact(x) for x in t], size, 1),
            )
            for _ in range(5)
        ]
        old, new = max(r[0] for r in rates), max(r[1] for r in rates)
        print(f"  {label:36}{old:10.1f}{new:10.1f}   (current: {old / new:.2f}x the time)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mb", type=float, default=4.0, help="corpus size in MB (default 4)")
    parser.add_argument(
        "--library-mb", type=float, default=0.25, help="slice the library arm scans (slow)"
    )
    parser.add_argument(
        "--compare", type=Path, metavar="FILE", help="another redact module to time beside"
    )
    parser.add_argument("--corpus", type=Path, metavar="DIR", help="a bench/corpus.py directory")
    parser.add_argument("--rounds", type=int, default=5, help="rounds of the --corpus A/B")
    args = parser.parse_args()

    redactor = Redactor()
    clean = corpus(args.mb)
    dirty = with_secrets(clean)
    prose = [" ".join(random.Random(i).choices(_NEUTRAL, k=30)) for i in range(len(clean))]
    kinds = len(plant_examples())
    size = mb(clean)
    print(f"corpus: {len(clean)} turns, {size:.2f} MB clean; {mb(dirty):.2f} MB with secrets")
    print(f"        (one planted secret every 10th turn, {kinds} kinds in rotation)\n")

    caught = kinds - len(coverage_compiled(redactor))
    fp_compiled = sum(redactor.redact(t).count("[REDACTED:") for t in clean)
    rate_compiled = best_rate(lambda: [redactor.redact(t) for t in dirty], mb(dirty))

    lib = load_library()
    print(f"{'':34}{'detect-secrets':>16}{'compiled rules':>16}")
    if lib is None:
        print("detect-secrets is not installed (pip install detect-secrets): library arm skipped")
        print(f"{'kinds caught':34}{'-':>16}{caught:>13}/{kinds}")
        print(f"{'MB/s (with secrets)':34}{'-':>16}{rate_compiled:>16.1f}")
    else:
        missed_lib = coverage_library(lib)
        sample: list[str] = []
        while mb(sample) < args.library_mb and len(sample) < len(dirty):
            sample.append(dirty[len(sample)])
        clean_sample = clean[: len(sample)]
        with lib.session():
            fp_lib = sum(1 for t in clean_sample for _ in lib.findings(t))
            rate_lib = best_rate(lambda: [lib.redact(t) for t in sample], mb(sample), repeat=1)
        fp_compiled_sample = sum(redactor.redact(t).count("[REDACTED:") for t in clean_sample)
        print(f"{'kinds caught':34}{kinds - len(missed_lib):>13}/{kinds}{caught:>13}/{kinds}")
        print(
            f"{'false positives, clean sample':34}{fp_lib:>16}{fp_compiled_sample:>16}"
            f"   ({mb(clean_sample):.2f} MB)"
        )
        print(f"{'MB/s (with secrets)':34}{rate_lib:>16.2f}{rate_compiled:>16.1f}")
        print(f"detect-secrets misses: {', '.join(missed_lib) or 'nothing'}")

    print("\ncompiled rules alone")
    print(f"  false positives on the whole clean corpus: {fp_compiled}")
    for label, turns in (
        ("clean transcript text", clean),
        ("with secrets (1 in 10 turns)", dirty),
        ("prose, no candidate (fast path)", prose),
    ):
        rate = best_rate(lambda turns=turns: [redactor.redact(t) for t in turns], mb(turns))
        print(f"  {label:36}{rate:8.1f} MB/s")

    if args.compare is not None:
        sets = [("clean transcript text", clean), ("with secrets", dirty), ("prose", prose)]
        compare(args.compare, redactor, sets)

    # Off and on alternate, so a load change on the machine hits both alike.
    pairs = [(store_index(dirty, None), store_index(dirty, redactor.redact)) for _ in range(3)]
    plain, redacted = min(p[0] for p in pairs), min(p[1] for p in pairs)
    print("\nstore only: the secret-bearing turns through the store writer, no reader")
    print(f"  redaction off {plain:6.2f} s   on {redacted:6.2f} s CPU", end="   ")
    print(f"overhead {redacted / plain - 1:+.1%}   ({mb(dirty) / plain:.1f} MB/s without)")

    runs = [(cold_index(dirty, False), cold_index(dirty, True)) for _ in range(3)]
    off, on = min(r[0][0] for r in runs), min(r[1][0] for r in runs)
    _, added, size = runs[0][1]
    print("\ncold `backscroll index` (Claude Code JSONL, reader + store), best of 3")
    print(f"  {size / 1e6:.2f} MB of files, {added} turns")
    print(f"  redaction off {off:6.2f} s   on {on:6.2f} s CPU   overhead {on / off - 1:+.1%}")

    if args.corpus is not None:
        corpus_ab(args.corpus, args.rounds)


if __name__ == "__main__":
    main()
