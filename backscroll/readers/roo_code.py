"""Roo Code (``RooVeterinaryInc.roo-cline``, discontinued 2026-05-15) task store.

Same ``tasks/<task id>/ui_messages.json`` shape as Cline (parsed by
:mod:`backscroll.readers.cline_ui`); ``history_item.json`` beside it gives the
title (``task``), project (``workspace``) and parent task, and a change to it
re-reads the task. Condense summaries are the ``say: "condense_context"`` rows
(``contextCondense.summary``); the API history's ``isSummary`` rows carry the
same summary and are not read.

Not honoured: the ``roo-cline.customStoragePath`` setting, which moves the whole
store (``<custom path>/tasks/<id>/``). The format notes name the setting but not
where the editor keeps it, so backscroll does not read editor settings for it; a
user who set it adds that directory as an extra Roo Code root. Forks that keep
the format under another extension id (Zoo Code) are not listed for the same
reason: their id is not in the notes.

No resume command: the task is reopened from the extension's History view.
"""

from __future__ import annotations

from typing import ClassVar

from backscroll.readers.cline_ui import ROO_IDS, TaskStoreReader


class RooCodeReader(TaskStoreReader):
    host: ClassVar[str] = "roo-code"
    name: ClassVar[str] = "Roo Code"
    version: ClassVar[int] = 1
    extension_ids: ClassVar[tuple[str, ...]] = ROO_IDS
