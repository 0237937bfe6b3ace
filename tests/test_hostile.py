"""Hostile and broken input: query text that looks like FTS5 or SQL syntax,
SQL-looking strings in every indexed field, and transcripts that are huge,
deeply nested, not UTF-8, looping, not regular files or replaced under the
daemon. Nothing errors, nothing is interpreted, the schema stays intact, and
every bad file is logged (a JSON line with ``event`` and ``path``) and skipped
while the rest is indexed."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from backscroll import config as config_mod
from backscroll import direct
from backscroll.client import Client
from backscroll.wording import worded
from tests.daemon.conftest import DaemonFactory
from tests.daemon.harness import (
    CLAUDE_FIXTURES,
    DaemonProcess,
    claude_user_line,
    daemon_env,
    run_cli,
    session_uuid,
    start_daemon,
)

DEADLINE = 60.0

#: (entry uuid, text) of the planted prompts the query table looks for.
PLANTED = {
    "t-login": "run login_user(--dry-run) before touching src/auth/handler.py",
    "t-syntax": "the NEAR(a b) operator, col:value filters, ^start anchors and unbalanced quotes",
    "t-intl": "ferris 🦀 the crab says שלום עולם to the rustaceans",
    "t-inject": "'; DROP TABLE turns; -- was the injection we saw in the access log",
}

#: Strings that would mean something to SQL or to LIKE if they were ever spliced in.
EVIL = "x'); DROP TABLE sessions;--%_\\"
EVIL_PROJECT = f"/srv/it's {EVIL}/100%_done"
EVIL_SESSION = f"{EVIL}-session"


def write_session(
    home: Path, session_id: str, prompts: dict[str, str], project: str = "/p", slug: str = "-p"
) -> Path:
    """A Claude Code transcript of ``prompts`` (uuid -> text) under ``home``."""
    directory = home / ".claude" / "projects" / slug
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{session_id}.jsonl"
    with open(path, "w", encoding="utf-8") as fh:
        for uuid, text in prompts.items():
            fh.write(claude_user_line(session_id, uuid, text, cwd=project))
    return path


def copy_fixture(home: Path, n: int, slug: str = "-p") -> Path:
    directory = home / ".claude" / "projects" / slug
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{session_uuid(n)}.jsonl"
    shutil.copyfile(CLAUDE_FIXTURES[n % len(CLAUDE_FIXTURES)], path)
    return path


def schema_of(db: Path) -> list[tuple[str, str, str]]:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        rows = conn.execute("SELECT type, name, coalesce(sql, '') FROM sqlite_master").fetchall()
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    finally:
        conn.close()
    return sorted((str(a), str(b), str(c)) for a, b, c in rows)


def plain(hit: dict[str, Any]) -> str:
    return str(hit["excerpt"])


# --------------------------------------------------------------------------- query text


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Real fixtures plus the planted prompts and a session with SQL in every field,
    indexed once by the direct path; the base holds ``home`` and ``data``."""
    base = tmp_path_factory.mktemp("hostile-corpus")
    home = base / "home"
    for n in range(1, len(CLAUDE_FIXTURES) + 1):
        copy_fixture(home, n)
    write_session(home, session_uuid(100), PLANTED)
    write_session(
        home,
        EVIL_SESSION,
        {"e-1": f"title {EVIL} marmalade", "e-2": f"{EVIL} marmalade again"},
        project=EVIL_PROJECT,
        slug="-evil",
    )
    with pytest.MonkeyPatch.context() as mp:
        for key, value in daemon_env(base).items():
            mp.setenv(key, value)
        direct.index(config_mod.load())
    yield base


@pytest.fixture
def via_direct(corpus: Path, monkeypatch: pytest.MonkeyPatch) -> Callable[[str, Any], Any]:
    for key, value in daemon_env(corpus).items():
        monkeypatch.setenv(key, value)
    cfg = config_mod.load()
    return lambda method, params: direct.query(cfg, method, params)


