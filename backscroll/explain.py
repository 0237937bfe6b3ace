"""``backscroll explain PATH``: whose file it is, what is indexed of it, or why not.

Ownership is decided by the indexer's own :meth:`Indexer.owner`, so the answer
is the one the daemon acts on; when no host owns the file, each host whose root
holds it is asked why (disabled, not a transcript name, excluded by a pattern).
"""

from __future__ import annotations

import dataclasses
import fnmatch
import os
import typing
from pathlib import Path
from typing import Any

from backscroll.config import Config
from backscroll.paths import is_under
from backscroll.wire import RESULT_SCHEMA


def explain(cfg: Config, raw: str) -> dict[str, Any]:
    from backscroll.indexing.indexer import Indexer, build_hosts
    from backscroll.store.writer import IndexWriter

    path = Path(os.path.abspath(os.path.expanduser(raw)))
    out: dict[str, Any] = {"schema": RESULT_SCHEMA, "path": str(path), "exists": path.exists()}
    if path.is_file():
        out["size"] = path.stat().st_size
    specs = build_hosts(cfg)
    # owner() never touches the writer: no database is opened to decide ownership.
    indexer = Indexer(typing.cast(IndexWriter, None), specs, cfg)
    item = indexer.owner(path)
    if item is None and path.resolve() != path:
        item = indexer.owner(path.resolve())
    if item is None:
        out["owner"] = None
        out["indexed"] = False
        out["reasons"] = _why_not(cfg, path)
        return out
    reader = item.spec.reader
    out["owner"] = reader.host
    out["reader"] = {"name": reader.name, "kind": reader.kind, "version": reader.version}
    if item.path != path:
        out["source"] = str(item.path)
    out["row"] = _row(cfg, item.path)
    out["indexed"] = out["row"] is not None
    skipped = _subagent_skipped(cfg, reader.host, item.path)
    if skipped:
        out["notes"] = [skipped]
    else:
        notes = _notes(out["row"], item.path, reader.kind, reader.version)
        excluded = _excluded_notes(cfg, item)
        out["notes"] = excluded + [n for n in notes if not (excluded and n == "up to date")]
    return out


def _excluded_notes(cfg: Config, item: Any) -> list[str]:
    """The exclusions (``forget --and-exclude``) that keep this file's sessions out
    of the index, each with the command that undoes it. The file is read to learn
    its sessions and projects, only when the index holds an exclusion for its host."""
    from backscroll.store import open_readonly
    from backscroll.store.exclusions import listing

    db = cfg.db_path()
    if not db.exists():
        return []
    conn = open_readonly(db)
    try:
        rules = [r for r in listing(conn) if r.host in ("", item.spec.host)]
    finally:
        conn.close()
    if not rules:
        return []
    host = item.spec.host
    if any(r.kind == "host" and r.value == host for r in rules):
        return [
            f"every session of {host} is excluded (forget --and-exclude); "
            f"`backscroll exclusions remove --host {host}` indexes them again"
        ]
    try:
        result = item.spec.reader.read(item.path, None, item.spec.options)
    except Exception:
        return []  # (why it cannot be read is the row's error)
    projects = {s.session_id: (s.project or "").rstrip("/") for s in result.sessions}
    for turn in result.turns:
        projects.setdefault(turn.session_id, "")
    notes: list[str] = []
    for sid, project in sorted(projects.items()):
        if any(r.kind == "session" and r.value == sid for r in rules):
            notes.append(
                f"session {sid} is excluded (forget --and-exclude); "
                f"`backscroll exclusions remove --session {sid}` indexes it again"
            )
        elif project and any(r.kind == "project" and r.value == project for r in rules):
            notes.append(
                f"session {sid} is in the excluded project {project}; "
                f"`backscroll exclusions remove --project {project}` indexes it again"
            )
    return notes


#: Hosts that write each sub-agent's transcript to a file of its own.
SUBAGENT_FILES = ("claude-code",)


def _subagent_skipped(cfg: Config, host: str, path: Path) -> str | None:
    """Why a sub-agent's own transcript holds no indexed turns, when that is why."""
    if host not in SUBAGENT_FILES or cfg.host(host).include_subagents:
        return None
    if path.parent.name != "subagents" and not path.name.startswith("agent-"):
        return None
    return (
        f"a sub-agent's transcript: its turns are not indexed while hosts.{host}."
        f"include_subagents is false; set it to true in the config to index them under "
        "the parent session"
    )


