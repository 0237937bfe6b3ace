"""Readers, one module per agent host, registered in :data:`READERS`."""

from __future__ import annotations

from backscroll.readers.aider import AiderReader
from backscroll.readers.amazon_q import AmazonQReader
from backscroll.readers.amp import AmpReader
from backscroll.readers.antigravity import AntigravityReader
from backscroll.readers.base import BaseReader, HostEnv, Reader
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
from backscroll.readers.vscode_copilot_chat import VsCodeCopilotChatReader
from backscroll.readers.zed import ZedReader
from backscroll.readers.zoo_code import ZooCodeReader

READERS: tuple[Reader, ...] = (
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
    OpenHandsReader(),
    AmazonQReader(),
    IflowCliReader(),
)


__all__ = ["READERS", "BaseReader", "HostEnv", "Reader"]
