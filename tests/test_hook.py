"""``backscroll hook <host>`` run as the hosts run it: hook JSON on stdin, against
a real index of the sample transcripts, without a daemon and with one."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from backscroll import hook, recall
from backscroll.rarity import Rarity, related
from tests.daemon.harness import (
    claude_user_line,
    daemon_env,
    populate,
    run_cli,
    session_uuid,
    start_daemon,
)

STAGE0 = session_uuid(1)
HEXPM = session_uuid(3)  # asks hex.pm for OpenTelemetry package versions
PHOENIX = session_uuid(4)

RECALLS_HEXPM = "which opentelemetry exporter constraint did we pick for mix.exs?"
UNRELATED = "bake a sourdough loaf with rye flour and walnuts"


def hook_env(tmp_path: Path, extra: dict[str, str] | None = None) -> dict[str, str]:
    env = daemon_env(tmp_path)
    for name in recall.SESSION_ENV:  # this test run may itself sit inside an agent
        env.pop(name, None)
    env.update(extra or {})
    return env


def run_hook(
    tmp_path: Path,
    host: str,
    stdin: bytes | dict[str, Any],
    env: dict[str, str] | None = None,
    *,
    command: list[str] | None = None,
) -> subprocess.CompletedProcess[bytes]:
    """``backscroll hook HOST`` (or ``command`` as given) fed ``stdin``."""
    data = stdin if isinstance(stdin, bytes) else json.dumps(stdin).encode()
    return subprocess.run(
        command or [sys.executable, "-m", "backscroll", "hook", host],
        input=data,
        env=hook_env(tmp_path, env),
        capture_output=True,
        timeout=60,
        check=False,
    )


def claude_input(prompt: str, session: str = STAGE0, cwd: str = "/p") -> dict[str, Any]:
    return {
        "session_id": session,
        "transcript_path": f"/nonexistent/{session}.jsonl",
        "cwd": cwd,
        "permission_mode": "default",
        "hook_event_name": "UserPromptSubmit",
        "prompt": prompt,
    }


def context_of(done: subprocess.CompletedProcess[bytes]) -> str:
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert set(out) == {"hookSpecificOutput"}
    inner = out["hookSpecificOutput"]
    assert set(inner) == {"hookEventName", "additionalContext"}
    assert inner["hookEventName"] == "UserPromptSubmit"
    text: str = inner["additionalContext"]
    return text


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sample transcripts, indexed once (read-only for every test using it)."""
    root = tmp_path_factory.mktemp("hook")
    populate(root / "home")
    done = run_cli(root, "index", "--json")
    assert done.returncode == 0, done.stderr
    return root


def test_a_strongly_related_prompt_gets_framed_recall_as_claude_json(shared: Path) -> None:
    done = run_hook(shared, "claude-code", claude_input(RECALLS_HEXPM))
    text = context_of(done)
    assert done.stderr == b""
    lines = text.splitlines()
    assert lines[0] == recall.HEADER
    assert lines[-1] == recall.FOOTER
    assert len(text) <= hook.MAX_CONTEXT_CHARS
    label = next(ln for ln in lines if ln.startswith("── "))
    assert f"session {HEXPM}" in label and label.endswith(recall.OTHER_SESSION)
    assert label.startswith("── 2026-02-12 ")
    assert (
        f"  resume: cd /home/USER/projects/spotter-worktrees/spotter-4te && claude --resume {HEXPM}"
        in lines
    )
    quoted = [ln for ln in lines if "opentelemetry_exporter" in ln]
    assert quoted and all(ln.startswith(recall.QUOTE) for ln in quoted)


def test_an_unrelated_prompt_prints_nothing(shared: Path) -> None:
    done = run_hook(shared, "claude-code", claude_input(UNRELATED))
    assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")


def test_one_shared_word_is_not_enough_to_recall(shared: Path) -> None:
    # "phoenix" is in three sessions, but none has "tomatoes" or "gardening".
    done = run_hook(shared, "claude-code", claude_input("phoenix tomatoes gardening tips"))
    assert (done.returncode, done.stdout) == (0, b"")


