"""Adding a host is one checklist (``backscroll/readers/__init__.py``'s
docstring); every step of it is caught by a test, these among them."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
from pathlib import Path

import backscroll.readers
from backscroll.hosts import HOST_NAMES
from backscroll.readers import READERS
from backscroll.readers.base import BaseReader

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO / "tests" / "fixtures"


def _reader_classes() -> set[type[BaseReader]]:
    """Every public concrete reader class (one that names its ``host``) in the
    package; a private one (``_QwenLegacy``) is a registered reader's delegate."""
    found: set[type[BaseReader]] = set()
    for info in pkgutil.iter_modules(backscroll.readers.__path__, "backscroll.readers."):
        module = importlib.import_module(info.name)
        for _name, cls in inspect.getmembers(module, inspect.isclass):
            mine = cls.__module__ == info.name and not cls.__name__.startswith("_")
            if mine and issubclass(cls, BaseReader) and "host" in vars(cls):
                found.add(cls)
    return found


def test_every_reader_class_is_registered_in_readers() -> None:
    registered = {type(reader) for reader in READERS}
    missing = sorted(c.__name__ for c in _reader_classes() - registered)
    assert not missing, f"add to READERS in backscroll/readers/__init__.py: {missing}"


def test_every_reader_module_has_its_test_file() -> None:
    modules = {type(reader).__module__.rsplit(".", 1)[1] for reader in READERS}
    missing = sorted(
        f"tests/readers/test_{m}.py"
        for m in modules
        if not (REPO / "tests" / "readers" / f"test_{m}.py").exists()
    )
    assert not missing, missing


def test_every_fixture_directory_says_where_its_samples_came_from() -> None:
    dirs = [d for d in sorted(FIXTURES.iterdir()) if d.is_dir()]
    missing = [d.name for d in dirs if not (d / "SOURCES.md").is_file()]
    assert dirs and not missing, f"tests/fixtures/<host>/SOURCES.md missing for {missing}"


def _readme_table_hosts() -> set[str]:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    section = text.split("\n## Supported hosts\n", 1)[1].split("\n## ", 1)[0]
    hosts: set[str] = set()
    for line in section.splitlines():
        if line.startswith("| `"):
            hosts.update(re.findall(r"`([a-z0-9-]+)`", line.split("|")[1]))
    return hosts


def test_every_host_has_a_row_in_the_readme_hosts_table() -> None:
    missing = sorted(set(HOST_NAMES) - _readme_table_hosts())
    assert not missing, f'add a row to README.md "Supported hosts": {missing}'


def test_every_host_is_named_in_config_example() -> None:
    text = (REPO / "config.example.yaml").read_text(encoding="utf-8")
    named = set(re.findall(r"[a-z0-9]+(?:-[a-z0-9]+)*", text))
    missing = sorted(set(HOST_NAMES) - named)
    assert not missing, f"name these hosts in config.example.yaml: {missing}"


def test_every_test_the_add_a_host_checklist_names_exists() -> None:
    doc = backscroll.readers.__doc__ or ""
    named = set(re.findall(r"tests/[\w/]+\.py", doc))
    assert len(named) >= 6, named
    missing = sorted(n for n in named if not (REPO / n).is_file())
    assert not missing, missing
