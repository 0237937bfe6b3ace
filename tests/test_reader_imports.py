"""A reader process imports what it reads, not the whole program: one host's
module does not import every other host's, and a task it unpickles imports
neither the indexer nor the store (both used to, ~25 ms and ~40 ms in each
reader process before its first file). ``READERS`` still lists every host,
built once, whichever thread asks first."""

from __future__ import annotations

import json
import pickle
import subprocess
import sys
from pathlib import Path

import pytest

from backscroll.config import Config
from backscroll.indexing.indexer import build_hosts
from backscroll.model import Cursor
from backscroll.readers.base import HostEnv

ROOT = Path(__file__).resolve().parent.parent


def _fresh(code: str, stdin: bytes = b"") -> dict[str, object]:
    """What ``code`` prints (one JSON line), run by a new interpreter."""
    out = subprocess.run(
        [sys.executable, "-c", code],
        input=stdin,
        capture_output=True,
        check=True,
        cwd=ROOT,
        timeout=60,
    )
    result: dict[str, object] = json.loads(out.stdout)
    return result


def test_importing_one_hosts_reader_leaves_the_other_hosts_modules_unimported() -> None:
    seen = _fresh(
        "import json, sys\n"
        "import backscroll.readers.claude_code\n"
        "hosts = sorted(m for m in sys.modules if m.startswith('backscroll.readers.')\n"
        "               and m not in ('backscroll.readers.base', 'backscroll.readers.lean'))\n"
        "from backscroll.readers import READERS\n"
        "print(json.dumps({'before': hosts, 'readers': len(READERS)}))\n"
    )
    # (Claude Code's own module imports the desktop app's, for its sessions' titles.)
    assert seen["before"] == ["backscroll.readers.claude_code", "backscroll.readers.claude_desktop"]
    from backscroll.readers import READERS

    assert seen["readers"] == len(READERS) > 30


def test_a_task_unpickled_by_a_reader_process_imports_neither_indexer_nor_store(
    isolated_home: Path,
) -> None:
    transcript = isolated_home / ".claude" / "projects" / "-p" / "s.jsonl"
    transcript.parent.mkdir(parents=True)
    transcript.write_text(
        '{"type":"user","sessionId":"s","uuid":"u1","timestamp":"2026-01-01T00:00:00Z",'
        '"message":{"role":"user","content":"where did the lockfile go"}}\n'
    )
    specs = {s.host: s for s in build_hosts(Config(), HostEnv.current())}
    tasks = [(specs["claude-code"], transcript, None), (specs["codex"], transcript, Cursor(0, {}))]
    seen = _fresh(
        "import json, pickle, sys\n"
        "from backscroll.indexing import parallel\n"
        "tasks = pickle.loads(sys.stdin.buffer.read())\n"
        "outcomes = parallel.read_files(tasks[:1])\n"
        "print(json.dumps({\n"
        "    'modules': sorted(m for m in sys.modules if m.startswith('backscroll.')),\n"
        "    'turns': [t.text for o in outcomes for t in o.get().turns],\n"
        "}))\n",
        pickle.dumps(tasks, pickle.HIGHEST_PROTOCOL),
    )
    modules = seen["modules"]
    assert isinstance(modules, list)
    assert "backscroll.indexing.indexer" not in modules
    assert not [m for m in modules if m.startswith("backscroll.store")]
    hosts = {m for m in modules if m.startswith("backscroll.readers.")} - {
        "backscroll.readers.base",
        "backscroll.readers.lean",
    }
    assert hosts == {
        "backscroll.readers.claude_code",
        "backscroll.readers.claude_desktop",
        "backscroll.readers.codex",
    }
    assert seen["turns"] == ["where did the lockfile go"]


