"""One contract over every reader in :data:`backscroll.readers.READERS`.

Each host's fixtures are placed at its default location (the ``LAYOUT`` of
tests/test_all_hosts.py, so a new host's LAYOUT entry brings it in here) and
every file the reader discovers there must satisfy the same rules:

- every turn has non-empty text, a role of user/assistant/summary, a non-empty
  str key and its session's id; keys are unique within a session;
- reading twice from scratch gives identical results;
- an append reader reading the file grown line by line ends where a fresh read
  does (not a ``.json`` document, which its host rewrites whole); any reader
  re-reading with its own cursor ends where a fresh read does;
- a host's database is not modified by reading it (bytes and mtime unchanged).
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from backscroll.memo import without_prose
from backscroll.model import ReaderOptions, ReadResult
from backscroll.readers import READERS
from backscroll.readers.base import MTIME_NOTE, HostEnv, Reader
from tests.readers.util import MemoryIndex, grow_file_incrementally, read_fresh
from tests.test_all_hosts import LAYOUT, _populate

ROLES = {"user", "assistant", "summary"}
#: Line-by-line growth reads the file once per cut; a long transcript is cut at
#: this many evenly spaced line ends instead of all of them.
MAX_CUTS = 120


def _id(reader: Reader) -> str:
    return type(reader).__name__


@pytest.fixture
def placed(isolated_home: Path) -> tuple[HostEnv, Path]:
    """Every host's fixtures at their default locations: (environment, project)."""
    project = isolated_home.parent / "work" / "app"
    _populate(isolated_home, project)
    return HostEnv(home=isolated_home, environ={}, platform="linux"), project


def _files(reader: Reader, env: HostEnv, project: Path) -> list[Path]:
    roots = [*reader.roots(env), *([project] if reader.project_files else [])]
    found: set[Path] = set()
    for root in roots:
        if root.exists():
            found.update(reader.discover(root))
    return sorted(found)


def _snapshot(path: Path) -> Iterator[tuple[str, bytes, int]]:
    for p in sorted(path.parent.iterdir()):
        if p.name == path.name or p.name.startswith(path.name + "-"):
            yield p.name, p.read_bytes(), p.stat().st_mtime_ns


def _check_shapes(reader: Reader, path: Path, result: ReadResult) -> None:
    assert result.unsupported is None, f"{_id(reader)} refused {path}: {result.unsupported}"
    assert result.turns, f"{_id(reader)} read no turns from {path}"
    seen: set[tuple[str, str]] = set()
    for turn in result.turns:
        where = f"{_id(reader)} {path.name} turn {turn.key!r}"
        assert isinstance(turn.session_id, str) and turn.session_id.strip(), where
        assert isinstance(turn.key, str) and turn.key, where
        assert turn.role in ROLES, f"{where}: role {turn.role!r}"
        assert turn.text.strip(), f"{where}: empty text"
        assert (turn.session_id, turn.key) not in seen, f"{where}: key repeated in its session"
        seen.add((turn.session_id, turn.key))
    sessions = {s.session_id for s in result.sessions}
    orphans = {t.session_id for t in result.turns} - sessions
    assert not orphans, f"{_id(reader)} {path.name}: turns name sessions it did not report"


def _comparable(index: MemoryIndex) -> dict[tuple[str, str], tuple[object, ...]]:
    """The index's turns; a timestamp taken from the file's mtime (its note says
    so) moves as the file grows, so it is left out."""
    return {
        k: (t.role, t.text, None if t.note == MTIME_NOTE else t.timestamp, t.tainted)
        for k, t in index.turns.items()
    }


def _line_ends(data: bytes) -> list[int]:
    ends = [i + 1 for i, byte in enumerate(data) if byte == 0x0A]
    if len(ends) > MAX_CUTS:
        step = len(ends) / MAX_CUTS
        ends = sorted({ends[int(i * step)] for i in range(MAX_CUTS)})
    return ends


@pytest.mark.parametrize("reader", READERS, ids=_id)
def test_every_reader_keeps_the_contract_on_its_fixtures(
    reader: Reader, placed: tuple[HostEnv, Path], tmp_path: Path
) -> None:
    env, project = placed
    files = _files(reader, env, project)
    assert files, (
        f"{_id(reader)} found nothing at its default location: give host {reader.host!r} "
        "a LAYOUT entry in tests/test_all_hosts.py"
    )
    opts = ReaderOptions()
    for path in files:
        before = list(_snapshot(path)) if reader.kind == "database" else []
        first = reader.read(path, None, opts)
        _check_shapes(reader, path, first)
        fresh = read_fresh(reader, path, opts)
        again = read_fresh(reader, path, opts)
        assert fresh.comparable() == again.comparable(), f"{_id(reader)} {path}: not repeatable"
        assert fresh.sessions == again.sessions, f"{_id(reader)} {path}: sessions not repeatable"

        resumed = MemoryIndex()
        resumed.read(reader, path, opts)
        resumed.read(reader, path, opts)  # nothing changed: the cursor adds nothing
        assert resumed.comparable() == fresh.comparable(), f"{_id(reader)} {path}: re-read"

        if reader.kind == "database":
            assert list(_snapshot(path)) == before, f"{_id(reader)} modified {path}"
        if reader.kind == "append" and path.suffix != ".json":  # .json: rewritten whole
            source = tmp_path / "source" / path.name
            source.parent.mkdir(exist_ok=True)
            shutil.copyfile(path, source)
            cuts = _line_ends(source.read_bytes())
            grown = grow_file_incrementally(reader, source, path, cuts, opts)
            assert _comparable(grown) == _comparable(fresh), (
                f"{_id(reader)} {path.name}: read line by line != read fresh"
            )


def test_the_layout_names_only_known_hosts() -> None:
    hosts = {reader.host for reader in READERS}
    assert set(LAYOUT) <= hosts, set(LAYOUT) - hosts


def _strings(value: object) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _strings(v)
    elif isinstance(value, list | tuple):
        for v in value:
            yield from _strings(v)


@pytest.mark.parametrize("reader", READERS, ids=_id)
def test_every_reader_keeps_prose_in_its_memo_only_under_prose_keys(
    reader: Reader, placed: tuple[HostEnv, Path]
) -> None:
    # Redaction and forgetting reach a memo's prose, not its ids and paths
    # (backscroll.memo): a title or a prompt kept under another key would be
    # stored unredacted and outlive its session.
    env, project = placed
    for path in _files(reader, env, project):
        result = reader.read(path, None, ReaderOptions())
        texts = [t.text for t in result.turns] + [s.title or "" for s in result.sessions]
        memos = [result.state]
        if reader.kind == "append" and path.suffix != ".json":
            # Part-way through the file too: an unfinished message waits in the memo.
            data = path.read_bytes()
            try:
                for cut in _line_ends(data)[:: max(len(_line_ends(data)) // 20, 1)]:
                    path.write_bytes(data[:cut])
                    memos.append(reader.read(path, None, ReaderOptions()).state)
            finally:
                path.write_bytes(data)
        for memo in memos:
            for value in _strings(without_prose(dict(memo))):
                core = value.rstrip("…").strip()
                assert len(core) < 8 or not any(core in text for text in texts), (
                    f"{_id(reader)} keeps {value!r} in its memo outside the keys of "
                    "backscroll.memo.PROSE_KEYS: name it there, or keep it under one of them"
                )
