"""Schema numbers are written once: the index's is the last migration's number,
and every ``--json`` output's ``"schema"`` is :data:`backscroll.wire.RESULT_SCHEMA`."""

from __future__ import annotations

import ast
from pathlib import Path

from backscroll.store import schema

PACKAGE = Path(__file__).resolve().parents[1] / "backscroll"


def test_migrations_are_numbered_one_to_n_and_the_schema_version_is_the_last() -> None:
    numbers = [number for number, _step in schema.MIGRATIONS]
    assert numbers == list(range(1, len(numbers) + 1)), numbers
    assert numbers[-1] == schema.SCHEMA_VERSION


def _literal_schema_keys(path: Path, root: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    found: list[str] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Dict):
            continue
        for key, value in zip(node.keys, node.values, strict=True):
            if (
                isinstance(key, ast.Constant)
                and key.value == "schema"
                and isinstance(value, ast.Constant)
                and isinstance(value.value, int)
            ):
                found.append(f"{path.relative_to(root)}:{node.lineno}")
    return found


def test_no_json_output_hard_codes_its_schema_number() -> None:
    found = [
        hit
        for path in sorted(PACKAGE.rglob("*.py"))
        for hit in _literal_schema_keys(path, PACKAGE.parent)
    ]
    assert not found, 'use "schema": RESULT_SCHEMA (backscroll.wire), not a literal:\n' + "\n".join(
        found
    )


def test_the_scanner_finds_a_literal_schema_number(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text('OUT = {"schema": 1, "ok": True}\nGOOD = {"schema": RESULT_SCHEMA}\n')
    assert _literal_schema_keys(bad, tmp_path) == ["bad.py:1"]
