"""Zoo Code reader (the Roo Code reader on Zoo's extension id) against
``tests/fixtures/zoo-code`` (Roo's structural sample: Zoo keeps Roo's store)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from backscroll.readers.base import HostEnv
from backscroll.readers.zoo_code import ZooCodeReader
from tests.readers.util import fixture, read_fresh, role_counts

reader = ZooCodeReader()
EXT = "zoocodeorganization.zoo-code"


def test_task_store_reads_like_roo_under_zoos_extension_id(tmp_path: Path) -> None:
    task = tmp_path / "Code" / "User" / "globalStorage" / EXT / "tasks" / "1700000000003"
    task.mkdir(parents=True)
    shutil.copy(fixture("zoo-code", "ui_messages.json"), task / "ui_messages.json")
    (task / "history_item.json").write_text(
        json.dumps({"task": "Set up CI", "workspace": "/home/dev/node-app"})
    )
    index = read_fresh(reader, task / "ui_messages.json")
    assert role_counts(index) == {"user": 2, "assistant": 2}
    session = index.sessions["1700000000003"]
    assert (session.title, session.project, session.resume_command) == (
        "Set up CI",
        "/home/dev/node-app",
        None,
    )
    roo = tmp_path / "Code" / "User" / "globalStorage" / "rooveterinaryinc.roo-cline"
    assert reader.source_for(roo / "tasks" / "1" / "ui_messages.json") is None


def test_roots_cover_editors_and_the_custom_storage_setting(tmp_path: Path) -> None:
    user = tmp_path / ".config" / "Code" / "User"
    user.mkdir(parents=True)
    (user / "settings.json").write_text(
        '{\n  // comment\n  "zoo-code.customStoragePath": "' + str(tmp_path / "zoo") + '",\n}'
    )
    roots = reader.roots(HostEnv(home=tmp_path))
    assert user / "globalStorage" / EXT in roots
    assert tmp_path / ".config" / "Positron" / "User" / "globalStorage" / EXT in roots
    assert tmp_path / "zoo" in roots
    custom = tmp_path / "zoo" / "tasks" / "42" / "ui_messages.json"
    assert reader.source_for(custom) == custom
    mac = reader.roots(HostEnv(home=tmp_path, platform="darwin"))
    assert (
        tmp_path / "Library" / "Application Support" / "Code" / "User" / "globalStorage" / EXT
        in mac
    )
