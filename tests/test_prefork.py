"""A first ``backscroll index`` forks its reader processes right after reading its
configuration (indexing/prefork.py): the index it writes is the in-process one,
a reader process that dies leaves the rest to the writer, and none of them
outlives the command, whether it ends, finds little to read, or is killed."""

from __future__ import annotations

import fcntl
import json
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest

from backscroll.config import Config
from backscroll.indexing import prefork
from backscroll.indexing.parallel import READER_NICENESS
from tests.daemon.harness import dump_turns, populate
from tests.test_parallel_index import _in_process
from tests.test_reliability import index_into

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="reader processes are forked early on Linux"
)

#: Runs `backscroll index --json` in a process whose pass thresholds are low
#: enough for the test corpus; prints what happened as one JSON line.
_INDEX = """
import json, os, sys
from backscroll import cli
from backscroll.indexing import indexer, parallel, prefork

indexer.BULK_MIN_FILES = int(os.environ.get("T_BULK", "1"))
parallel.CHUNK_FILES = 4  # (several chunks to each reader process)
indexer.PARALLEL_MIN_BYTES = int(os.environ.get("T_MIN_BYTES", "0"))
if os.environ.get("T_BLOCK"):  # (chunks left to hand out: the readers wait, alive)
    parallel.WINDOW = 1
main = os.getpid()
used, pools = [], []

real_run = prefork.Prefork.run
def run(self, tasks):
    used.append(self.pid)
    if os.environ.get("T_KILL_BEFORE_RUN"):  # between the go-ahead and the first chunk
        import signal, time
        def until(ready):  # (no failure here: the pass would read it all itself)
            deadline = time.monotonic() + 10
            while not ready() and time.monotonic() < deadline:
                time.sleep(0.01)
        kids = f"/proc/{self.pid}/task/{self.pid}/children"
        until(lambda: open(kids).read().strip())  # the other reader is forked
        os.kill(self.pid, signal.SIGKILL)  # (the others die with it)
        until(lambda: self.error is not None)  # this process's thread saw them end
    if os.environ.get("T_BAD_FEED"):  # something unforeseen in the thread
        def feed(self):
            raise TypeError("cannot pickle this")
        prefork.Prefork._feed = feed
    for n, outcome in enumerate(real_run(self, tasks)):
        if n == 0 and os.environ.get("T_BLOCK"):
            print(json.dumps({"first": self.pid}), flush=True)
            sys.stdin.read()  # until the test kills this process
        yield outcome
prefork.Prefork.run = run

real_pool = parallel.ParallelReads.__init__
def pool(self, *args, **kwargs):
    pools.append(args[0])
    real_pool(self, *args, **kwargs)
parallel.ParallelReads.__init__ = pool

if os.environ.get("T_NICE"):  # each reader process's niceness, and this one's
    real_serve = prefork._serve
    def serve(task_fd, result_fd):
        with open(os.path.join(os.environ["T_NICE"], str(os.getpid())), "w") as fh:
            fh.write(str(os.nice(0)))
        real_serve(task_fd, result_fd)
    prefork._serve = serve
    with open(os.path.join(os.environ["T_NICE"], "command"), "w") as fh:
        fh.write(str(os.nice(0)))

if os.environ.get("T_MODULES"):  # what the first reader process is told to import
    real_import = prefork._import_hosts
    def import_hosts(modules):
        with open(os.path.join(os.environ["T_MODULES"], "named"), "w") as fh:
            json.dump(modules, fh)
        real_import(modules)
    prefork._import_hosts = import_hosts

if os.environ.get("T_DIE"):
    real_read = parallel.read_files
    calls = []
    def read_files(tasks):
        calls.append(1)
        if os.getppid() not in (main, 1) and len(calls) == 2:
            os._exit(7)  # the second reader process killed in the middle of a pass
        return real_read(tasks)
    parallel.read_files = read_files

ended = []  # (each reader process: had it ended before the command closed them?)
real_close = prefork.Prefork.close
def close(self):
    if self.ran and not self.closed and self.error is None:
        import time
        deadline = time.monotonic() + 10  # (they end once their last chunk is read)
        while time.monotonic() < deadline:
            with open(f"/proc/{self.pid}/stat") as fh:
                if fh.read().rsplit(")", 1)[1].split()[0] == "Z":
                    ended.append(self.pid)
                    break
            time.sleep(0.01)
    real_close(self)
prefork.Prefork.close = close

code = cli.main(os.environ.get("T_ARGS", "index --json").split())
print(json.dumps({"code": code, "used": used, "pools": pools, "ended": ended}), flush=True)
"""


