"""``backscroll hook <host>``: recall related past turns as a prompt is submitted.

The host runs this on every prompt (Claude Code and Codex ``UserPromptSubmit``,
Gemini CLI ``BeforeAgent``, Copilot CLI ``userPromptSubmitted``) with the hook
JSON on stdin. We search the index for the prompt's words, leaving out the
current session, and ask how rare each is here (in how many sessions it occurs).
When an earlier turn shares a rare word with the prompt (an identifier, a ticket
number, an error code), or several distinctive words that rarely meet by chance,
we print a short, bounded block of recalled excerpts as additional context.
Common words never recall. Otherwise we print nothing.

It must never get in the user's way: any failure prints nothing and exits 0
(with one JSON log line on stderr; a wrongly written hook command exits 1, which
no host blocks on), the daemon is asked with a short timeout,
and without a daemon the index is read directly without re-indexing.

Imports stay minimal (no logging setup, no daemon or store modules unless the
daemon is not running): this runs before every prompt.
"""

from __future__ import annotations

import contextlib
import json
import re
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import IO, Any, NamedTuple

from backscroll import recall
from backscroll.rarity import Rarity, related

#: At most this many characters of context, far below Claude Code's ~10,000-char
#: and Codex's ~2,500-token caps: a hint, not a dump.
MAX_CONTEXT_CHARS = 2500
MAX_HITS = 3
EXCERPT_CHARS = 360
MAX_WORDS = 8
MIN_WORD_LEN = 3
#: A bare number counts from this many digits (a ticket or an error number).
MIN_NUMBER_LEN = 3
#: Seconds for connecting to the daemon and for each read of its answer.
DAEMON_TIMEOUT = 0.5
#: The input kept in memory. The rest of a longer one is read and dropped (a
#: host must never be cut off mid-write), and recall uses the prompt's start.
MAX_STDIN_BYTES = 4 * 1024 * 1024


class HookHost(NamedTuple):
    #: The host's event name, echoed in ``hookSpecificOutput.hookEventName``.
    event: str
    #: Copilot CLI reads a top-level ``additionalContext``; the others read it
    #: inside ``hookSpecificOutput`` (a top-level one is dropped by Claude Code).
    nested: bool = True


HOSTS: dict[str, HookHost] = {
    "claude-code": HookHost("UserPromptSubmit"),
    "codex": HookHost("UserPromptSubmit"),
    "gemini-cli": HookHost("BeforeAgent"),
    "copilot-cli": HookHost("userPromptSubmitted", nested=False),
}

# Common English and everyday request words: alone they say nothing about which
# earlier conversation is meant.
_STOP = """a about above after again all also am an and any are as at be because been before
being below between both but by can could did do does doing done down during each else even
every few for from further get gets got had has have having he her here hers him his how i if in
into is it its itself just let lets like make many may me might more most much must my need no
nor not now of off on once one only or other our ours out over own please same see she should
so some such than thank thanks that the their theirs them then there these they thing things
this those through to too try under until up us use used using very want was way we well were
what when where which while who whom why will with would yes yet you your yours
add fix run new now also okay ok sure hey hi hello again still look show tell give go going
check work working works change changes something anything everything really actually maybe
think know good great right wrong next last first time file files code line lines""".split()  # noqa: SIM905 - a word list reads better as prose
STOPWORDS = frozenset(_STOP)
#: A word, or an identifier joined by ``_ . -`` (``parse_config``, ``JIRA-4411``,
#: ``hook.py``): FTS5 indexes such an identifier as a phrase of its parts, and the
#: phrase is as rare as the identifier.
_WORD = re.compile(r"[^\W_]+(?:[_.\-][^\W_]+)*")
_VERSION = re.compile(r"v?\d+(?:[_.\-]\d+)+")


def keywords(prompt: str) -> list[str]:
    """The prompt's candidate words: no stopwords, no short words or short numbers,
    each once, at most MAX_WORDS of them (the longest, kept in prompt order)."""
    seen: dict[str, int] = {}
    for m in _WORD.finditer(prompt):
        word = m.group(0).lower().strip(".-")
        if _VERSION.fullmatch(word):
            continue  # a version or a date: v1.2.3, 2026-02-10
        if (
            len(word) < MIN_WORD_LEN
            or (word.isdigit() and len(word) < MIN_NUMBER_LEN)
            or word in STOPWORDS
            or word in seen
        ):
            continue
        seen[word] = len(seen)
    longest = sorted(seen, key=lambda w: (-len(w), seen[w]))[:MAX_WORDS]
    return sorted(longest, key=seen.__getitem__)


