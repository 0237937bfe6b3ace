"""Aider reader against ``tests/fixtures/aider`` (see SOURCES.md there): a real
public history written by aider v0.82.2, and a tiny synthetic one without a
session header. Tests that need a second session, /web or bad bytes append
lines written the way aider's ``io.py`` writes them.
"""

from __future__ import annotations

import os
from datetime import datetime
from pathlib import Path

import pytest

from backscroll.model import Cursor, ReaderOptions
from backscroll.readers.aider import START_NOTE, AiderReader
from backscroll.readers.base import HostEnv, content_key
from tests.readers.util import (
    MemoryIndex,
    copy_fixture,
    grow_file_incrementally,
    read_fresh,
    role_counts,
)

NAME = ".aider.chat.history.md"
reader = AiderReader()


def _real(tmp_path: Path) -> Path:
    return copy_fixture("aider", "real.aider.chat.history.md", tmp_path / "repo", NAME)


def test_real_history_turns_by_role(tmp_path: Path) -> None:
    index = read_fresh(reader, _real(tmp_path))
    assert role_counts(index) == {"user": 16, "assistant": 20}  # (not the failed-edit message)
    users = index.texts("user")
    assert users[0] == "give me a quick summarized overview of this repo"
    assert users[1].startswith("i want to add a dark/light mode switch on the top right")
    assert (
        users[-1]
        == "update the README-j.md file to mach all the changes in the last 3 commited changes"
    )
    multi_line = next(u for u in users if u.startswith("i get this error : ompiled with warnings."))
    assert multi_line.endswith("webpack compiled with 1 warning")
    assert index.texts("assistant")[0].startswith(
        "This repository contains a simple web-based calculator application built using React."
    )


def test_tool_output_commands_thinking_and_edit_blocks_are_not_searchable(tmp_path: Path) -> None:
    text = " ".join(read_fresh(reader, _real(tmp_path)).texts())
    assert "Tokens:" not in text and "Add file to the chat?" not in text  # "> " tool output
    assert "Applied edit to" not in text
    assert "/code" not in text and "/commit" not in text  # slash commands
    assert "Okay, let's look at the problem. The user is getting ESLint" not in text  # <think>
    assert "<<<<<<< SEARCH" not in text  # edit blocks
    assert "You need to install the `styled-components` package" in text
    # Aider's failed-edit message: quoted on its first line only, its own all the same.
    assert "SearchReplaceNoExactMatch: This SEARCH block failed" not in text
    assert "Did you mean to match some of these actual lines" not in text
    assert "The SEARCH section must exactly match" not in text
    assert "Just reply with fixed versions" not in text
    assert "To resolve the `SearchReplaceNoExactMatch` error" in text  # the model's answer


def test_markdown_heading_in_a_reply_is_not_a_prompt(tmp_path: Path) -> None:
    index = read_fresh(reader, _real(tmp_path))
    assert not any("If you're using **npm**" in u for u in index.texts("user"))
    assert any("#### If you're using **npm**:" in a for a in index.texts("assistant"))


def test_session_from_the_start_header(tmp_path: Path) -> None:
    path = _real(tmp_path)
    index = read_fresh(reader, path)
    start = datetime(2025, 5, 4, 17, 2, 36).timestamp()  # local time, as aider writes it
    sid = f"{content_key(path)}-1"  # the header follows the file's leading newline
    assert list(index.sessions) == [sid]
    session = index.sessions[sid]
    assert session.project == str(path.parent)
    assert session.title == "give me a quick summarized overview of this repo"
    assert session.started_at == start
    assert session.resume_command == f"cd {path.parent} && aider --restore-chat-history"
    assert {(t.timestamp, t.note) for t in index.turns.values()} == {(start, START_NOTE)}


def test_the_last_sessions_last_activity_is_the_files_mtime(tmp_path: Path) -> None:
    path = _real(tmp_path)
    with open(path, "a") as fh:
        fh.write("\n# aider chat started at 2025-05-05 09:00:00\n\n#### and now?  \n\nNow this.\n")
    os.utime(path, (1767225600, 1767225600))  # 2026-01-01, long after both headers
    sessions = sorted(read_fresh(reader, path).sessions.values(), key=lambda s: s.started_at or 0)
    assert [s.updated_at for s in sessions] == [None, 1767225600]