@pytest.mark.parametrize(
    "stdin",
    [b"not json{", b"", b"[1, 2, 3]", b'{"prompt": 42}', b"\xff\xfe\x00garbage"],
    ids=["broken", "empty", "array", "prompt-not-text", "binary"],
)
def test_bad_input_prints_nothing_and_exits_0(shared: Path, stdin: bytes) -> None:
    done = run_hook(shared, "claude-code", stdin)
    assert (done.returncode, done.stdout) == (0, b"")
    if done.stderr:  # a failure is logged as one JSON line, never shown as context
        entry = json.loads(done.stderr.decode().splitlines()[0])
        assert entry["event"] == "hook_error" and entry["host"] == "claude-code"


def test_the_current_session_is_never_recalled_to_itself(shared: Path) -> None:
    done = run_hook(shared, "claude-code", claude_input(RECALLS_HEXPM, session=HEXPM))
    assert (done.returncode, done.stdout) == (0, b"")
    # The host's session variable is used when the payload has no session id.
    payload = claude_input(RECALLS_HEXPM)
    del payload["session_id"]
    by_env = run_hook(shared, "claude-code", payload, {"CLAUDE_CODE_SESSION_ID": HEXPM})
    assert (by_env.returncode, by_env.stdout) == (0, b"")


@pytest.mark.parametrize(
    ("host", "payload", "event"),
    [
        ("codex", {"session_id": STAGE0, "turn_id": "t1", "transcript_path": None, "cwd": "/p",
                   "hook_event_name": "UserPromptSubmit", "model": "gpt-5",
                   "permission_mode": "default", "prompt": RECALLS_HEXPM}, "UserPromptSubmit"),
        ("gemini-cli", {"session_id": STAGE0, "transcript_path": "/x.json", "cwd": "/p",
                        "hook_event_name": "BeforeAgent", "timestamp": "2026-11-01T10:00:00Z",
                        "prompt": RECALLS_HEXPM}, "BeforeAgent"),
    ],
)  # fmt: skip
def test_codex_and_gemini_get_only_hook_specific_output(
    shared: Path, host: str, payload: dict[str, Any], event: str
) -> None:
    done = run_hook(shared, host, payload)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    # Codex's output schema has additionalProperties:false; Gemini shows non-JSON to the user.
    assert set(out) == {"hookSpecificOutput"}
    assert set(out["hookSpecificOutput"]) == {"hookEventName", "additionalContext"}
    assert out["hookSpecificOutput"]["hookEventName"] == event
    assert out["hookSpecificOutput"]["additionalContext"].startswith(recall.HEADER)


def test_copilot_reads_a_top_level_additional_context(shared: Path) -> None:
    payload = {"sessionId": HEXPM, "timestamp": 1764410000000, "cwd": "/p", "prompt": RECALLS_HEXPM}
    excluded = run_hook(shared, "copilot-cli", payload)
    assert (excluded.returncode, excluded.stdout) == (0, b"")
    done = run_hook(shared, "copilot-cli", {**payload, "sessionId": "another"})
    out = json.loads(done.stdout)
    assert set(out) == {"additionalContext"}
    assert out["additionalContext"].startswith(recall.HEADER)


def test_without_a_daemon_the_hook_reads_the_index_but_never_indexes(tmp_path: Path) -> None:
    populate(tmp_path / "home", codex=False)
    assert run_cli(tmp_path, "index").returncode == 0
    db = tmp_path / "data" / "index.db"
    before = db.read_bytes()
    late = tmp_path / "home" / ".claude" / "projects" / "-late" / f"{session_uuid(99)}.jsonl"
    late.parent.mkdir(parents=True)
    late.write_text(
        claude_user_line(session_uuid(99), "u-1", "the zeppelin hangar ventilation design"),
        encoding="utf-8",
    )
    done = run_hook(tmp_path, "claude-code", claude_input("zeppelin hangar ventilation"))
    assert (done.returncode, done.stdout) == (0, b"")  # not indexed yet: nothing to recall
    assert db.read_bytes() == before
    assert run_cli(tmp_path, "index").returncode == 0
    found = run_hook(tmp_path, "claude-code", claude_input("zeppelin hangar ventilation"))
    assert "zeppelin hangar ventilation" in context_of(found)


