"""The source distribution and the licence a packager needs."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_the_licence_is_mit_for_backscroll_contributors() -> None:
    text = (REPO / "LICENSE").read_text()
    assert text.startswith("MIT License") and "backscroll contributors" in text
    assert 'license = { text = "MIT" }' in (REPO / "pyproject.toml").read_text()


def test_the_sdist_carries_the_tests_fixtures_and_example_config(tmp_path: Path) -> None:
    src = tmp_path / "src"
    shutil.copytree(REPO, src, ignore=shutil.ignore_patterns(
        ".git", ".venv", "*.egg-info", "__pycache__", "dist", "build", ".*_cache"))  # fmt: skip
    done = subprocess.run(
        [sys.executable, "-c",
         "from setuptools import build_meta as b; print(b.build_sdist('dist'))"],
        cwd=src, capture_output=True, text=True, check=False, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    archive = src / "dist" / done.stdout.strip().splitlines()[-1]
    with tarfile.open(archive) as tar:
        names = {n.split("/", 1)[1] for n in tar.getnames() if "/" in n}
    for want in ("LICENSE", "config.example.yaml", "README.md", "tests/conftest.py",
                 "tests/golden/search.json", "tests/fixtures/claude-code/SOURCES.md",
                 "tests/daemon/harness.py", "systemd/backscroll.service",
                 "backscroll/ui/static/app.js", "backscroll/py.typed"):  # fmt: skip
        assert want in names, want
    assert not [n for n in names if "__pycache__" in n or n.endswith(".pyc")]
