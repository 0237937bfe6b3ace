"""What ``forget`` took (without ``--and-exclude``) stays out when backscroll
itself reads the unchanged file again: a new reader version re-reads every
file of its host from the start. Before, the forgotten turns came back."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

from backscroll import cli, config, direct
from tests.daemon.harness import claude_user_line, dump_turns

FIXTURES = Path(__file__).parent / "fixtures"
SID = "d6e0bada-1959-4eec-a9d2-0bfade768d8f"
OTHER = "5f3c1a2b-0000-4000-8000-000000000001"


def _setup(home: Path) -> None:
    project = home / ".claude" / "projects" / "-p"
    project.mkdir(parents=True)
    shutil.copy(FIXTURES / "claude-code" / "spotter-tool_heavy.jsonl", project / f"{SID}.jsonl")
    text = (FIXTURES / "claude-code" / "spotter-tool_heavy.jsonl").read_text()
    (project / f"{OTHER}.jsonl").write_text(text.replace(SID, OTHER))


def _reader_version_bumped(db: Path) -> None:
    """What a new release's reader version does: every file of the host is read
    again from the start at the next pass."""
    conn = sqlite3.connect(db)
    with conn:
        conn.execute("UPDATE files SET reader_version = 0")
    conn.close()


def _indexed(home: Path) -> tuple[config.Config, Path, dict[str, int]]:
    """Two Claude Code sessions indexed: the config, the index, turns per session."""
    _setup(home)
    cfg = config.load()
    direct.index(cfg)
    return cfg, cfg.db_path(), _sessions(cfg.db_path())


def _sessions(db: Path) -> dict[str, int]:
    out: dict[str, int] = {}
    for _host, sid, *_ in dump_turns(db):
        out[sid] = out.get(sid, 0) + 1
    return out


def test_a_forgotten_session_stays_out_of_a_reread_of_its_unchanged_file(
    isolated_home: Path,
) -> None:
    cfg, db, before = _indexed(isolated_home)
    assert cli.main(["forget", "--session", SID]) == 0
    _reader_version_bumped(db)
    summary, _ = direct.index(cfg)
    assert summary.files_changed == 2  # both files were read again
    assert _sessions(db) == {OTHER: before[OTHER]}
    assert SID not in {s["session_id"] for s in direct.query(cfg, "sessions", {})["sessions"]}


def test_turns_forgotten_before_a_date_stay_out_and_the_rest_stays_in(
    isolated_home: Path,
) -> None:
    cfg, db, before = _indexed(isolated_home)
    assert cli.main(["forget", "--session", SID, "--before", "2026-02-10T22:59:00Z"]) == 0
    kept = _sessions(db)[SID]
    assert 0 < kept < before[SID]
    _reader_version_bumped(db)
    direct.index(cfg)
    assert _sessions(db) == {SID: kept, OTHER: before[OTHER]}


def test_an_append_in_between_does_not_bring_forgotten_turns_back_later(
    isolated_home: Path,
) -> None:
    # (A live session: forget --before, the host appends, then a new release.)
    cfg, db, before = _indexed(isolated_home)
    assert cli.main(["forget", "--session", SID, "--before", "2026-02-10T22:59:00Z"]) == 0
    kept = _sessions(db)[SID]
    path = isolated_home / ".claude" / "projects" / "-p" / f"{SID}.jsonl"
    with path.open("a", encoding="utf-8") as fh:
        fh.write(claude_user_line(SID, "u-later", "a later prompt"))
    direct.index(cfg)
    assert _sessions(db)[SID] == kept + 1
    _reader_version_bumped(db)
    direct.index(cfg)
    assert _sessions(db) == {SID: kept + 1, OTHER: before[OTHER]}


def _stored(db: Path, sql: str) -> list[tuple[str, str]]:
    conn = sqlite3.connect(db)
    try:
        return [(str(a), str(b)) for a, b in conn.execute(sql).fetchall()]
    finally:
        conn.close()


def test_a_reread_writes_back_neither_a_forgotten_title_nor_memo_prose(
    isolated_home: Path,
) -> None:
    cfg, db, _ = _indexed(isolated_home)
    first_prompt = "start phoenix in background"
    assert first_prompt in str(_stored(db, "SELECT path, state FROM files"))
    assert cli.main(["forget", "--session", SID, "--before", "2026-02-10T22:59:00Z"]) == 0
    _reader_version_bumped(db)
    direct.index(cfg)
    titles = dict(_stored(db, "SELECT session_id, coalesce(title, '') FROM sessions"))
    assert first_prompt not in titles[SID]  # (forget cleared it; the re-read must not restore it)
    memos = dict(_stored(db, "SELECT path, state FROM files"))
    assert first_prompt not in next(m for p, m in memos.items() if SID in p)


def test_the_note_holds_no_turn_key_as_it_is(isolated_home: Path) -> None:
    # Some hosts' turn keys are hashes of the text: kept as they are, they would
    # let whoever holds the index test guesses of what was forgotten.
    _, db, _ = _indexed(isolated_home)
    keys = [k for _, k in _stored(db, "SELECT key, key FROM turns")]
    assert cli.main(["forget", "--session", SID]) == 0
    notes = " ".join(n for _, n in _stored(db, "SELECT mark, mark FROM forgotten"))
    assert notes.strip() and not any(k in notes for k in keys)


def test_a_rebuild_still_reads_again_what_was_forgotten(isolated_home: Path) -> None:
    # (The README: `index --rebuild` re-reads every transcript that still exists,
    # the way back after `exclusions remove`; --and-exclude is what keeps out.)
    _, db, before = _indexed(isolated_home)
    assert cli.main(["forget", "--session", SID]) == 0
    assert cli.main(["index", "--rebuild"]) == 0
    assert _sessions(db) == before


def test_a_forgotten_session_read_from_another_file_stays_out(isolated_home: Path) -> None:
    # (Codex archives a rollout by moving it to archived_sessions/; OpenCode keeps
    # one session in its JSON tree and its database.)
    cfg, db, before = _indexed(isolated_home)
    assert cli.main(["forget", "--session", SID]) == 0
    source = isolated_home / ".claude" / "projects" / "-p" / f"{SID}.jsonl"
    elsewhere = isolated_home / ".claude" / "projects" / "-moved" / f"{SID}.jsonl"
    elsewhere.parent.mkdir()
    source.rename(elsewhere)
    direct.index(cfg)
    assert _sessions(db) == {OTHER: before[OTHER]}


def test_losing_the_machine_secret_file_does_not_bring_forgotten_turns_back(
    isolated_home: Path,
) -> None:
    # (The marks' salt lives in the index itself: nothing apart from it to lose.)
    cfg, db, before = _indexed(isolated_home)
    assert cli.main(["forget", "--session", SID]) == 0
    for stray in db.parent.glob("team-key"):
        stray.unlink()
    _reader_version_bumped(db)
    direct.index(cfg)
    assert _sessions(db) == {OTHER: before[OTHER]}


def _codex_rollout_indexed(home: Path) -> tuple[config.Config, Path, Path]:
    """A Codex rollout (turns keyed by byte offset) indexed: config, index, file."""
    name = "rollout-2026-05-11T11-26-55-019e1625-789d-76c0-80ab-3724b5ddb799.lines1-77.jsonl"
    day = home / ".codex" / "sessions" / "2026" / "05" / "11"
    day.mkdir(parents=True)
    path = day / name.replace(".lines1-77", "")
    shutil.copy(FIXTURES / "codex" / name, path)
    cfg = config.load()
    direct.index(cfg)
    return cfg, cfg.db_path(), path


def _move_lines(path: Path) -> None:
    """Rewrite ``path`` with a line inserted after the first: every later line moves."""
    first, rest = path.read_text().split("\n", 1)
    moved = '{"timestamp":"2026-05-11T11:26:55Z","type":"event_msg","payload":{"type":"x"}}'
    path.write_text(first + "\n" + moved + "\n" + rest)


def test_turns_keyed_by_their_place_stay_out_when_the_file_is_rewritten_with_lines_moved(
    isolated_home: Path,
) -> None:
    """Codex keys turns by their byte offset: a rewrite that moves the lines gave a
    forgotten turn a new key, and it came back as a new turn."""
    cfg, db, path = _codex_rollout_indexed(isolated_home)
    texts = [row[4] for row in dump_turns(db)]
    assert texts
    assert cli.main(["forget", "--host", "codex"]) == 0
    assert dump_turns(db) == []
    _move_lines(path)
    direct.index(cfg)
    assert [row[4] for row in dump_turns(db)] == []


def test_a_forgotten_session_indexes_new_turns_that_repeat_a_forgotten_text(
    isolated_home: Path,
) -> None:
    """Said again later ("yes", "continue"), a text that was forgotten is a new
    turn: the session's new turns are indexed as they come."""
    project = isolated_home / ".claude" / "projects" / "-p"
    project.mkdir(parents=True)
    path = project / f"{OTHER}.jsonl"

    def line(uuid: str, text: str, when: str) -> str:
        return claude_user_line(OTHER, uuid, text).replace("2026-02-10T22:57:54.684Z", when)

    path.write_text(
        line("u-1", "please continue with the refactor", "2026-01-10T09:00:00.000Z")
        + line("u-2", "yes", "2026-01-10T09:05:00.000Z")
    )
    cfg = config.load()
    direct.index(cfg)
    db = cfg.db_path()
    assert len(dump_turns(db)) == 2
    assert cli.main(["forget", "--session", OTHER]) == 0
    assert dump_turns(db) == []
    with path.open("a") as fh:
        fh.write(line("u-3", "please continue with the refactor", "2026-02-01T10:00:00.000Z"))
        fh.write(line("u-4", "yes", "2026-02-01T10:01:00.000Z"))
        fh.write(line("u-5", "a brand new question", "2026-02-01T10:02:00.000Z"))
    direct.index(cfg)
    assert sorted(row[4] for row in dump_turns(db)) == [
        "a brand new question",
        "please continue with the refactor",
        "yes",
    ]


def test_turns_forgotten_by_an_older_version_stay_out_when_their_lines_move(
    isolated_home: Path,
) -> None:
    """Before text marks held the time, a forgotten turn was marked by its key
    and its text alone: those marks still keep it out."""
    from backscroll.store import open_writer
    from backscroll.store.writer import text_key

    cfg, db, path = _codex_rollout_indexed(isolated_home)
    turns = dump_turns(db)
    assert turns
    assert cli.main(["forget", "--host", "codex"]) == 0
    writer = open_writer(db)
    try:  # the marks an older version wrote: keys, and texts without their time
        mark = writer.forgotten_mark()
        with writer.transaction():
            writer.conn.execute("DELETE FROM forgotten")
            writer.conn.executemany(
                "INSERT OR IGNORE INTO forgotten (mark) VALUES (?)",
                [(mark(sid, k),) for _h, sid, key, _r, text in turns
                 for k in (key, text_key(text, None, None))],
            )  # fmt: skip
    finally:
        writer.close()
    _move_lines(path)
    direct.index(cfg)
    assert dump_turns(db) == []
