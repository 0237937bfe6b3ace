"""What a new user meets first: exit codes, errors, pipes, colour, arguments."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures"
CLAUDE_SID = "d6e0bada-1959-4eec-a9d2-0bfade768d8f"
PROJECT = "-home-marco-projects-spotter"


def _cli(*args: str | bytes, **kw: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(  # type: ignore[call-overload,no-any-return]
        [sys.executable, "-m", "backscroll", *args],
        capture_output=True, text=True, check=False, timeout=60, **kw,
    )  # fmt: skip


@pytest.fixture
def indexed(isolated_home: Path) -> Path:
    claude = isolated_home / ".claude" / "projects" / PROJECT
    claude.mkdir(parents=True)
    shutil.copy(
        FIXTURES / "claude-code" / "spotter-tool_heavy.jsonl", claude / f"{CLAUDE_SID}.jsonl"
    )
    assert _cli("index").returncode == 0
    return isolated_home


def test_search_exits_1_when_nothing_matched_and_0_when_something_did(indexed: Path) -> None:
    assert _cli("search", "phoenix").returncode == 0
    missed = _cli("search", "zzzunheardofword")
    assert missed.returncode == 1 and "no match for 'zzzunheardofword'" in missed.stdout
    as_json = _cli("search", "--json", "zzzunheardofword")
    assert as_json.returncode == 1 and json.loads(as_json.stdout)["hits"] == []


def test_a_hint_never_suggests_a_flag_already_given(indexed: Path) -> None:
    plain = _cli("search", "zzzunheardofword")
    assert "--any" in plain.stdout
    given = _cli("search", "--any", "zzzunheardofword", "qqqnothing")
    assert given.returncode == 1 and "--any" not in given.stdout


def test_json_errors_are_one_json_object_on_stdout(isolated_home: Path, tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("limits: [\n")
    done = _cli("--config", str(bad), "search", "--json", "anything")
    assert done.returncode == 2
    error = json.loads(done.stdout)["error"]
    assert str(bad) in error["message"] and error["exit_code"] == 2
    assert str(bad) in done.stderr


def test_a_usage_error_with_json_is_json_too(isolated_home: Path) -> None:
    done = _cli("search", "--json", "--limit", "many", "walrus")
    assert done.returncode == 2
    error = json.loads(done.stdout)["error"]
    assert "--limit: not a whole number: 'many'" in error["message"]
    assert "usage:" in done.stderr
    plain = _cli("search", "--limit", "many", "walrus")
    assert plain.returncode == 2 and plain.stdout == ""


def test_a_closed_pipe_ends_quietly(indexed: Path) -> None:
    r, w = os.pipe()
    os.close(r)  # the reader (`| head -0`) is already gone
    done = subprocess.run(
        [sys.executable, "-m", "backscroll", "search", "phoenix"],
        stdout=w, stderr=subprocess.PIPE, text=True, check=False, timeout=60,
    )  # fmt: skip
    os.close(w)
    assert done.stderr == "" and done.returncode == 0


def test_no_color_turns_bold_off_on_a_terminal(indexed: Path) -> None:
    import pty

    def run(env: dict[str, str]) -> bytes:
        leader, follower = pty.openpty()
        proc = subprocess.Popen(
            [sys.executable, "-m", "backscroll", "search", "phoenix"],
            stdout=follower, stderr=subprocess.DEVNULL, env=env,
        )  # fmt: skip
        os.close(follower)
        out = b""
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # the child closed the terminal
                break
            if not chunk:
                break
            out += chunk
        proc.wait(timeout=60)
        os.close(leader)
        return out

    env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
    assert b"\x1b[1m" in run(env)
    plain = run({**env, "NO_COLOR": "1"})
    assert b"\x1b[" not in plain and b"[phoenix]" in plain.lower()


def test_an_argument_that_is_not_utf8_gets_a_clear_error(isolated_home: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "backscroll", "search", b"caf\xe9"],
        capture_output=True, check=False, timeout=60,
    )  # fmt: skip
    assert done.returncode == 2
    assert b"'caf\\xe9' is not valid UTF-8" in done.stderr and b"Traceback" not in done.stderr


def test_a_data_directory_that_is_a_file_is_named_with_the_fix(
    isolated_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv("BACKSCROLL_HOME", str(blocker / "data"))
    for command in (("index",), ("search", "x"), ("status",)):
        done = _cli(*command)
        assert done.returncode == 2, command
        assert f"cannot use the data directory {blocker / 'data'}" in done.stderr, command
        assert "BACKSCROLL_HOME" in done.stderr and "unexpected error" not in done.stderr


def test_project_paths_resolve_relative_and_here_works_from_a_subdirectory(
    isolated_home: Path, tmp_path: Path
) -> None:
    project = _project_with_a_subdirectory(isolated_home, tmp_path)
    (project / "lib" / "deep").mkdir()
    (tmp_path / "work" / "other").mkdir()
    for cwd, args in (
        (project, ("--here",)),
        (project / "lib" / "deep", ("--here",)),
        (project / "lib", ("--project", ".")),
        (tmp_path / "work", ("--project", "spotter")),
    ):
        found = _cli("search", "--json", "phoenix", *args, cwd=cwd)
        assert found.returncode == 0, (cwd, args, found.stdout)
        assert {h["project"] for h in json.loads(found.stdout)["hits"]} == {str(project)}
        listed = _cli("sessions", "--json", *args, cwd=cwd)
        assert [s["session_id"] for s in json.loads(listed.stdout)["sessions"]] == [CLAUDE_SID]
    elsewhere = _cli("search", "--json", "phoenix", "--here", cwd=tmp_path / "work" / "other")
    assert elsewhere.returncode == 1 and json.loads(elsewhere.stdout)["hits"] == []
    above = _cli("sessions", "--json", "--here", cwd=tmp_path / "work")
    assert json.loads(above.stdout)["sessions"] == []  # a parent is not inside the project


def test_the_command_skips_interpreter_teardown_only_when_nothing_else_runs() -> None:
    """`backscroll` ends with os._exit after flushing (the teardown cost 15-25 ms),
    but only with no other thread and no child process left to wait for."""
    script = (
        "import threading\n"
        "from backscroll import cli\n"
        "print(cli._nothing_running())\n"
        "go = threading.Event()\n"
        "t = threading.Thread(target=go.wait)\n"
        "t.start()\n"
        "print(cli._nothing_running())\n"
        "go.set()\n"
        "t.join()\n"
        "print(cli._nothing_running())\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=60
    )
    assert done.stdout.split() == ["True", "False", "True"]


def test_output_bigger_than_a_pipe_buffer_arrives_whole_before_the_fast_exit(
    isolated_home: Path,
) -> None:
    sid = "5b1e0c1a-0000-4000-8000-00000000b16"
    lines = [
        json.dumps(
            {
                "type": "user",
                "message": {"role": "user", "content": f"turn {n}: " + "walrus " * 400},
                "uuid": f"u-{n}",
                "timestamp": f"2026-11-30T10:{n:02d}:00Z",
                "sessionId": sid,
                "cwd": "/home/someone/project",
                "version": "2.0.1",
            }
        )
        for n in range(60)
    ]
    project = isolated_home / ".claude" / "projects" / "-home-someone-project"
    project.mkdir(parents=True)
    (project / f"{sid}.jsonl").write_text("\n".join(lines) + "\n")
    assert _cli("index").returncode == 0
    shown = _cli("show", sid, "--window", "60", "--json")
    assert shown.returncode == 0 and len(shown.stdout) > 65536
    turns = json.loads(shown.stdout)["turns"]
    assert [t["text"].split(":")[0] for t in turns] == [f"turn {n}" for n in range(60)]


def test_columns_stay_aligned_beside_a_long_host_name(indexed: Path) -> None:
    from tests.test_all_hosts import LAYOUT

    for src, dst in LAYOUT["claude-desktop-cowork"]:
        target = indexed / dst
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(FIXTURES / src, target)
    index = _cli("index")
    assert index.returncode == 0, index.stderr
    rows = [line for line in index.stdout.splitlines() if line.endswith(" turns")]
    assert {line.split()[0] for line in rows} == {"claude-code", "claude-desktop-cowork"}
    assert len({line.index(" files ") for line in rows}) == 1, index.stdout
    status = _cli("status").stdout.splitlines()
    header = next(i for i, line in enumerate(status) if line.startswith("host "))
    heading, *table = status[header : header + 3]
    ends = [heading.index(h) + len(h) for h in ("files", "sessions", "turns")]
    for row in table:  # each count ends under the end of its heading
        assert [m.end() for m in re.finditer(r"\b\d+\b", row)] == ends, "\n".join(status)
    sessions = [line for line in _cli("sessions").stdout.splitlines() if " turns " in line]
    assert len({line.index(" turns ") for line in sessions}) == 1, "\n".join(sessions)


def test_a_search_for_a_word_starting_with_a_dash_is_told_to_use_double_dash(
    indexed: Path,
) -> None:
    for argv in (["search", "--force"], ["search", "rebase", "--force"]):
        out = _cli(*argv)
        assert out.returncode == 2
        assert "backscroll search -- --force" in out.stderr, out.stderr
    assert _cli("search", "--", "--force").returncode == 1  # searched: no match


def test_doctor_fails_a_data_directory_that_cannot_be_created(
    isolated_home: Path, tmp_path: Path
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    env = {**os.environ, "BACKSCROLL_HOME": str(blocker / "data")}
    done = _cli("doctor", env=env)
    assert done.returncode != 0
    line = next(ln for ln in done.stdout.splitlines() if ln.split()[1:2] == ["data"])
    assert line.startswith("fail") and f"{blocker} is not a directory" in line


def _as_another_user(path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("giving a file to another user needs root")
    for p in (path, *path.rglob("*")):
        os.chown(p, 65534, 65534)


def test_an_index_of_another_user_is_named_with_its_owner_and_the_fix(tmp_path: Path) -> None:
    from backscroll.paths import permission_problem
    from backscroll.store import schema

    data = tmp_path / "data"
    data.mkdir()
    db = data / "index.db"
    db.write_bytes(b"")
    _as_another_user(data)
    text = permission_problem(PermissionError(13, "Permission denied", str(db)))
    assert text == (
        f"permission denied: {db}; it belongs to uid 65534 (made by `sudo backscroll ...`?): "
        f"make it yours (`sudo chown -R $(id -u) {data}`), or point BACKSCROLL_HOME elsewhere"
    )
    readonly = str(schema._unreadable(db, Exception("attempt to write a readonly database")))
    assert "belongs to uid 65534" in readonly and f"sudo chown -R $(id -u) {data}" in readonly
    assert "--rebuild" not in readonly  # not damaged: rebuilding is not the fix


def test_a_permission_error_is_a_clear_error_with_exit_2_not_a_traceback(
    isolated_home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from backscroll import cli

    def denied(args: object) -> int:
        raise PermissionError(13, "Permission denied", "/srv/data/index.db")

    monkeypatch.setattr(cli, "cmd_index", denied)
    assert cli.main(["index", "--json"]) == 2
    out, err = capsys.readouterr()
    assert json.loads(out)["error"]["exit_code"] == 2
    assert err.startswith("backscroll: permission denied: /srv/data/index.db;")
    assert "unexpected error" not in err


def test_a_config_file_named_but_missing_is_an_error_with_the_daemon_running_too(
    tmp_path: Path, isolated_home: Path
) -> None:
    from tests.daemon.harness import run_cli, start_daemon

    missing = tmp_path / "nonexistent.yaml"
    with start_daemon(tmp_path) as d:
        daemon = {"BACKSCROLL_SOCKET": str(d.socket_path)}
        assert run_cli(tmp_path, "status", env=daemon).returncode == 0  # the daemon answers
        for env, args in (
            (daemon, ("--config", str(missing), "search", "login")),
            ({**daemon, "BACKSCROLL_CONFIG": str(missing)}, ("status",)),
        ):
            done = run_cli(tmp_path, *args, env=env)
            assert done.returncode == 2, (args, done.stdout)
            assert f"{missing}: no such config file" in done.stderr
        assert d.stop() == 0


def _project_with_a_subdirectory(isolated_home: Path, tmp_path: Path) -> Path:
    project = tmp_path / "work" / "spotter"
    (project / "lib").mkdir(parents=True)
    claude = isolated_home / ".claude" / "projects" / "-work-spotter"
    claude.mkdir(parents=True)
    text = (FIXTURES / "claude-code" / "spotter-tool_heavy.jsonl").read_text()
    (claude / f"{CLAUDE_SID}.jsonl").write_text(
        text.replace("/home/marco/projects/spotter", str(project))
    )
    assert _cli("index").returncode == 0
    return project


def test_forget_from_a_subdirectory_or_a_typo_under_a_project_forgets_nothing(
    isolated_home: Path, tmp_path: Path
) -> None:
    # Forgetting is not undone: a path inside a project (or a typo under one, or
    # any directory under a home where a session was started) must not take the
    # whole project. The project around it is named instead.
    project = _project_with_a_subdirectory(isolated_home, tmp_path)
    for args, cwd in (
        (("--here",), project / "lib"),
        (("--project", str(project / "lib-typo"), "--and-exclude"), tmp_path),
    ):
        done = _cli("forget", *args, "--json", cwd=cwd)
        assert done.returncode == 1, done.stdout + done.stderr
        said = done.stdout + done.stderr
        assert f"it is inside the indexed project '{project}'" in said
        assert f"--project {project}" in said
    assert json.loads(_cli("exclusions", "--json").stdout)["exclusions"] == []
    assert _cli("search", "phoenix").returncode == 0  # nothing was forgotten
    done = _cli("forget", "--here", "--json", cwd=project)  # the project itself: forgotten
    assert done.returncode == 0 and json.loads(done.stdout)["sessions"] == 1


def test_a_no_match_hint_names_here_when_the_project_was_given_so(
    isolated_home: Path, tmp_path: Path
) -> None:
    _project_with_a_subdirectory(isolated_home, tmp_path)
    missed = _cli("search", "phoenix", "--here", cwd=tmp_path)
    assert missed.returncode == 1
    assert "--here" in missed.stdout and "--project" not in missed.stdout


def test_forget_of_an_unknown_host_names_each_known_host_once(indexed: Path) -> None:
    done = _cli("forget", "--host", "nosuch")
    assert done.returncode == 2
    known = done.stderr.split("the hosts are: ")[1].split()
    names = [n.rstrip(",") for n in known]
    assert len(names) == len(set(names)) and "goose" in names and "hermes" in names


def test_search_limit_below_one_is_refused_not_read_as_the_default(indexed: Path) -> None:
    done = _cli("search", "phoenix", "--limit", "0")
    assert done.returncode == 2 and "--limit: must be at least 1" in done.stderr


def test_show_with_the_wrong_host_names_the_host_the_session_is_on(indexed: Path) -> None:
    done = _cli("show", CLAUDE_SID[:4], "--host", "codex")
    assert done.returncode == 1
    said = done.stdout + done.stderr
    assert "on codex; it is on claude-code: give that --host, or drop it" in said


def test_sessions_on_an_empty_index_says_so_in_one_sentence(isolated_home: Path) -> None:
    assert _cli("index").returncode == 0
    done = _cli("sessions")
    said = done.stdout + done.stderr
    assert "no sessions indexed yet; `backscroll status` shows what is being indexed" in said
    narrowed = _cli("sessions", "--host", "codex")
    assert "no sessions match these filters; drop some to see more" in (
        narrowed.stdout + narrowed.stderr
    )


def test_a_date_filter_that_hid_every_match_is_named_with_its_side(indexed: Path) -> None:
    # The session's turns are from 2026-02-10.
    before = _cli("search", "phoenix", "--until", "2026-02-10")
    assert before.returncode == 1
    assert "are newer — widen or drop --until" in before.stdout, before.stdout
    both = _cli("search", "phoenix", "--since-days", "4000", "--since", "2026-03-01")
    assert both.returncode == 1
    assert "are older — widen or drop --since" in both.stdout, both.stdout
    assert "--since-days" not in both.stdout  # the later start is the one that cut them
    days = _cli("search", "phoenix", "--since-days", "1")
    assert "in the last 1 days" in days.stdout and "widen or drop --since-days" in days.stdout


def test_a_date_window_that_ends_before_it_starts_is_refused(indexed: Path) -> None:
    done = _cli("search", "phoenix", "--since", "2026-02-11", "--until", "2026-02-01")
    assert done.returncode == 2
    assert "--since must be before --until" in done.stdout + done.stderr
    days = _cli("search", "phoenix", "--since-days", "1", "--until", "2026-05-01")
    assert days.returncode == 2
    assert "--since-days 1 starts after --until" in days.stdout + days.stderr
    nan = _cli("search", "phoenix", "--since-days", "nan")
    assert nan.returncode == 2 and "--since-days must be a number of days" in nan.stderr
    assert "since_days" not in nan.stdout + nan.stderr


def test_a_bare_year_or_month_means_its_first_day_not_a_unix_time(indexed: Path) -> None:
    # The session's turns are from 2026-02-10.
    assert _cli("search", "phoenix", "--since", "2026").returncode == 0
    assert _cli("search", "phoenix", "--since", "2026-02").returncode == 0
    later = _cli("search", "phoenix", "--since", "2026-03")
    assert later.returncode == 1 and "are older" in later.stdout
    until = _cli("search", "phoenix", "--until", "2026")
    assert until.returncode == 1 and "are newer" in until.stdout
    assert _cli("search", "phoenix", "--since", "20260201").returncode == 0
    short = _cli("search", "phoenix", "--since", "12345")
    assert short.returncode == 2
    assert "cannot read the date '12345' given to --since; use YYYY-MM-DD" in short.stderr
    for bad in ("12345678", "2026-13"):  # (not a date; never Unix seconds)
        done = _cli("search", "phoenix", "--until", bad)
        assert done.returncode == 2 and f"cannot read the date {bad!r} given to --until" in (
            done.stderr
        ), done.stderr


def test_a_prefix_search_that_missed_is_named_with_its_star(indexed: Path) -> None:
    done = _cli("search", "zzq*")
    assert done.returncode == 1 and "no match for 'zzq*'" in done.stdout, done.stdout


def test_when_leaving_words_out_hid_every_match_the_message_says_so(indexed: Path) -> None:
    done = _cli("search", "phoenix", "-background")
    assert done.returncode == 1
    assert "2 match(es) hold 'phoenix' but also -background" in done.stdout, done.stdout
    also = _cli("search", "phoenix", "NOT", "background", "--json")
    reason = json.loads(also.stdout)["reason"]
    assert reason == {"code": "all_excluded", "words": "phoenix", "excluded": ["background"],
                      "count": 2}  # fmt: skip


def test_a_filter_is_not_blamed_for_words_that_match_nothing_anywhere(indexed: Path) -> None:
    done = _cli("search", "zzzqqq", "--host", "codex")
    assert done.returncode == 1
    assert "no match for 'zzzqqq'" in done.stdout and "--host" not in done.stdout, done.stdout
    filtered = _cli("search", "phoenix", "--host", "codex")
    assert "no match for 'phoenix' with --host" in filtered.stdout, filtered.stdout


def test_the_any_word_fallback_never_matches_on_common_words_alone(indexed: Path) -> None:
    typo = _cli("search", "the", "flamingox")
    assert typo.returncode == 1, typo.stdout
    assert "no match for 'the flamingox'" in typo.stdout
    fallback = _cli("search", "the", "phoenix", "flamingox", "--json")
    data = json.loads(fallback.stdout)
    assert data["fallback"] == "any" and data["total"] == 2
    assert all("phoenix" in h["excerpt"].lower() for h in data["hits"])


def test_an_unreadable_file_that_is_deleted_is_no_longer_counted(indexed: Path) -> None:
    fifo = indexed / ".claude" / "projects" / PROJECT / "0f1f0000-0000-4000-8000-000000000000.jsonl"
    os.mkfifo(fifo)
    first = json.loads(_cli("index", "--json").stdout)
    assert first["hosts"]["claude-code"]["unreadable_files"] == 1
    fifo.unlink()
    again = json.loads(_cli("index", "--json").stdout)
    assert again["hosts"]["claude-code"]["unreadable_files"] == 0
    status = _cli("status")
    assert "unreadable" not in status.stdout, status.stdout
    explain = _cli("explain", str(fifo))
    assert "not a regular file" not in explain.stdout, explain.stdout
    assert json.loads(_cli("index", "--json").stdout)["hosts"]["claude-code"]["turns"] > 0


@pytest.mark.parametrize(
    "argv",
    [
        ["search", "phoenix", "--host", "claude"],
        ["sessions", "--host", "claude"],
        ["show", CLAUDE_SID[:8], "--host", "claude"],
        ["forget", "--host", "claude"],
    ],
)
def test_an_unknown_host_is_the_same_usage_error_in_every_command(
    indexed: Path, argv: list[str]
) -> None:
    done = _cli(*argv)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "unknown host 'claude'; did you mean claude-code? the hosts are:" in done.stderr
    as_json = _cli(*argv, "--json")
    assert "unknown host 'claude'" in json.loads(as_json.stdout)["error"]["message"]


def test_forget_says_what_happens_when_the_files_change_again(indexed: Path) -> None:
    done = _cli("forget", "--session", CLAUDE_SID)
    assert done.returncode == 0, done.stderr
    assert "the forgotten turns stay out when their files are read again" in done.stdout
    assert "not re-indexed unless they change" not in done.stdout


def test_explain_names_the_exclusion_that_keeps_a_files_session_out(indexed: Path) -> None:
    path = indexed / ".claude" / "projects" / PROJECT / f"{CLAUDE_SID}.jsonl"
    assert _cli("forget", "--session", CLAUDE_SID, "--and-exclude").returncode == 0
    done = _cli("explain", str(path))
    assert done.returncode == 0, done.stderr
    assert f"session {CLAUDE_SID} is excluded (forget --and-exclude)" in done.stdout
    assert f"`backscroll exclusions remove --session {CLAUDE_SID}`" in done.stdout
    assert "up to date" not in done.stdout


def test_a_relative_backscroll_home_is_refused_and_a_relative_xdg_dir_ignored(
    indexed: Path, tmp_path: Path
) -> None:
    here = tmp_path / "somewhere"
    here.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "BACKSCROLL_HOME"}
    done = _cli("status", env={**env, "BACKSCROLL_HOME": "data"}, cwd=here)
    assert done.returncode == 2
    assert "BACKSCROLL_HOME=data is a relative path" in done.stderr
    assert not (here / "data").exists()  # (no index made beside the current directory)
    xdg = _cli("status", "--json", env={**os.environ, "XDG_CONFIG_HOME": "cfg"}, cwd=here)
    assert xdg.returncode == 0, xdg.stderr


def test_options_that_contradict_or_show_nothing_are_refused(indexed: Path) -> None:
    both = _cli("search", "phoenix", "--here", "--project", "/p")
    assert both.returncode == 2 and "give --here or --project, not both" in both.stderr
    window = _cli("show", CLAUDE_SID[:8], "--window", "0")
    assert window.returncode == 2 and "--window 0 shows nothing" in window.stderr
    around = _cli("show", CLAUDE_SID[:8], "--around", "0")
    assert around.returncode == 2 and "turns are numbered from 1" in around.stderr