def _term_of(word: str, terms: list[str]) -> str | None:
    """The query term a matched word stands for (FTS5 matches stems, and an
    identifier's parts: the longest shared prefix wins, at least 4 letters or the
    whole shorter word; a part of an identifier stands for it)."""
    best, best_len = None, 0
    for term in terms:
        for part in {term, *re.split(r"[_.\-]", term)}:
            n = 0
            for a, b in zip(word, part, strict=False):
                if a != b:
                    break
                n += 1
            if n >= min(4, len(word), len(part)) and n > best_len:
                best, best_len = term, n
    return best


def matched_terms(hit: Mapping[str, Any], terms: list[str]) -> set[str]:
    text = str(hit.get("excerpt") or "")
    found: set[str] = set()
    for start, end in hit.get("matches") or []:
        term = _term_of(text[start:end].lower(), terms)
        if term:
            found.add(term)
    return found


def strong_hits(
    result: Mapping[str, Any], terms: list[str], cwd: str | None
) -> list[dict[str, Any]]:
    """The hits worth showing, best first, one per session, at most MAX_HITS."""
    rarity = Rarity.of(result)
    if rarity is None:
        return []
    scored: list[tuple[float, int, int, dict[str, Any]]] = []
    for rank, hit in enumerate(result.get("hits") or []):
        found = matched_terms(hit, terms)
        if related(found, terms, rarity):
            here = 0 if cwd and hit.get("project") == cwd.rstrip("/") else 1
            score = -sum(rarity.weight(t) for t in found)
            scored.append((score, here, rank, {**hit, "_terms": sorted(found)}))
    scored.sort(key=lambda s: s[:3])
    out: list[dict[str, Any]] = []
    sessions: set[str] = set()
    for *_key, hit in scored:
        if hit.get("session_id") in sessions:
            continue
        sessions.add(str(hit.get("session_id")))
        out.append(hit)
        if len(out) == MAX_HITS:
            break
    return out


def context_block(hits: list[dict[str, Any]], caller: str | None) -> str:
    """The framed recall, at most MAX_CONTEXT_CHARS characters."""
    head = [
        recall.HEADER,
        "backscroll found {n} earlier turn(s) that share words with this prompt; use them "
        "only if they help. More: the backscroll search_history tool, or "
        "`backscroll search <words>`.",
    ]
    used = sum(len(h) + 1 for h in head) + len(recall.FOOTER) + 2
    body: list[str] = []
    for hit in hits:
        block = recall.hit_block(hit, caller, EXCERPT_CHARS, title=False)
        if used + len(block) + 2 > MAX_CONTEXT_CHARS:
            room = MAX_CONTEXT_CHARS - used - 2 - 20
            if body or room < 200:
                break
            block = block[:room].rstrip() + " […cut]"
        body.append(block)
        used += len(block) + 2
    if not body:
        return ""
    head[1] = head[1].format(n=len(body))
    return "\n".join([*head, "", "\n\n".join(body), recall.FOOTER])


def output(host: str, text: str) -> str:
    spec = HOSTS[host]
    if spec.nested:
        body: dict[str, Any] = {
            "hookSpecificOutput": {"hookEventName": spec.event, "additionalContext": text}
        }
    else:
        body = {"additionalContext": text}
    # ASCII with escapes: every host reads JSON escapes, and the bytes survive a
    # terminal or pipe whose encoding is not UTF-8 (latin-1, Windows' cp1252).
    return json.dumps(body)


Search = Callable[[dict[str, Any]], Mapping[str, Any] | None]


