"""Zoo Code (``ZooCodeOrganization.zoo-code``), the community fork of Roo Code.

Zoo Code keeps Roo's task store unchanged under its own extension id:
``<editor>/User/globalStorage/zoocodeorganization.zoo-code/tasks/<task id>/``
with ``ui_messages.json`` and ``history_item.json``, read exactly as Roo Code's
(:mod:`backscroll.readers.roo_code`, :mod:`backscroll.readers.cline_ui`). The
setting ``zoo-code.customStoragePath`` (Roo's renamed) moves the store and is
looked for in each editor's user ``settings.json``.

Beyond the editors every Cline-shaped reader covers, Zoo Code is also looked
for under Positron and Antigravity: one peer lists them; unverified. The
JetBrains edition's storage is unknown and not read.

No resume command: the task is reopened from the extension's History view.
"""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from backscroll.readers.base import HostEnv
from backscroll.readers.roo_code import RooCodeReader

ZOO_IDS = ("zoocodeorganization.zoo-code",)
#: Editors a peer also scans for Zoo Code (unverified), beyond ``editor_user_dirs``.
_MORE_EDITORS = ("Positron", "Antigravity")


class ZooCodeReader(RooCodeReader):
    host: ClassVar[str] = "zoo-code"
    name: ClassVar[str] = "Zoo Code"
    version: ClassVar[int] = 1
    extension_ids: ClassVar[tuple[str, ...]] = ZOO_IDS
    storage_setting: ClassVar[str] = "zoo-code.customStoragePath"

    def roots(self, env: HostEnv) -> list[Path]:
        roots = super().roots(env)
        base = (
            env.app_support()
            if env.is_macos
            else env.appdata()
            if env.is_windows
            else env.xdg_config()
        )
        extra = [base / name / "User" / "globalStorage" / ZOO_IDS[0] for name in _MORE_EDITORS]
        return list(dict.fromkeys([*roots, *extra]))
