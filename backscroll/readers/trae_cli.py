"""TRAE CLI 2.0 (``traex``): ``~/.trae/cli/sessions/YYYY/MM/DD/rollout-*.jsonl``.

TRAE CLI is closed source; its session files are, field for field, Codex
rollouts (``session_meta`` / ``turn_context`` / ``response_item`` / ``event_msg``,
``originator: "codex-tui"``), so the Codex reader reads them from TRAE's own
roots. What is known comes from peer readers and one de-identified real rollout
(``shared/formats/trae-cli/README.md``); unverified, and tolerated here:

- the location on macOS and Windows (taken as ``~/.trae/cli`` under the home
  directory, as on Linux);
- any environment variable that moves it (none is known; ``CODEX_HOME`` is not
  read for TRAE);
- whether TRAE ever writes ``.jsonl.zst`` rollouts (read if it does, as Codex's);
- ``traex resume <id>`` as the resume command (from one peer).

TRAE writes no ``session_index.jsonl``, so the title is the first prompt. The
host label comes from the root, never from the content (``originator`` says
``codex-tui`` for both hosts).
"""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from backscroll.readers.base import HostEnv
from backscroll.readers.codex import CodexReader


class TraeCliReader(CodexReader):
    host: ClassVar[str] = "trae-cli"
    name: ClassVar[str] = "TRAE CLI"
    version: ClassVar[int] = 1
    resume_program: ClassVar[str] = "traex"

    def roots(self, env: HostEnv) -> list[Path]:
        home = env.home / ".trae" / "cli"
        return [home / "sessions", home / "archived_sessions"]
