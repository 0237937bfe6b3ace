"""Kilo Code legacy extension (v5.x and earlier, Roo-derived) task store.

``globalStorage/kilocode.kilo-code/tasks/<task id>/ui_messages.json``, the
Cline/Roo shape (parsed by :mod:`backscroll.readers.cline_ui`). The session id
is the task directory name. The current Kilo (7.x extension and ``kilo`` CLI)
keeps OpenCode's SQLite ``kilo.db`` and is read by the OpenCode-schema reader.

Kilo's migration wizard copies legacy tasks into ``kilo.db`` under new ``ses_…``
ids, so the two stores cannot be matched by id: a migrated chat is recognised by
its start time (this reader's ``Session.started_at``, the first message's ``ts``)
together with its first user prompt (the first ``user`` turn's text).

No resume command: a legacy task is reopened from the extension's History view
(or after migration, ``kilo --session <id>`` on the migrated copy).
"""

from __future__ import annotations

from typing import ClassVar

from backscroll.readers.cline_ui import KILO_IDS, TaskStoreReader


class KiloCodeReader(TaskStoreReader):
    host: ClassVar[str] = "kilo-code"
    name: ClassVar[str] = "Kilo Code (legacy)"
    version: ClassVar[int] = 1
    extension_ids: ClassVar[tuple[str, ...]] = KILO_IDS
