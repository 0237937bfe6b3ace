"""Roo Code (``RooVeterinaryInc.roo-cline``, discontinued 2026-05-15) task store.

Same ``tasks/<task id>/ui_messages.json`` shape as Cline (parsed by
:mod:`backscroll.readers.cline_ui`); ``history_item.json`` beside it gives the
title (``task``), project (``workspace``) and parent task, and a change to it
re-reads the task. Condense summaries are the ``say: "condense_context"`` rows
(``contextCondense.summary``); the API history's ``isSummary`` rows carry the
same summary and are not read.

The ``roo-cline.customStoragePath`` setting moves the whole store to
``<custom path>/tasks/<id>/``; Roo reads it with VS Code's
``getConfiguration("roo-cline")``, so it sits in each editor's user
``settings.json`` (JSON with comments), where the reader looks for it. Zoo
Code, the fork that keeps the format under its own extension id and setting,
is :mod:`backscroll.readers.zoo_code`.

No resume command: the task is reopened from the extension's History view.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import ClassVar

from backscroll.readers.base import HostEnv, read_side_file
from backscroll.readers.cline_ui import HISTORY_ITEM, ROO_IDS, UI_MESSAGES, TaskStoreReader


def _setting_pattern(setting: str) -> re.Pattern[str]:
    """The setting's value in a settings.json that may hold comments and trailing commas."""
    return re.compile(rf'"{re.escape(setting)}"\s*:\s*("(?:[^"\\]|\\.)*")')


def custom_storage_paths(env: HostEnv, setting: str = "roo-cline.customStoragePath") -> list[Path]:
    """Every non-empty ``setting`` (a custom storage path) in the editors' user settings."""
    pattern = _setting_pattern(setting)
    found: list[Path] = []
    for user in env.editor_user_dirs():
        try:
            text = read_side_file(user / "settings.json").decode("utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        for literal in pattern.findall(text):
            try:
                value = json.loads(literal)
            except ValueError:
                continue
            if isinstance(value, str) and value.strip():
                path = Path(os.path.expanduser(value.strip()))
                if path not in found:
                    found.append(path)
    return found


class RooCodeReader(TaskStoreReader):
    host: ClassVar[str] = "roo-code"
    name: ClassVar[str] = "Roo Code"
    version: ClassVar[int] = 1
    extension_ids: ClassVar[tuple[str, ...]] = ROO_IDS
    #: The editor setting that moves the task store.
    storage_setting: ClassVar[str] = "roo-cline.customStoragePath"

    def __init__(self) -> None:
        self._custom: tuple[Path, ...] = ()

    def roots(self, env: HostEnv) -> list[Path]:
        self._custom = tuple(custom_storage_paths(env, self.storage_setting))
        return [*super().roots(env), *self._custom]

    def source_for(self, path: Path) -> Path | None:
        found = super().source_for(path)
        if found is not None or path.name not in (UI_MESSAGES, HISTORY_ITEM):
            return found
        task_dir = path.parent
        if task_dir.parent.name == "tasks" and task_dir.parent.parent in self._custom:
            return path if path.name == UI_MESSAGES else task_dir / UI_MESSAGES
        return None