def test_with_no_index_at_all_the_hook_prints_nothing_and_creates_nothing(tmp_path: Path) -> None:
    (tmp_path / "home").mkdir(exist_ok=True)
    done = run_hook(tmp_path, "claude-code", claude_input(RECALLS_HEXPM))
    assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")
    assert not (tmp_path / "data").exists()


def test_with_a_daemon_running_the_hook_asks_it(tmp_path: Path) -> None:
    populate(tmp_path / "home", codex=False)
    with start_daemon(tmp_path) as daemon:
        daemon.sync()
        env = {"BACKSCROLL_SOCKET": str(daemon.socket_path)}
        related = run_hook(tmp_path, "claude-code", claude_input(RECALLS_HEXPM), env)
        own = run_hook(tmp_path, "claude-code", claude_input(RECALLS_HEXPM, session=HEXPM), env)
        unrelated = run_hook(tmp_path, "claude-code", claude_input(UNRELATED), env)
        assert daemon.stop() == 0
    assert f"session {HEXPM}" in context_of(related)
    assert (own.returncode, own.stdout) == (0, b"")
    assert (unrelated.returncode, unrelated.stdout) == (0, b"")


def write_session(home: Path, session: str, *texts: str, cwd: str = "/p") -> None:
    """A Claude Code transcript of user turns under ``home``."""
    folder = home / ".claude" / "projects" / "-extra"
    folder.mkdir(parents=True, exist_ok=True)
    lines = [claude_user_line(session, f"{session}-{i}", t, cwd) for i, t in enumerate(texts)]
    (folder / f"{session}.jsonl").write_text("".join(lines), encoding="utf-8")


def test_many_related_sessions_stay_within_the_context_budget(tmp_path: Path) -> None:
    home = tmp_path / "home"
    populate(home)
    for i in range(30):  # other conversations: three sessions of 40 are a small share
        write_session(home, session_uuid(600 + i), f"everyday request number {i}")
    filler = " ".join(["the tokenizer"] * 400)
    for i in range(3):
        write_session(home, session_uuid(500 + i), f"zorblax quuxification step {i}. {filler}")
    assert run_cli(tmp_path, "index").returncode == 0
    prompt = "how did the zorblax quuxification go?"
    text = context_of(run_hook(tmp_path, "claude-code", claude_input(prompt)))
    labels = [ln for ln in text.splitlines() if ln.startswith("── ") and "· session " in ln]
    assert len(labels) == hook.MAX_HITS == 3
    assert len(text) <= hook.MAX_CONTEXT_CHARS


def test_keywords_are_the_prompts_candidate_words() -> None:
    words = hook.keywords("Can you please fix the flaky Parser test again? It's in parser_utils.py")
    assert words == ["flaky", "parser", "test", "parser_utils.py"]
    many = hook.keywords(
        "compare tokenizer migration rollback checkpoint vacuum journal triggers pragmas"
    )
    assert len(many) == hook.MAX_WORDS and "tokenizer" in many and "migration" in many
    assert hook.keywords("ok do it now, thanks!") == []
    # Identifiers, ticket and error numbers are kept; versions, dates and short numbers not.
    assert hook.keywords("did JIRA-4411 fix E0502 in v1.2.3 on 2026-02-10, see #4411 or 42") == [
        "jira-4411", "e0502", "4411",
    ]  # fmt: skip


def rarity(sessions: int, **counts: int) -> Rarity:
    return Rarity(sessions, counts)


def test_one_rare_shared_word_recalls_and_one_common_word_never_does() -> None:
    r = rarity(1000, paxakope943=1, decide=400, database=150)
    assert related({"paxakope943"}, ["decide", "paxakope943"], r)
    assert not related({"decide"}, ["decide", "paxakope943"], r)
    assert not related({"database", "decide"}, ["database", "decide"], r)
    # In an index of a few sessions only a word of a single one is rare.
    small = rarity(6, once=1, twice=2)
    assert related({"once"}, ["once"], small)
    assert not related({"twice"}, ["twice"], small)


