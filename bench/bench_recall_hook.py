"""Auto-recall hook: precision and recall of what ``backscroll hook`` injects.

Run from the repository root::

    python bench/bench_recall_hook.py                  # 600 sessions, seed 1
    python bench/bench_recall_hook.py --sessions 1500 --seed 2

A generated index: Claude Code sessions (the real line format, see
bench/corpus.py) whose turns mix everyday coding words (found in nearly every
session), a few topic words per session (a long tail: some topics in many
sessions, most in a few) and, in some sessions, something planted for a prompt
to find:

- a rare identifier (``paxakope943``, ``parse_widget_cfg``, ``ERR-4821``) said in one turn;
- two distinctive words (each also in three other sessions) meeting in one turn;
- the same, but inflected differently in the prompt (``morvating chelts`` said,
  ``morvated chelt`` asked: FTS5's porter stemmer must bring them together).

Prompts that must recall that session (the target among the injected hits), and
prompts that must recall nothing: everyday requests made of common words only,
and requests naming one topic word found in five or more sessions. Each prompt
goes through ``hook.respond`` (the hook's own code) against a real daemon on the
index (READY=1 awaited, see tests/daemon/harness.py); the same search results are
also judged by the previous rule (two shared prompt words, three for a long
prompt), for comparison. Then the hook runs as the host runs it, one process per
prompt, spawn to exit, against the daemon: p50/p95 beside a bare interpreter's
(``python -c 'import socket, json'``), measured in the same run, interleaved.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "bench"), str(ROOT)]

from corpus import _WORDS, BASE_TS, claude_user_line  # noqa: E402

from backscroll import hook  # noqa: E402
from tests.daemon.harness import daemon_env, run_cli, start_daemon  # noqa: E402

CURRENT = "bench-current-session"
SYLLABLES = [a + b for a in "bklmnprstvz" for b in "aeiou"]
CONSONANTS = "rtnlkmvdgxz"


def pseudoword(rng: random.Random, taken: set[str]) -> str:
    """A made-up word (ends in a consonant, so porter inflections stay regular)."""
    while True:
        word = "".join(rng.choice(SYLLABLES) for _ in range(rng.randint(2, 3)))
        word += rng.choice(CONSONANTS)
        if word not in taken and word not in hook.STOPWORDS:
            taken.add(word)
            return word


def identifier(rng: random.Random, taken: set[str]) -> str:
    kind = rng.randrange(4)
    if kind == 0:
        return pseudoword(rng, taken) + str(rng.randint(100, 999))
    if kind == 1:
        return "_".join(pseudoword(rng, taken) for _ in range(3))
    if kind == 2:
        return f"ERR-{rng.randint(1000, 9999)}"
    return pseudoword(rng, taken)[:3].capitalize() + pseudoword(rng, taken).capitalize() + "Error"


@dataclass
class Prompt:
    kind: str
    text: str
    target: str | None  # the session it must recall; None: must recall nothing


@dataclass
class Plan:
    sessions: dict[str, list[str]] = field(default_factory=dict)  # id -> turn texts
    prompts: list[Prompt] = field(default_factory=list)


RARE_PROMPTS = [
    "what did we decide about {x} last time?",
    "remember {x}? what was the fix",
    "is {x} still needed, or did we drop it?",
    "the {x} thing came back, how did we handle it",
]
PAIR_PROMPTS = [
    "how did we settle the {a} {b} question?",
    "what was the plan for {a} and {b}",
    "we talked about {a} with {b} before, what did we conclude?",
]
EVERYDAY_PROMPTS = [
    "can you {0} the {1} and {2} the {3} again",
    "please {0} the {1}, then {2} the {3}",
    "why does the {0} {1} when I {2} the {3}?",
    "{0} the {1} {2} and show me the {3}",
]
TOPIC_PROMPTS = [
    "let's look at the {t} again",
    "can you check the {t} for me",
]


def plan(n_sessions: int, seed: int) -> Plan:
    rng = random.Random(seed)
    taken: set[str] = set(_WORDS)
    common = [w for w in _WORDS[:150] if w.isalpha() and len(w) > 2]
    weights = [1 / (i + 1) for i in range(len(common))]
    topics = [pseudoword(rng, taken) for _ in range(1200)]
    topic_weights = [1 / (i + 1) ** 0.8 for i in range(len(topics))]
    ids = [f"{i:08x}-0000-4000-8000-{i:012x}" for i in range(1, n_sessions + 1)]
    out = Plan()
    topic_sessions: dict[str, set[str]] = {}
    for sid in ids:
        mine = set(rng.choices(topics, topic_weights, k=6))
        turns = []
        for _ in range(rng.randint(8, 24)):
            words = rng.choices(common, weights, k=rng.randint(15, 50))
            words += rng.sample(sorted(mine), k=min(2, len(mine)))
            rng.shuffle(words)
            turns.append(" ".join(words) + ".")
        out.sessions[sid] = turns
        for t in mine:
            topic_sessions.setdefault(t, set()).add(sid)

    def plant(sid: str, text: str) -> None:
        turns = out.sessions[sid]
        i = rng.randrange(len(turns))
        turns[i] = turns[i].rstrip(".") + " " + text

    spread_topics = sorted(t for t, s in topic_sessions.items() if len(s) >= 5)
    targets = rng.sample(ids, k=min(len(ids), 400))
    n_rare, n_pair, n_stem = 150, 150, 100
    for sid in targets[:n_rare]:
        x = identifier(rng, taken)
        plant(sid, f"we settled on {x} for this.")
        text = rng.choice(RARE_PROMPTS).format(x=x)
        if rng.random() < 0.5:
            text += f" it was about the {rng.choice(spread_topics)}"
        out.prompts.append(Prompt("rare identifier", text, sid))
    for i, sid in enumerate(targets[n_rare : n_rare + n_pair + n_stem]):
        a, b = pseudoword(rng, taken), pseudoword(rng, taken)
        stemmed = i >= n_pair
        said = f"the {a}ing of {b}s" if stemmed else f"the {a} and the {b}"
        plant(sid, said + " is what we went with.")
        for w in (a, b):  # each word alone in two to six other sessions
            for other in rng.sample([o for o in ids if o != sid], rng.randint(2, 6)):
                plant(other, f"some {w} here.")
        asked_a, asked_b = (a + "ed", b) if stemmed else (a, b)
        kind = "stemmed forms" if stemmed else "two distinctive words"
        text = rng.choice(PAIR_PROMPTS).format(a=asked_a, b=asked_b)
        if rng.random() < 0.5:  # and, half the time, a topic word of elsewhere beside them
            text += f" (see the {rng.choice(spread_topics)})"
        out.prompts.append(Prompt(kind, text, sid))
    everyday = [w for w in common if w not in hook.STOPWORDS]
    for _ in range(200):
        words = rng.sample(everyday, 4)
        out.prompts.append(
            Prompt("everyday, common words", rng.choice(EVERYDAY_PROMPTS).format(*words), None)
        )
    spread = [t for t, s in topic_sessions.items() if len(s) >= 5]
    for t in rng.sample(spread, k=min(100, len(spread))):
        text = rng.choice(TOPIC_PROMPTS).format(t=t)
        out.prompts.append(Prompt("one topic word (5+ sessions)", text, None))
    return out


def write(home: Path, p: Plan, seed: int) -> int:
    rng = random.Random(seed)
    folder = home / ".claude" / "projects" / "-home-user-projects-app"
    folder.mkdir(parents=True, exist_ok=True)
    turns = 0
    for k, (sid, texts) in enumerate(p.sessions.items()):
        ts = BASE_TS + k * 3600
        with (folder / f"{sid}.jsonl").open("w", encoding="utf-8") as fh:
            for j, text in enumerate(texts):
                fh.write(claude_user_line(sid, "/home/user/projects/app", text, ts + j, rng))
                turns += 1
    return turns


def hook_params(terms: list[str]) -> dict[str, Any]:
    """What the hook asks the daemon (see hook.respond)."""
    return {"query": " ".join(terms), "any": True, "fallback": False, "count": False,
            "limit": 12, "max_turn_chars": 4000, "max_total_chars": 60000,
            "exclude_session": CURRENT, "doc_freq": True}  # fmt: skip


def payload(prompt: str) -> dict[str, Any]:
    return {
        "session_id": CURRENT,
        "transcript_path": "/nonexistent.jsonl",
        "cwd": "/home/user/projects/app",
        "hook_event_name": "UserPromptSubmit",
        "prompt": prompt,
    }


def old_keywords(prompt: str) -> list[str]:
    """The previous hook's words: split at every non-letter, no bare numbers."""
    seen: dict[str, int] = {}
    for m in re.finditer(r"[^\W_]+", prompt):
        word = m.group(0).lower()
        if len(word) < 3 or word.isdigit() or word in hook.STOPWORDS or word in seen:
            continue
        seen[word] = len(seen)
    longest = sorted(seen, key=lambda w: (-len(w), seen[w]))[: hook.MAX_WORDS]
    return sorted(longest, key=seen.__getitem__)