def test_readers_asked_for_by_many_threads_at_once_are_built_once() -> None:
    seen = _fresh(
        "import json, threading\n"
        "import backscroll.readers as readers\n"
        "got = []\n"
        "start = threading.Barrier(8)\n"
        "def ask():\n"
        "    start.wait()\n"
        "    got.append(readers.READERS)\n"
        "threads = [threading.Thread(target=ask) for _ in range(8)]\n"
        "for t in threads: t.start()\n"
        "for t in threads: t.join()\n"
        "print(json.dumps({'tuples': len({id(g) for g in got}), 'asked': len(got)}))\n"
    )
    assert seen == {"tuples": 1, "asked": 8}


def test_the_list_asked_for_while_it_is_built_is_the_one_kept() -> None:
    seen = _fresh(
        "import json\n"
        "import backscroll.readers as readers\n"
        "real = readers._readers\n"
        "inner = []\n"
        "def asking():\n"
        "    built = real()\n"
        "    if not inner:  # (a reader module asking, once, as it loads)\n"
        "        inner.append(None)\n"
        "        inner[0] = readers.READERS\n"
        "    return built\n"
        "readers._readers = asking\n"
        "outer = readers.READERS\n"
        "print(json.dumps({'same': outer is inner[0] is readers.READERS}))\n"
    )
    assert seen == {"same": True}


def test_an_error_building_the_list_is_not_taken_for_a_missing_name() -> None:
    seen = _fresh(
        "import json\n"
        "import backscroll.readers as readers\n"
        "def broken():\n"
        "    raise AttributeError('a reader module lost an attribute')\n"
        "readers._readers = broken\n"
        "try:\n"
        "    from backscroll.readers import READERS\n"
        "except Exception as exc:\n"
        "    print(json.dumps({'error': type(exc).__name__, 'message': str(exc)}))\n"
    )
    assert seen["error"] == "RuntimeError"
    assert "a reader module lost an attribute" in str(seen["message"])


def test_the_reader_list_is_named_by_dir_before_its_first_use() -> None:
    seen = _fresh(
        "import json\n"
        "import backscroll.readers as readers\n"
        "print(json.dumps({'listed': 'READERS' in dir(readers),\n"
        "                  'built': 'READERS' in vars(readers)}))\n"
    )
    assert seen == {"listed": True, "built": False}


def test_an_unknown_name_of_the_readers_package_is_an_attribute_error() -> None:
    import backscroll.readers as readers

    with pytest.raises(AttributeError, match="NO_SUCH_THING"):
        getattr(readers, "NO_SUCH_THING")  # noqa: B009


def test_every_hosts_reader_imported_leaves_the_host_database_queries_until_a_read() -> None:
    # The command imports every host's reader to find its files; most hosts
    # have none, and their SQL modules cost ~8 ms of its start.
    seen = _fresh(
        "import json, sys\n"
        "from pathlib import Path\n"
        "from backscroll.readers import READERS\n"
        "from backscroll.model import ReaderOptions\n"
        "def queries():\n"
        "    return sorted(m for m in sys.modules if m.startswith('backscroll.readers.hostdb.'))\n"
        "before = queries()\n"
        "zed = next(r for r in READERS if r.host == 'zed')\n"
        "result = zed.read(Path('tests/fixtures/zed/threads.db'), None, ReaderOptions())\n"
        "print(json.dumps({'before': before, 'after': queries(), 'turns': len(result.turns)}))\n"
    )
    # (VS Code's key name is a constant of its query module, read as the reader loads.)
    assert seen["before"] == ["backscroll.readers.hostdb.vscode_chat"]
    after = seen["after"]
    assert isinstance(after, list) and "backscroll.readers.hostdb.zed" in after
    assert isinstance(seen["turns"], int) and seen["turns"] > 0


#: What ``backscroll index`` imports and does to list the hosts' files, before
#: its first chunk.
_INDEX_START = (
    "import json, sys\n"
    "import backscroll.cli, backscroll.direct\n"
    "from backscroll.config import Config\n"
    "from backscroll.indexing.indexer import build_hosts\n"
    "from backscroll.indexing.prefork import maybe_start\n"
    "build_hosts(Config())\n"
)


