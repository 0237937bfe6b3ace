"""Subcommands registered into the ``backscroll`` parser (see cli.build_parser).

Keep this module light: import heavy modules inside the handlers, so that
``backscroll search`` does not pay for them.
"""

from __future__ import annotations

import argparse
from typing import Any


def register(sub: Any) -> None:
    """Add this module's subcommands to ``sub`` (an argparse subparsers action)."""
    _ = (sub, argparse)