@pytest.fixture(scope="module")
def corpus_daemon(corpus: Path) -> Iterator[DaemonProcess]:
    d = start_daemon(corpus, env={"BACKSCROLL_HOME": str(corpus / "daemon-data")})
    try:
        d.sync()
        yield d
    finally:
        d.close()


@pytest.fixture(params=["direct", "daemon"])
def ask(request: pytest.FixtureRequest, corpus: Path) -> Callable[[str, Any], Any]:
    """``ask(method, params)`` through the direct path or the daemon."""
    if request.param == "direct":
        fn: Callable[[str, Any], Any] = request.getfixturevalue("via_direct")
    else:
        d: DaemonProcess = request.getfixturevalue("corpus_daemon")
        fn = d.call
    # The store answers with a reason code; the CLI's words for it are checked here.
    return lambda method, params: worded(fn(method, params), "cli", params)


#: query -> the planted prompt it must find ("t-..."), or the message that explains
#: why there is nothing to search for.
QUERIES: list[tuple[str, str]] = [
    ("NEAR(a b)", "t-syntax"),
    ('"unbalanced', "t-syntax"),
    ("a OR", "common words"),
    ("*", "no words"),
    ("col:value", "t-syntax"),
    ("^start", "t-syntax"),
    ("login_user(--dry-run)", "t-login"),
    ("src/auth/handler.py", "t-login"),
    ("'; DROP TABLE turns; --", "t-inject"),
    ("\x00", "no words"),
    ("🦀", "no words"),
    ("🦀 ferris", "t-intl"),
    ("שלום", "t-intl"),
    ("\u202eferris", "t-intl"),  # an RTL override glued to a word
    ('"" AND "', "no words"),  # AND is an operator: no word is left
    # 4,096 characters (server.max_query_chars; longer is refused: test_resource_limits.py)
    ("login_user " + "x" * 4085, "t-login"),  # one huge word
    (" ".join(["handler"] + [f"w{i}" for i in range(1800)])[:4096], "t-login"),
]


@pytest.mark.parametrize(("query", "want"), QUERIES, ids=[repr(q[:24]) for q, _ in QUERIES])
def test_query_text_never_reaches_fts5_syntax(
    ask: Callable[[str, Any], Any], query: str, want: str, corpus: Path
) -> None:
    before = schema_of(corpus / "data" / "index.db")
    result = ask("search", {"query": query, "limit": 20})
    assert isinstance(result["hits"], list)
    if want not in PLANTED:
        assert result["hits"] == [] and want in result["message"]
    else:
        texts = [plain(h) for h in result["hits"]]
        assert any(PLANTED[want][:30] in t for t in texts), (query[:40], result["message"])
    assert schema_of(corpus / "data" / "index.db") == before


def test_sql_in_session_id_project_and_title_is_stored_and_matched_literally(
    ask: Callable[[str, Any], Any],
) -> None:
    listed = ask("sessions", {"project": EVIL_PROJECT})["sessions"]
    assert [(s["session_id"], s["project"]) for s in listed] == [(EVIL_SESSION, EVIL_PROJECT)]
    assert listed[0]["title"] == f"title {EVIL} marmalade"
    found = ask("search", {"query": "marmalade", "project": EVIL_PROJECT, "fallback": False})
    assert {h["session_id"] for h in found["hits"]} == {EVIL_SESSION}
    assert found["total"] == 2
    by_prefix = ask("search", {"query": "marmalade", "session": EVIL[:12]})
    assert {h["session_id"] for h in by_prefix["hits"]} == {EVIL_SESSION}
    whole = ask("session", {"session": EVIL_SESSION})
    assert whole["session"]["session_id"] == EVIL_SESSION
    assert [t["text"] for t in whole["turns"]][-1] == f"{EVIL} marmalade again"
    assert ask("search", {"query": "marmalade", "project": EVIL_PROJECT + "x"})["hits"] == []


