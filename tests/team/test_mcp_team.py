"""The MCP tool with ``team: true`` answers from the team database, each hit
labelled with its owner and machine."""

from __future__ import annotations

from pathlib import Path

from tests.team.conftest import TeamDb
from tests.team.test_daemons import team_yaml
from tests.team.test_publish import indexed
from tests.team.util import drain, local_publisher
from tests.test_mcp_server import McpProcess, text_of


def test_search_history_with_team_true_finds_another_members_turns(
    tmp_path: Path, team_db: TeamDb
) -> None:
    db = indexed(tmp_path / "alice")
    pub, writer = local_publisher(db, team_db.team("alice", "laptop-a"))
    try:
        drain(pub)
    finally:
        pub.close()
        writer.close()
    word = next(w for (t,) in team_db.rows("text") for w in str(t).split()
                if len(w) > 7 and w.isalpha())  # fmt: skip
    cfg = tmp_path / "bob.yaml"
    cfg.write_text(team_yaml(team_db, "bob", "desk-b"))
    mcp = McpProcess(tmp_path, {"BACKSCROLL_CONFIG": str(cfg)})
    try:
        result = mcp.call("search_history", {"query": word, "team": True, "limit": 2})
        assert not result.get("isError"), result
        text = text_of(result)
        assert "alice on laptop-a" in text
        hits = result["structuredContent"]["hits"]
        assert hits and all(h["machine"] == "laptop-a" for h in hits)
        # Locally bob has nothing: without team the same query finds nothing.
        local = mcp.call("search_history", {"query": word})
        assert not local["structuredContent"].get("hits")
        bad = mcp.call("search_history", {"query": word, "team": "yes"})
        assert bad["isError"] and "team must be true or false" in text_of(bad)
    finally:
        mcp.close()
