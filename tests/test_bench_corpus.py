"""The bench corpus (bench/corpus.py) is what backscroll reads: every host it
writes is found at its default location, every prose turn it counts is indexed,
with no problem reported; the bench's floor loader counts the same turns; and
the two-host corpus keeps the bytes older RESULTS figures were measured on."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import random
import sys
from pathlib import Path
from types import ModuleType

import pytest

from backscroll import config as config_mod
from backscroll import direct

BENCH = Path(__file__).resolve().parent.parent / "bench"


def _load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"bench_{name}", BENCH / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


bench_index = _load("bench_index")
corpus = bench_index.corpus
bench_daemon = _load("bench_daemon")

#: Seed of a 2 MB corpus that holds all four hosts (same seed, same bytes).
ALL_HOSTS_SEED = 112
#: sha256 over (relative path, bytes) of every transcript the two-host generator
#: wrote with ``--size-mb 2 --seed 26`` before Gemini CLI and Copilot CLI were added
#: (a seed where a session draw lands between 0.667 and 0.7: shares of 0.5 : 0.25
#: for claude-code : codex would change it).
TWO_HOST_DIGEST = "e30a47fbc4dd8a9efc85dd680c96a73c7e290809e09208efa0eeb65cb1a10f1a"


def _digest(root: Path) -> str:
    h = hashlib.sha256()
    files = sorted(p for p in root.rglob("*") if p.is_file() and p.name != corpus.STAMP)
    for path in files:
        h.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes())
    return h.hexdigest()


def test_every_host_of_the_corpus_is_indexed_with_the_turns_it_wrote(
    isolated_home: Path, tmp_path: Path
) -> None:
    stats = corpus.generate(isolated_home, 2, ALL_HOSTS_SEED)
    assert sorted(stats.by_host) == sorted(corpus.HOSTS)
    summary, totals = direct.index(config_mod.load())
    assert summary.problems == 0 and summary.errors == 0
    assert summary.turns_added == stats.prose_turns
    for host, wrote in stats.by_host.items():
        found = totals["hosts"][host]
        assert (host, found["sessions"], found["turns"]) == (host, wrote["files"], wrote["turns"])
    floor_turns = bench_index.floor_load(isolated_home, tmp_path / "floor.db")
    assert floor_turns == stats.prose_turns


def test_the_daemon_bench_appends_a_prompt_each_host_reads_as_a_new_turn(
    isolated_home: Path,
) -> None:
    """bench_daemon's freshness test picks a transcript of any host: the prompt it
    appends must be one that host's reader finds (a Claude Code line appended to a
    Gemini CLI or Copilot CLI file was never found, and counted as a miss)."""
    corpus.generate(isolated_home, 2, ALL_HOSTS_SEED)
    cfg = config_mod.load()
    direct.index(cfg)
    rng = random.Random(7)
    firsts: dict[str, Path] = {}
    for path in corpus.transcripts(isolated_home):
        firsts.setdefault(path.relative_to(isolated_home).parts[0], path)
    assert sorted(firsts) == [".claude", ".codex", ".copilot", ".gemini"]
    words = {}
    for n, (host_dir, path) in enumerate(sorted(firsts.items())):
        words[host_dir] = bench_daemon.unique_word(rng)
        bench_daemon.append_prompt(path, words[host_dir], corpus.BASE_TS + 10_000_000 + n, rng)
    summary, _ = direct.index(cfg)
    assert summary.problems == 0 and summary.turns_added == len(firsts)
    for host_dir, word in words.items():
        found = direct.query(cfg, "search", {"query": word})["hits"]
        assert [h["role"] for h in found] == ["user"], host_dir


def test_the_two_host_corpus_keeps_the_bytes_of_the_older_generator(tmp_path: Path) -> None:
    root = tmp_path / "corpus"
    root.mkdir()
    stats = corpus.generate(root, 2, 26, ("codex", "claude-code"))
    assert stats.hosts == ["claude-code", "codex"]
    assert sorted(stats.by_host) == ["claude-code", "codex"]
    assert _digest(root) == TWO_HOST_DIGEST


def test_a_cached_corpus_with_other_hosts_is_regenerated(tmp_path: Path) -> None:
    root = tmp_path / "corpus"
    root.mkdir()
    corpus.generate(root, 1, ALL_HOSTS_SEED, ("codex",))
    assert not (root / ".claude").exists()
    again = corpus.generate(root, 1, ALL_HOSTS_SEED, ("claude-code",))
    assert json.loads((root / corpus.STAMP).read_text())["hosts"] == ["claude-code"]
    assert again.by_host.keys() == {"claude-code"}
    assert not (root / ".codex").exists()
    (root / "notes.txt").write_text("not the generator's")
    with pytest.raises(SystemExit, match=r"notes\.txt"):
        corpus.generate(root, 1, ALL_HOSTS_SEED, ("codex",))


def test_an_unknown_host_is_refused_with_the_known_ones() -> None:
    with pytest.raises(ValueError, match=r"unknown host cursor.*claude-code,codex,gemini-cli"):
        corpus.parse_hosts("codex,cursor")
