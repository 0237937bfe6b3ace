"""Publishing the local index into a real PostgreSQL: every turn once, again
after a crash or a cut connection without duplicates, forgets propagated,
excluded projects kept home, private ones marked."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest

from backscroll.store import open_writer, outbox
from backscroll.team import publish
from backscroll.team.keys import TeamKeys
from backscroll.team.publish import Publisher
from tests.daemon.harness import claude_user_line, dump_turns, populate, run_cli
from tests.team.conftest import TeamDb
from tests.team.util import (
    CrashAfterCommit,
    WriterOutbox,
    drain,
    here,
    local_publisher,
    publish_all,
    wait_until,
)


def indexed(tmp_path: Path) -> Path:
    populate(tmp_path / "home", copies=1, codex=True)
    done = run_cli(tmp_path, "index")
    assert done.returncode == 0, done.stderr
    return tmp_path / "data" / "index.db"


def local_keys(db: Path, machine: str) -> list[tuple[object, ...]]:
    """The rows the team should hold: each local turn, its key as the team sees it."""
    keys = TeamKeys.of(db.parent)
    return sorted((machine, "alice", h, s, keys(k)) for h, s, k, _r, _t in dump_turns(db))


def test_every_local_turn_is_published_once_under_its_machine_and_owner(
    tmp_path: Path, team_db: TeamDb
) -> None:
    db = indexed(tmp_path)
    pub, writer = local_publisher(db, team_db.team("alice", "m-alice"))
    try:
        assert drain(pub) >= 1
        expected = local_keys(db, "m-alice")
        assert len(expected) > 20
        assert team_db.rows() == expected
        assert outbox.stats(writer).pending == 0
        assert pub.state.owner == "alice" and pub.state.published == len(expected)
        # Queue everything again: the upserts change nothing and duplicate nothing.
        outbox.disable(writer)
        outbox.enable(writer)
        drain(pub)
        assert team_db.rows() == expected
    finally:
        pub.close()
        writer.close()


def test_a_crash_between_remote_commit_and_local_ack_resends_without_duplicates(
    tmp_path: Path, team_db: TeamDb
) -> None:
    db = indexed(tmp_path)
    team = team_db.team("alice", "m-alice", batch_size=100_000)
    first, writer = local_publisher(db, team)
    pending = outbox.stats(writer).pending
    crashing = Publisher(
        team, "m-alice", CrashAfterCommit(WriterOutbox(writer, here)), TeamKeys.of(db.parent)
    )
    try:
        with pytest.raises(RuntimeError, match="killed"):
            asyncio.run(crashing.round())
        assert team_db.rows() == local_keys(db, "m-alice")  # committed remotely
        assert outbox.stats(writer).pending == pending  # nothing acknowledged
    finally:
        crashing.close()
    # The restarted publisher (a new pool) sends it all again: same rows, no more.
    try:
        drain(first)
        assert team_db.rows() == local_keys(db, "m-alice")
        assert outbox.stats(writer).pending == 0
    finally:
        first.close()
        writer.close()


def test_publishing_survives_the_server_going_away_and_coming_back(
    tmp_path: Path, team_db: TeamDb
) -> None:
    db = indexed(tmp_path)
    pub, writer = local_publisher(db, team_db.team("alice", "m-alice"))
    loop = asyncio.new_event_loop()
    runner = threading.Thread(target=loop.run_until_complete, args=(pub.run(),))
    # The writer connection is used from the publisher's loop thread from here on.
    runner.start()
    try:
        wait_until(lambda: pub.state.published and pub.state.pending == 0, "the first publish")
        team_db.server.stop()  # every connection is cut
        session = "deadbeef-0000-4000-8000-00000000cafe"
        transcript = tmp_path / "home" / ".claude" / "projects" / "-cut" / f"{session}.jsonl"
        transcript.parent.mkdir(parents=True)
        transcript.write_text(claude_user_line(session, "u-cut-1", "written while cut off"))
        assert run_cli(tmp_path, "index").returncode == 0
        wait_until(lambda: pub.state.last_error and pub.state.pending, "a failed publish")
        assert pub.state.retry_in_s is not None
        team_db.server.start()
        wait_until(lambda: pub.state.pending == 0 and pub.state.last_error is None, "recovery")
        assert team_db.rows() == local_keys(db, "m-alice")
        assert any(row[3] == session for row in team_db.rows())
    finally:
        if team_db.server.proc is None:
            team_db.server.start()
        loop.call_soon_threadsafe(pub.stop)
        runner.join(30)
        loop.close()
        writer.close()


def test_a_forgotten_session_is_deleted_remotely(tmp_path: Path, team_db: TeamDb) -> None:
    db = indexed(tmp_path)
    pub, writer = local_publisher(db, team_db.team("alice", "m-alice"))
    try:
        drain(pub)
        session = dump_turns(db)[0][1]
        assert any(r[3] == session for r in team_db.rows())
        done = run_cli(tmp_path, "forget", "--session", session)
        assert done.returncode == 0, done.stderr
        assert drain(pub) == 1
        assert not any(r[3] == session for r in team_db.rows())
        assert team_db.rows() == local_keys(db, "m-alice")
    finally:
        pub.close()
        writer.close()


def test_excluded_projects_stay_home_and_private_ones_are_marked(
    tmp_path: Path, team_db: TeamDb
) -> None:
    db = indexed(tmp_path)
    import sqlite3

    conn = sqlite3.connect(db)
    projects = sorted(
        {str(p) for (p,) in conn.execute("SELECT project FROM sessions WHERE project != ''")}
    )
    conn.close()
    assert len(projects) >= 2, projects
    excluded, private = projects[0], projects[1]
    team = team_db.team("alice", "m-alice", exclude_projects=(excluded,),
                        private_projects=(private,))  # fmt: skip
    pub, writer = local_publisher(db, team)
    try:
        drain(pub)
        rows = team_db.rows("project", "private")
        assert rows and not any(p == excluded for p, _ in rows)
        assert all(priv == (p == private) for p, priv in rows)
        assert any(priv for _, priv in rows) and any(not priv for _, priv in rows)
    finally:
        pub.close()
        writer.close()


def test_excluding_a_published_project_later_deletes_it_remotely(
    tmp_path: Path, team_db: TeamDb
) -> None:
    db = indexed(tmp_path)
    publish_all(db, team_db.team("alice", "m-alice"))
    project = str(team_db.rows("project")[0][0])
    assert project != "None"
    later = team_db.team("alice", "m-alice", exclude_projects=(project,))
    pub, writer = local_publisher(db, later)  # as a daemon started with the new config
    try:
        drain(pub)
        remaining = team_db.rows("project")
        assert remaining and (project,) not in remaining
    finally:
        pub.close()
        writer.close()


def test_the_team_gets_keyed_hashes_of_turn_keys_never_keys_derived_from_the_text(
    tmp_path: Path, team_db: TeamDb
) -> None:
    # Some hosts' keys are a hash of the unredacted text: sent as they are, a
    # member could test guesses of a redacted password against them.
    db = indexed(tmp_path)
    publish_all(db, team_db.team("alice", "m-alice"))
    local = {k for _h, _s, k, _r, _t in dump_turns(db)}
    remote = [str(r[0]) for r in team_db.rows("turn_key")]
    prefix = TeamKeys.of(db.parent).prefix
    assert remote and all(k.startswith(prefix) for k in remote)
    assert not local & set(remote)
    secret = db.parent / "team-key"
    assert secret.stat().st_mode & 0o777 == 0o600
    assert TeamKeys.of(db.parent).prefix == prefix  # stable: the same rows next time


def test_rows_published_under_older_keys_are_replaced_not_doubled(
    tmp_path: Path, team_db: TeamDb
) -> None:
    import psycopg

    db = indexed(tmp_path)
    (host, session, key, role, text) = dump_turns(db)[0]
    # A row as an earlier version published it: the local key itself.
    with psycopg.connect(team_db.server.admin_dsn(team_db.name)) as admin:
        admin.execute(
            "INSERT INTO backscroll.turns (owner, machine_id, host, session_id, turn_key, role,"
            " text) VALUES ('alice', 'm-alice', %s, %s, %s, %s, %s)",
            (host, session, key, role, text),
        )
    publish_all(db, team_db.team("alice", "m-alice"))
    assert team_db.rows() == local_keys(db, "m-alice")


def test_a_team_database_that_stops_answering_fails_the_round_and_publishing_resumes(
    tmp_path: Path, team_db: TeamDb
) -> None:
    """A hung server (its backends stopped, as a network that drops packets
    looks to the client): the round fails after team.timeout_s with a message,
    starts no second send while the first waits, and publishing resumes once
    the server answers again."""
    import os
    import signal
    import time

    import psycopg

    db = indexed(tmp_path)
    pub, writer = local_publisher(db, team_db.team("alice", "m-alice", timeout_s=1.0))
    try:
        drain(pub)
        expected = local_keys(db, "m-alice")
        with psycopg.connect(team_db.server.admin_dsn(team_db.name)) as conn:
            backends = [int(r[0]) for r in conn.execute(
                "SELECT pid FROM pg_stat_activity WHERE usename = 'alice'").fetchall()]  # fmt: skip
        assert backends
        with writer.transaction():  # every turn queued again (a rename of each session)
            writer.conn.execute("UPDATE sessions SET title = coalesce(title, '') || '.'")
        for pid in backends:
            os.kill(pid, signal.SIGSTOP)
        try:
            started = time.monotonic()
            with pytest.raises(TimeoutError, match="has not answered for 1 s"):
                asyncio.run(pub.round())
            assert time.monotonic() - started < 10
            stuck = publish._STUCK[-1]
            assert stuck is not None and stuck.is_alive() and stuck.daemon
            with pytest.raises(TimeoutError):  # no second send while the first waits
                asyncio.run(pub.round())
            # Nor from the publisher a reload makes: the first may yet commit.
            reloaded = Publisher(pub.team, "m-alice", WriterOutbox(writer, here),
                                 TeamKeys.of(db.parent))  # fmt: skip
            with pytest.raises(TimeoutError, match="has not answered"):
                asyncio.run(reloaded.round())
        finally:
            for pid in backends:
                os.kill(pid, signal.SIGCONT)
        wait_until(lambda: not stuck.is_alive(), "the stuck send to return")
        drain(pub)
        assert team_db.rows() == expected
        assert outbox.stats(writer).pending == 0
    finally:
        pub.close()
        writer.close()


def test_what_was_forgotten_while_nothing_recorded_is_deleted_remotely_when_publishing_resumes(
    tmp_path: Path, team_db: TeamDb
) -> None:
    """A rebuild's new index records nothing until a daemon turns publishing on,
    and turning it off (team.url unset) drops the queue: a forget in between left
    no row to send, so the forgotten turns stayed published for good."""
    db = indexed(tmp_path)
    team = team_db.team("alice", "m-alice")
    publish_all(db, team)
    sessions = sorted({t[1] for t in dump_turns(db)})
    assert len(sessions) >= 2
    # A rebuild, then a forget before any daemon ran with the new index.
    assert run_cli(tmp_path, "index", "--rebuild").returncode == 0
    assert run_cli(tmp_path, "forget", "--session", sessions[0]).returncode == 0
    publish_all(db, team)  # as a daemon started afterwards
    assert team_db.rows() == local_keys(db, "m-alice")
    assert not any(r[3] == sessions[0] for r in team_db.rows())
    # Publishing turned off (team.url unset), a forget, publishing on again.
    writer = open_writer(db)
    try:
        outbox.disable(writer)
    finally:
        writer.close()
    assert run_cli(tmp_path, "forget", "--session", sessions[1]).returncode == 0
    publish_all(db, team)
    assert team_db.rows() == local_keys(db, "m-alice")
    assert not any(r[3] == sessions[1] for r in team_db.rows())


def test_a_changed_machine_id_takes_the_rows_published_under_the_old_one_away(
    tmp_path: Path, team_db: TeamDb
) -> None:
    db = indexed(tmp_path)
    publish_all(db, team_db.team("alice", "m-old"))
    assert {r[0] for r in team_db.rows()} == {"m-old"}
    publish_all(db, team_db.team("alice", "m-new"))
    assert team_db.rows() == local_keys(db, "m-new")


def test_a_reconcile_counts_and_touches_only_its_own_rows_under_a_shared_machine_id(
    tmp_path: Path, team_db: TeamDb
) -> None:
    """Two members on one host share /etc/machine-id: bob's reconcile leaves
    alice's rows alone, and says it deleted none."""
    alice_db = indexed(tmp_path / "alice")
    bob_db = indexed(tmp_path / "bob")
    publish_all(alice_db, team_db.team("alice", "m-shared"))
    alice_rows = team_db.rows()
    pub, writer = local_publisher(bob_db, team_db.team("bob", "m-shared"))
    try:
        drain(pub)
        assert pub.state.deleted == 0
    finally:
        pub.close()
        writer.close()
    assert set(alice_rows) <= set(team_db.rows())


def test_a_machine_id_changed_across_a_rebuild_still_takes_the_old_rows_away(
    tmp_path: Path, team_db: TeamDb
) -> None:
    db = indexed(tmp_path)
    publish_all(db, team_db.team("alice", "m-old"))
    assert run_cli(tmp_path, "index", "--rebuild").returncode == 0
    publish_all(db, team_db.team("alice", "m-new"))
    assert team_db.rows() == local_keys(db, "m-new")
