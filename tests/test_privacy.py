"""Secrets never reach the database files; forgotten text is gone from their bytes."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from backscroll import config, direct
from backscroll.redact import plant_examples, planted_secrets

FIXTURES = Path(__file__).parent / "fixtures"
CLAUDE_SID = "d6e0bada-1959-4eec-a9d2-0bfade768d8f"


def _claude_line(uuid: str, role: str, text: str) -> str:
    message: dict[str, object] = {"role": role, "content": text}
    if role == "assistant":
        message["content"] = [{"type": "text", "text": text}]
    return json.dumps(
        {
            "type": role,
            "uuid": uuid,
            "sessionId": CLAUDE_SID,
            "cwd": "/home/u/proj",
            "timestamp": "2026-03-01T10:00:00Z",
            "message": message,
        }
    )


def _codex_lines(texts: list[str]) -> list[str]:
    lines = [
        json.dumps({"timestamp": "2026-03-02T10:00:00Z", "type": "session_meta",
                    "payload": {"id": "019e0000-0000-7000-8000-000000000001",
                                "timestamp": "2026-03-02T10:00:00Z", "cwd": "/home/u/other"}})
    ]  # fmt: skip
    for text in texts:
        lines.append(
            json.dumps(
                {
                    "timestamp": "2026-03-02T10:00:01Z",
                    "type": "event_msg",
                    "payload": {"type": "user_message", "message": text},
                }
            )
        )
    return lines


@pytest.fixture
def planted_home(isolated_home: Path) -> Path:
    """Claude Code and Codex transcripts with one secret of every kind in prose."""
    examples = list(plant_examples().values())
    claude_dir = isolated_home / ".claude" / "projects" / "-home-u-proj"
    claude_dir.mkdir(parents=True)
    sample = (FIXTURES / "claude-code" / "spotter-tool_heavy.jsonl").read_text()
    extra = [
        _claude_line(f"00000000-0000-4000-8000-{i:012d}", "user" if i % 2 else "assistant", t)
        for i, t in enumerate(examples)
    ]
    (claude_dir / f"{CLAUDE_SID}.jsonl").write_text(sample + "\n".join(extra) + "\n")
    codex_dir = isolated_home / ".codex" / "sessions" / "2026" / "03" / "02"
    codex_dir.mkdir(parents=True)
    name = "rollout-2026-03-02T10-00-00-019e0000-0000-7000-8000-000000000001.jsonl"
    (codex_dir / name).write_text("\n".join(_codex_lines(examples)) + "\n")
    return isolated_home


def _db_bytes(db: Path) -> Iterator[tuple[str, bytes]]:
    for suffix in ("", "-wal", "-shm"):
        p = Path(f"{db}{suffix}")
        if p.exists():
            yield p.name, p.read_bytes()


def test_planted_secrets_are_in_no_byte_of_the_database_wal_or_shm(planted_home: Path) -> None:
    cfg = config.load()
    db = cfg.db_path()
    db.parent.mkdir(parents=True, exist_ok=True)
    # A reader holding the database open keeps the -wal and -shm files in place.
    direct.index(cfg)
    keeper = sqlite3.connect(db)
    keeper.execute("SELECT count(*) FROM turns").fetchone()
    try:
        direct.index(cfg)  # nothing changed: must not add anything either
        files = dict(_db_bytes(db))
        assert "index.db" in files
        for kind, secret in planted_secrets().items():
            for name, data in files.items():
                assert secret.encode() not in data, f"{kind} secret found in {name}"
        markers = keeper.execute(
            "SELECT count(*) FROM turns WHERE text LIKE '%[REDACTED:%'"
        ).fetchone()[0]
        assert markers >= 2 * len(planted_secrets()) - 2
    finally:
        keeper.close()


def _index_home(home: Path) -> config.Config:
    cfg = config.load()
    direct.index(cfg)
    return cfg


def test_forgotten_session_leaves_no_trace_in_the_file_bytes(planted_home: Path) -> None:
    claude = next((planted_home / ".claude" / "projects").rglob("*.jsonl"))
    with open(claude, "a") as fh:
        fh.write(_claude_line("11111111-0000-4000-8000-000000000001", "user",
                              "remember the xylophonequokka decision") + "\n")  # fmt: skip
    cfg = _index_home(planted_home)
    db = cfg.db_path()
    assert b"xylophonequokka" in b"".join(d for _, d in _db_bytes(db))
    done = subprocess.run(
        [sys.executable, "-m", "backscroll", "forget", "--session", CLAUDE_SID, "--json"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    report = json.loads(done.stdout)
    assert report["turns"] >= 3 and report["scrubbed"] is True
    for name, data in _db_bytes(db):
        assert b"xylophonequokka" not in data, f"forgotten word still in {name}"
        assert b"phoenix in background" not in data, f"forgotten prose still in {name}"
    # The other host's session is untouched.
    conn = sqlite3.connect(db)
    try:
        hosts = {r[0] for r in conn.execute("SELECT host FROM sessions")}
    finally:
        conn.close()
    assert hosts == {"codex"}


def test_forgotten_file_is_not_reindexed_until_it_changes(planted_home: Path) -> None:
    cfg = _index_home(planted_home)
    subprocess.run(
        [sys.executable, "-m", "backscroll", "forget", "--session", CLAUDE_SID],
        capture_output=True, check=True,
    )  # fmt: skip
    direct.index(cfg)
    found = direct.query(cfg, "search", {"query": "phoenix"})
    assert found["hits"] == []
    claude = next((planted_home / ".claude" / "projects").rglob("*.jsonl"))
    with open(claude, "a") as fh:
        fh.write(_claude_line("22222222-0000-4000-8000-000000000002", "user",
                              "a brand new marmalade question") + "\n")  # fmt: skip
    direct.index(cfg)
    assert direct.query(cfg, "search", {"query": "marmalade"})["hits"]
    assert direct.query(cfg, "search", {"query": "phoenix"})["hits"] == []


def test_and_exclude_keeps_a_session_out_even_when_it_changes(planted_home: Path) -> None:
    cfg = _index_home(planted_home)
    subprocess.run(
        [sys.executable, "-m", "backscroll", "forget", "--session", CLAUDE_SID, "--and-exclude"],
        capture_output=True, check=True,
    )  # fmt: skip
    claude = next((planted_home / ".claude" / "projects").rglob("*.jsonl"))
    with open(claude, "a") as fh:
        fh.write(_claude_line("33333333-0000-4000-8000-000000000003", "user",
                              "another tangerine question") + "\n")  # fmt: skip
    direct.index(cfg)
    assert direct.query(cfg, "search", {"query": "tangerine"})["hits"] == []


def test_forget_without_a_selection_says_what_to_give(planted_home: Path) -> None:
    _index_home(planted_home)
    done = subprocess.run(
        [sys.executable, "-m", "backscroll", "forget"], capture_output=True, text=True
    )
    assert done.returncode == 2
    assert "--session" in done.stderr and "--before" in done.stderr


def test_forget_dry_run_counts_and_changes_nothing(planted_home: Path) -> None:
    cfg = _index_home(planted_home)
    done = subprocess.run(
        [sys.executable, "-m", "backscroll", "forget", "--host", "codex", "--dry-run", "--json"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert json.loads(done.stdout)["sessions"] == 1
    assert direct.query(cfg, "sessions", {"host": "codex"})["sessions"]


GITHUB_TOKEN = "ghp_" + "Zq4Lm8Rt2Vx6Bn0Cp3Dk7Fh1Gj5Hs9Kw2Yt"


def test_a_secret_quoted_in_an_error_or_a_cut_title_reaches_no_byte_nor_log(
    isolated_home: Path,
) -> None:
    """An unsupported-format message quotes the record's version field; a title is
    the first prompt cut to a line, which can end inside a quoted password."""
    projects = isolated_home / ".claude" / "projects"
    (projects / "-home-u-a").mkdir(parents=True)
    refused = projects / "-home-u-a" / f"{CLAUDE_SID}.jsonl"
    record = json.loads(_claude_line("00000000-0000-4000-8000-000000000001", "user", "hi"))
    record["version"] = f"9.0 token={GITHUB_TOKEN}"
    refused.write_text(json.dumps(record) + "\n")
    (projects / "-home-u-b").mkdir()
    other = "e1e0bada-1959-4eec-a9d2-0bfade768d8f"
    prompt = ("please connect to the staging database with DB_PASSWORD=\"purple monkey "
              "dishwasher quasar zebra\" now and run the whole migration suite again")  # fmt: skip
    line = _claude_line("00000000-0000-4000-8000-000000000002", "user", prompt)
    (projects / "-home-u-b" / f"{other}.jsonl").write_text(line.replace(CLAUDE_SID, other) + "\n")
    done = subprocess.run([sys.executable, "-m", "backscroll", "index", "-v"],
                          capture_output=True, text=True, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "unsupported" in done.stderr and GITHUB_TOKEN not in done.stderr
    db = config.load().db_path()
    for name, data in _db_bytes(db):
        assert GITHUB_TOKEN.encode() not in data, name
        assert b"purple monkey" not in data, name
    explain = subprocess.run([sys.executable, "-m", "backscroll", "explain", str(refused)],
                             capture_output=True, text=True, check=False)  # fmt: skip
    assert "REDACTED" in explain.stdout and GITHUB_TOKEN not in explain.stdout


def test_a_change_indexed_with_redaction_off_marks_the_index_as_holding_unredacted_text(
    isolated_home: Path, tmp_path: Path
) -> None:
    """The daemon indexes one changed file at a time (index_item): that path
    notes it too, so such an index is never published to a team database."""
    from backscroll.indexing.indexer import Item
    from backscroll.store import open_writer, reredact
    from tests.daemon.harness import claude_user_line

    project = isolated_home / ".claude" / "projects" / "-p"
    project.mkdir(parents=True)
    sid = "7a1e0000-0000-4000-8000-000000000001"
    path = project / f"{sid}.jsonl"
    path.write_text(claude_user_line(sid, "u-1", "aws_access_key_id=AKIAIOSFODNN7EXAMPLQ"))
    cfg = config.parse({"redaction": {"enabled": False}, "data_dir": str(tmp_path / "d")}, "t")
    writer = open_writer(cfg.db_path())
    try:
        indexer = direct.make_indexer(cfg, writer)
        spec = next(s for s in indexer.hosts if s.host == "claude-code")
        assert not reredact.holds_unredacted(writer)
        indexer.index_item(Item(spec, path))
        assert reredact.holds_unredacted(writer)
    finally:
        writer.close()


def test_passwords_holding_ampersands_semicolons_or_brackets_reach_no_byte_whole_or_in_part(
    isolated_home: Path,
) -> None:
    project = isolated_home / ".claude" / "projects" / "-home-u-proj"
    project.mkdir(parents=True)
    text = (
        "glorbnax creds: password: Tr0ub&4dor3xyz DB_PASSWORD=s3cr3t;DROP42x "
        "secret: Qw3rty{42}Zz db.password=hunter(22)zz"
    )
    line = _claude_line("00000000-0000-4000-8000-000000000001", "user", text)
    (project / f"{CLAUDE_SID}.jsonl").write_text(line + "\n")
    cfg = _index_home(isolated_home)
    assert direct.query(cfg, "search", {"query": "glorbnax"})["hits"]
    data = b"".join(d for _, d in _db_bytes(cfg.db_path()))
    for piece in (b"Tr0ub", b"4dor3xyz", b"s3cr3t", b"DROP42x", b"Qw3rty", b"hunter(22)", b")zz"):
        assert piece not in data, piece
