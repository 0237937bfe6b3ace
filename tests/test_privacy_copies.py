"""No copy of a secret or of forgotten text outlives it: titles and the readers'
saved memos are redacted like turn text; ``forget --before`` takes the titles
copied from the turns it removes; ``forget`` reaches the old index a rebuild
kept and the half-built one a crashed rebuild left; a scrub that fails says so
and is tried again."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from backscroll.redact import plant_examples, planted_secrets
from backscroll.store import schema
from tests.daemon.harness import daemon_env, populate, run_cli, session_uuid, start_daemon

WORD = "xylophonequokka"


def claude_entry(sid: str, uuid: str, text: str, when: str, kind: str = "user") -> str:
    entry: dict[str, object] = {"type": kind, "uuid": uuid, "sessionId": sid, "cwd": "/home/u/p",
                                "timestamp": when}  # fmt: skip
    if kind == "user":
        entry["message"] = {"role": "user", "content": text}
    elif kind == "assistant":
        entry["message"] = {"role": "assistant", "content": [{"type": "text", "text": text}]}
    else:
        entry["customTitle"] = text
    return json.dumps(entry) + "\n"


def write_session(home: Path, n: int, entries: list[tuple[str, str, str]], first: int = 0) -> Path:
    """Appends ``entries`` (kind, text, time) to session ``n``'s transcript; their
    uuids count from ``first`` (a later call goes on from where the last ended)."""
    sid = session_uuid(n)
    path = home / ".claude" / "projects" / "-home-u-p" / f"{sid}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a", encoding="utf-8") as fh:
        for i, (kind, text, when) in enumerate(entries, first):
            fh.write(claude_entry(sid, f"{n:08x}-1111-4000-8000-{i:012x}", text, when, kind))
    return path


def data_bytes(data: Path) -> dict[str, bytes]:
    """Every file of the data directory (index, -wal, -shm, .old, .rebuild)."""
    return {p.name: p.read_bytes() for p in data.iterdir() if p.is_file()}


def test_secrets_in_first_prompts_and_custom_titles_reach_no_byte_of_the_data_dir(
    tmp_path: Path, isolated_home: Path
) -> None:
    for n, example in enumerate(plant_examples().values(), 1):
        first_line = example.splitlines()[0] if not example.startswith("-----") else example
        write_session(isolated_home, n, [
            ("user", first_line, "2026-03-01T10:00:00Z"),
            ("assistant", "noted", "2026-03-01T10:00:01Z"),
        ])  # fmt: skip
        write_session(isolated_home, 1000 + n, [
            ("user", "name this session", "2026-03-01T10:00:00Z"),
            ("custom-title", first_line, "2026-03-01T10:00:02Z"),
        ])  # fmt: skip
    assert run_cli(tmp_path, "index").returncode == 0
    keeper = run_cli(tmp_path, "sessions", "--json", "--limit", "1000")
    titles = [s["title"] for s in json.loads(keeper.stdout)["sessions"]]
    assert sum("[REDACTED:" in (t or "") for t in titles) >= len(plant_examples())
    files = data_bytes(tmp_path / "data")
    for kind, secret in planted_secrets().items():
        for name, data in files.items():
            assert secret.encode() not in data, f"{kind} secret found in {name}"


def test_forget_before_removes_the_title_copied_from_a_forgotten_prompt(
    tmp_path: Path, isolated_home: Path
) -> None:
    write_session(isolated_home, 500, [
        ("user", f"plan the {WORD} migration", "2026-01-01T10:00:00Z"),
        ("assistant", "here is a plan", "2026-01-01T10:00:01Z"),
        ("user", "and now the recent question", "2026-03-01T10:00:00Z"),
    ])  # fmt: skip
    assert run_cli(tmp_path, "index").returncode == 0
    assert any(WORD.encode() in d for d in data_bytes(tmp_path / "data").values())
    done = run_cli(tmp_path, "forget", "--before", "2026-02-01", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["turns"] == 2
    for name, data in data_bytes(tmp_path / "data").items():
        assert WORD.encode() not in data, f"forgotten prompt still in {name}"
    left = json.loads(run_cli(tmp_path, "show", session_uuid(500), "--json").stdout)
    assert [t["text"] for t in left["turns"]] == ["and now the recent question"]


def test_forget_reaches_the_old_index_a_rebuild_kept(tmp_path: Path, isolated_home: Path) -> None:
    write_session(isolated_home, 500, [("user", f"the {WORD} notes", "2026-03-01T10:00:00Z")])
    populate(isolated_home, copies=1, codex=False)
    assert run_cli(tmp_path, "index").returncode == 0
    assert run_cli(tmp_path, "index", "--rebuild").returncode == 0
    old = tmp_path / "data" / "index.db.old"
    assert WORD.encode() in old.read_bytes()
    done = run_cli(tmp_path, "forget", "--session", session_uuid(500), "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["copies_left"] == []
    for name, data in data_bytes(tmp_path / "data").items():
        assert WORD.encode() not in data, f"forgotten prompt still in {name}"


def test_forget_names_an_old_index_it_cannot_forget_in_and_fails(
    tmp_path: Path, isolated_home: Path
) -> None:
    write_session(isolated_home, 500, [("user", f"the {WORD} notes", "2026-03-01T10:00:00Z")])
    assert run_cli(tmp_path, "index").returncode == 0
    old = tmp_path / "data" / "index.db.old"
    old.write_bytes(b"not an index, but it holds " + WORD.encode())
    done = run_cli(tmp_path, "forget", "--session", session_uuid(500), "--json")
    assert done.returncode == 1
    report = json.loads(done.stdout)
    assert report["copies_left"] == [str(old)] and report["scrubbed"] is False
    assert old.exists()  # kept: only the user decides to delete it


def test_forget_deletes_the_half_built_index_a_killed_rebuild_left(
    tmp_path: Path, isolated_home: Path
) -> None:
    write_session(isolated_home, 500, [("user", f"the {WORD} notes", "2026-03-01T10:00:00Z")])
    populate(isolated_home, copies=1, codex=False)
    assert run_cli(tmp_path, "index").returncode == 0
    killed = textwrap.dedent(f"""
        import os
        from backscroll import cli, config
        from backscroll.indexing import indexer
        indexer.BATCH_FILES = 1  # a commit per file
        seen = []
        def die(point, path):
            if seen:  # the file holding the word is committed: die now
                os._exit(9)  # the process dies mid-rebuild: nothing cleans up
            seen.extend([path] if path.stem == "{session_uuid(500)}" else [])
        cli.rebuild(config.load(), fault=die)
    """)
    killed_run = subprocess.run([sys.executable, "-c", killed], env=daemon_env(tmp_path),
                                capture_output=True, check=False)  # fmt: skip
    assert killed_run.returncode == 9
    built = tmp_path / "data" / "index.db.rebuild"
    assert built.exists()
    assert any(WORD.encode() in d for n, d in data_bytes(tmp_path / "data").items()
               if n.startswith("index.db.rebuild"))  # fmt: skip
    done = run_cli(tmp_path, "forget", "--session", session_uuid(500))
    assert done.returncode == 0, done.stderr
    assert not built.exists()
    for name, data in data_bytes(tmp_path / "data").items():
        assert WORD.encode() not in data, f"forgotten prompt still in {name}"


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A real 4 MB file system (tmpfs), so the disk can really be full."""
    mount = tmp_path / "small"
    mount.mkdir()
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root")
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mount)],
                          capture_output=True, check=False)  # fmt: skip
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode().strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", str(mount)], check=False)


