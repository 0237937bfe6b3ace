"""Subcommands for agents: ``backscroll mcp`` and ``backscroll hook <host>``.

Keep this module light: import heavy modules inside the handlers, so that
``backscroll search`` (and the hooks, which run before every prompt) do not pay
for them.
"""

from __future__ import annotations

import argparse

TYPE_CHECKING = False  # typing is not imported at run time: this is the CLI's hot path
if TYPE_CHECKING:
    from typing import Any

HOOK_HOSTS = ("claude-code", "codex", "gemini-cli", "copilot-cli")


def cmd_mcp(args: argparse.Namespace) -> int:
    from pathlib import Path

    from backscroll import mcp_server

    # (The config is loaded by the server: a broken one is a tool error, not a failed start.)
    return mcp_server.serve(Path(args.config) if getattr(args, "config", None) else None)


def cmd_hook(args: argparse.Namespace) -> int:
    from backscroll import hook

    return hook.main(args.host, getattr(args, "config", None))


def register(sub: Any) -> None:
    """Add this module's subcommands to ``sub`` (an argparse subparsers action)."""
    p = sub.add_parser(
        "mcp",
        help="serve the index to coding agents over MCP (stdio)",
        description="A stdio MCP server with the tools search_history, list_sessions and "
        "read_session. Register it with your agent, e.g. "
        "`claude mcp add backscroll -- backscroll mcp`.",
    )
    p.set_defaults(func=cmd_mcp)

    p = sub.add_parser(
        "hook",
        help="prompt-time hook: add related past turns to the agent's context",
        description="Reads the host's hook JSON on stdin and, when earlier sessions hold "
        "turns that match the prompt strongly, prints them as additional context. Prints "
        "nothing otherwise; exits 0 (1, never 2, for a wrongly written hook command).",
    )
    p.add_argument("host", choices=HOOK_HOSTS, help="the agent host running the hook")
    p.set_defaults(func=cmd_hook)