def test_minimal_history_without_a_header(tmp_path: Path) -> None:
    path = copy_fixture("aider", "minimal.aider.chat.history.md", tmp_path / "m", NAME)
    index = read_fresh(reader, path)
    assert index.texts("assistant") == ["Added src/main.rs to the chat.", "Sure, here is the code."]
    assert index.texts("user") == []  # "#### /add src/main.rs" is a command
    session = index.sessions[f"{content_key(path)}-0"]
    assert session.started_at is None and session.title is None
    assert {t.timestamp for t in index.turns.values()} == {None}


def test_incremental_reads_equal_a_fresh_read(tmp_path: Path) -> None:
    """Cut at every line start, mid-line, and at arbitrary offsets."""
    source = _real(tmp_path)
    data = source.read_bytes()
    starts = [i + 1 for i, b in enumerate(data) if b == 0x0A]
    plans = (starts[::3], [c + 3 for c in starts[1::7]], list(range(1, len(data), 997)))
    for n, cuts in enumerate(plans):
        dest = tmp_path / f"grown{n}" / NAME
        grown = grow_file_incrementally(reader, source, dest, cuts)
        fresh = read_fresh(reader, dest)
        assert grown.comparable() == fresh.comparable()
        assert grown.sessions == fresh.sessions


def test_a_prompt_split_across_reads_comes_out_whole(tmp_path: Path) -> None:
    path = tmp_path / NAME
    path.write_text("\n# aider chat started at 2025-01-02 03:04:05\n\n#### first line  \n")
    index = MemoryIndex()
    index.read(reader, path)
    with open(path, "a") as fh:
        fh.write("#### second line  \n\nThe answer.\n")
    index.read(reader, path)
    assert index.texts() == ["first line\nsecond line", "The answer."]
    assert index.comparable() == read_fresh(reader, path).comparable()


def test_each_start_header_begins_a_new_session(tmp_path: Path) -> None:
    path = _real(tmp_path)
    size = path.stat().st_size
    with open(path, "a") as fh:
        fh.write("\n# aider chat started at 2025-05-05 09:00:00\n\n")
        fh.write(
            "> Aider v0.82.2  \n\n#### what changed yesterday?  \n\nWe added emoji bubbles.\n\n"
        )
    index = read_fresh(reader, path)
    assert len(index.sessions) == 2
    new = index.sessions[f"{content_key(path)}-{size + 1}"]
    assert new.title == "what changed yesterday?"
    assert new.started_at == datetime(2025, 5, 5, 9, 0, 0).timestamp()
    assert [t.text for t in index.turns.values() if t.session_id == new.session_id] == [
        "what changed yesterday?",
        "We added emoji bubbles.",
    ]


def test_reply_after_web_is_tainted_until_the_next_prompt(tmp_path: Path) -> None:
    path = tmp_path / NAME
    path.write_text(
        "\n# aider chat started at 2025-01-02 03:04:05\n\n"
        "#### /web https://example.com/changelog  \n"
        "> Scraping https://example.com/changelog...  \n\n"
        "#### what does the changelog say?  \n\nIt lists three fixes.\n\n> Tokens: 1k sent  \n\n"
        "#### thanks  \n\nYou're welcome.\n"
    )
    index = read_fresh(reader, path)
    tainted = {t.text: t.tainted for t in index.turns.values()}
    assert tainted == {
        "what does the changelog say?": False,
        "It lists three fixes.": True,
        "thanks": False,
        "You're welcome.": False,
    }


def test_invalid_utf8_line_is_reported_and_the_rest_indexed(tmp_path: Path) -> None:
    path = _real(tmp_path)
    with open(path, "ab") as fh:
        fh.write(b"\n#### caf\xe9 order  \n\nThe caf\xc3\xa9 order is fixed.\n")
    result = reader.read(path, None, ReaderOptions())
    assert len(result.problems) == 1 and result.problems[0].line is not None
    texts = [t.text for t in result.turns]
    assert "caf\ufffd order" in texts and "The café order is fixed." in texts


