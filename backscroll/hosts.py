"""Every host name backscroll knows, without importing the readers.

Config validation needs the names on paths that must start fast; a test keeps
this tuple equal to the hosts of ``backscroll.readers.READERS``.
"""

from __future__ import annotations

HOST_NAMES: tuple[str, ...] = (
    "claude-code",
    "codex",
    "gemini-cli",
    "copilot-cli",
    "qwen-code",
    "pi",
    "factory-droid",
    "cursor-agent",
    "kiro",
    "kiro-ide",
    "cline",
    "roo-code",
    "kilo-code",
    "continue",
    "amp",
    "opencode",
    "kilo-cli",
    "cursor",
    "goose",
    "crush",
    "hermes",
    "zed",
    "aider",
    "claude-desktop-cowork",
    "antigravity",
    "kimi-cli",
    "grok",
    "mistral-vibe",
    "trae-cli",
    "zoo-code",
    "vscode-copilot-chat",
    "openhands",
    "amazon-q",
    "iflow-cli",
)


def unknown_host(host: str) -> str | None:
    """The error for a host name backscroll does not know, the same wherever one
    is given (the CLI's ``--host``, the MCP tools' ``host``); None for a known one."""
    if host in HOST_NAMES:
        return None
    import difflib

    close = difflib.get_close_matches(host, HOST_NAMES, n=1)
    hint = f"did you mean {close[0]}? " if close else ""
    return f"unknown host {host!r}; {hint}the hosts are: {', '.join(HOST_NAMES)}"
