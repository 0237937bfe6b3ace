"""Readers, one module per agent host, registered in :data:`READERS`.

Readers own their inputs: a host's files are parsed in its module here, and the
SQL that reads a host's own database lives in ``readers/hostdb/`` (one module
per host's queries, every connection from its read-only opener).

Adding a host, in one place: every step below is caught by the test named.

1. ``backscroll/readers/<module>.py``: a :class:`BaseReader` subclass with
   ``host``, ``name``, ``version``, ``kind``, ``roots`` and ``read``; SQL on the
   host's database in ``readers/hostdb/<module>.py`` through ``open_readonly``
   (tests/test_no_sql_outside_store.py), that module imported with
   ``hostdb.later`` (tests/test_reader_imports.py).
2. An instance in :func:`_readers` below, the list ``READERS`` gives
   (tests/test_add_a_host.py).
3. Its name in ``backscroll/hosts.py`` ``HOST_NAMES``
   (tests/test_hosts_registry.py).
4. Real samples in ``tests/fixtures/<host>/`` with a ``SOURCES.md`` saying where
   each came from (tests/test_add_a_host.py).
5. ``tests/readers/test_<module>.py`` pinning what it reads and skips
   (tests/test_add_a_host.py).
6. A ``LAYOUT`` entry in tests/test_all_hosts.py placing the samples at the
   default location: the contract every reader keeps runs on it
   (tests/readers/test_contract.py, tests/test_all_hosts.py).
7. Every environment variable it reads isolated in ``tests/conftest.py``
   (``isolated_home``) and ``tests/daemon/harness.py`` (``_SCRUB``)
   (tests/readers/test_env_isolation.py).
8. A row in the README's "Supported hosts" table (tests/test_add_a_host.py).
9. Its name in ``config.example.yaml``'s list of hosts (tests/test_add_a_host.py).
10. A ``database`` host's roots reach the systemd unit: regenerate
    ``systemd/backscroll.service`` (tests/test_service.py says how).
11. Optional, for JSONL whose lines are mostly what the reader skips (tool
    output): a lean parse, ``_PARSE = Lean(<TypedDict shape>)`` handed to
    ``tail_jsonl`` (readers/lean.py), and the host in ``LEAN_READERS`` with
    files of every kind it reads (tests/readers/test_lean.py, which finds every
    module that has one).
"""

from __future__ import annotations

import _thread
from typing import TYPE_CHECKING

from backscroll.readers.base import BaseReader, HostEnv, Reader

if TYPE_CHECKING:
    #: Every host's reader, in the order hosts are listed (built by :func:`_readers`).
    READERS: tuple[Reader, ...]

#: Held while READERS is first built (the daemon's threads may ask at once).
#: Re-entrant: a reader module asking for READERS as it is imported does not
#: hang (it gets the list, or a circular-import error before its class exists).
_BUILDING = _thread.RLock()


def _readers() -> tuple[Reader, ...]:
    """Every host's reader: the list the steps above add to.

    Built on the first use of ``READERS``, not when this package is imported:
    a reader process imports only the modules its tasks name, not every
    host's (bench/RESULTS.md, Cold index, fifteenth pass)."""
    from backscroll.readers.aider import AiderReader
    from backscroll.readers.amazon_q import AmazonQReader
    from backscroll.readers.amp import AmpReader
    from backscroll.readers.antigravity import AntigravityReader
    from backscroll.readers.claude_code import ClaudeCodeReader
    from backscroll.readers.claude_cowork import CoworkReader
    from backscroll.readers.cline import ClineReader
    from backscroll.readers.codex import CodexReader
    from backscroll.readers.continue_dev import ContinueReader
    from backscroll.readers.copilot_cli import CopilotCliReader
    from backscroll.readers.crush import CrushReader
    from backscroll.readers.cursor_agent import CursorAgentReader
    from backscroll.readers.cursor_ide import CursorReader
    from backscroll.readers.factory_droid import FactoryDroidReader
    from backscroll.readers.gemini_cli import GeminiCliReader
    from backscroll.readers.goose import GooseJsonlReader, GooseReader
    from backscroll.readers.grok import GrokReader
    from backscroll.readers.hermes import HermesReader
    from backscroll.readers.hermes_logs import HermesLogReader
    from backscroll.readers.iflow_cli import IflowCliReader
    from backscroll.readers.kilo_code import KiloCodeReader
    from backscroll.readers.kimi_cli import KimiCliReader
    from backscroll.readers.kiro import KiroCliReader, KiroIdeReader
    from backscroll.readers.mistral_vibe import MistralVibeReader
    from backscroll.readers.opencode import KiloCliReader, OpenCodeReader
    from backscroll.readers.openhands import OpenHandsReader
    from backscroll.readers.pi import PiReader
    from backscroll.readers.qwen_code import QwenCodeReader
    from backscroll.readers.roo_code import RooCodeReader
    from backscroll.readers.trae_cli import TraeCliReader
    from backscroll.readers.vscode_chat_db import VsCodeChatDbReader
    from backscroll.readers.vscode_copilot_chat import VsCodeCopilotChatReader
    from backscroll.readers.zed import ZedReader
    from backscroll.readers.zoo_code import ZooCodeReader

    return (
        ClaudeCodeReader(),
        CodexReader(),
        GeminiCliReader(),
        CopilotCliReader(),
        QwenCodeReader(),
        PiReader(),
        FactoryDroidReader(),
        CursorAgentReader(),
        KiroCliReader(),
        KiroIdeReader(),
        ClineReader(),
        RooCodeReader(),
        KiloCodeReader(),
        ContinueReader(),
        AmpReader(),
        OpenCodeReader(),
        KiloCliReader(),
        CursorReader(),
        GooseReader(),
        GooseJsonlReader(),
        CrushReader(),
        HermesReader(),
        HermesLogReader(),
        ZedReader(),
        AiderReader(),
        CoworkReader(),
        AntigravityReader(),
        KimiCliReader(),
        GrokReader(),
        MistralVibeReader(),
        TraeCliReader(),
        ZooCodeReader(),
        VsCodeCopilotChatReader(),
        VsCodeChatDbReader(),
        OpenHandsReader(),
        AmazonQReader(),
        IflowCliReader(),
    )


if not TYPE_CHECKING:  # (for mypy, READERS is declared above and nothing else exists)

    def __getattr__(name: str) -> object:
        if name != "READERS":
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        with _BUILDING:
            readers = globals().get("READERS")
            if readers is None:
                try:
                    built = _readers()
                except AttributeError as exc:
                    # (raised from here, it would read as "no attribute READERS")
                    raise RuntimeError(f"building the reader list failed: {exc!r}") from exc
                # One list, even if something asked for it while it was built.
                readers = globals().setdefault("READERS", built)
        return readers

    def __dir__() -> list[str]:
        return sorted({*globals(), "READERS"})


__all__ = ["READERS", "BaseReader", "HostEnv", "Reader"]
