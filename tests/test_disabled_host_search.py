"""A host turned off in the config keeps what was indexed: a search without
--host shows its turns, so --host NAME finds them too; a host with nothing
indexed is still refused, naming the enabled ones."""

from __future__ import annotations

from pathlib import Path

from backscroll import config, direct
from tests.daemon.harness import populate


def test_host_filter_finds_what_a_host_turned_off_since_had_indexed(
    isolated_home: Path, tmp_path: Path
) -> None:
    populate(isolated_home, copies=1)
    direct.index(config.load())
    off = tmp_path / "off.yaml"
    off.write_text(
        "hosts:\n  codex:\n    enabled: false\n  qwen-code:\n    enabled: false\n",
        encoding="utf-8",
    )
    cfg = config.load(off)
    everywhere = direct.query(cfg, "search", {"query": "files", "limit": 100, "fallback": False})
    assert "codex" in {h["host"] for h in everywhere["hits"]}, "no codex turn to look for"
    found = direct.query(cfg, "search", {"query": "files", "host": "codex", "fallback": False})
    assert found["hits"] and {h["host"] for h in found["hits"]} == {"codex"}
    refused = direct.query(cfg, "search", {"query": "files", "host": "qwen-code"})
    assert refused["hits"] == [] and refused["reason"]["code"] == "host_not_enabled"
