"""``forget`` acts only on what exists: an unknown host, session or project is
an error naming what is indexed, and ``--and-exclude`` never stores an exclusion
for a typo. ``backscroll exclusions`` lists them and ``exclusions remove`` undoes one."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from backscroll import cli
from tests.daemon.harness import claude_user_line, dump_turns, populate, run_cli, session_uuid

FIRST = session_uuid(1)


def rules(db: Path) -> list[tuple[str, str, str]]:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return sorted(conn.execute("SELECT kind, host, value FROM exclusions").fetchall())
    finally:
        conn.close()


@pytest.fixture
def indexed(tmp_path: Path, isolated_home: Path) -> Path:
    populate(isolated_home, copies=1)
    assert run_cli(tmp_path, "index").returncode == 0
    return tmp_path / "data" / "index.db"


@pytest.mark.parametrize(
    ("args", "names"),
    [
        (("--session", "0123abcd"), [FIRST[:8]]),
        (("--host", "codex", "--session", FIRST[:8]), ["codex"]),
        (("--project", "/no/such/project"), ["indexed projects"]),
        # A host backscroll knows with nothing indexed: the config keeps it out.
        (("--host", "gemini-cli"), ["claude-code", "codex", "hosts.gemini-cli.enabled: false"]),
    ],
)
def test_forget_of_something_not_indexed_fails_naming_what_is_and_excludes_nothing(
    tmp_path: Path, indexed: Path, args: tuple[str, ...], names: list[str]
) -> None:
    before = dump_turns(indexed)
    done = run_cli(tmp_path, "forget", *args, "--and-exclude")
    assert done.returncode == 1, done.stderr
    for name in names:
        assert name in done.stderr
    assert rules(indexed) == []
    assert dump_turns(indexed) == before


def test_forget_an_ambiguous_session_prefix_lists_the_candidates(
    tmp_path: Path, indexed: Path
) -> None:
    done = run_cli(tmp_path, "forget", "--session", "0000000", "--and-exclude")
    assert done.returncode == 1
    assert "ambiguous" in done.stderr and FIRST in done.stderr
    assert rules(indexed) == []


def test_forget_a_unique_session_prefix_excludes_the_full_id_only(
    tmp_path: Path, indexed: Path
) -> None:
    done = run_cli(tmp_path, "forget", "--session", FIRST[:8], "--and-exclude", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["sessions"] == 1
    assert rules(indexed) == [("session", "claude-code", FIRST)]
    assert not [t for t in dump_turns(indexed) if t[1] == FIRST]


def test_forget_a_project_on_one_host_excludes_that_project_on_that_host_only(
    tmp_path: Path, indexed: Path
) -> None:
    conn = sqlite3.connect(indexed)
    project = conn.execute("SELECT project FROM sessions WHERE host = 'codex'").fetchone()[0]
    conn.close()
    done = run_cli(tmp_path, "forget", "--host", "codex", "--project", project, "--and-exclude")
    assert done.returncode == 0, done.stderr
    assert rules(indexed) == [("project", "codex", project.rstrip("/"))]


def test_exclusions_lists_them_and_remove_undoes_one_so_changes_are_indexed_again(
    tmp_path: Path, isolated_home: Path, indexed: Path
) -> None:
    assert run_cli(tmp_path, "forget", "--session", FIRST, "--and-exclude").returncode == 0
    assert run_cli(tmp_path, "forget", "--host", "codex", "--and-exclude").returncode == 0
    listed = json.loads(run_cli(tmp_path, "exclusions", "--json").stdout)
    assert listed["schema"] == 1
    assert {(e["kind"], e["value"]) for e in listed["exclusions"]} == {
        ("session", FIRST), ("host", "codex")}  # fmt: skip
    assert FIRST in run_cli(tmp_path, "exclusions").stdout

    typo = run_cli(tmp_path, "exclusions", "remove", "--session", "ffff")
    assert typo.returncode == 1 and FIRST in typo.stderr
    assert len(rules(indexed)) == 2

    done = run_cli(tmp_path, "exclusions", "remove", "--session", FIRST[:8], "--json")
    assert done.returncode == 0, done.stderr
    assert [e["value"] for e in json.loads(done.stdout)["removed"]] == [FIRST]
    assert rules(indexed) == [("host", "", "codex")]

    transcript = next((isolated_home / ".claude" / "projects").rglob(f"{FIRST}.jsonl"))
    with open(transcript, "a", encoding="utf-8") as fh:
        fh.write(claude_user_line(FIRST, "aaaaaaaa-0000-4000-8000-000000000001",
                                  "the returning pomegranate question"))  # fmt: skip
    assert run_cli(tmp_path, "index").returncode == 0
    found = json.loads(run_cli(tmp_path, "search", "pomegranate", "--json").stdout)
    assert [h["session_id"] for h in found["hits"]] == [FIRST]


def test_and_exclude_with_only_a_date_is_refused(tmp_path: Path, indexed: Path) -> None:
    done = run_cli(tmp_path, "forget", "--before", "2020-01-01", "--and-exclude")
    assert done.returncode == 2 and "--and-exclude needs" in done.stderr
    assert rules(indexed) == []


def test_forget_while_a_rebuild_runs_is_refused_and_changes_nothing(
    tmp_path: Path, indexed: Path
) -> None:
    """What a rebuild is building would not hold this forget (nor its exclusion),
    and it replaces the index when done: the forgotten turns would come back."""
    import fcntl
    import os

    before = dump_turns(indexed)
    # A rebuild that has taken the forget lock (its pid not yet written, or
    # just started): the lock alone refuses the forget.
    forgets = os.open(indexed.parent / "forget.lock", os.O_RDWR | os.O_CREAT, 0o600)
    fd = os.open(indexed.parent / "daemon.lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(forgets, fcntl.LOCK_EX | fcntl.LOCK_NB)
        done = run_cli(tmp_path, "forget", "--session", FIRST, "--and-exclude")
        assert done.returncode == 2  # (as `index --rebuild` beside another rebuild)
        assert "rebuild" in done.stderr
        assert dump_turns(indexed) == before and rules(indexed) == []
        # With its pid written too, the message names it.
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        os.ftruncate(fd, 0)
        os.write(fd, json.dumps({"rebuild": os.getpid()}).encode())
        done = run_cli(tmp_path, "forget", "--session", FIRST, "--and-exclude")
        assert done.returncode == 2
        assert "rebuild" in done.stderr and str(os.getpid()) in done.stderr
        assert dump_turns(indexed) == before and rules(indexed) == []
        dry = run_cli(tmp_path, "forget", "--session", FIRST, "--dry-run")
        assert dry.returncode == 0, dry.stderr  # (counting changes nothing)
    finally:
        os.close(forgets)
        os.close(fd)
    assert run_cli(tmp_path, "forget", "--session", FIRST, "--and-exclude").returncode == 0


def test_a_forget_that_fails_to_open_the_index_lets_go_of_the_rebuild_lock(
    tmp_path: Path, isolated_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import fcntl
    import os

    from backscroll import cli

    data = Path(os.environ["BACKSCROLL_HOME"])
    data.mkdir(parents=True, exist_ok=True)
    (data / "index.db").write_bytes(b"not a database, " * 512)
    assert cli.main(["forget", "--session", FIRST]) == 2
    assert "index.db" in capsys.readouterr().err
    fd = os.open(data / "forget.lock", os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # (a rebuild would get it)
    finally:
        os.close(fd)


def test_forget_here_with_a_project_is_refused_and_forgets_nothing(
    tmp_path: Path, isolated_home: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    # --here took the current directory's project and dropped --project unread.
    here = tmp_path / "work"
    here.mkdir()
    session = session_uuid(700)
    transcript = isolated_home / ".claude" / "projects" / "-work" / f"{session}.jsonl"
    transcript.parent.mkdir(parents=True)
    transcript.write_text(claude_user_line(session, "u-here", "quince marmalade", str(here)))
    populate(isolated_home, copies=1)
    assert run_cli(tmp_path, "index").returncode == 0
    db = tmp_path / "data" / "index.db"
    before = dump_turns(db)
    assert [t for t in before if t[1] == session]
    monkeypatch.chdir(here)
    assert cli.main(["forget", "--here", "--project", "/p"]) == 2
    assert "give --here or --project, not both" in capsys.readouterr().err
    assert dump_turns(db) == before
