"""``index --rebuild`` keeps what only the old index holds: the turns of
transcripts the host deleted, and every exclusion; the old index is kept as
``index.db.old`` and a rebuild that stops half-way leaves no copy behind."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from backscroll import cli, direct
from backscroll.config import Config
from backscroll.memo import without_prose
from tests.conftest import DaemonFactory
from tests.daemon.harness import dump_turns, populate, run_cli


class Crash(Exception):
    pass


def exclusions(db: Path) -> set[tuple[str, str, str]]:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return {(str(k), str(h), str(v)) for k, h, v in conn.execute(
            "SELECT kind, host, value FROM exclusions")}  # fmt: skip
    finally:
        conn.close()


def _indexed_claude(tmp_path: Path, home: Path) -> tuple[Config, Path, list[Path]]:
    """The sample corpus indexed into tmp_path/data: config, index, Claude Code files."""
    files = populate(home, copies=1)
    cfg = Config(data_dir=str(tmp_path / "data"))
    direct.index(cfg)
    return cfg, cfg.db_path(), [f for f in files if f.suffix == ".jsonl" and ".claude" in f.parts]


def test_rebuild_keeps_turns_of_deleted_transcripts_and_every_exclusion(
    tmp_path: Path, isolated_home: Path
) -> None:
    cfg, db, claude = _indexed_claude(tmp_path, isolated_home)
    gone, excluded = claude[0], claude[1]
    done = run_cli(tmp_path, "forget", "--session", excluded.stem, "--and-exclude", "--json")
    assert done.returncode == 0, done.stderr
    gone.unlink()  # the host pruned it: its turns are kept
    direct.index(cfg)
    before = dump_turns(db)
    kept_turns = [t for t in before if t[1] == gone.stem]
    assert kept_turns and not [t for t in before if t[1] == excluded.stem]
    rules = exclusions(db)
    assert ("session", "claude-code", excluded.stem) in rules

    done = run_cli(tmp_path, "index", "--rebuild", "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["carried"]["turns"] == len(kept_turns)
    assert report["carried"]["exclusions"] == len(rules)
    assert report["carried"]["problems"] == []
    assert report["kept_old"] == str(db.with_name("index.db.old"))
    assert dump_turns(db) == before
    assert exclusions(db) == rules
    hits = direct.query(cfg, "sessions", {"session": gone.stem})["sessions"]
    assert hits and hits[0]["session_id"] == gone.stem
    # The old index is kept whole beside the new one.
    assert dump_turns(db.with_name("index.db.old")) == before
    # A second rebuild still has them (carried from a carried copy).
    assert run_cli(tmp_path, "index", "--rebuild").returncode == 0
    assert dump_turns(db) == before


def test_a_rebuild_that_fails_half_way_leaves_no_rebuild_file(
    tmp_path: Path, isolated_home: Path
) -> None:
    populate(isolated_home, copies=1)
    cfg = Config(data_dir=str(tmp_path / "data"))
    direct.index(cfg)
    before = dump_turns(cfg.db_path())

    def fault(point: str, path: Path) -> None:
        raise Crash(path.name)

    with pytest.raises(Crash):
        cli.rebuild(cfg, fault=fault)
    assert not cfg.db_path().with_name("index.db.rebuild").exists()
    assert dump_turns(cfg.db_path()) == before


def test_doctor_fixes_an_unranked_index_with_a_rebuild_not_by_moving_it_aside(
    tmp_path: Path, isolated_home: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    populate(isolated_home, copies=1, codex=False)
    monkeypatch.setenv("BACKSCROLL_NO_FTS", "1")
    assert cli.main(["index"]) == 0
    monkeypatch.delenv("BACKSCROLL_NO_FTS")
    capsys.readouterr()
    cli.main(["doctor", "--json"])
    found = {f["check"]: f for f in json.loads(capsys.readouterr().out)["findings"]}
    fix = found["index fts"]["fix"]
    assert found["index fts"]["status"] == "warn"
    assert "backscroll index --rebuild" in fix and "aside" not in fix


def test_a_rebuild_beside_a_daemon_started_by_hand_says_to_stop_it_by_its_pid(
    tmp_path: Path, daemon_factory: DaemonFactory
) -> None:
    d = daemon_factory()  # no service installed in this HOME
    done = run_cli(tmp_path, "index", "--rebuild")
    assert done.returncode != 0
    assert f"`kill {d.pid}`" in done.stderr, done.stderr
    assert "systemctl" not in done.stderr


def test_a_rebuild_keeps_no_turns_of_a_project_the_config_excludes(
    tmp_path: Path, isolated_home: Path
) -> None:
    _cfg, db, claude = _indexed_claude(tmp_path, isolated_home)
    gone = claude[0]
    conn = sqlite3.connect(db)
    (project,) = conn.execute(
        "SELECT project FROM sessions WHERE session_id = ?", (gone.stem,)
    ).fetchone()
    conn.close()
    assert project and [t for t in dump_turns(db) if t[1] == gone.stem]
    gone.unlink()  # the host pruned it: a rebuild keeps its turns, unless excluded
    config = tmp_path / "config.yaml"
    config.write_text(f"exclude:\n  projects: [{json.dumps(project)}]\n")
    done = run_cli(tmp_path, "index", "--rebuild", "--json",
                   env={"BACKSCROLL_CONFIG": str(config)})  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert not [t for t in dump_turns(db) if t[1] == gone.stem]
    conn = sqlite3.connect(db)
    try:
        assert conn.execute(
            "SELECT count(*) FROM sessions WHERE project = ?", (project,)
        ).fetchone() == (0,)
        # Nor the prose of its file's memo (a title candidate, a first prompt).
        (state,) = conn.execute("SELECT state FROM files WHERE path = ?", (str(gone),)).fetchone()
        memo = json.loads(state or "{}")
        assert without_prose(memo) == memo
    finally:
        conn.close()
