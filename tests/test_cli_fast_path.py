"""``backscroll search`` parses plain arguments without argparse; both parsers
come from one option table, and on anything unusual argparse takes over."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from backscroll import cli
from tests.conftest import DaemonFactory

PLAIN = [
    ["search", "login", "handler"],
    ["search", "login", "--json"],
    ["search", "--host", "codex", "word", "--limit", "5", "--any"],
    ["search", "word", "--since-days=14", "--role", "assistant", "--context", "2"],
    ["search", "login_user(--dry-run)", "src/auth/handler.py", "--max-total-chars", "900"],
    ["search", "--", "--not-an-option", "word"],
    ["search", "w", "--project", "/p q", "--session", "3f2a", "--here", "--since", "2026-01-02"],
    ["search", "w", "--until", "2026-02-01", "--max-turn-chars", "300"],
]


@pytest.mark.parametrize("argv", PLAIN)
def test_the_fast_path_parses_what_argparse_parses(argv: list[str]) -> None:
    fast = cli._fast_search(argv[1:])
    assert fast is not None, argv
    slow = cli.build_parser("search").parse_args(argv)
    assert vars(fast) == vars(slow)


@pytest.mark.parametrize(
    "rest",
    [
        ["--help"],
        ["-h"],
        ["word", "--lim", "5"],  # an abbreviation argparse would expand
        ["word", "--limit", "many"],
        ["word", "--role", "admin"],
        ["word", "--limit"],
        ["--json"],  # no words: argparse reports it
        ["word", "--json=yes"],
        ["word", "--unknown"],
    ],
)
def test_anything_unusual_is_left_to_argparse(rest: list[str]) -> None:
    assert cli._fast_search(rest) is None


def test_every_search_option_is_in_the_fast_path_table() -> None:
    parser = cli.build_parser("search")
    search = next(
        a
        for a in parser._subparsers._group_actions[0].choices.values()  # type: ignore[union-attr]
    )
    flags = {s for action in search._actions for s in action.option_strings}
    assert flags - {"-h", "--help"} == {flag for flag, _kw in cli.SEARCH_OPTIONS}


def test_ijson_is_loaded_only_when_a_big_document_is_streamed() -> None:
    code = (
        "import sys; from backscroll import cli, client, mcp_server; "
        "cli._fast_search(['word', '--json']); import backscroll.readers; "
        "print('ijson' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True, timeout=60)  # fmt: skip
    assert done.stdout.split() == ["False"]


def test_a_search_without_the_daemon_compiles_no_secret_patterns_when_nothing_changed(
    tmp_path: Path,
) -> None:
    """The refresh before a daemon-less search redacts only what it indexes: with
    nothing new, backscroll.redact (~70 ms of pattern compiling) is never loaded.
    (What it does index is redacted: tests/test_privacy.py.)"""
    from tests.daemon.harness import daemon_env, populate, run_cli

    files = populate(tmp_path / "home", copies=8)
    assert len(files) >= 32  # as many as a first index starts reader processes for
    first = run_cli(tmp_path, "index")
    assert first.returncode == 0, first.stderr
    code = (
        "import sys; from backscroll import cli; "
        "code = cli.main(['search', 'the', '--json']); "
        "print('redact-loaded' if 'backscroll.redact' in sys.modules else 'redact-absent', "
        "'mp-loaded' if 'multiprocessing' in sys.modules else 'mp-absent', "
        "file=sys.stderr); sys.exit(code)"
    )
    done = subprocess.run([sys.executable, "-c", code], env=daemon_env(tmp_path),
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert done.returncode in (0, 1), done.stderr  # (1: no hit, as grep)
    assert '"hits"' in done.stdout
    assert "redact-absent" in done.stderr
    assert "mp-absent" in done.stderr  # (nor multiprocessing, ~15 ms: no reader processes)


def test_a_daemon_served_search_ends_without_loading_logging_or_argparse(
    daemon_factory: DaemonFactory, tmp_path: Path
) -> None:
    """The command's fast exit closes log handlers only where logging was loaded:
    a search answered by the daemon never imports it (nor argparse, nor typing)."""
    from tests.daemon.harness import populate

    populate(tmp_path / "home")
    daemon = daemon_factory()
    daemon.sync()
    env = {k: v for k, v in daemon.env.items() if k != "NOTIFY_SOCKET"}
    script = (
        "import os, sys\n"
        "from backscroll import cli\n"
        "real_exit = os._exit\n"
        "def exit_(code):\n"
        "    loaded = [m for m in ('logging', 'argparse', 'typing') if m in sys.modules]\n"
        "    print('loaded:', *loaded, file=sys.stderr)\n"
        "    real_exit(code)\n"
        "os._exit = exit_\n"
        "sys.argv = ['backscroll', 'search', 'listing', 'files', '--limit', '3']\n"
        "cli.entry()\n"
    )
    done = subprocess.run([sys.executable, "-c", script], env=env,
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "resume:" in done.stdout  # the hits, flushed before the exit
    assert done.stderr.strip().splitlines()[-1] == "loaded:"
