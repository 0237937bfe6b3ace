"""Human-readable output of query results (bold on a terminal, [ ] in plain text)."""

from __future__ import annotations

TYPE_CHECKING = False  # typing is not imported at run time: this is the CLI's hot path
if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any


BOLD, RESET = "\x1b[1m", "\x1b[0m"
TAINT = "⚠ this turn read untrusted content from outside the machine — weigh it accordingly"


#: Control characters a terminal would act on (ANSI/OSC escapes that set the
#: title or the clipboard, clear the screen, draw fake links; bidi overrides that
#: reorder a line), shown as their Unicode "control pictures" or U+FFFD instead:
#: one character for one, so the offsets of highlighted matches still hold.
_TERMINAL_SAFE = {
    **{c: 0x2400 + c for c in range(0x20) if c not in (0x09, 0x0A)},
    0x7F: 0x2421,
    **{c: 0xFFFD for c in range(0x80, 0xA0)},
    **{c: 0xFFFD for c in (*range(0x202A, 0x202F), *range(0x2066, 0x206A))},
}


def terminal_safe(value: Any) -> Any:
    """``value`` (a result: dicts, lists, strings) with every string made safe to
    print on a terminal (transcripts hold text from anywhere: a fetched page, a
    cloned repo)."""
    if isinstance(value, str):
        return value.translate(_TERMINAL_SAFE)
    if isinstance(value, dict):
        return {k: terminal_safe(v) for k, v in value.items()}
    if isinstance(value, list):
        return [terminal_safe(v) for v in value]
    return value


def mark(text: str, spans: list[list[int]], tty: bool) -> str:
    out: list[str] = []
    pos = 0
    for start, end in spans:
        if start < pos:
            continue
        out.append(text[pos:start])
        word = text[start:end]
        out.append(f"{BOLD}{word}{RESET}" if tty else f"[{word}]")
        pos = end
    out.append(text[pos:])
    return "".join(out)


def _date(ts: str | None) -> str:
    return (ts or "????-??-??")[:16].replace("T", " ")


def hits(result: dict[str, Any], tty: bool, color: bool | None = None) -> str:
    """``tty``: a person reads (notes shown); ``color``: bold (default: ``tty``)."""
    color = tty if color is None else color
    lines: list[str] = []
    if result.get("daemon") is False and tty:
        lines.append(
            f"(daemon not used: {result['daemon_skipped']}; searched the index directly)"
            if result.get("daemon_skipped")
            else "(no daemon running: searched the index directly)"
        )
    lines.extend(str(note) for note in result.get("notes") or [])
    if result.get("message") and (not result.get("hits") or result.get("fallback")):
        lines.append(result["message"])
    for hit in result.get("hits", []):
        title = hit.get("title") or "(untitled)"
        head = f"{_date(hit.get('timestamp'))}  {hit['host']}  {hit.get('project') or '-'}"
        if "machine" in hit:  # a team hit: whose, and from which machine
            head += f"  ({hit.get('owner')} on {hit['machine']})"
        lines.append("")
        lines.append(f"{BOLD}{head}{RESET}" if color else head)
        lines.append(f"  {title} — {hit['role']}{' (sub-agent)' if hit.get('subagent') else ''}")
        if hit.get("tainted"):
            lines.append(f"  {TAINT}")
        for ctx in hit.get("context", []):
            if ctx["position"] == "before":
                lines.append(f"    · {ctx['role']}: {_one_line(ctx['text'])}")
        body = mark(hit["excerpt"], hit.get("matches", []), color)
        lines.extend("  │ " + ln for ln in body.splitlines() or [""])
        for ctx in hit.get("context", []):
            if ctx["position"] == "after":
                lines.append(f"    · {ctx['role']}: {_one_line(ctx['text'])}")
        lines.append(f"  {_opening(hit)}")
        if hit.get("resume_command"):
            lines.append(f"  resume: {hit['resume_command']}")
    if result.get("hits") and result.get("dropped"):
        lines.append("")
        fix = "raise --max-total-chars" if result.get("dropped_for_size") else "raise --limit"
        lines.append(f"({result['dropped']} lower-ranked match(es) not shown; {fix})")
    return "\n".join(lines).lstrip("\n")


def _opening(hit: dict[str, Any]) -> str:
    """Where the hit sits, for every host: its session id, its turn number and the
    command that shows it in its conversation."""
    sid = hit.get("session_id") or "?"
    n = hit.get("n")
    if n is None:
        return f"session {sid}"
    return f"session {sid} turn {n}: backscroll show {sid} --host {hit.get('host')} --around {n}"


def _one_line(text: str, limit: int = 160) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def host_width(hosts: Iterable[str]) -> int:
    """A column wide enough for every host named in it (13 at least: most are)."""
    return max([13, *(len(h) for h in hosts)])


def sessions(result: dict[str, Any]) -> str:
    lines = []
    found = result.get("sessions", [])
    width = host_width(s["host"] for s in found)
    for s in found:
        lines.append(
            f"{_date(s.get('last_activity') or s.get('started'))}  {s['host']:<{width}} "
            f"{s['turns']:>5} turns  {s['session_id']}  {s.get('title') or '(untitled)'}"
        )
        if s.get("project"):
            lines.append(f"      {s['project']}")
    if not lines and result.get("message"):
        lines.append(result["message"])
    return "\n".join(lines)