def test_distinctive_words_recall_together_only_when_unlikely_by_chance() -> None:
    r = rarity(1000, tokenizer=12, rollback=9, vacuum=40, journal=45, pragma=30, trigger=35)
    assert related({"tokenizer", "rollback"}, ["tokenizer", "rollback"], r)
    assert not related({"tokenizer"}, ["tokenizer", "rollback"], r)
    # Words in 4 % of sessions each: a pair of them meets by chance.
    assert not related({"vacuum", "journal"}, ["vacuum", "journal"], r)
    # A long prompt offers more pairs to meet by chance than a short one.
    long_prompt = ["tokenizer", "rollback", "vacuum", "journal", "pragma", "trigger"]
    assert not related({"vacuum", "pragma"}, long_prompt, r)
    assert related({"vacuum", "pragma", "trigger", "journal"}, long_prompt, r)


def test_matched_words_map_back_to_their_stemmed_or_compound_terms() -> None:
    hit = {"excerpt": "Indexing the tokens of parse config", "matches": [[0, 8], [13, 19],
           [23, 28], [29, 35]]}  # fmt: skip
    terms = ["index", "token", "vacuum", "parse_config"]
    assert hook.matched_terms(hit, terms) == {"index", "token", "parse_config"}


def test_a_daemon_that_never_answers_is_passed_over_for_the_index(shared: Path) -> None:
    # A socket that accepts connections but never replies: a wedged daemon.
    sock_path = shared / "wedged.sock"
    sock_path.unlink(missing_ok=True)
    wedged = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        wedged.bind(str(sock_path))
        wedged.listen(8)
        env = {"BACKSCROLL_SOCKET": str(sock_path)}
        done = run_hook(shared, "claude-code", claude_input(RECALLS_HEXPM), env)
    finally:
        wedged.close()
        sock_path.unlink(missing_ok=True)
    assert f"session {HEXPM}" in context_of(done)


def test_a_config_file_decides_where_the_index_is(shared: Path, tmp_path: Path) -> None:
    config = tmp_path / "config.yaml"
    config.write_text(f"data_dir: {shared / 'data'}\n", encoding="utf-8")
    # An empty BACKSCROLL_HOME counts as unset (the variable would beat the file).
    env = {"BACKSCROLL_CONFIG": str(config), "BACKSCROLL_HOME": ""}
    done = run_hook(shared, "claude-code", claude_input(RECALLS_HEXPM), env)
    assert f"session {HEXPM}" in context_of(done)
    env["BACKSCROLL_CONFIG"] = str(tmp_path / "missing.yaml")
    broken = run_hook(shared, "claude-code", claude_input(RECALLS_HEXPM), env)
    assert (broken.returncode, broken.stdout) == (0, b"")
    assert json.loads(broken.stderr.decode().splitlines()[0])["event"] == "hook_error"


def test_strong_hits_keep_one_per_session_and_at_most_max_hits() -> None:
    def hit(session: str, text: str) -> dict[str, Any]:
        words = ["exporter", "constraint"]
        spans = [[text.index(w), text.index(w) + len(w)] for w in words if w in text]
        return {"session_id": session, "excerpt": text, "matches": spans, "project": "/p"}

    both = "the exporter constraint"
    result = {
        "hits": [
            hit("s1", both),
            hit("s1", both + "!"),
            hit("s2", both),
            hit("s3", both),
            hit("s4", both),
            hit("s5", "only the exporter"),
        ],
        "rarity": {"sessions": 1000, "terms": {"exporter": 8, "constraint": 11}},
    }
    chosen = hook.strong_hits(result, ["exporter", "constraint"], "/p")
    assert [h["session_id"] for h in chosen] == ["s1", "s2", "s3"][: hook.MAX_HITS]


RARE = session_uuid(700)


