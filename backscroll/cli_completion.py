"""``backscroll completion bash|zsh|tcsh``: the shell completion script, generated
from the command's own parser by shtab (imported only here, never on the query path).

    backscroll completion bash > ~/.local/share/bash-completion/completions/backscroll
    backscroll completion zsh > "${fpath[1]}/_backscroll"
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

SHELLS = ("bash", "zsh", "tcsh")


def cmd_completion(args: argparse.Namespace) -> int:
    import shtab

    from backscroll.cli import build_parser

    sys.stdout.write(shtab.complete(build_parser(), shell=args.shell))
    sys.stdout.write("\n")
    return 0


def register(sub: Any) -> None:
    """Add ``completion`` to ``sub`` (an argparse subparsers action)."""
    p = sub.add_parser("completion", help="print a shell completion script (bash, zsh, tcsh)")
    p.add_argument("shell", choices=SHELLS, help="the shell to complete in")
    p.set_defaults(func=cmd_completion)