def test_the_index_command_imports_no_request_types() -> None:
    """``backscroll index`` writes and prints totals: the request parameter
    classes of the query protocol (five dataclasses, ~4 ms to create) stay
    unimported on its path."""
    seen = _fresh(
        _INDEX_START + "print(json.dumps({'protocol': 'backscroll.protocol' in sys.modules}))\n"
    )
    assert seen == {"protocol": False}


def test_the_index_command_leaves_json_parsing_to_its_reader_processes() -> None:
    """It lists every host's files and parses none of them: orjson (and the
    uuid and platform modules it imports, ~2 ms) and msgspec (readers/lean.py)
    are imported at the first line a reader parses, and that line is parsed
    with it."""
    seen = _fresh(
        _INDEX_START + "before = 'orjson' in sys.modules or 'msgspec' in sys.modules\n"
        "from backscroll.readers import base\n"
        "value = base.loads(b'{\"a\": [1, 2.5]}')\n"
        "print(json.dumps({'before': before, 'value': value,\n"
        "                  'parser': getattr(base._fast_loads, '__module__', None)}))\n"
    )
    assert seen == {"before": False, "value": {"a": [1, 2.5]}, "parser": "orjson"}


def test_the_index_command_lists_the_hosts_files_without_loading_openssl() -> None:
    """hashlib loads OpenSSL (~3 ms); keys and fingerprints use CPython's own
    hash functions (backscroll.digests), which give the same digests."""
    seen = _fresh(_INDEX_START + "print(json.dumps({'hashlib': 'hashlib' in sys.modules}))\n")
    assert seen == {"hashlib": False}


def test_the_digests_are_hashlibs() -> None:
    import hashlib

    from backscroll import digests

    data = "naïve key \U0001f600".encode()
    assert digests.blake2b(data, digest_size=12).hexdigest() == (
        hashlib.blake2b(data, digest_size=12).hexdigest()
    )
    for name in ("md5", "sha1", "sha256"):
        ours = getattr(digests, name)(data, usedforsecurity=False).hexdigest()
        assert ours == hashlib.new(name, data).hexdigest(), name


def test_a_first_index_creates_its_database_without_the_publisher_or_forget(
    tmp_path: Path,
) -> None:
    """A new index gets the team outbox's triggers and its stored fields
    marked redacted before the reader processes get their first files; neither
    needs the team publisher's module nor ``forget`` (~4 ms of imports)."""
    seen = _fresh(
        "import json, sys\n"
        "from pathlib import Path\n"
        "from backscroll import direct\n"
        "from backscroll.config import Config\n"
        "from backscroll.store import open_writer\n"
        f"writer = open_writer(Path({str(tmp_path / 'index.db')!r}), check=True)\n"
        "direct.make_indexer(Config(), writer)._redact_stored_once()\n"
        'triggers = writer.conn.execute("SELECT count(*) FROM sqlite_master"\n'
        "    \" WHERE name LIKE 'team_outbox_%'\").fetchone()[0]\n"
        "print(json.dumps({'outbox': 'backscroll.store.outbox' in sys.modules,\n"
        "                  'forget': 'backscroll.store.forget' in sys.modules,\n"
        "                  'triggers': triggers}))\n"
    )
    assert seen == {"outbox": False, "forget": False, "triggers": 5}


def test_preloading_imports_both_parsers_ahead_of_the_first_line() -> None:
    """The first reader process of a cold index imports them while it waits
    (readers/lean.py), and the reader processes it forks start with them."""
    seen = _fresh(
        "import json, sys\n"
        "from backscroll.readers import lean\n"
        "names = ('orjson', 'msgspec')\n"
        "before = [n in sys.modules for n in names]\n"
        "lean.preload()\n"
        "print(json.dumps({'before': before, 'after': [n in sys.modules for n in names]}))\n"
    )
    assert seen == {"before": [False, False], "after": [True, True]}