def pending(db: Path) -> bool:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return bool(conn.execute("SELECT 1 FROM meta WHERE key = 'scrub_pending'").fetchone())
    finally:
        conn.close()


def test_a_scrub_that_fails_on_a_full_disk_says_so_and_the_next_index_finishes_it(
    tmp_path: Path, isolated_home: Path, small_disk: Path
) -> None:
    write_session(isolated_home, 500, [("user", f"the {WORD} notes", "2026-03-01T10:00:00Z")])
    populate(isolated_home, copies=3)
    env = {"BACKSCROLL_HOME": str(small_disk / "data")}
    assert run_cli(tmp_path, "index", env=env).returncode == 0
    db = small_disk / "data" / "index.db"
    free = os.statvfs(small_disk)
    filler = small_disk / "filler"
    # Room for the delete (28 of the index's pages of WAL: 24-30 measured to
    # work), not for VACUUM's copy of the whole index (40 pages).
    page = schema.PAGE_SIZE
    assert db.stat().st_size > 28 * page
    filler.write_bytes(b"\0" * (free.f_bavail * free.f_frsize - 28 * page))
    done = run_cli(tmp_path, "forget", "--session", session_uuid(500), "--json", env=env)
    assert done.returncode == 1
    report = json.loads(done.stdout)
    assert report["turns"] == 1 and report["scrubbed"] is False
    assert "full" in report["scrub_error"]
    assert pending(db)
    text = run_cli(tmp_path, "forget", "--host", "codex", env=env)
    assert "could not be scrubbed" in text.stderr and "free some space" in text.stderr
    filler.unlink()
    assert run_cli(tmp_path, "index", env=env).returncode == 0
    assert not pending(db)
    for name, data in data_bytes(small_disk / "data").items():
        assert WORD.encode() not in data, f"forgotten prompt still in {name}"