def test_truncated_file_is_read_again_from_the_start(tmp_path: Path) -> None:
    path = _real(tmp_path)
    index = read_fresh(reader, path)
    assert index.cursor is not None
    path.write_text("\n# aider chat started at 2025-06-01 10:00:00\n\n#### fresh start  \n")
    result = reader.read(path, Cursor(index.cursor.position, index.cursor.state), ReaderOptions())
    assert result.replace
    assert [t.text for t in result.turns] == ["fresh start"]


def test_history_files_are_found_in_projects_not_roots() -> None:
    assert reader.roots(HostEnv(home=Path("/h"))) == []
    assert reader.project_files == (NAME,)
    assert reader.source_for(Path("/src/app") / NAME) == Path("/src/app") / NAME
    assert reader.source_for(Path("/src/app/.aider.input.history")) is None


def test_a_history_committed_to_its_repository_is_not_read_as_the_users(tmp_path: Path) -> None:
    # A clone can carry a .aider.chat.history.md written by anyone: indexed, its
    # text would reach agents (the recall hook) as this user's own history.
    import shutil
    import subprocess

    import pytest

    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    path = _real(tmp_path)
    repo = path.parent
    env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_SYSTEM": os.devnull}

    def git(*args: str) -> None:
        subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t",
                        *args], check=True, capture_output=True, env=env)  # fmt: skip

    git("init", "-q")
    git("add", path.name)
    git("commit", "-q", "-m", "history")
    committed = AiderReader().read(path, None, ReaderOptions())
    assert committed.turns == () and committed.replace  # (turns indexed before go)
    assert "committed to its git repository" in str(committed.unsupported)  # (for explain)
    assert committed.position == 0  # looked at again at each pass
    git("rm", "-q", "--cached", path.name)  # the user's own, kept out of git: read
    again = Cursor(committed.position, committed.state)
    assert AiderReader().read(path, again, ReaderOptions()).turns  # whole, file unchanged


def test_the_git_check_runs_nothing_the_repository_configures(tmp_path: Path) -> None:
    # A repository's config can name a command git runs (core.fsmonitor).
    import shutil
    import subprocess

    import pytest

    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    path = _real(tmp_path)
    repo = path.parent
    subprocess.run(["git", "-C", str(repo), "init", "-q"], check=True, capture_output=True)
    ran = tmp_path / "ran"
    hook = tmp_path / "monitor.sh"
    hook.write_text(f"#!/bin/sh\ntouch {ran}\n")
    hook.chmod(0o700)
    subprocess.run(["git", "-C", str(repo), "config", "core.fsmonitor", str(hook)], check=True)
    assert AiderReader().read(path, None, ReaderOptions()).turns  # untracked: read
    assert not ran.exists()


def test_a_refused_history_is_reported_once_not_at_every_pass(
    tmp_path: Path, isolated_home: Path, caplog: pytest.LogCaptureFixture
) -> None:
    import logging
    import shutil
    import subprocess

    import pytest

    from backscroll import config, direct

    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    path = _real(tmp_path)
    repo = path.parent
    env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_SYSTEM": os.devnull}
    for args in (("init", "-q"), ("add", path.name), ("commit", "-q", "-m", "x")):
        subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t",
                        *args], check=True, capture_output=True, env=env)  # fmt: skip
    old = path.stat().st_mtime - 60
    os.utime(path, (old, old))  # quiet: looked at again at each pass
    conf = tmp_path / "config.yaml"
    conf.write_text(f"index:\n  project_roots: [{str(repo)!r}]\n", encoding="utf-8")
    cfg = config.load(conf)
    with caplog.at_level(logging.WARNING, logger="backscroll"):
        for _ in range(3):
            direct.index(cfg)
    said = [r for r in caplog.records if getattr(r, "event", "") == "unsupported_format"]
    assert len(said) == 1 and "committed to its git repository" in str(vars(said[0])["error"])
