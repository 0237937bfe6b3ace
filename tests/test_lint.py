"""The house rules the suite enforces: ruff (lint and format) and strict mypy over the
package and its tests, so a misspelt worker job kind, an untyped reply or a test calling
what a module no longer exports fails CI, not only review."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def _run(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", *argv], cwd=REPO, capture_output=True, text=True, check=False
    )


def test_ruff_finds_nothing_to_fix_or_reformat() -> None:
    lint = _run("ruff", "check", "backscroll", "tests", "bench")
    assert lint.returncode == 0, lint.stdout + lint.stderr
    fmt = _run("ruff", "format", "--check", "backscroll", "tests", "bench")
    assert fmt.returncode == 0, fmt.stdout + fmt.stderr


def test_strict_mypy_passes_on_the_package_and_its_tests(tmp_path: Path) -> None:
    done = _run("mypy", "--cache-dir", str(tmp_path / "mypy"))
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_misspelt_worker_job_kind_is_a_type_error(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text(
        "from backscroll.daemon.worker import Worker\n"
        "def go(w: Worker) -> None:\n"
        '    w.submit("reconcle")\n'
    )
    done = _run("mypy", "--strict", "--cache-dir", str(tmp_path / "mypy"), str(probe))
    assert done.returncode == 1 and "reconcle" in done.stdout, done.stdout + done.stderr