def _run_index(mark: str, extra: dict[str, str] | None = None) -> tuple[dict[str, object], str]:
    env = {**os.environ, "T_MARK": mark, "BACKSCROLL_INDEX_WORKERS": "2", **(extra or {})}
    done = subprocess.run(
        [sys.executable, "-c", _INDEX], env=env, capture_output=True, text=True, timeout=120,
        check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    return {**json.loads(lines[0]), **json.loads(lines[-1])}, done.stderr


def _survivors(mark: str) -> list[int]:
    """Processes still running with ``T_MARK=mark`` in their environment."""
    found = []
    needle = f"T_MARK={mark}".encode()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            environ = (entry / "environ").read_bytes()
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if needle in environ.split(b"\0") and state not in ("Z", "X"):
            found.append(int(entry.name))
    return found


def _none_left(mark: str) -> None:
    deadline = time.monotonic() + 20
    try:
        while _survivors(mark):
            assert time.monotonic() < deadline, "reader processes outlived the index command"
            time.sleep(0.05)
    finally:
        for pid in _survivors(mark):  # (the test failed: leave no orphan behind)
            os.kill(pid, signal.SIGKILL)


@pytest.fixture
def expected(
    tmp_path: Path, isolated_home: Path, monkeypatch: pytest.MonkeyPatch
) -> list[tuple[object, ...]]:
    """The corpus indexed one file at a time in this process."""
    (tmp_path / "files").write_text(str(len(populate(isolated_home, copies=3))))
    with monkeypatch.context() as m:
        _in_process(m)
        index_into(tmp_path / "serial")
    rows = dump_turns(tmp_path / "serial" / "index.db")
    assert len(rows) > 50
    return rows  # type: ignore[return-value]


def test_a_first_index_reads_in_processes_forked_at_its_start_and_equals_the_in_process_one(
    tmp_path: Path, expected: list[tuple[object, ...]]
) -> None:
    mark = uuid.uuid4().hex
    out, stderr = _run_index(mark)
    assert out["files_changed"] == int((tmp_path / "files").read_text())
    assert len(out["used"]) == 1  # type: ignore[arg-type]
    assert out["pools"] == []  # (no pool of its own besides)
    assert "reading in-process" not in stderr
    assert dump_turns(tmp_path / "data" / "index.db") == expected
    _none_left(mark)


def _hooked(tmp_path: Path, mark: str, hook: str) -> Path:
    """Runs the index with the harness's ``hook`` writing into a new directory,
    which it returns; the pass used the reader processes forked at its start."""
    seen = tmp_path / hook.lower()
    seen.mkdir()
    out, stderr = _run_index(mark, {hook: str(seen)})
    assert out["used"], stderr
    return seen


def test_reader_processes_run_at_a_lower_priority_than_the_writer(
    tmp_path: Path, expected: list[tuple[object, ...]]
) -> None:
    """Three processes on two cores: at equal priority the writer falls behind
    the readers and writes the last results alone after they are done."""
    mark = uuid.uuid4().hex
    seen = _hooked(tmp_path, mark, "T_NICE")
    command = int((seen / "command").read_text())
    readers = [int(p.read_text()) for p in seen.iterdir() if p.name != "command"]
    assert readers == [command + READER_NICENESS] * 2
    assert dump_turns(tmp_path / "data" / "index.db") == expected
    _none_left(mark)


def test_the_first_reader_process_imports_the_modules_of_the_hosts_found(
    tmp_path: Path, expected: list[tuple[object, ...]]
) -> None:
    """The command names the host modules its scan found files for (while it
    plans); the first reader process imports them before it forks the others,
    so none of them imports one with its first task."""
    mark = uuid.uuid4().hex
    seen = _hooked(tmp_path, mark, "T_MODULES")
    named = json.loads((seen / "named").read_text())
    assert named == ["backscroll.readers.claude_code", "backscroll.readers.codex"]
    assert dump_turns(tmp_path / "data" / "index.db") == expected
    _none_left(mark)


def test_reader_processes_end_once_every_chunk_is_read_before_the_command_ends(
    tmp_path: Path, expected: list[tuple[object, ...]]
) -> None:
    """They end while the writer writes the last files, not when it is done:
    none is left for the command's close to wait for, and a reader process
    ending after its last chunk is no failure (nothing is read again here)."""
    for _ in range(3):  # (which one ends first varies)
        mark = uuid.uuid4().hex
        (tmp_path / "data").mkdir(exist_ok=True)
        for leftover in (tmp_path / "data").glob("index.db*"):
            leftover.unlink()
        out, stderr = _run_index(mark)
        assert out["ended"] == out["used"], stderr
        assert "reading in-process" not in stderr
        assert dump_turns(tmp_path / "data" / "index.db") == expected
        _none_left(mark)


def test_a_reader_process_that_dies_mid_pass_leaves_the_rest_to_the_writer(
    tmp_path: Path, expected: list[tuple[object, ...]]
) -> None:
    mark = uuid.uuid4().hex
    out, stderr = _run_index(mark, {"T_DIE": "1"})
    assert len(out["used"]) == 1  # type: ignore[arg-type]
    assert "reader processes failed; reading in-process" in stderr
    assert dump_turns(tmp_path / "data" / "index.db") == expected
    _none_left(mark)


def test_a_second_index_forks_no_reader_processes_early(
    tmp_path: Path, expected: list[tuple[object, ...]]
) -> None:
    mark = uuid.uuid4().hex
    _run_index(mark)
    out, _ = _run_index(mark)
    assert out["used"] == []
    _none_left(mark)


def test_a_rebuild_reads_in_processes_forked_at_its_start_and_equals_the_in_process_one(
    tmp_path: Path, expected: list[tuple[object, ...]]
) -> None:
    mark = uuid.uuid4().hex
    _run_index(mark)
    out, _ = _run_index(mark, {"T_ARGS": "index --rebuild --json"})
    assert out["rebuilt"] is True
    assert len(out["used"]) == 1  # type: ignore[arg-type]
    assert out["pools"] == []
    assert dump_turns(tmp_path / "data" / "index.db") == expected
    _none_left(mark)


def test_a_rebuild_refused_by_a_running_daemon_ends_its_reader_processes(
    tmp_path: Path, expected: list[tuple[object, ...]]
) -> None:
    from backscroll.rebuild import lock_path

    mark = uuid.uuid4().hex
    _run_index(mark)
    fd = os.open(lock_path(tmp_path / "data" / "index.db"), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # (as a daemon holds it)
        os.write(fd, json.dumps({"pid": os.getpid()}).encode())
        out, stderr = _run_index(mark, {"T_ARGS": "index --rebuild --json"})
    finally:
        os.close(fd)
    assert out["code"] == 2 and out["used"] == []
    assert "a backscroll daemon holds" in json.dumps(out) + stderr
    _none_left(mark)
    assert dump_turns(tmp_path / "data" / "index.db") == expected  # (the index is as it was)


def test_a_first_index_found_small_ends_its_reader_processes(isolated_home: Path) -> None:
    populate(isolated_home, copies=1, codex=False)
    mark = uuid.uuid4().hex
    started = time.monotonic()
    out, _ = _run_index(mark, {"T_BULK": "32", "T_MIN_BYTES": str(16 << 20)})
    assert out["used"] == [] and out["pools"] == []
    _none_left(mark)
    assert time.monotonic() - started < 60


def test_reader_processes_forked_early_die_with_a_killed_index_command(
    isolated_home: Path,
) -> None:
    populate(isolated_home, copies=3)
    mark = uuid.uuid4().hex
    env = {**os.environ, "T_MARK": mark, "T_BLOCK": "1", "BACKSCROLL_INDEX_WORKERS": "2"}
    with subprocess.Popen(
        [sys.executable, "-c", _INDEX], env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        text=True,
    ) as index:  # fmt: skip
        assert index.stdout is not None
        first = json.loads(index.stdout.readline())["first"]
        children = Path(f"/proc/{first}/task/{first}/children").read_text().split()
        survivors = set(_survivors(mark))
        assert {index.pid, first} <= survivors and len(survivors) == 3, (children, survivors)
        os.kill(index.pid, signal.SIGKILL)  # `kill -9` of `backscroll index`
        index.wait()
    _none_left(mark)


def test_no_early_fork_where_it_would_not_be_used(
    tmp_path: Path, isolated_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BACKSCROLL_INDEX_WORKERS", "1")
    assert prefork.maybe_start(None) is None  # one reader process: read in-process
    monkeypatch.setenv("BACKSCROLL_INDEX_WORKERS", "2")
    with monkeypatch.context() as m:
        m.setattr(sys, "platform", "darwin")
        assert prefork.maybe_start(None) is None  # not Linux
    (tmp_path / "data").mkdir()  # (BACKSCROLL_HOME)
    (tmp_path / "data" / "index.db").write_bytes(b"")
    assert prefork.maybe_start(None) is None  # an index exists: not a first index
    (tmp_path / "data" / "index.db").unlink()
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    try:
        assert prefork.maybe_start(None) is None  # a process with threads forks nothing
    finally:
        stop.set()
        other.join()


def test_reader_processes_forked_early_end_when_the_configured_index_exists(
    tmp_path: Path, isolated_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Forked before the configuration is read, on the default place's word:
    a configured ``data_dir`` that holds an index ends them."""
    monkeypatch.delenv("BACKSCROLL_HOME")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("BACKSCROLL_INDEX_WORKERS", "2")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "index.db").write_bytes(b"")
    early = prefork.maybe_start(None)
    assert early is not None
    first = early.pid
    assert not early.configure(Config(data_dir=str(elsewhere)))
    assert early.closed
    with pytest.raises(ChildProcessError):
        os.waitpid(first, os.WNOHANG)  # ended and reaped


def test_the_configuration_read_by_the_first_reader_process_is_the_one_applied(
    tmp_path: Path, expected: list[tuple[object, ...]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first reader process reads the configuration for the command: a user
    redaction pattern in it reaches every reader process."""
    assert any(row[4] == "Listing the files." for row in expected)
    config = tmp_path / "config.yaml"
    config.write_text("redaction:\n  patterns:\n    mine: 'Listing the f[a-z]+'\n")
    monkeypatch.setenv("BACKSCROLL_CONFIG", str(config))
    mark = uuid.uuid4().hex
    out, _ = _run_index(mark)
    assert len(out["used"]) == 1  # type: ignore[arg-type]
    texts = [row[4] for row in dump_turns(tmp_path / "data" / "index.db")]
    assert "[REDACTED:mine]." in texts
    assert not any("Listing the files" in str(t) for t in texts)
    _none_left(mark)


def test_a_broken_configuration_is_reported_as_without_early_readers(
    tmp_path: Path, isolated_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    populate(isolated_home, copies=1, codex=False)
    config = tmp_path / "config.yaml"
    config.write_text("index:\n  max_line_bytes: 0\n")
    monkeypatch.setenv("BACKSCROLL_CONFIG", str(config))
    mark = uuid.uuid4().hex
    runs = []
    for workers in ("2", "1"):  # forked early, and not at all
        env = {**os.environ, "T_MARK": mark, "BACKSCROLL_INDEX_WORKERS": workers}
        runs.append(
            subprocess.run(
                [sys.executable, "-m", "backscroll", "index", "--json"],
                env=env,
                capture_output=True,
                text=True,
                timeout=120,
                check=False,
            )
        )
    early, plain = runs
    assert early.returncode == plain.returncode != 0
    assert "max_line_bytes" in early.stdout + early.stderr
    assert (early.stdout, early.stderr) == (plain.stdout, plain.stderr)
    assert not (tmp_path / "data" / "index.db").exists()
    _none_left(mark)


def _long_prompts(home: Path) -> None:
    """Each Claude Code transcript gets a few long prompts (a real user entry of
    the file, its text made long): a chunk's results outgrow a pipe."""
    for path in sorted((home / ".claude" / "projects").rglob("*.jsonl")):
        lines = path.read_text().splitlines()
        entries = [json.loads(line) for line in lines if line.strip()]
        prompt = next(
            (e for e in entries if e.get("type") == "user" and isinstance(
                e.get("message", {}).get("content"), str)),
            None,
        )  # fmt: skip
        if prompt is None:
            continue
        extra = []
        for i in range(4):
            entry = dict(prompt, uuid=str(uuid.uuid4()), parentUuid=None)
            entry["message"] = dict(prompt["message"], content=f"long prompt {i} " + "word " * 2000)
            extra.append(json.dumps(entry))
        path.write_text("\n".join(lines + extra) + "\n")


def test_chunks_and_results_larger_than_a_pipe_do_not_stall_the_index(
    tmp_path: Path, isolated_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A chunk of files (each task names its host, with the host's settings) and
    a chunk's results can each outgrow a pipe: a reader process blocked writing
    a result while the command was blocked writing it a chunk hung the index."""
    populate(isolated_home, copies=3)
    _long_prompts(isolated_home)
    with monkeypatch.context() as m:
        _in_process(m)
        index_into(tmp_path / "serial")
    expected = dump_turns(tmp_path / "serial" / "index.db")
    assert sum("long prompt" in str(row[4]) for row in expected) > 20
    globs = [
        f"/nowhere/{i:04d}/a-long-directory-name-that-matches-nothing/*.jsonl" for i in range(1200)
    ]
    config = tmp_path / "config.yaml"
    config.write_text(json.dumps({"hosts": {"claude-code": {"exclude": globs}}}))
    assert config.stat().st_size > 80_000  # (more than a pipe holds, in every task)
    monkeypatch.setenv("BACKSCROLL_CONFIG", str(config))
    mark = uuid.uuid4().hex
    out, _ = _run_index(mark)
    assert len(out["used"]) == 1  # type: ignore[arg-type]
    assert dump_turns(tmp_path / "data" / "index.db") == expected
    _none_left(mark)


def test_out_of_file_descriptors_it_forks_nothing_and_leaks_none(
    isolated_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the descriptor limit reached, no reader process is forked early (the
    pass starts its pool as before) and the pipes already made are closed."""
    import errno

    monkeypatch.setenv("BACKSCROLL_INDEX_WORKERS", "4")
    real_pipe = os.pipe
    made: list[int] = []

    def pipe() -> tuple[int, int]:
        if len(made) >= 10:
            raise OSError(errno.EMFILE, "Too many open files")
        r, w = real_pipe()
        made.extend((r, w))
        return r, w

    before = sorted(os.listdir("/proc/self/fd"))
    with monkeypatch.context() as m:
        m.setattr(os, "pipe", pipe)
        assert prefork.maybe_start(None) is None
    assert len(made) == 10
    assert sorted(os.listdir("/proc/self/fd")) == before


@pytest.mark.parametrize(
    "trouble",
    ["T_KILL_BEFORE_RUN", "T_BAD_FEED"],
    ids=["reader killed before the pass", "error in the thread"],
)
def test_readers_lost_before_the_pass_or_a_thread_error_leave_it_to_the_writer(
    tmp_path: Path, expected: list[tuple[object, ...]], trouble: str
) -> None:
    """A reader process killed while the command plans (the OOM killer), or an
    unforeseen error in the thread that talks to them, hung the index; the
    writer reads the rest itself."""
    mark = uuid.uuid4().hex
    out, stderr = _run_index(mark, {trouble: "1"})
    assert len(out["used"]) == 1  # type: ignore[arg-type]
    assert "reader processes failed; reading in-process" in stderr
    assert dump_turns(tmp_path / "data" / "index.db") == expected
    _none_left(mark)


def test_an_unreadable_index_place_is_left_to_the_pass_to_report(
    tmp_path: Path, isolated_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where looking for the configured index fails (a directory this user may
    not enter), the early reader processes end and the pass reports the place
    as it would without them, rather than the command failing on the look."""
    monkeypatch.setenv("BACKSCROLL_INDEX_WORKERS", "2")
    early = prefork.maybe_start(None)
    assert early is not None
    monkeypatch.delenv("BACKSCROLL_HOME")  # (the configured data_dir counts)
    place = tmp_path / "locked" / "index.db"
    real_exists = Path.exists

    def exists(self: Path) -> bool:
        if self == place:
            raise PermissionError(13, "Permission denied", str(self))
        return real_exists(self)

    monkeypatch.setattr(Path, "exists", exists)
    try:
        assert not early.configure(Config(data_dir=str(place.parent)))
        assert early.closed
    finally:
        early.close()
