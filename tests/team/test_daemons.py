"""Done means: two daemons with different machine ids publish into one
PostgreSQL database, and ``search --team`` from either finds both."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from backscroll.team.keys import TeamKeys
from tests.daemon.harness import DaemonProcess, claude_user_line, dump_turns, run_cli
from tests.team.conftest import TeamDb
from tests.team.pgserver import PASSWORD
from tests.team.util import wait_until

SESSION = "5e55a000-0000-4000-8000-0000000000{:02d}"


def team_yaml(team_db: TeamDb, user: str, machine: str, batch: int = 500) -> str:
    url = team_db.server.url(user, team_db.name)
    return (
        f"team:\n  url: {url}\n  password_file: {team_db.password_file}\n"
        f"  machine_id: {machine}\n  interval_s: 0.05\n  max_backoff_s: 0.5\n"
        f"  batch_size: {batch}\n"
    )


def write_turn(home: Path, n: int, text: str) -> Path:
    path = home / ".claude" / "projects" / "-work" / f"{SESSION.format(n)}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as f:
        f.write(claude_user_line(SESSION.format(n), f"u-{n}-{text[:8]}", text, cwd="/work"))
    return path


def caught_up(d: DaemonProcess, turns: int) -> Any:
    team = d.call("status").get("team") or {}
    return team.get("running") and team.get("pending") == 0 and team.get("published", 0) >= turns


def start(
    root: Path, team_db: TeamDb, user: str, machine: str, text: str, batch: int = 500
) -> DaemonProcess:
    root.mkdir(exist_ok=True)
    write_turn(root / "home", 1 if user == "alice" else 2, text)
    return DaemonProcess(root, config=team_yaml(team_db, user, machine, batch))


def team_search(d: DaemonProcess, *words: str) -> dict[str, Any]:
    done = run_cli(d.tmp_path, "search", "--team", "--json", *words, env=d.env)
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def test_two_daemons_publish_to_one_database_and_either_finds_both(
    tmp_path: Path, team_db: TeamDb
) -> None:
    with (
        start(tmp_path / "a", team_db, "alice", "laptop-a", "zebrafish migration plan A") as a,
        start(tmp_path / "b", team_db, "bob", "ci-runner-b", "zebrafish rollback plan B") as b,
    ):
        a.wait_ready()
        b.wait_ready()
        wait_until(lambda: caught_up(a, 1) and caught_up(b, 1), "both daemons to publish")
        for d in (a, b):
            hits = team_search(d, "zebrafish")["hits"]
            found = {(h["machine"], h["owner"]) for h in hits}
            assert found == {("laptop-a", "alice"), ("ci-runner-b", "bob")}
        # A turn appended on one machine becomes searchable from the other.
        write_turn(a.home, 1, "quokka appended later")
        wait_until(lambda: team_search(b, "quokka")["hits"], "the appended turn to reach b")
        status = run_cli(a.tmp_path, "status", env=a.env)
        assert "team: " in status.stdout and "laptop-a" in status.stdout
        text = team_search(a, "zebrafish")
        assert text["total"] == 2
        plain = run_cli(b.tmp_path, "search", "--team", "zebrafish", env=b.env).stdout
        assert "(alice on laptop-a)" in plain and "(bob on ci-runner-b)" in plain
        team = a.call("status")["team"]
        assert team["owner"] == "alice" and team["lag_s"] == 0 and team["last_error"] is None
        for d in (a, b):  # the password is in no log line
            assert PASSWORD not in d.stderr_text() and d.stderr_text()


def test_a_daemon_killed_mid_publish_publishes_everything_once_after_restart(
    tmp_path: Path, team_db: TeamDb
) -> None:
    root = tmp_path / "a"
    # Five turns a round: 300 new turns take 60 publish rounds, and the kill
    # lands while they drain (the outbox still holds rows).
    d = start(root, team_db, "alice", "laptop-a", "first turn before the kill", batch=5)
    with d:
        d.wait_ready()
        wait_until(lambda: caught_up(d, 1), "the first publish")
        for i in range(300):
            write_turn(d.home, 1, f"burst turn number {i} of many")
        d.sync()
        d.kill()  # SIGKILL, whatever the publisher was doing
    assert len(team_db.rows()) < 301, "the kill came after the whole publish"
    local = dump_turns(root / "data" / "index.db")
    assert len(local) == 301
    with DaemonProcess(root, config=team_yaml(team_db, "alice", "laptop-a")) as again:
        again.wait_ready()
        wait_until(lambda: caught_up(again, 0) and len(team_db.rows()) == len(local),
                   "the restarted daemon to catch up")  # fmt: skip
        remote = team_db.rows("host", "session_id", "turn_key")
        keys = TeamKeys.of(root / "data")
        assert remote == sorted((h, s, keys(k)) for h, s, k, _r, _t in local)


def test_a_reload_turns_publishing_on_for_a_running_daemon(tmp_path: Path, team_db: TeamDb) -> None:
    import signal

    root = tmp_path / "a"
    root.mkdir()
    write_turn(root / "home", 1, "okapi before the team existed")
    cfg = root / "config.yaml"
    cfg.write_text("{}\n")
    with DaemonProcess(root, env={"BACKSCROLL_CONFIG": str(cfg)}) as d:
        d.wait_ready()
        d.sync()
        assert "team" not in d.call("status")
        cfg.write_text(team_yaml(team_db, "alice", "laptop-a"))
        d.send_signal(signal.SIGHUP)
        wait_until(lambda: caught_up(d, 1), "publishing after the reload")
        assert [r[3] for r in team_db.rows()] == [SESSION.format(1)]


def test_an_unusable_team_key_file_turns_publishing_off_and_the_daemon_serves_on(
    tmp_path: Path, team_db: TeamDb
) -> None:
    root = tmp_path / "a"
    root.mkdir()
    write_turn(root / "home", 1, "quagga stays searchable")
    (root / "data").mkdir(mode=0o700)
    (root / "data" / "team-key").mkdir()  # not a file: the secret cannot be read or made
    with DaemonProcess(root, config=team_yaml(team_db, "alice", "laptop-a")) as d:
        d.wait_ready()
        d.sync()
        status = d.call("status")
        assert "team-key" in str(status["team"]["last_error"])
        found = d.call("search", {"query": "quagga"})["hits"]
        assert [h["session_id"] for h in found] == [SESSION.format(1)]
    assert team_db.rows() == []


def test_an_index_written_with_redaction_off_is_not_published_until_rebuilt(
    tmp_path: Path, team_db: TeamDb
) -> None:
    """Only redacted text leaves the machine: turns indexed while redaction was
    off stay home until a rebuild has read them again with it on."""
    root = tmp_path / "a"
    root.mkdir()
    secret = "AKIAIOSFODNN7EXAMPLQ"
    write_turn(root / "home", 1, f"the key is aws_access_key_id={secret} tapir")
    off = root / "off.yaml"
    off.write_text("redaction:\n  enabled: false\n")
    done = run_cli(root, "index", env={"BACKSCROLL_CONFIG": str(off)})
    assert done.returncode == 0, done.stderr
    with DaemonProcess(root, config=team_yaml(team_db, "alice", "laptop-a")) as d:
        d.wait_ready()
        d.sync()
        status = d.call("status")["team"]
        assert "redaction" in str(status["last_error"]), status
        assert "index --rebuild" in str(status["last_error"])
        assert d.call("search", {"query": "tapir"})["hits"]  # local search goes on
    assert team_db.rows() == []
    config = root / "on.yaml"
    config.write_text(team_yaml(team_db, "alice", "laptop-a"))
    rebuilt = run_cli(root, "index", "--rebuild", env={"BACKSCROLL_CONFIG": str(config)})
    assert rebuilt.returncode == 0, rebuilt.stderr
    with DaemonProcess(root, config=team_yaml(team_db, "alice", "laptop-a")) as d:
        d.wait_ready()
        d.sync()
        wait_until(lambda: team_db.rows("text"), "the rebuilt index to be published")
    texts = [str(t) for (t,) in team_db.rows("text")]
    assert texts and not any(secret in t for t in texts)