def session(result: dict[str, Any], tty: bool) -> str:
    s = result.get("session")
    if not s:
        return str(result.get("message") or "no such session")
    lines = [
        f"{s['host']}  {s['session_id']}  {s.get('title') or '(untitled)'}",
        f"project: {s.get('project') or '-'}   started: {_date(s.get('started'))}",
    ]
    if s.get("resume_command"):
        lines.append(f"resume: {s['resume_command']}")
    w = result.get("window", {})
    if result.get("turns"):
        lines.append(f"turns {w.get('first')}-{w.get('last')} of {w.get('total')}")
    if result.get("message"):
        lines.append(str(result["message"]))
    for t in result.get("turns", []):
        lines.append("")
        role = t["role"] + (" (sub-agent)" if t.get("subagent") else "")
        head = f"#{t['n']} {_date(t.get('timestamp'))} {role}"
        lines.append(f"{BOLD}{head}{RESET}" if tty else head)
        if t.get("tainted"):
            lines.append(f"  {TAINT}")
        lines.extend("  " + ln for ln in t["text"].splitlines() or [""])
    return "\n".join(lines)


def scan_line(scan: dict[str, Any]) -> str:
    """``120/259 files, 80.1/200.1 MB, ETA 3 s`` from status's ``daemon.scan``."""
    text = f"{scan.get('files_done', 0)}/{scan.get('files_total', 0)} files"
    if scan.get("bytes_total"):
        text += f", {scan['bytes_done'] / 1e6:.1f}/{scan['bytes_total'] / 1e6:.1f} MB"
    if scan.get("eta_s") is not None:
        text += f", ETA {scan['eta_s']:.0f} s"
    return text


def status(result: dict[str, Any]) -> str:
    lines = []
    daemon = result.get("daemon")
    if isinstance(daemon, dict):
        lines.append(
            f"daemon: running (pid {daemon.get('pid')}, version {daemon.get('version')}, "
            f"queue {daemon.get('queue_depth', 0)})"
        )
        scan = daemon.get("scan")
        if isinstance(scan, dict):
            lines.append(f"indexing: {scan_line(scan)}")
            if daemon.get("bulk_load"):
                lines.append("searches are unranked (word match) until this first index finishes")
        elif daemon.get("indexing"):
            lines.append(f"indexing: {daemon['indexing']}")
        if daemon.get("writer_alive") is False:
            lines.append(
                "the writer thread has stopped: restart the daemon (see `backscroll logs`)"
            )
        if daemon.get("last_error"):
            lines.append(f"last error: {daemon['last_error']}")
        for change in daemon.get("restart_needed") or ():
            lines.append(f"restart needed: {change}")
    else:
        lines.append(
            f"daemon: not used ({result['daemon_skipped']}); figures read from the index"
            if result.get("daemon_skipped")
            else "daemon: not running (figures read from the index directly)"
        )
    lines.append(f"last indexed: {result.get('last_indexed') or 'never'}")
    hosts = result.get("hosts", {})
    roots = result.get("roots", [])
    width = host_width([*hosts, *(r["host"] for r in roots if r["mode"] != "waiting")])
    lines.append(f"{'host':<{width + 1}}{'files':>7}{'sessions':>10}{'turns':>9}  notes")
    for host, e in sorted(hosts.items()):
        notes = []
        if e.get("unreadable_files"):
            notes.append(f"{e['unreadable_files']} unreadable (`backscroll explain FILE`)")
        if e.get("missing_files"):
            notes.append(f"{e['missing_files']} deleted by the host, turns kept")
        row = f"{host:<{width + 1}}{e['files']:>7}{e['sessions']:>10}{e['turns']:>9}"
        lines.append(f"{row}  {'; '.join(notes)}".rstrip())
    for root in roots:
        if root["mode"] != "waiting":
            lines.append(f"watch {root['mode']:<8} {root['host']:<{width}} {root['path']}")
    waiting = sorted({r["host"] for r in roots if r["mode"] == "waiting"})
    if waiting:
        lines.append(
            f"{sum(r['mode'] == 'waiting' for r in roots)} roots do not exist yet and are "
            f"waited for ({', '.join(waiting)})"
        )
    team = result.get("team")
    if isinstance(team, dict):
        lines.append(_team_status(team))
    return "\n".join(lines)


def _team_status(team: dict[str, Any]) -> str:
    if not team.get("running"):
        return f"team: not publishing ({team.get('last_error') or 'stopped'})"
    line = (
        f"team: {team.get('url')} as {team.get('owner') or '?'} on {team.get('machine_id')}; "
        f"{team.get('pending', 0)} pending, {team.get('lag_s', 0)} s behind, "
        f"last publish {team.get('last_publish') or 'never'}"
    )
    if team.get("last_error"):
        line += f"; last error: {team['last_error']} (retry in {team.get('retry_in_s')} s)"
    return line
