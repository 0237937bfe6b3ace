"""Team search and row-level security on a real PostgreSQL: members read the
team's turns but not another member's private ones, and write only their own."""

from __future__ import annotations

from pathlib import Path

import psycopg
import pytest

from backscroll.config import Config
from backscroll.team import sql
from backscroll.team.connect import connect
from backscroll.team.query import search
from backscroll.wording import worded
from tests.daemon.harness import dump_turns
from tests.team.conftest import TeamDb
from tests.team.test_publish import indexed
from tests.team.util import drain, local_publisher


def _published_by_alice(tmp_path: Path, team_db: TeamDb, private: str) -> Path:
    db = indexed(tmp_path)
    pub, writer = local_publisher(db, team_db.team("alice", "m-alice", private_projects=(private,)))
    try:
        drain(pub)
    finally:
        pub.close()
        writer.close()
    return db


def test_search_team_ranks_matches_and_names_machine_and_owner(
    tmp_path: Path, team_db: TeamDb
) -> None:
    db = _published_by_alice(tmp_path, team_db, private="/nowhere")
    word = next(w for _h, _s, _k, _r, t in dump_turns(db) for w in t.split() if len(w) > 8
                and w.isalpha())  # fmt: skip
    cfg = Config(team=team_db.team("bob", "m-bob"))
    result = search(cfg, {"query": word, "limit": 3})
    assert result["hits"] and result["ranked"] and result["team"]
    hit = result["hits"][0]
    assert hit["machine"] == "m-alice" and hit["owner"] == "alice"
    assert word.lower() in hit["excerpt"].lower()
    start, end = hit["matches"][0]
    assert hit["excerpt"][start:end].lower().startswith(word.lower()[:4])
    assert result["total"] >= len(result["hits"])
    empty = search(cfg, {"query": "xylophoneqqq"})
    assert empty["hits"] == [] and empty["reason"]["code"] == "no_match_team"
    assert "no match in the team database" in worded(empty)["message"]


def test_a_member_cannot_read_another_members_private_turns(
    tmp_path: Path, team_db: TeamDb
) -> None:
    db = indexed(tmp_path)
    import sqlite3

    conn = sqlite3.connect(db)
    private = str(conn.execute("SELECT project FROM sessions WHERE project != ''").fetchone()[0])
    conn.close()
    pub, writer = local_publisher(db, team_db.team("alice", "m-alice",
                                                   private_projects=(private,)))  # fmt: skip
    try:
        drain(pub)
    finally:
        pub.close()
        writer.close()
    everything = team_db.rows("project", "private")
    hidden = sum(1 for p, _ in everything if p == private)
    assert hidden and all(priv for p, priv in everything if p == private)
    with connect(team_db.team("bob", "m-bob")) as bob:
        assert sql.count_visible(bob) == len(everything) - hidden
    with connect(team_db.team("alice", "m-alice")) as alice:
        assert sql.count_visible(alice) == len(everything)
    # Nor through search: a word of a private turn finds it for alice alone.
    texts = team_db.rows("project", "text")
    word = next(w for p, t in texts if p == private for w in str(t).split()
                if len(w) > 6 and w.isalpha())  # fmt: skip
    params = {"query": word, "project": private, "limit": 50}
    assert search(Config(team=team_db.team("bob", "m-bob")), params)["hits"] == []
    mine = search(Config(team=team_db.team("alice", "m-alice")), params)["hits"]
    assert mine and all(h["private"] and h["owner"] == "alice" for h in mine)


def test_a_member_cannot_write_as_another(tmp_path: Path, team_db: TeamDb) -> None:
    _published_by_alice(tmp_path, team_db, private="/nowhere")
    before = team_db.rows("machine_id", "owner", "turn_key", "text")
    row = (
        "m-bob", "codex", "s1", "k1", False, None, None, None, "user", 1.0, "forged", False,
        False,
    )  # fmt: skip
    with connect(team_db.team("bob", "m-bob")) as bob:
        # Inserting a row owned by alice is refused by the policy.
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            bob.execute(
                "INSERT INTO backscroll.turns (owner, machine_id, host, session_id, turn_key,"
                " role, text) VALUES ('alice', 'm-bob', 'codex', 's1', 'k1', 'user', 'x')"
            )
        bob.rollback()
        # Changing or deleting alice's rows touches nothing.
        assert bob.execute("UPDATE backscroll.turns SET text = 'forged'").rowcount == 0
        assert bob.execute("DELETE FROM backscroll.turns").rowcount == 0
        # Upserting over alice's key is refused, not silently taken over.
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            bob.execute(
                "INSERT INTO backscroll.turns (machine_id, host, session_id, turn_key, role,"
                " text) SELECT machine_id, host, session_id, turn_key, role, 'forged'"
                " FROM backscroll.turns LIMIT 1 ON CONFLICT (machine_id, host, session_id,"
                " turn_key) DO UPDATE SET text = excluded.text"
            )
        bob.rollback()
        # Bob's own rows are his to write.
        sql.publish(bob, [row], [])
        bob.commit()
    after = team_db.rows("machine_id", "owner", "turn_key", "text")
    assert [r for r in after if r[1] == "alice"] == before
    assert ("m-bob", "bob", "k1", "forged") in after
