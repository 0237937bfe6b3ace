"""Every environment variable a reader reads is isolated in tests.

The list is derived by scanning the reader sources (``env.var("X")``,
``env.environ.get("X")``, ``os.environ``/``os.getenv``, and a class attribute
such as ``db_env = "OPENCODE_DB"`` passed to them), so a variable added to a
reader cannot slip past ``tests/conftest.py``'s ``isolated_home`` and the
daemon harness's ``_SCRUB`` and let a test read the developer's real data.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.daemon.harness import HOST_ENV, daemon_env

READERS_DIR = Path(__file__).resolve().parents[2] / "backscroll" / "readers"
CONFTEST = Path(__file__).resolve().parents[1] / "conftest.py"


def _is_environ(node: ast.expr) -> bool:
    return (isinstance(node, ast.Attribute) and node.attr == "environ") or (
        isinstance(node, ast.Name) and node.id == "environ"
    )


def _name_arg(node: ast.Call | ast.Subscript) -> ast.expr | None:
    if isinstance(node, ast.Subscript):
        return node.slice if _is_environ(node.value) else None
    func = node.func
    if not isinstance(func, ast.Attribute) or not node.args:
        return None
    if func.attr == "var" or func.attr == "getenv":
        return node.args[0]
    if func.attr == "get" and _is_environ(func.value):
        return node.args[0]
    return None


def env_vars_read(source: str) -> set[str]:
    """Names of the environment variables ``source`` reads."""
    tree = ast.parse(source)
    class_strings: dict[str, set[str]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.AnnAssign | ast.Assign) and isinstance(node.value, ast.Constant):
            targets = [node.target] if isinstance(node, ast.AnnAssign) else node.targets
            for target in targets:
                if isinstance(target, ast.Name) and isinstance(node.value.value, str):
                    class_strings.setdefault(target.id, set()).add(node.value.value)
    found: set[str] = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call | ast.Subscript):
            continue
        arg = _name_arg(node)
        if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
            found.add(arg.value)
        elif isinstance(arg, ast.Attribute):  # self.db_env: every value the module gives it
            found |= class_strings.get(arg.attr, set())
    return found


def reader_env_vars() -> set[str]:
    return {
        var
        for path in sorted(READERS_DIR.rglob("*.py"))
        for var in env_vars_read(path.read_text(encoding="utf-8"))
    }


def _isolated_home_strings() -> set[str]:
    """Every variable conftest's ``isolated_home`` sets or deletes: the strings in it,
    plus ``HOST_ENV`` when it deletes those."""
    tree = ast.parse(CONFTEST.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == "isolated_home":
            names = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
            strings = {
                n.value
                for n in ast.walk(node)
                if isinstance(n, ast.Constant) and isinstance(n.value, str)
            }
            return strings | (set(HOST_ENV) if "HOST_ENV" in names else set())
    raise AssertionError("tests/conftest.py has no isolated_home fixture")


def test_the_scan_finds_the_variables_readers_are_known_to_read() -> None:
    found = reader_env_vars()
    assert {"CODEX_HOME", "HERMES_HOME", "OPENCODE_DB", "KILO_DB", "XDG_DATA_HOME"} <= found
    assert {"APPDATA", "LOCALAPPDATA"} <= found


def test_the_scan_reads_literals_subscripts_and_class_attributes() -> None:
    src = (
        "import os\n"
        "class R:\n"
        '    db_env: ClassVar[str] = "A_DB"\n'
        "    def roots(self, env):\n"
        '        env.var("B_HOME"); env.environ.get(self.db_env)\n'
        '        os.environ["C_DIR"]; os.getenv("D_DIR"); os.environ.get("E_DIR", "")\n'
    )
    assert env_vars_read(src) == {"A_DB", "B_HOME", "C_DIR", "D_DIR", "E_DIR"}


def test_every_variable_a_reader_reads_is_isolated_by_the_conftest() -> None:
    missing = sorted(reader_env_vars() - _isolated_home_strings())
    assert not missing, f"add to isolated_home in tests/conftest.py: {missing}"


def test_every_variable_a_reader_reads_is_scrubbed_from_the_test_daemon(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    leak = str(tmp_path / "the-developers-real-data")
    for var in reader_env_vars():
        monkeypatch.setenv(var, leak)
    env = daemon_env(tmp_path)
    leaked = sorted(var for var in reader_env_vars() if env.get(var) == leak)
    assert not leaked, f"add to _SCRUB in tests/daemon/harness.py: {leaked}"