def test_titles_and_memos_stored_unredacted_are_redacted_once_redaction_is_on(
    tmp_path: Path, isolated_home: Path
) -> None:
    """An index written without redaction of titles and memos (as before this
    version, or with redaction off) is cleaned, bytes and all, by the next index."""
    secret = planted_secrets()["github-token"]
    # Short enough that the whole token is in the title (a token the title's cut
    # would split is left out of it).
    write_session(isolated_home, 500, [("user", f"push with {secret}", "2026-03-01T10:00:00Z")])
    config = tmp_path / "config.yaml"
    config.write_text("redaction:\n  enabled: false\n", encoding="utf-8")
    env = {"BACKSCROLL_CONFIG": str(config)}
    assert run_cli(tmp_path, "index", env=env).returncode == 0
    db = tmp_path / "data" / "index.db"
    conn = sqlite3.connect(db)
    conn.execute("DELETE FROM turns")  # only the title and the memo hold it now
    conn.commit()
    conn.close()
    assert any(secret.encode() in d for d in data_bytes(tmp_path / "data").values())
    config.write_text("redaction:\n  enabled: true\n", encoding="utf-8")
    assert run_cli(tmp_path, "index", env=env).returncode == 0
    for name, data in data_bytes(tmp_path / "data").items():
        assert secret.encode() not in data, f"secret still in {name}"


def test_the_daemon_deletes_a_killed_rebuilds_half_built_index_at_start(
    tmp_path: Path, isolated_home: Path
) -> None:
    write_session(isolated_home, 500, [("user", f"the {WORD} notes", "2026-03-01T10:00:00Z")])
    assert run_cli(tmp_path, "index").returncode == 0
    db = tmp_path / "data" / "index.db"
    built = db.with_name("index.db.rebuild")
    shutil.copyfile(db, built)  # what a rebuild killed after its first commits leaves
    with start_daemon(tmp_path) as d:
        assert not built.exists()
        assert d.stop() == 0


@pytest.mark.parametrize(
    ("room", "said"),
    [
        (0, "cannot be opened: the disk holding it is full"),  # (no room for the WAL)
        (8, "the disk holding {data} is full (database or disk is full)"),  # (the delete)
    ],
)
def test_a_forget_on_a_full_disk_says_the_disk_is_full_and_loses_nothing(
    tmp_path: Path, isolated_home: Path, small_disk: Path, room: int, said: str
) -> None:
    write_session(isolated_home, 501, [("user", f"the {WORD} plans", "2026-03-01T10:00:00Z")])
    populate(isolated_home, copies=2)
    data = small_disk / "data"
    env = {"BACKSCROLL_HOME": str(data)}
    assert run_cli(tmp_path, "index", env=env).returncode == 0
    free = os.statvfs(small_disk)
    filler = small_disk / "filler"
    filler.write_bytes(b"\0" * (free.f_bavail * free.f_frsize - room * schema.PAGE_SIZE))
    done = run_cli(tmp_path, "forget", "--session", session_uuid(501), env=env)
    assert done.returncode == 2
    assert said.format(data=data) in done.stderr, done.stderr
    assert "unexpected" not in done.stderr and "--rebuild" not in done.stderr
    assert "free some space" in done.stderr.lower()
    filler.unlink()
    found = run_cli(tmp_path, "search", WORD, "--json", env=env)
    assert found.returncode == 0 and WORD in found.stdout
