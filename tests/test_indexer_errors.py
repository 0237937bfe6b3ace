"""A transcript that cannot be read is logged and kept out; nothing already
indexed is lost. One that cannot be opened is tried again at every rescan (it
may be made readable without changing); one a reader fails on waits until it
changes."""

from __future__ import annotations

import os
from pathlib import Path
from typing import ClassVar

from backscroll.config import Config
from backscroll.indexing.indexer import Indexer
from backscroll.indexing.spec import HostSpec
from backscroll.model import Cursor, Kind, ReaderOptions, ReadResult
from backscroll.readers.base import BaseReader, HostEnv
from backscroll.store import open_writer


class BrokenReader(BaseReader):
    """A reader whose every read fails the way a permission error would (or,
    with ``error=RuntimeError``, the way a reader bug would)."""

    host: ClassVar[str] = "claude-code"
    name: ClassVar[str] = "broken"
    version: ClassVar[int] = 1
    kind: ClassVar[Kind] = "append"

    def __init__(self, error: type[Exception] = PermissionError) -> None:
        self.reads = 0
        self.error = error

    def roots(self, env: HostEnv) -> list[Path]:
        return []

    def source_for(self, path: Path) -> Path | None:
        return path if path.suffix == ".jsonl" else None

    def read(self, path: Path, prev: Cursor | None, opts: ReaderOptions) -> ReadResult:
        self.reads += 1
        raise self.error(f"cannot read {path}")


def test_a_file_the_reader_fails_on_is_retried_only_after_it_changes(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    transcript = root / "a.jsonl"
    transcript.write_text("{}\n")
    reader = BrokenReader(RuntimeError)
    writer = open_writer(tmp_path / "data" / "index.db")
    try:
        indexer = Indexer(writer, [HostSpec(reader, (root,), ReaderOptions())], Config())
        first = indexer.reconcile()
        assert (first.errors, reader.reads) == (1, 1)
        assert "cannot read" in (first.last_error or "")
        indexer.reconcile()
        assert reader.reads == 1, "an unchanged unreadable file was read again"
        stat = transcript.stat()
        os.utime(transcript, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
        indexer.reconcile()
        assert reader.reads == 2, "a changed file was not tried again"
        row = writer.file_row(str(transcript))
        assert row is not None and row.error and "RuntimeError" in row.error
        assert not row.unreadable
    finally:
        writer.close()


def test_a_file_that_could_not_be_opened_is_recorded_unreadable_and_tried_at_every_rescan(
    tmp_path: Path,
) -> None:
    root = tmp_path / "root"
    root.mkdir()
    transcript = root / "a.jsonl"
    transcript.write_text("{}\n")
    reader = BrokenReader(PermissionError)
    writer = open_writer(tmp_path / "data" / "index.db")
    try:
        indexer = Indexer(writer, [HostSpec(reader, (root,), ReaderOptions())], Config())
        assert indexer.reconcile().errors == 1
        row = writer.file_row(str(transcript))
        assert row is not None and row.unreadable and "PermissionError" in (row.error or "")
        indexer.reconcile()
        assert reader.reads == 2, "an unreadable file was not tried again at the rescan"
    finally:
        writer.close()


def test_a_transcript_made_readable_by_chmod_alone_is_indexed_at_the_next_index(
    tmp_path: Path,
) -> None:
    """Really unreadable: ``backscroll index`` runs as an unprivileged user (as
    ``nobody`` when the tests run as root, since root reads any file), and the
    transcript is mode 000 then 644, its bytes and mtime unchanged."""
    import json
    import pwd
    import shutil
    import subprocess
    import sys
    import tempfile

    base = Path(tempfile.mkdtemp(prefix="bs-unreadable-"))
    try:
        os.chmod(base, 0o755)
        home, data = base / "home", base / "data"
        project = home / ".claude" / "projects" / "-p"
        project.mkdir(parents=True)
        data.mkdir()
        transcript = project / "3f2a0000-0000-4000-8000-000000000001.jsonl"
        fixture = Path(__file__).parent / "fixtures" / "claude-code" / "spotter-tool_heavy.jsonl"
        shutil.copyfile(fixture, transcript)
        drop = ""
        if os.geteuid() == 0:
            nobody = pwd.getpwnam("nobody")
            for d in (home, data, *[p for p in transcript.parents if home in p.parents]):
                os.chown(d, nobody.pw_uid, nobody.pw_gid)
            os.chown(transcript, 0, 0)  # owned by root: mode 000 shuts nobody out
            # The interpreter may live where nobody cannot go: load what `index`
            # needs first (orjson is imported at the first line parsed), then
            # become nobody for the indexing itself.
            drop = f"os.setgroups([]); os.setgid({nobody.pw_gid}); os.setuid({nobody.pw_uid}); "
        env = {k: v for k, v in os.environ.items() if not k.startswith(("BACKSCROLL", "XDG"))}
        env.update(HOME=str(home), BACKSCROLL_HOME=str(data), XDG_RUNTIME_DIR=str(base / "run"))
        code = (
            "import json, os; import backscroll.redact, backscroll.store.forget; "
            "from backscroll.readers.base import loads; loads(b'{}'); "
            "from backscroll import config, direct; cfg = config.load(); "
            f"{drop}summary, totals = direct.index(cfg, check=True); "
            "print(json.dumps({'errors': summary.errors, **totals}))"
        )

        def index() -> dict[str, object]:
            done = subprocess.run(
                [sys.executable, "-c", code], env=env, capture_output=True, text=True,
                check=False, cwd=base,
            )  # fmt: skip
            assert done.returncode == 0, done.stderr
            return dict(json.loads(done.stdout))

        mtime = transcript.stat().st_mtime_ns
        os.chmod(transcript, 0o000)
        first = index()
        assert first["errors"] == 1 and first["hosts"]["claude-code"]["turns"] == 0  # type: ignore[index]
        os.chmod(transcript, 0o644)
        assert transcript.stat().st_mtime_ns == mtime
        second = index()
        assert second["errors"] == 0
        assert second["hosts"]["claude-code"]["turns"] > 0  # type: ignore[index]
    finally:
        shutil.rmtree(base, ignore_errors=True)