def _row(cfg: Config, path: Path) -> dict[str, Any] | None:
    from backscroll.store import open_readonly
    from backscroll.store.queries import file_report, run_sync

    db = cfg.db_path()
    if not db.exists():
        return None
    conn = open_readonly(db)
    try:
        result: dict[str, Any] | None = run_sync(conn, file_report(str(path)))
        return result
    finally:
        conn.close()


def _notes(row: dict[str, Any] | None, path: Path, kind: str, version: int) -> list[str]:
    if row is None and not path.exists():
        return ["no such file, and nothing was ever indexed from it: check the path"]
    if row is None:
        return ["not indexed yet: the daemon indexes it on its next change or rescan, "
                "`backscroll index` does it now"]  # fmt: skip
    notes: list[str] = []
    if row.get("skipped"):
        notes.append(f"read, and nothing of it indexed: {row['skipped']}")
    if row["missing"]:
        notes.append("the file was deleted; its turns are kept (index.on_delete: keep)")
    if row["error"]:
        notes.append(f"last read failed or was refused: {row['error']}")
    if row["reader_version"] != version:
        notes.append(
            f"indexed by reader version {row['reader_version']}, this one is {version}: "
            "it is re-read whole on the next pass"
        )
    try:
        size = path.stat().st_size
    except OSError:
        size = None
    if kind == "append" and size is not None and size > row["position"]:
        notes.append(f"{size - row['position']} bytes after the saved position are not indexed yet")
    if not notes:
        notes.append("up to date")
    return notes


def _why_not(cfg: Config, path: Path) -> list[str]:
    from backscroll.indexing.indexer import build_hosts

    enabled = {s.host for s in build_hosts(cfg)}
    every = {
        name: dataclasses.replace(cfg.host(name), enabled=True)
        for name in {*cfg.hosts, *_all_hosts()}
    }
    reasons: list[str] = []
    for spec in build_hosts(dataclasses.replace(cfg, hosts=every)):
        reader = spec.reader
        if reader.project_files and path.name in reader.project_files:
            if reader.host not in enabled:
                reasons.append(f"{reader.host} is disabled in config (hosts.{reader.host}.enabled)")
            continue
        roots = [r for r in spec.roots if is_under(path, r)]
        if not roots:
            continue
        where = f"under {roots[0]}, a root of {reader.host}"
        if reader.host not in enabled:
            reasons.append(f"{where}, but {reader.host} is disabled in config "
                           f"(hosts.{reader.host}.enabled: false)")  # fmt: skip
            continue
        source = reader.source_for(path)
        if source is None:
            reasons.append(f"{where}, but not a file name {reader.host} writes transcripts to")
            continue
        pattern = next((p for p in spec.exclude if fnmatch.fnmatch(str(source), p)), None)
        if pattern is not None:
            reasons.append(f"{where}, but excluded by the pattern {pattern!r} "
                           f"(hosts.{reader.host}.exclude or exclude.paths)")  # fmt: skip
    if not reasons:
        reasons.append(
            "not under any host's root: `backscroll doctor` lists them; add a directory with "
            "hosts.<host>.extra_roots in the config"
        )
    return reasons


def _all_hosts() -> list[str]:
    from backscroll.readers import READERS

    return [r.host for r in READERS]


def render(result: dict[str, Any]) -> str:
    lines = [result["path"]]
    if not result["exists"]:
        lines.append("  does not exist")
    if result["owner"] is None:
        lines.append("  not indexed:")
        lines.extend(f"    - {r}" for r in result["reasons"])
        return "\n".join(lines)
    reader = result["reader"]
    lines.append(f"  host:     {result['owner']} ({reader['name']}, {reader['kind']} reader "
                 f"v{reader['version']})")  # fmt: skip
    if result.get("source"):
        lines.append(f"  source:   {result['source']} (this file belongs to it)")
    if "size" in result:
        lines.append(f"  size:     {result['size']} bytes")
    row = result.get("row")
    if row:
        lines.append(f"  indexed:  {row['indexed_at']}, position {row['position']}, "
                     f"reader v{row['reader_version']}")  # fmt: skip
        lines.append(f"  holds:    {row['turns']} turns in {row['sessions']} sessions"
                     + (f", {row['problems']} malformed records skipped" if row["problems"]
                        else ""))  # fmt: skip
        for s in row["session_ids"]:
            lines.append(f"            {s['session']}  {s['title'] or ''}".rstrip())
        if row["error"]:
            lines.append(f"  error:    {row['error']}")
    lines.extend(f"  note:     {n}" for n in result["notes"])
    return "\n".join(lines)