def respond(host: str, payload: Any, search: Search, env: Mapping[str, str]) -> str:
    """What to print for one hook call ("" for nothing)."""
    if not isinstance(payload, dict):
        raise ValueError("the hook input is not a JSON object")
    prompt = payload.get("prompt")
    if not isinstance(prompt, str) or not prompt.strip():
        return ""
    session = payload.get("session_id") or payload.get("sessionId")
    caller = session if isinstance(session, str) and session else recall.caller_session(env)
    cwd = payload.get("cwd") if isinstance(payload.get("cwd"), str) else None
    terms = keywords(prompt)
    if not terms:
        return ""
    params: dict[str, Any] = {
        "query": " ".join(terms),
        "any": True,
        "fallback": False,
        "count": False,  # the hook never says how many matched: skip counting them
        "doc_freq": True,  # how rare each word is here decides what is related
        "limit": 12,
        # Whole turns (nearly), so every matched word is seen when counting them.
        "max_turn_chars": 4000,
        "max_total_chars": 60000,
    }
    if caller:
        params["exclude_session"] = caller
    result = search(params)
    if not result:
        return ""
    text = context_block(strong_hits(result, terms, cwd), caller)
    return output(host, text) if text else ""


def locations(config_path: str | None) -> tuple[Path, Path]:
    """The daemon's socket and the index file. Without a config file the defaults
    come straight from :mod:`backscroll.paths`, sparing the YAML import."""
    import os

    from backscroll import paths

    explicit = config_path is not None or bool(os.environ.get("BACKSCROLL_CONFIG"))
    if not explicit and not paths.config_path().exists():
        return paths.socket_path(), paths.db_path()
    from backscroll import config

    cfg = config.load(Path(config_path) if config_path else None)
    return cfg.socket_path(), cfg.db_path()


def search_index(config_path: str | None) -> Search:
    """Ask the daemon (short timeout); without one, read the index directly,
    without indexing first."""

    def search(params: dict[str, Any]) -> Mapping[str, Any] | None:
        from backscroll.client import try_connect

        socket_path, db = locations(config_path)
        client = try_connect(socket_path, DAEMON_TIMEOUT, warn=_warn_untrusted, db=db)
        if client is not None:
            with client:
                try:
                    result: Mapping[str, Any] = client.call("search", params)
                except Exception:  # a daemon that fails or is slow: read the index instead
                    pass
                else:
                    return result
        return read_index(db, params)

    return search


def _log_line(line: dict[str, Any]) -> None:
    """One JSON log line on stderr (the hook's stdout is the agent's context);
    a stderr that cannot take it loses the line, never the prompt."""
    with contextlib.suppress(Exception):
        sys.stderr.write(json.dumps(line) + "\n")


def _warn_untrusted(message: str) -> None:
    """A socket that failed the ownership checks, or whose daemon serves another
    index, as a JSON log line on stderr (the hook's stdout is the agent's
    context: nothing from that socket reaches it)."""
    event = (
        "other_index"
        if "serves another index" in message
        else "daemon_version"
        if "protocol mismatch" in message
        else "untrusted_socket"
    )
    _log_line({"level": "warning", "event": event, "error": message})


def read_index(db: Path, params: dict[str, Any]) -> Mapping[str, Any] | None:
    """The search answered from the index file, read-only and without indexing first
    (``backscroll search`` would re-index what changed: too slow before a prompt).
    Imports only the store's query side, not the readers or the daemon."""
    if not db.exists():
        return None
    from backscroll import methods
    from backscroll.store import fts, open_readonly
    from backscroll.store.queries import run_sync

    conn = open_readonly(db)
    try:
        query = methods.build("search", params, fts=fts.searchable(conn))
        result: Mapping[str, Any] = run_sync(conn, query)
        return result
    finally:
        conn.close()


def bad_command(argv: list[str]) -> int:
    """A hook command the host was given wrongly (an unknown host name, an extra
    argument): exit 1, which no host blocks the prompt on (exit 2 would), with
    the fix as a JSON line on stderr after argparse's own message."""
    line = {
        "level": "error",
        "event": "hook_command",
        "error": f"`backscroll {' '.join(argv)}` is not a hook command: name one of the "
        f"hosts {', '.join(HOSTS)}, e.g. `backscroll hook claude-code`",
        "hint": "fix the hook command in the agent's settings; the prompt went on without recall",
    }
    _log_line(line)
    return 1


