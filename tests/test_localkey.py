"""The machine's secret for keyed hashes (team keys): never empty, and two
processes making it at once end up with the same one."""

from __future__ import annotations

import multiprocessing
from pathlib import Path

from backscroll.team.keys import KEY_FILE, MIN_SECRET_BYTES, machine_secret


def test_an_empty_or_broken_secret_file_is_replaced_by_a_real_secret(tmp_path: Path) -> None:
    for broken in ("", "not hex", "00ff"):
        (tmp_path / KEY_FILE).write_text(broken)
        secret = machine_secret(tmp_path)
        assert len(secret) >= MIN_SECRET_BYTES
        assert machine_secret(tmp_path) == secret  # and kept from then on
    assert (tmp_path / KEY_FILE).stat().st_mode & 0o777 == 0o600


def _make(directory: str, out: multiprocessing.Queue[bytes]) -> None:
    out.put(machine_secret(Path(directory)))


def test_two_processes_making_the_secret_at_once_get_the_same_one(tmp_path: Path) -> None:
    ctx = multiprocessing.get_context("fork")
    for n in range(20):
        directory = tmp_path / str(n)
        directory.mkdir()
        out: multiprocessing.Queue[bytes] = ctx.Queue()
        procs = [ctx.Process(target=_make, args=(str(directory), out)) for _ in range(2)]
        for p in procs:
            p.start()
        got = [out.get(timeout=30) for _ in procs]
        for p in procs:
            p.join(30)
        assert got[0] == got[1] == machine_secret(directory), n
        assert [p.name for p in directory.iterdir()] == [KEY_FILE]  # no temporary left