def old_hook(search: Callable[[dict[str, Any]], Any], prompt: str) -> list[str]:
    """The previous hook: any-word search of its words by bm25, then the hits
    sharing 2 prompt words (3 past 4 words)."""
    terms = old_keywords(prompt)
    if len(terms) < 2:
        return []
    result = search({**hook_params(terms), "doc_freq": False}) or {}
    need = 2 if len(terms) <= 4 else 3
    scored = []
    for rank, hit in enumerate(result.get("hits") or []):
        found = len(hook.matched_terms(hit, terms))
        if found >= need:
            scored.append((-found, rank, hit["session_id"]))
    chosen: list[str] = []
    for *_key, session in sorted(scored):
        if session not in chosen:
            chosen.append(session)
    return chosen[: hook.MAX_HITS]


@dataclass
class Tally:
    positive: bool
    prompts: int = 0
    recalled: int = 0
    injected: int = 0
    wrong: int = 0
    others: int = 0  # sessions injected beside the target (or at all, for negatives)


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(round(q * (len(ordered) - 1)), len(ordered) - 1)]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sessions", type=int, default=600)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--runs", type=int, default=40, help="hook processes timed per arm")
    ap.add_argument("--show-misses", action="store_true", help="print each prompt judged wrong")
    args = ap.parse_args(argv)

    work = Path(tempfile.mkdtemp(prefix="bench-recall-"))
    try:
        p = plan(args.sessions, args.seed)
        turns = write(work / "home", p, args.seed)
        started = time.monotonic()
        done = run_cli(work, "index", "--json")
        if done.returncode != 0:
            raise SystemExit(f"index failed: {done.stderr}")
        print(f"index: {len(p.sessions)} sessions, {turns} turns, "
              f"indexed in {time.monotonic() - started:.1f} s")  # fmt: skip

        new: dict[str, Tally] = {}
        old: dict[str, Tally] = {}
        times: dict[str, list[float]] = {}
        rt: dict[str, list[float]] = {}
        with start_daemon(work) as daemon:
            env = daemon_env(work, {"BACKSCROLL_SOCKET": str(daemon.socket_path)})
            os.environ.update({k: env[k] for k in (
                "HOME", "BACKSCROLL_HOME", "BACKSCROLL_SOCKET", "XDG_RUNTIME_DIR",
                "XDG_CONFIG_HOME", "XDG_DATA_HOME")})  # fmt: skip
            search = hook.search_index(None)
            for prompt in p.prompts:
                text = hook.respond("claude-code", payload(prompt.text), search, {})
                sessions = [s for s in p.sessions if text and f"session {s}" in text]
                before = old_hook(search, prompt.text)
                if args.show_misses and (prompt.target not in sessions if prompt.target
                                         else sessions):  # fmt: skip
                    print(f"miss: {prompt.kind}: {prompt.text!r} -> {sessions}")
                for tallies, chosen in ((new, sessions), (old, before)):
                    t = tallies.setdefault(prompt.kind, Tally(prompt.target is not None))
                    t.prompts += 1
                    t.injected += bool(chosen)
                    t.recalled += prompt.target in chosen
                    t.wrong += bool(chosen) and prompt.target not in chosen
                    t.others += sum(1 for c in chosen if c != prompt.target)

            # The hook's own round trip to the daemon, with and without the rarity
            # counts (the same prompts, interleaved): what rarity adds.
            for prompt in p.prompts[:: max(len(p.prompts) // 200, 1)]:
                terms = hook.keywords(prompt.text)
                if not terms:
                    continue
                params = hook_params(terms)
                for name, extra in (("search without rarity", {"doc_freq": False}),
                                    ("search with rarity", {})):  # fmt: skip
                    start = time.perf_counter()
                    search({**params, **extra})
                    rt.setdefault(name, []).append((time.perf_counter() - start) * 1000)

            script = Path(sys.executable).parent / "backscroll"
            hook_cmd = [str(script)] if script.exists() else [sys.executable, "-m", "backscroll"]
            hook_cmd += ["hook", "claude-code"]
            floor = [sys.executable, "-c", "import socket, json"]
            rng = random.Random(args.seed)
            sample = rng.sample(p.prompts, k=min(args.runs, len(p.prompts)))
            for prompt in sample:
                for name, cmd, stdin in (
                    ("floor: python -c 'import socket, json'", floor, b""),
                    ("hook with the daemon", hook_cmd, json.dumps(payload(prompt.text)).encode()),
                ):
                    start = time.perf_counter()
                    subprocess.run(cmd, input=stdin, env=env, capture_output=True, check=True)
                    times.setdefault(name, []).append((time.perf_counter() - start) * 1000)
            assert daemon.stop() == 0
        report(new, old, times, rt)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


def report(
    new: dict[str, Tally],
    old: dict[str, Tally],
    times: dict[str, list[float]],
    rt: dict[str, list[float]],
) -> None:
    print("\n| prompts | n | must recall | target recalled | injected at all | wrong injections |"
          " other sessions shown | previous rule: recalled | previous rule: wrong |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|")
    for kind, t in new.items():
        o = old[kind]
        must = "its session" if t.positive else "nothing"
        got, was = (str(t.recalled), str(o.recalled)) if t.positive else ("-", "-")
        print(f"| {kind} | {t.prompts} | {must} | {got} | {t.injected} | {t.wrong} | "
              f"{t.others} | {was} | {o.wrong} |")  # fmt: skip

    def totals(tallies: dict[str, Tally]) -> tuple[float, float, float]:
        pos = [t for t in tallies.values() if t.positive]
        neg = [t for t in tallies.values() if not t.positive]
        right = sum(t.recalled for t in pos)
        recall = right / max(sum(t.prompts for t in pos), 1)
        injected = sum(t.injected for t in tallies.values())
        precision = right / injected if injected else 1.0
        false = sum(t.injected for t in neg) / max(sum(t.prompts for t in neg), 1)
        return recall, precision, false

    print("\nrecall: prompts whose session was injected / prompts that must recall one;")
    print("precision: injections holding the right session / all injections;")
    print("false injections: must-recall-nothing prompts that injected anything.\n")
    print("| rule | recall | precision | false injections |")
    print("|---|---|---|---|")
    for name, tallies in (("rarity (this hook)", new), ("two shared words (previous)", old)):
        r, prec, false = totals(tallies)
        print(f"| {name} | {r:.1%} | {prec:.1%} | {false:.1%} |")
    print(f"\n{len(next(iter(times.values())))} hook processes, spawn to exit, "
          "interleaved with a bare interpreter:\n")  # fmt: skip
    print("| arm | p50 ms | p95 ms | p50 / floor |")
    print("|---|---|---|---|")
    base = statistics.median(times["floor: python -c 'import socket, json'"])
    for name, values in times.items():
        p50 = statistics.median(values)
        print(f"| {name} | {p50:.1f} | {pct(values, 0.95):.1f} | {p50 / base:.2f}x |")
    print("\nThe hook's search, asked of the daemon in-process (connect, ask, read):\n")
    print("| arm | p50 ms | p95 ms | p50 / without |")
    print("|---|---|---|---|")
    without = statistics.median(rt["search without rarity"])
    for name, values in rt.items():
        p50 = statistics.median(values)
        print(f"| {name} | {p50:.2f} | {pct(values, 0.95):.2f} | {p50 / without:.2f}x |")


if __name__ == "__main__":
    sys.exit(main())
