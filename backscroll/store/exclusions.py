"""What ``forget`` may name, and the exclusions ``--and-exclude`` stored.

``forget`` only acts on what exists: a host, session (or unique id prefix) or
project that is not in the index is an error that names what is, so a typo
neither forgets nothing silently nor stores an exclusion that matches nothing.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass

from backscroll.errors import BackscrollError
from backscroll.store.queries import IN_PROJECT, iso, like_prefix

#: How many existing names an error lists.
SHOWN = 8


class NotFound(BackscrollError):
    """A name given to ``forget`` or ``exclusions remove`` matches nothing (exit 1)."""

    exit_code = 1


@dataclass(frozen=True)
class Exclusion:
    kind: str
    host: str
    value: str
    created_at: float | None

    def as_dict(self) -> dict[str, str | None]:
        return {"kind": self.kind, "host": self.host or None, "value": self.value,
                "created": iso(self.created_at)}  # fmt: skip


def _listed(names: list[str], total: int) -> str:
    more = f", ... ({total - len(names)} more)" if total > len(names) else ""
    return ", ".join(names) + more


def indexed_hosts(conn: sqlite3.Connection) -> list[str]:
    return [str(r[0]) for r in conn.execute("SELECT DISTINCT host FROM sessions ORDER BY host")]


def check_host(conn: sqlite3.Connection, host: str, known: tuple[str, ...]) -> None:
    """A host with something indexed (forgetting nothing stores no exclusion)."""
    indexed = indexed_hosts(conn)
    if host in indexed:
        return
    if host in known:
        raise NotFound(
            f"nothing from {host} is indexed; indexed hosts: {', '.join(indexed) or 'none'}; "
            f"to keep {host} out of the index, set hosts.{host}.enabled: false in the config"
        )
    raise NotFound(
        f"unknown host {host!r}; indexed hosts: {', '.join(indexed) or 'none'}; "
        f"hosts backscroll knows: {', '.join(known)}"
    )


def resolve_session(conn: sqlite3.Connection, prefix: str, host: str | None) -> str:
    """The one indexed session id that is ``prefix`` or starts with it."""
    where, args = "session_id LIKE ? ESCAPE '\\'", [like_prefix(prefix)]
    if host is not None:
        where += " AND host = ?"
        args.append(host)
    rows = conn.execute(
        f"SELECT DISTINCT session_id FROM sessions WHERE {where} ORDER BY session_id"
        f" LIMIT {SHOWN + 1}",
        args,
    ).fetchall()
    ids = [str(r[0]) for r in rows]
    if prefix in ids:
        return prefix
    if len(ids) == 1:
        return ids[0]
    if ids:
        raise NotFound(
            f"session {prefix!r} is ambiguous: it starts {_listed(ids[:SHOWN], len(ids))}; "
            "give more of the id"
        )
    recent = conn.execute(
        "SELECT host, session_id FROM sessions" + (" WHERE host = ?" if host else "")
        + f" ORDER BY coalesce(updated_at, started_at, 0) DESC LIMIT {SHOWN}",
        [host] if host else [],
    ).fetchall()  # fmt: skip
    total = int(conn.execute(
        "SELECT count(*) FROM sessions" + (" WHERE host = ?" if host else ""),
        [host] if host else []).fetchone()[0])  # fmt: skip
    names = [f"{sid} ({h})" for h, sid in recent]
    where_text = f" from {host}" if host else ""
    raise NotFound(
        f"no indexed session{where_text} has an id starting {prefix!r}; "
        + (f"the most recent are: {_listed(names, total)}" if names else "none is indexed")
        + " (`backscroll sessions` lists them)"
    )


def project_at(conn: sqlite3.Connection, path: str, host: str | None) -> str | None:
    """The indexed project ``path`` is in: itself, or from a subdirectory the
    deepest indexed project above it (as the queries match ``--here``)."""
    row = conn.execute(
        f"SELECT project FROM sessions WHERE {IN_PROJECT}"
        + (" AND host = ?" if host else "")
        + " ORDER BY length(project) DESC LIMIT 1",
        [path, path] + ([host] if host else []),
    ).fetchone()
    return str(row[0]) if row and row[0] else None


def check_project(conn: sqlite3.Connection, project: str, host: str | None) -> None:
    args: list[str] = [project] + ([host] if host else [])
    found = conn.execute(
        "SELECT 1 FROM sessions WHERE project = ?" + (" AND host = ?" if host else "") + " LIMIT 1",
        args,
    ).fetchone()
    if found:
        return
    rows = conn.execute(
        "SELECT project, max(coalesce(updated_at, started_at, 0)) AS last FROM sessions"
        " WHERE project IS NOT NULL AND project != ''"
        + (" AND host = ?" if host else "")
        + " GROUP BY project ORDER BY last DESC",
        [host] if host else [],
    ).fetchall()  # fmt: skip
    projects = [str(r[0]) for r in rows]
    near = [p for p in projects if p.startswith(project) or project.startswith(p)]
    shown = (near + [p for p in projects if p not in near])[:SHOWN]
    raise NotFound(
        f"no indexed session has the project {project!r}"
        + (f" on {host}" if host else "")
        + (f"; indexed projects: {_listed(shown, len(projects))}" if shown else "")
        + ". To keep a project that is not indexed out, add it to exclude.projects in the config"
    )


def listing(conn: sqlite3.Connection) -> list[Exclusion]:
    try:
        rows = conn.execute(
            "SELECT kind, host, value, created_at FROM exclusions ORDER BY kind, host, value"
        ).fetchall()
    except sqlite3.OperationalError as exc:
        if "no such table" in str(exc):
            return []  # an index from before exclusions existed
        raise
    return [Exclusion(str(k), str(h), str(v), c) for k, h, v, c in rows]


def remove(conn: sqlite3.Connection, kind: str, value: str, host: str | None) -> list[Exclusion]:
    """Delete the exclusions of ``kind`` matching ``value`` (a session id may be a
    unique prefix); the ones removed. Raises NotFound naming those that exist."""
    existing = [e for e in listing(conn) if e.kind == kind and (host is None or e.host == host)]
    if kind == "session":
        matched = [e for e in existing if e.value == value] or [
            e for e in existing if e.value.startswith(value)
        ]
    else:
        matched = [e for e in existing if e.value == value]
    if len({e.value for e in matched}) > 1:
        raise NotFound(
            f"{value!r} is ambiguous: it starts the excluded sessions "
            f"{_listed([e.value for e in matched][:SHOWN], len(matched))}; give more of the id"
        )
    if not matched:
        names = [e.value + (f" ({e.host})" if e.host else "") for e in existing]
        raise NotFound(
            f"no {kind} exclusion {value!r}; "
            + (f"the {kind} exclusions are: {_listed(names[:SHOWN], len(names))}" if names
               else f"there are no {kind} exclusions")
            + " (`backscroll exclusions` lists them all)"
        )  # fmt: skip
    conn.executemany(
        "DELETE FROM exclusions WHERE kind = ? AND host = ? AND value = ?",
        [(e.kind, e.host, e.value) for e in matched],
    )
    return matched