def test_one_rare_identifier_recalls_its_session_with_and_without_a_daemon(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    populate(home, codex=False)
    write_session(
        home,
        RARE,
        "Let's rename the flag to paxakope943 so nothing else matches it.",
        "Now check the build of the spotter project again.",
    )
    assert run_cli(tmp_path, "index").returncode == 0
    prompt = "what did we decide about paxakope943 last time?"
    direct = run_hook(tmp_path, "claude-code", claude_input(prompt))
    with start_daemon(tmp_path) as daemon:
        env = {"BACKSCROLL_SOCKET": str(daemon.socket_path)}
        served = run_hook(tmp_path, "claude-code", claude_input(prompt), env)
        own = run_hook(tmp_path, "claude-code", claude_input(prompt, session=RARE), env)
        # "build" and "project" are in this session too, but in most of the others as well.
        common = run_hook(tmp_path, "claude-code", claude_input("check the build project"), env)
        assert daemon.stop() == 0
    for done in (direct, served):
        text = context_of(done)
        assert f"session {RARE}" in text and "paxakope943" in text
    assert (own.returncode, own.stdout) == (0, b"")
    assert (common.returncode, common.stdout) == (0, b"")


def test_a_stemmed_form_of_distinctive_words_recalls(shared: Path) -> None:
    # The HEXPM session says "opentelemetry_exporter" and "constraints".
    done = run_hook(shared, "claude-code", claude_input("the opentelemetry exporters constraint?"))
    assert f"session {HEXPM}" in context_of(done)


@pytest.mark.parametrize(
    "argv",
    [["hook", "claude"], ["hook"], ["hook", "claude-code", "--json"], ["hook", "Claude-Code"]],
)
def test_a_wrongly_written_hook_command_never_blocks_the_prompt_and_says_the_fix(
    shared: Path, argv: list[str]
) -> None:
    """Exit 2 blocks and erases the prompt in Claude Code, Codex and Gemini CLI;
    exit 1 is a non-blocking error in each. stderr names the hosts to choose from."""
    done = run_hook(
        shared, "", claude_input(RECALLS_HEXPM), command=[sys.executable, "-m", "backscroll", *argv]
    )
    assert done.returncode == 1, done.stderr
    assert done.stdout == b""
    last = json.loads(done.stderr.decode().splitlines()[-1])
    assert last["event"] == "hook_command"
    assert "claude-code, codex, gemini-cli, copilot-cli" in last["error"]


def test_recall_reaches_the_host_on_a_terminal_that_is_not_utf8(shared: Path) -> None:
    done = run_hook(shared, "claude-code", claude_input(RECALLS_HEXPM),
                    {"PYTHONIOENCODING": "latin-1"})  # fmt: skip
    assert done.stderr == b""
    text = context_of(done)
    assert text.splitlines()[0] == recall.HEADER
    done.stdout.decode("ascii")  # (escaped: every host reads JSON escapes)


SECRETS = "AKIAIOSFODNN7EXAMPLE ghp_ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"


def test_a_byte_that_is_not_utf8_costs_one_character_not_the_recall(shared: Path) -> None:
    # A latin-1 "é" (0xE9) in an otherwise UTF-8 prompt: one stray byte.
    stdin = (
        json.dumps(claude_input(RECALLS_HEXPM + " caf\x00")).encode().replace(b"\\u0000", b"\xe9")
    )
    done = run_hook(shared, "claude-code", stdin)
    assert f"session {HEXPM}" in context_of(done)
    assert done.stderr == b""


@pytest.mark.parametrize(
    "stdin",
    [
        f'{{"prompt": "{SECRETS} caf\xe9'.encode("latin-1"),  # cut off, and not UTF-8
        f'{{"prompt": "{SECRETS}", }}'.encode(),  # not JSON
        f'{{"prompt": "{SECRETS}\x01"}}'.encode(),  # a raw control character
    ],
    ids=["cut-latin1", "trailing-comma", "control-char"],
)
def test_a_hook_failure_is_logged_without_the_prompts_text(shared: Path, stdin: bytes) -> None:
    done = run_hook(shared, "claude-code", stdin)
    assert (done.returncode, done.stdout) == (0, b"")
    entry = json.loads(done.stderr.decode().splitlines()[0])
    assert entry["event"] == "hook_error"
    assert "AKIA" not in done.stderr.decode() and "ghp_" not in done.stderr.decode()
    assert "caf" not in done.stderr.decode()


def test_an_encoding_error_is_described_without_its_text() -> None:
    try:
        f"{SECRETS} \udce9".encode()
    except UnicodeEncodeError as exc:
        line = hook.described(exc)
    assert line.startswith("UnicodeEncodeError: ") and "AKIA" not in line


@pytest.mark.parametrize("redirect", ["2>&-", ">&-", ">&- 2>&-"])
def test_a_closed_stdout_or_stderr_still_exits_0(shared: Path, redirect: str) -> None:
    """A host drops the context on any exit but 0: a closed stream must not cost it."""
    hook_cmd = [sys.executable, "-m", "backscroll", "hook", "claude-code"]
    done = run_hook(
        shared,
        "claude-code",
        claude_input(RECALLS_HEXPM),
        command=["sh", "-c", f'exec "$@" {redirect}', "sh", *hook_cmd],
    )
    assert done.returncode == 0, done.stderr
    assert b"Traceback" not in done.stderr
    if redirect == "2>&-":  # stdout still reaches the host
        assert f"session {HEXPM}" in context_of(done)


def test_a_host_that_stops_reading_stdout_still_gets_exit_0(shared: Path) -> None:
    import os

    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader went away before the hook wrote
    try:
        done = subprocess.run(
            [sys.executable, "-m", "backscroll", "hook", "claude-code"],
            input=json.dumps(claude_input(RECALLS_HEXPM)).encode(),
            env=hook_env(shared),
            stdout=write_end,
            stderr=subprocess.PIPE,
            timeout=60,
            check=False,
        )
    finally:
        os.close(write_end)
    assert done.returncode == 0, done.stderr
    assert b"Traceback" not in done.stderr


def test_an_input_past_the_size_cap_is_read_to_its_end_and_its_prompts_start_recalls(
    shared: Path,
) -> None:
    """A 7 MB prompt (a pasted log): the host writes all of it without EPIPE, and
    the first MAX_STDIN_BYTES are searched. Hosts put the prompt last, so the
    session id before it is kept and the current session still left out."""
    filler = "the " * (7 * 1024 * 1024 // 4)  # (common words: no search terms)
    data = json.dumps(claude_input(RECALLS_HEXPM + " " + filler, session=PHOENIX)).encode()
    assert len(data) > 7_000_000
    with subprocess.Popen(
        [sys.executable, "-m", "backscroll", "hook", "claude-code"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=hook_env(shared),
    ) as proc:
        assert proc.stdin and proc.stdout and proc.stderr
        proc.stdin.write(data)  # (BrokenPipeError if the hook stopped reading)
        proc.stdin.close()  # (the hook's output is small: read after it exits)
        proc.wait(120)
        out, err = proc.stdout.read(), proc.stderr.read()
    done = subprocess.CompletedProcess(proc.args, proc.returncode, out, err)
    text = context_of(done)
    assert f"session {HEXPM}" in text and f"session {PHOENIX}" not in text
    assert err == b""


@pytest.mark.parametrize(
    ("cut", "prompt"),
    [
        ('{"session_id": "s1", "cwd": "/p", "prompt": "parse_config fai', "parse_config fai"),
        ('{"session_id": "s1", "prompt": "caf\\u00e9 parse_config \\u00', "café parse_config "),
        ('{"session_id": "s1", "prompt": "parse_config\\', "parse_config"),
        ('{"session_id": "s1", "prompt": "parse_config\\\\', "parse_config\\"),
    ],
    ids=["mid-word", "mid-escape", "after-backslash", "after-escaped-backslash"],
)
def test_a_cut_input_keeps_the_members_before_the_cut(cut: str, prompt: str) -> None:
    members = hook.members_before_cut(cut)
    assert members["session_id"] == "s1" and members["prompt"] == prompt
