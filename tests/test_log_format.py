"""Logs read by a person on a terminal are lines of text; logs collected by a
service manager stay JSON; ``index``'s warnings never draw over its progress bar.
Terminals are real pseudo-terminals (``pty.openpty``)."""

from __future__ import annotations

import contextlib
import io
import json
import logging
import os
import pty
import select
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from backscroll.daemon.logging import setup_logging
from backscroll.progressbar import ProgressBar
from tests.daemon.harness import _short_dir, daemon_env, populate


@pytest.fixture
def terminal() -> Iterator[tuple[int, int]]:
    master, slave = pty.openpty()
    yield master, slave
    for fd in (master, slave):
        with contextlib.suppress(OSError):
            os.close(fd)


def _read_until(master: int, needle: bytes, proc: subprocess.Popen[bytes], timeout: float) -> bytes:
    """Everything the terminal shows until ``needle`` appears (or the process ends)."""
    out = b""
    deadline = time.monotonic() + timeout
    while needle not in out and time.monotonic() < deadline:
        ready, _, _ = select.select([master], [], [], 0.2)
        if ready:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # the other end closed
                break
            out += chunk
        elif proc.poll() is not None:
            break
    return out


def _screen(raw: str) -> list[str]:
    """What a terminal shows for ``raw``: ``\\r`` returns to column 0 and the
    following characters overwrite; ``\\n`` starts a new line."""
    lines: list[list[str]] = [[]]
    col = 0
    for ch in raw:
        if ch == "\r":
            col = 0
        elif ch == "\n":
            lines.append([])
            col = 0
        else:
            line = lines[-1]
            if col < len(line):
                line[col] = ch
            else:
                line.append(ch)
            col += 1
    return ["".join(line).rstrip() for line in lines]


def _log_one() -> None:
    log = logging.getLogger("backscroll.test")
    log.warning("cannot read transcript", extra={"event": "read_error", "path": "/x.jsonl"})


def test_logs_on_a_terminal_are_readable_lines(terminal: tuple[int, int]) -> None:
    master, slave = terminal
    with open(slave, "w", closefd=False) as tty:
        setup_logging("info", stream=tty)
        _log_one()
        tty.flush()
    text = os.read(master, 65536).decode()
    assert "warning cannot read transcript  path=/x.jsonl" in text
    assert "{" not in text


def test_logs_to_a_pipe_or_file_stay_json(tmp_path: Path) -> None:
    with open(tmp_path / "log", "w") as out:
        setup_logging("info", stream=out)
        _log_one()
    record = json.loads((tmp_path / "log").read_text())
    assert (record["event"], record["path"], record["level"]) == (
        "read_error",
        "/x.jsonl",
        "warning",
    )


@pytest.mark.parametrize("forced", ["json", "text"])
def test_the_environment_forces_either_format(
    forced: str, terminal: tuple[int, int], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BACKSCROLL_LOG_FORMAT", forced)
    master, slave = terminal
    target = tmp_path / "log"
    with open(slave, "w", closefd=False) as tty, open(target, "w") as file:
        out = tty if forced == "json" else file  # the opposite of what it would pick
        setup_logging("info", stream=out)
        _log_one()
        out.flush()
    text = os.read(master, 65536).decode() if forced == "json" else target.read_text()
    assert text.lstrip().startswith("{") == (forced == "json")


def test_a_warning_during_the_progress_bar_gets_its_own_whole_line() -> None:
    out = io.StringIO()
    logger = logging.getLogger("backscroll.bartest")
    logger.propagate = False
    handler = logging.StreamHandler(out)
    logger.addHandler(handler)
    bar = ProgressBar(out, delay=0.0, interval=0.0)
    bar.attach(logger)
    try:
        bar(3, 10, 30_000_000, 100_000_000)
        logger.warning("skipped a malformed record in /a/very/long/path/to/a/transcript.jsonl")
        bar(4, 10, 40_000_000, 100_000_000)
    finally:
        bar.done()
        logger.removeHandler(handler)
    screen = _screen(out.getvalue())
    assert "skipped a malformed record in /a/very/long/path/to/a/transcript.jsonl" in screen
    assert screen[-1] == ""  # done() erased the bar


def test_index_on_a_terminal_prints_warnings_as_text_lines_not_over_the_bar(
    isolated_home: Path, tmp_path: Path, terminal: tuple[int, int]
) -> None:
    files = populate(isolated_home, copies=20)
    with open(files[0], "a", encoding="utf-8") as fh:
        fh.write("{not json\n")
    master, slave = terminal
    proc = subprocess.Popen(
        [sys.executable, "-m", "backscroll", "index"],
        env=daemon_env(tmp_path),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=slave,
    )
    raw = _read_until(master, b"\x00never", proc, timeout=120)
    assert proc.wait(timeout=60) == 0
    screen = _screen(raw.decode())
    warning = next(line for line in screen if "skipped a malformed record" in line)
    assert warning.split()[1] == "warning" and f"path={files[0]}" in warning
    assert "line=" in warning


def test_the_foreground_daemon_on_a_terminal_logs_readable_progress(
    tmp_path: Path, terminal: tuple[int, int]
) -> None:
    populate(tmp_path / "home", copies=30)  # 100+ files: the start of the pass is logged
    sock_dir, _ = _short_dir(tmp_path)
    master, slave = terminal
    proc = subprocess.Popen(
        [sys.executable, "-m", "backscroll", "daemon"],
        env=daemon_env(tmp_path, {"BACKSCROLL_SOCKET": str(sock_dir / "b.sock")}),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=slave,
    )
    try:
        raw = _read_until(master, b"files, ", proc, timeout=60)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)
    text = raw.decode()
    assert "info    indexing: 0/" in text, text
    assert not any(line.lstrip().startswith("{") for line in text.splitlines()), text