def test_a_host_filter_holding_sql_is_just_an_unknown_host(
    ask: Callable[[str, Any], Any], corpus: Path
) -> None:
    before = schema_of(corpus / "data" / "index.db")
    host = "claude-code' OR '1'='1"
    result = ask("search", {"query": "marmalade", "host": host})
    assert result["hits"] == []
    assert "not enabled" in result["message"]
    assert ask("sessions", {"host": host})["sessions"] == []
    assert ask("session", {"session": EVIL_SESSION, "host": host})["session"] is None
    assert schema_of(corpus / "data" / "index.db") == before


# --------------------------------------------------------------------------- LIKE wildcards


WILDCARD_SESSIONS = ["a%b-1", "axb-2", "a_c-3", "abc-4", "a\\d-5", "azd-6"]


@pytest.mark.parametrize(
    ("prefix", "want"),
    [("a%", ["a%b-1"]), ("a_", ["a_c-3"]), ("a\\", ["a\\d-5"]), ("a", WILDCARD_SESSIONS)],
)
def test_session_prefix_filters_match_percent_underscore_and_backslash_literally(
    tmp_path: Path, prefix: str, want: list[str]
) -> None:
    home = tmp_path / "home"
    for sid in WILDCARD_SESSIONS:
        write_session(home, sid, {f"{sid}-u": f"wildcard probe {sid}"})
    cfg = config_mod.load()
    listed = direct.query(cfg, "sessions", {"session": prefix})["sessions"]
    assert sorted(s["session_id"] for s in listed) == sorted(want)
    hits = direct.query(cfg, "search", {"query": "wildcard probe", "session": prefix})["hits"]
    assert sorted({h["session_id"] for h in hits}) == sorted(want)
    one = direct.query(cfg, "session", {"session": prefix})
    if len(want) == 1:
        assert one["session"]["session_id"] == want[0]
    else:
        assert one["session"] is None and one["reason"]["code"] == "ambiguous_session"
        assert "a%b-1" in worded(one)["message"]