def read_input(stream: IO[bytes]) -> tuple[bytes, bool]:
    """The first MAX_STDIN_BYTES of ``stream``, and whether there was more. The
    rest is read to its end and dropped, in bounded memory: a host writing a
    longer input is never cut off mid-write (EPIPE)."""
    head = stream.read(MAX_STDIN_BYTES)
    more = False
    while stream.read(1 << 20):
        more = True
    return head, more


def parse_input(raw: bytes, cut: bool = False) -> Any:
    """The hook's JSON, decoded leniently: a byte sequence that is not valid in
    the input's encoding (UTF-8, or UTF-16/32 by its first bytes) becomes U+FFFD,
    so one stray byte costs one character, not the prompt's recall. An input
    ``cut`` at MAX_STDIN_BYTES gives what :func:`members_before_cut` finds."""
    text = raw.decode(json.detect_encoding(raw), "replace")
    return members_before_cut(text) if cut else json.loads(text)


_SPACE = re.compile(r"[ \t\n\r]*")


def _skip_space(text: str, at: int) -> int:
    found = _SPACE.match(text, at)
    return found.end() if found else at


def members_before_cut(text: str) -> dict[str, Any]:
    """The members of a JSON object whose end was cut off: each whole one, and a
    string cut mid-way as far as it goes. Every host puts ``prompt`` after the
    session id and cwd (Claude Code, Codex, Gemini CLI, Copilot CLI), so for an
    input past MAX_STDIN_BYTES it is the prompt that is cut, and its start is
    searched; a member after the cut is missing (another session's id, if it
    came last, so the current session might not be left out)."""
    decoder = json.JSONDecoder(strict=False)
    out: dict[str, Any] = {}
    at = _skip_space(text, 0)
    if not text.startswith("{", at):
        raise ValueError("the hook input is not a JSON object")
    at += 1
    while True:
        at = _skip_space(text, at)
        if text.startswith(",", at):
            at = _skip_space(text, at + 1)
        try:
            key, at = decoder.raw_decode(text, at)
            at = _skip_space(text, at)
            if not isinstance(key, str) or not text.startswith(":", at):
                break
            at = _skip_space(text, at + 1)
        except ValueError:
            break  # the end of the object, or the cut
        try:
            out[key], at = decoder.raw_decode(text, at)
        except ValueError:
            if text.startswith('"', at):
                start = _string_start(text[at:])
                if start is not None:
                    out[key] = start
            break
    return out


def _string_start(cut: str) -> str | None:
    """A JSON string cut off before its closing quote, decoded as far as it goes
    (an escape cut in two, like ``\\u00``, is left out); None when it is not one."""
    for drop in range(6):  # (the longest escape: \uXXXX)
        try:
            value = json.loads(cut[: len(cut) - drop] + '"', strict=False)
        except ValueError:
            continue
        return value if isinstance(value, str) else None
    return None


def described(exc: BaseException) -> str:
    """A failure for the log, without the input: the log is no place for the
    prompt (it may hold a key), and a decoding error's repr quotes the bytes."""
    if isinstance(exc, UnicodeDecodeError | UnicodeEncodeError):  # (``object``: the text)
        return f"{type(exc).__name__}: {exc.reason} at {exc.start}"
    if isinstance(exc, json.JSONDecodeError):  # (``doc`` holds the input: not shown)
        return f"JSONDecodeError: {exc.msg} at line {exc.lineno} column {exc.colno}"
    return repr(exc)[:500]


def main(host: str, config_path: str | None = None) -> int:
    """Run the hook; always exits 0 (a recall hook must never block a prompt)."""
    import os

    start = time.monotonic()
    try:
        payload = parse_input(*read_input(sys.stdin.buffer))
        text = respond(host, payload, search_index(config_path), os.environ)
        if text:
            sys.stdout.write(text + "\n")
            sys.stdout.flush()
    except Exception as exc:  # never fail the user's prompt
        line = {
            "level": "warning",
            "event": "hook_error",
            "host": host,
            "error": described(exc),
            "ms": round((time.monotonic() - start) * 1000, 1),
            "hint": "the prompt went on without recall; run `backscroll doctor` if this repeats",
        }
        _log_line(line)
    return 0
