"""``backscroll logs``: the daemon's JSON log lines, printed for people.

Sources: a file given with ``--file``; else the journal of the user unit
(``journalctl --user -u backscroll -o cat``); else launchd's log file
(``~/Library/Logs/backscroll/backscroll.err.log``). Lines that are not JSON
(a traceback before logging was set up) are printed as they are, and count as
warnings for ``--level``; a journald ``<N>`` priority in front is read and left out.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from collections import deque
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO, Any

from backscroll.errors import BackscrollError

LEVELS = ("debug", "info", "warning", "error", "critical")
#: Fields shown in the line's head, or not at all.
_HEAD = ("ts", "level", "event", "msg", "logger", "traceback")
#: How often ``-f`` looks for new lines in a file.
FOLLOW_INTERVAL_S = 0.25


def launchd_log() -> Path:
    return Path.home() / "Library" / "Logs" / "backscroll" / "backscroll.err.log"


#: A syslog priority's level name (``<3>`` in front of a line written to the journal).
_PRIORITY_LEVEL = {
    "0": "critical", "1": "critical", "2": "critical", "3": "error",
    "4": "warning", "5": "info", "6": "info", "7": "debug",
}  # fmt: skip


def format_line(line: str, min_level: str | None = None, raw: bool = False) -> str | None:
    """The printable form of one log line, or None when it is filtered out.

    A ``<N>`` journald priority in front is read for the level and left out. A
    line that is not JSON (a traceback before logging was set up) has the
    priority's level, else counts as a warning: out of the ordinary, shown by
    ``--level warning``, not taken for the last error by ``--level error``."""
    line = line.rstrip("\n")
    from backscroll.render import terminal_safe  # (log fields quote paths and transcript text)

    prio = _PRIORITY_LEVEL.get(line[1:2]) if line[:1] == "<" and line[2:3] == ">" else None
    if prio is not None:
        line = line[3:]
    try:
        record = json.loads(line)
    except ValueError:
        record = None
    if not isinstance(record, dict):
        if min_level and _rank(prio or "warning") < _rank(min_level):
            return None
        return line if raw else str(terminal_safe(line))
    level = str(record.get("level", prio or "info")).lower()
    if min_level and _rank(level) < _rank(min_level):
        return None
    if raw:
        return line
    event = str(record.get("event", ""))
    msg = str(record.get("msg", ""))
    head = f"{record.get('ts', '-')} {level:<7} {event}"
    if msg and msg.replace(" ", "_") != event:
        head += f": {msg}"
    fields = " ".join(f"{k}={_value(v)}" for k, v in record.items() if k not in _HEAD)
    text = f"{head} {fields}".rstrip()
    if record.get("traceback"):
        text += "\n" + "\n".join("    " + t for t in str(record["traceback"]).splitlines())
    return str(terminal_safe(text))


def _rank(level: str) -> int:
    return LEVELS.index(level) if level in LEVELS else 1


def _value(v: Any) -> str:
    text = v if isinstance(v, str) else json.dumps(v, ensure_ascii=False)
    return json.dumps(text, ensure_ascii=False) if (not text or " " in text) else text


def _tail(lines: Iterable[str], n: int | None) -> Iterable[str]:
    return deque(lines, maxlen=n) if n is not None else lines


def _follow_file(fh: IO[str]) -> Iterator[str]:
    partial = ""
    while True:
        chunk = fh.readline()
        if not chunk:
            time.sleep(FOLLOW_INTERVAL_S)  # polling a file for -f: not a readiness wait
            continue
        partial += chunk
        if partial.endswith("\n"):
            yield partial
            partial = ""


def read_file(path: Path, follow: bool) -> tuple[Iterable[str], Iterator[str] | None]:
    """The file's lines so far, and (with ``follow``) the lines written after."""
    try:
        fh = open(path, encoding="utf-8", errors="replace")  # noqa: SIM115 - read to the end
    except OSError as exc:
        raise BackscrollError(f"cannot read the log file {path} ({exc.strerror or exc})") from None
    history = fh.readlines()
    if not follow:
        fh.close()
        return history, None
    return history, _follow_file(fh)


JOURNAL = ["journalctl", "--user", "-u", "backscroll", "-o", "cat", "--no-pager", "-q"]


def read_journal(follow: bool, lines: int | None) -> tuple[Iterable[str], Iterator[str] | None]:
    """The unit's journal so far (the last ``lines``, or all of it when lines are
    filtered first), and (with ``follow``) the lines written after."""
    argv = [*JOURNAL, "-n", str(lines)] if lines is not None else JOURNAL
    done = subprocess.run(argv, capture_output=True, text=True, errors="replace", check=False)
    history = done.stdout.splitlines(keepends=True)
    if not history:
        why = (
            "the journal holds no line of the backscroll user unit"
            + (f" ({done.stderr.strip()})" if done.stderr.strip() else "")
            + ": the daemon has not run as the systemd user service here (install it with "
            "`backscroll service install`), or it logs elsewhere (read that file with "
            "`backscroll logs --file FILE`)"
        )
        if follow:
            raise BackscrollError(why + "; nothing to follow")
        print(f"backscroll: {why}", file=sys.stderr)
    return history, (_follow_journal() if follow else None)


def _follow_journal() -> Iterator[str]:
    proc = subprocess.Popen(
        [*JOURNAL, "-f", "-n", "0"], stdout=subprocess.PIPE, text=True, errors="replace"
    )
    assert proc.stdout is not None
    try:
        yield from proc.stdout
    finally:
        proc.terminate()
        proc.wait()


def source(file: str | None) -> tuple[str, Path | None]:
    """("file", path) or ("journal", None); raises when there is nothing to read."""
    if file:
        return "file", Path(file).expanduser()
    if sys.platform == "darwin":
        return "file", launchd_log()
    if shutil.which("journalctl"):
        return "journal", None
    raise BackscrollError(
        "no journalctl here and no log file given: the daemon logs JSON lines to stderr; "
        "redirect them to a file and read it with `backscroll logs --file FILE`"
    )


def show(
    file: str | None,
    follow: bool = False,
    level: str | None = None,
    raw: bool = False,
    lines: int | None = None,
    out: IO[str] | None = None,
) -> int:
    """Print the log: lines below ``level`` are left out *before* the last ``lines``
    are counted, so ``--level error -n 5`` shows the last five errors."""
    out = out or sys.stdout
    _kind, path = source(file)
    if path is not None:
        history, after = read_file(path, follow)
    else:
        history, after = read_journal(follow, None if level else lines)
    shown = (format_line(line, level, raw) for line in history)
    for text in _tail((t for t in shown if t is not None), lines):
        out.write(text + "\n")
    for line in after or ():
        new = format_line(line, level, raw)
        if new is not None:
            out.write(new + "\n")
            out.flush()
    return 0