def test_cli_project_and_session_flags_with_sql_and_wildcards_match_literally(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    write_session(home, EVIL_SESSION, {"e-1": "quince jam"}, project=EVIL_PROJECT)
    write_session(home, "xx-other", {"o-1": "quince jelly"}, project="/srv/it's x")
    env = daemon_env(tmp_path)
    run = [sys.executable, "-m", "backscroll", "search", "--json", "quince"]
    out = subprocess.run(
        [*run, "--project", EVIL_PROJECT, "--session", "x'); DROP"],
        env=env, capture_output=True, text=True, timeout=DEADLINE, check=True,
    )  # fmt: skip
    assert [h["session_id"] for h in json.loads(out.stdout)["hits"]] == [EVIL_SESSION]
    out = subprocess.run(
        [*run, "--session", "x_"], env=env, capture_output=True, text=True, timeout=DEADLINE,
    )  # fmt: skip
    assert out.returncode == 1  # nothing matched, like grep
    assert json.loads(out.stdout)["hits"] == []
    tables = {
        name for kind, name, _ in schema_of(tmp_path / "data" / "index.db") if kind == "table"
    }
    assert {"sessions", "turns", "files"} <= tables


# --------------------------------------------------------------------------- hostile transcripts


def log_records(d: DaemonProcess) -> list[dict[str, Any]]:
    out = []
    for line in d.stderr_text().splitlines():
        if line.strip():
            out.append(json.loads(line))
    return out


def events_for(records: list[dict[str, Any]], path: Path) -> list[dict[str, Any]]:
    return [r for r in records if r.get("path") == str(path) and r.get("event")]


def search_keys(d: DaemonProcess, query: str) -> set[str]:
    with Client(d.socket_path, timeout=DEADLINE) as c:
        result = c.call("search", {"query": query, "fallback": False, "limit": 50})
    return {h["turn_key"] for h in result["hits"]}


def test_garbage_lines_are_logged_and_skipped_and_the_rest_of_the_file_indexed(
    daemon_factory: DaemonFactory, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    path = copy_fixture(home, 1)
    sid = session_uuid(1)
    good_before = len(path.read_bytes().splitlines())
    with open(path, "ab") as fh:
        fh.write(claude_user_line(sid, "before", "kumquat before the garbage").encode())
        fh.write(b"[" * 100_000 + b"\n")  # deeply nested: RecursionError in json
        fh.write(b'{"type": "user", "message": {"content": "kumquat \xff\xfe\xfd"}}\n')
        fh.write(b"\x00\x01\x02 binary junk \x80\n")
        fh.write(claude_user_line(sid, "after", "kumquat after the garbage").encode())
    other = write_session(home, session_uuid(2), {"o-1": "kumquat in another file"})
    d = daemon_factory()
    d.sync()
    assert search_keys(d, "kumquat") == {"before", "after", "o-1"}
    d.stop()
    bad = [r for r in events_for(log_records(d), path) if r["event"] == "malformed_record"]
    assert sorted(r["line"] for r in bad) == [good_before + n for n in (2, 3, 4)]
    assert not events_for(log_records(d), other)


def test_a_lone_surrogate_escape_is_stored_replaced_and_blocks_no_other_file(
    daemon_factory: DaemonFactory, tmp_path: Path
) -> None:
    """``"\\udcff"`` is valid JSON but not encodable UTF-8: it once failed the whole
    batch's transaction, so one such prompt kept every file of the batch unindexed."""
    home = tmp_path / "home"
    sid = session_uuid(1)
    lone = "lychee \udcff half a pair"
    write_session(home, sid, {"s-1": lone, "s-2": "lychee plain"}, project="/p/\udc80dir")
    for n in range(2, 6):
        write_session(home, session_uuid(n), {f"o-{n}": f"lychee elsewhere {n}"})
    d = daemon_factory()
    d.sync()
    assert search_keys(d, "lychee") == {"s-1", "s-2", "o-2", "o-3", "o-4", "o-5"}
    with Client(d.socket_path, timeout=DEADLINE) as c:
        turns = c.call("session", {"session": sid})["turns"]
    assert "lychee \ufffd" in turns[0]["text"]
    assert d.call("status", {})["daemon"]["pid"] == d.pid


_MEASURE = """
import resource, subprocess, sys
done = subprocess.run(sys.argv[1:], capture_output=True, text=True)
sys.stderr.write(done.stderr)
sys.stdout.write(done.stdout)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
sys.exit(done.returncode)
"""


def index_with_peak_rss(tmp_path: Path) -> tuple[dict[str, Any], list[dict[str, Any]], int]:
    """``backscroll index --json`` in ``tmp_path``: its summary, its log records and its
    peak RSS in kB (RUSAGE_CHILDREN of a fresh parent, so only that run counts)."""
    done = subprocess.run(
        [sys.executable, "-c", _MEASURE, sys.executable, "-m", "backscroll", "index", "--json"],
        env=daemon_env(tmp_path), capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    *summary, peak = done.stdout.strip().splitlines()
    records = [json.loads(x) for x in done.stderr.splitlines() if x.startswith("{")]
    return json.loads("\n".join(summary)), records, int(peak)


def test_a_50_mb_line_is_skipped_naming_file_and_line_in_bounded_memory(tmp_path: Path) -> None:
    line_bytes = 50 * 1024 * 1024
    runs: dict[str, tuple[dict[str, Any], list[dict[str, Any]], int, Path]] = {}
    for name, huge in (("baseline", False), ("huge", True)):
        base = tmp_path / name
        path = copy_fixture(base / "home", 1)
        sid = session_uuid(1)
        with open(path, "ab") as fh:
            fh.write(claude_user_line(sid, "before", "persimmon before").encode())
            if huge:
                head = b'{"type": "user", "message": {"role": "user", "content": "'
                fh.write(head + b"A" * (line_bytes - len(head) - 4) + b'"}}\n')
            else:
                fh.write(claude_user_line(sid, "small", "a short line").encode())
            fh.write(claude_user_line(sid, "after", "persimmon after").encode())
        summary, records, peak = index_with_peak_rss(base)
        runs[name] = (summary, records, peak, path)
    summary, records, peak, path = runs["huge"]
    assert summary["problems"] == 1
    skipped = [r for r in records if r.get("event") == "malformed_record"]
    assert [(r["path"], r["line"]) for r in skipped] == [
        (str(path), len(CLAUDE_FIXTURES[1].read_bytes().splitlines()) + 2)
    ]
    assert "longer than" in skipped[0]["error"]
    env = daemon_env(tmp_path / "huge")
    found = subprocess.run(
        [sys.executable, "-m", "backscroll", "search", "--json", "persimmon"],
        env=env, capture_output=True, text=True, timeout=DEADLINE, check=True,
    )  # fmt: skip
    assert {h["turn_key"] for h in json.loads(found.stdout)["hits"]} == {"before", "after"}
    growth_kb = peak - runs["baseline"][2]
    print(f"peak RSS: baseline {runs['baseline'][2]} kB, 50 MB line {peak} kB")
    assert growth_kb * 1024 < line_bytes // 2, f"peak RSS grew {growth_kb} kB on a 50 MB line"


def test_loops_fifos_dangling_links_and_directories_are_logged_and_skipped(
    daemon_factory: DaemonFactory, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    copy_fixture(home, 1)
    d = daemon_factory()
    d.sync()
    project = home / ".claude" / "projects" / "-p"
    (project / "dirloop").symlink_to(".")  # a directory loop: never followed
    loop_a, loop_b = project / f"{session_uuid(2)}.jsonl", project / f"{session_uuid(3)}.jsonl"
    loop_a.symlink_to(loop_b.name)
    loop_b.symlink_to(loop_a.name)
    fifo = project / f"{session_uuid(4)}.jsonl"
    os.mkfifo(fifo)  # opening it for reading would block forever
    dangling = project / f"{session_uuid(5)}.jsonl"
    dangling.symlink_to(tmp_path / "nowhere.jsonl")
    as_dir = project / f"{session_uuid(6)}.jsonl"
    as_dir.mkdir()  # a directory wearing a transcript's name
    write_session(home, session_uuid(7), {"g-1": "tamarind arrives with the rest"})
    d.sync()
    assert search_keys(d, "tamarind") == {"g-1"}
    assert d.call("status", {})["daemon"]["pid"] == d.pid
    d.stop()
    records = log_records(d)
    for bad in (loop_a, loop_b, fifo, dangling):
        logged = [r for r in events_for(records, bad) if r["event"] == "read_error"]
        assert logged, f"nothing logged for {bad.name}"
    assert "regular file" in events_for(records, fifo)[0]["error"]
    assert "nowhere.jsonl" in events_for(records, dangling)[0]["error"]


def test_a_transcript_whose_name_is_not_utf8_is_logged_and_the_rest_indexed(
    daemon_factory: DaemonFactory, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    good = write_session(home, session_uuid(1), {"g-1": "durian is indexed"})
    os.link(good, os.fsencode(good.parent) + b"/\xff\xfe-bad.jsonl")
    d = daemon_factory()
    d.sync()
    assert search_keys(d, "durian") == {"g-1"}
    d.stop()
    logged = [r for r in log_records(d) if r.get("event") == "undecodable_name"]
    # Once: not again at the sync's scan, nor at each write while the host writes it.
    assert [r["path"] for r in logged] == [f"{good.parent}/\\xff\\xfe-bad.jsonl"]


def test_a_project_directory_replaced_by_a_file_keeps_its_turns_and_the_daemon_serving(
    daemon_factory: DaemonFactory, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    doomed = write_session(home, session_uuid(1), {"d-1": "rambutan kept"}, slug="-doomed")
    d = daemon_factory()
    d.sync()
    assert search_keys(d, "rambutan") == {"d-1"}
    shutil.rmtree(doomed.parent)
    doomed.parent.write_text("not a directory any more\n")
    write_session(home, session_uuid(2), {"n-1": "rambutan new"}, slug="-alive")
    d.sync()
    assert search_keys(d, "rambutan") == {"d-1", "n-1"}  # on_delete: keep
    d.stop()
    missing = [r for r in events_for(log_records(d), doomed) if r["event"] == "source_missing"]
    assert len(missing) == 1


def test_the_schema_survives_every_hostile_corpus(corpus: Path) -> None:
    names = {name for kind, name, _ in schema_of(corpus / "data" / "index.db") if kind == "table"}
    assert {"sessions", "turns"} <= names
    conn = sqlite3.connect(f"file:{corpus / 'data' / 'index.db'}?mode=ro", uri=True)
    try:
        ids = {r[0] for r in conn.execute("SELECT session_id FROM sessions")}
    finally:
        conn.close()
    assert EVIL_SESSION in ids and session_uuid(100) in ids


def test_a_lone_surrogate_escape_in_a_request_becomes_a_replacement_character() -> None:
    from backscroll.wire import parse_request

    line = b'{"jsonrpc": "2.0", "method": "sessions", "params": {"host": "a?\\ud800b"}}'
    _rid, method, params = parse_request(line)
    assert method == "sessions" and params == {"host": "a?\ufffdb"}
    params["host"].encode("utf-8")  # every handler can encode what it is given


def test_terminal_escapes_in_transcripts_do_not_reach_the_terminal(
    tmp_path: Path, isolated_home: Path
) -> None:
    # A fetched page or a cloned repo's file can carry escape sequences: set the
    # window title (OSC 0), write the clipboard (OSC 52), clear the screen, draw
    # a link (OSC 8), or reorder a line (a bidi override).
    hostile = (
        "findme \x1b]0;PWNED\x07 \x1b]52;c;ZWNobyBwd25lZA==\x07 \x1b[2J\x1b[H"
        " \x1b]8;;http://evil.example/\x1b\\link\x1b]8;;\x1b\\ \u202egnp.exe"
    )
    sid = session_uuid(70)
    write_session(isolated_home, sid, {"u-esc-1": hostile}, project="/p\x1b[31m")
    assert run_cli(tmp_path, "index").returncode == 0
    for args in (("search", "findme"), ("show", sid[:8]), ("sessions",)):
        done = run_cli(tmp_path, *args)
        assert done.returncode == 0, done.stdout + done.stderr
        out = done.stdout
        assert not any(c in out for c in ("\x1b", "\x07", "\u202e")), repr(out)
    shown = run_cli(tmp_path, "search", "findme").stdout
    assert "␛]0;PWNED␇" in shown  # visible, one character for one
    as_json = json.loads(run_cli(tmp_path, "search", "--json", "findme").stdout)
    assert "\x1b]0;PWNED\x07" in as_json["hits"][0]["excerpt"]  # JSON keeps the text
    transcript = isolated_home / ".claude" / "projects" / "-p" / f"{sid}.jsonl"
    assert run_cli(tmp_path, "forget", "--project", "/p\x1b[31m", "--and-exclude").returncode == 0
    more: list[tuple[str, ...]] = [
        ("explain", str(transcript)), ("exclusions",), ("forget", "--project", "/nowhere")
    ]  # fmt: skip
    for further in more:
        done = run_cli(tmp_path, *further)
        said = done.stdout + done.stderr
        assert "\x1b" not in said and "\x07" not in said, (further, said)