def test_the_warnings_of_the_libraries_beside_backscroll_are_json_lines_too() -> None:
    # uvicorn (a malformed request to the viewer), APScheduler (a missed run after
    # a suspend) and asyncio log through their own loggers: the same stream and
    # format, or the journal and `backscroll logs` get lines they cannot read.
    out = io.StringIO()
    top = logging.getLogger()
    before = (list(top.handlers), top.level)
    try:
        setup_logging("info", fmt="json", stream=out)
        logging.getLogger("uvicorn.error").warning("Invalid HTTP request received.")
        logging.getLogger("apscheduler.executors.default").info("an info line stays out")
        logging.getLogger("backscroll.daemon").info("ours at info")
    finally:
        for handler in top.handlers[:]:
            if handler not in before[0]:
                top.removeHandler(handler)
        top.setLevel(before[1])
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    assert [(r["logger"], r["msg"]) for r in lines] == [
        ("uvicorn.error", "Invalid HTTP request received."),
        ("backscroll.daemon", "ours at info"),
    ]


def test_a_librarys_python_warning_is_a_json_line_too() -> None:
    # (watchdog warns "Callback with id ... will be Overwritten" through the
    # warnings module when a watch is placed again on a directory.)
    code = (
        "import warnings\n"
        "from backscroll.daemon.logging import setup_logging\n"
        "setup_logging('info', fmt='json')\n"
        "warnings.warn('Callback with id 7 will be Overwritten', RuntimeWarning)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    lines = [json.loads(line) for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, done.stderr
    assert lines[0]["logger"] == "py.warnings" and "Overwritten" in lines[0]["msg"]


def test_a_log_line_that_is_not_json_is_printed_terminal_safe() -> None:
    from backscroll.logs import format_line

    line = "plain \x1b]0;PWNED\x07 line\n"
    assert format_line(line) == "plain ␛]0;PWNED␇ line"
    assert format_line(line, raw=True) == line.rstrip("\n")  # --json: as written


def test_a_library_record_without_an_event_gets_a_stable_one_line_name() -> None:
    from backscroll.daemon.logging import JsonFormatter

    record = logging.LogRecord(
        "asyncio", logging.ERROR, __file__, 1,
        "Unhandled exception in client_connected_cb\ntransport: <UnixTransport closed=True "
        "at 0x7f3a>", None, None,
    )  # fmt: skip
    line = json.loads(JsonFormatter().format(record))
    assert line["event"] == "unhandled_exception_in_client_connected_cb"
    assert "0x7f3a" in line["msg"]  # (the detail stays in the message)
    templated = logging.LogRecord("x", logging.WARNING, __file__, 1, "%s went away", ("p",), None)
    assert json.loads(JsonFormatter().format(templated))["event"] == "went_away"
