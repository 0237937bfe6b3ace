"""SQL lives where its database is owned (STYLE.md, practice 4): statements on
backscroll's own index in ``backscroll/store/``; statements on a host's own
database in ``backscroll/readers/hostdb/``, on connections that are read-only;
the team database's (PostgreSQL) in ``backscroll/team/ddl.py`` and ``sql.py``.
No other module holds SQL text or runs statements on a connection."""

from __future__ import annotations

import ast
import re
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from backscroll.readers.hostdb import open_readonly

PACKAGE = Path(__file__).resolve().parents[1] / "backscroll"
STORE = PACKAGE / "store"
#: Reads of hosts' own databases: every connection from ``open_readonly``.
HOSTDB = PACKAGE / "readers" / "hostdb"

#: The team database's statements (PostgreSQL, not backscroll's own SQLite
#: index): its schema and every statement the publisher and ``search --team``
#: run, kept in these two modules as the index's are kept in the store. The
#: allowance is these files alone, and they may not touch SQLite.
POSTGRES_SQL = (PACKAGE / "team" / "ddl.py", PACKAGE / "team" / "sql.py")

#: Statement shapes, matched case-insensitively in a string literal (or the
#: literal parts of an f-string), whitespace-normalised.
SQL = re.compile(
    r"""
    \bSELECT\b .{0,400}? \bFROM\b
    | \bINSERT\s+(OR\s+\w+\s+)?INTO\b
    | \bREPLACE\s+INTO\b
    | \bUPDATE\s+["`\[]?\w+["`\]]?\s+SET\b
    | \bDELETE\s+FROM\b
    | \bCREATE\s+(VIRTUAL\s+|TEMP\s+|TEMPORARY\s+|UNIQUE\s+)?(TABLE|INDEX|TRIGGER|VIEW)\b
    | \bDROP\s+(TABLE|INDEX|TRIGGER|VIEW)\b
    | \bALTER\s+TABLE\b
    | \bPRAGMA\s+\w+
    | \bBEGIN\s+(IMMEDIATE|EXCLUSIVE|DEFERRED)\b
    | ^\s*(BEGIN|COMMIT|END|ROLLBACK|VACUUM|ANALYZE)(\s+TRANSACTION)?\s*;?\s*$
    | \b(SAVEPOINT|RELEASE\s+SAVEPOINT|ROLLBACK\s+TO)\s+\w+
    | \bATTACH\s+DATABASE\b
    | \bWITH\s+(RECURSIVE\s+)?\w+\s+AS\s*\(
    """,
    re.IGNORECASE | re.VERBOSE | re.DOTALL,
)

#: Methods that run SQL on a sqlite3 / aiosqlite connection or cursor.
EXECUTE = {"execute", "executemany", "executescript", "execute_fetchall", "execute_insert"}


def _python_files() -> Iterator[Path]:
    for path in sorted(PACKAGE.rglob("*.py")):
        if STORE not in path.parents and HOSTDB not in path.parents and path not in POSTGRES_SQL:
            yield path


def _literal_text(node: ast.AST) -> str | None:
    """The text of a string literal; an f-string's placeholders read as ``x``."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(
            v.value if isinstance(v, ast.Constant) and isinstance(v.value, str) else "x"
            for v in node.values
        )
    return None


def _docstrings(tree: ast.AST) -> set[int]:
    """ids of docstring nodes: prose about SQL is fine."""
    out: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                out.add(id(body[0].value))
    return out


def sql_in(paths: Iterator[Path], root: Path) -> list[str]:
    """``file:line: what`` (file relative to ``root``) for every SQL literal or
    execute call in ``paths``."""
    found: list[str] = []
    for path in paths:
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        docs = _docstrings(tree)
        rel = path.relative_to(root)
        in_fstring: set[int] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.JoinedStr):
                in_fstring.update(id(v) for v in node.values)
        for node in ast.walk(tree):
            if id(node) in docs or id(node) in in_fstring:
                continue
            text = _literal_text(node)
            if text is not None:
                flat = " ".join(text.split())
                match = SQL.search(flat)
                if match:
                    found.append(
                        f"{rel}:{getattr(node, 'lineno', 0)}: SQL text {match.group(0)[:60]!r}"
                    )
            elif (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in EXECUTE
            ):
                found.append(f"{rel}:{node.lineno}: .{node.func.attr}() call")
    return sorted(found, key=lambda f: (f.split(":")[0], int(f.split(":")[1])))


def test_no_sql_statement_or_execute_call_lives_outside_the_store_and_hostdb() -> None:
    found = sql_in(_python_files(), PACKAGE.parent)
    assert not found, (
        "SQL outside backscroll/store/ (own index) and backscroll/readers/hostdb/ (host "
        "databases); move it there:\n" + "\n".join(found)
    )


def test_the_store_holds_no_host_database_sql() -> None:
    """``store/`` is backscroll's own index alone: it never opens a host's database."""
    for path in sorted(STORE.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        assert "readers.hostdb" not in text and "readers import hostdb" not in text, path
    assert not (STORE / "hosts").exists() and not (STORE / "foreign.py").exists()


def _connects(path: Path) -> list[str]:
    """``file:line`` of every ``sqlite3.connect``/``aiosqlite.connect`` call in ``path``."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    return [
        f"{path.name}:{node.lineno}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "connect"
    ]


def test_hostdb_opens_host_databases_only_through_the_read_only_opener() -> None:
    found = {p.name: _connects(p) for p in sorted(HOSTDB.glob("*.py")) if _connects(p)}
    assert list(found) == ["__init__.py"] and len(found["__init__.py"]) == 1, found
    opener = (HOSTDB / "__init__.py").read_text(encoding="utf-8")
    assert "?mode=ro" in opener and "query_only = ON" in opener


def test_a_host_database_opened_by_the_opener_refuses_writes(tmp_path: Path) -> None:
    db = tmp_path / "host.db"
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE t (x)")
    conn.close()
    before = db.read_bytes()
    with open_readonly(db) as ro, pytest.raises(sqlite3.OperationalError, match="readonly"):
        ro.execute("INSERT INTO t VALUES (1)")
    assert db.read_bytes() == before


def test_the_postgres_sql_modules_do_not_touch_the_sqlite_index() -> None:
    for path in POSTGRES_SQL:
        text = path.read_text(encoding="utf-8")
        assert "sqlite" not in text.lower() and "backscroll.store" not in text, path


def test_the_scanner_finds_sql_literals_fstrings_and_execute_calls(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text(
        '"""A module docstring may say SELECT x FROM y."""\n'
        'Q = "select id\\n  from turns where x = ?"\n'
        'T = f"UPDATE {name} SET a = 1"\n'
        'P = "PRAGMA busy_timeout = 5000"\n'
        'B = "BEGIN IMMEDIATE"\n'
        "conn.execute(Q)\n"
        'MSG = "pick one from the list, then update the settings; begin"\n'
        'DONE = "commit"\n',
        encoding="utf-8",
    )
    found = sql_in(iter([bad]), tmp_path)
    assert [line.split(":")[1] for line in found] == ["2", "3", "4", "5", "6", "8"], found
    assert found[0].startswith("bad.py:2: SQL text")
