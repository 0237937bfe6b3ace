"""``backscroll doctor``: what works, what does not, and the fix for each.

Every finding is ``ok``, ``warn`` (works, but worse than it could) or ``fail``
(needs fixing; the command exits non-zero). Nothing is changed.
"""

from __future__ import annotations

import os
import platform
import sqlite3
import stat
import sys
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

from backscroll import __version__
from backscroll.config import Config
from backscroll.errors import BackscrollError

Status = Literal["ok", "warn", "fail"]
#: Stop counting directories beyond this (the estimate only needs its order).
DIR_COUNT_CAP = 200_000


@dataclass(frozen=True)
class Finding:
    check: str
    status: Status
    detail: str
    fix: str | None = None
    #: Every root looked in (host findings; in --json only).
    roots: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if v is not None and v != ()}


def run(config_path: Path | None = None) -> list[Finding]:
    """Every check, in the order they are printed."""
    out: list[Finding] = [_python()]
    out += _sqlite()
    cfg, found = _config(config_path)
    out.append(found)
    if cfg is None:
        return out
    out += _hosts(cfg)
    out += _data(cfg)
    out += _daemon(cfg)
    out += _team(cfg)
    out += _inotify(cfg)
    out += _service()
    return out


def _python() -> Finding:
    version = platform.python_version()
    return Finding("python", "ok", f"Python {version} ({sys.executable})")


def _sqlite() -> list[Finding]:
    from backscroll.store.schema import fts5_available

    out = [Finding("sqlite", "ok", f"SQLite {sqlite3.sqlite_version}")]
    if os.environ.get("BACKSCROLL_NO_FTS") == "1":
        out.append(
            Finding(
                "fts5",
                "warn",
                "FTS5 turned off by BACKSCROLL_NO_FTS=1: searches match words with LIKE, "
                'unranked (results say "ranked": false)',
                "unset BACKSCROLL_NO_FTS, stop the daemon and run `backscroll index --rebuild` (it "
                "keeps exclusions and the turns of deleted transcripts)",
            )
        )
    elif not fts5_available():
        out.append(
            Finding(
                "fts5",
                "warn",
                "this Python's SQLite has no FTS5: searches match words with LIKE, unranked",
                "use a Python whose SQLite has FTS5 (python.org, Homebrew and most "
                "distribution builds do), then run `backscroll index --rebuild`",
            )
        )
    else:
        out.append(Finding("fts5", "ok", "FTS5 available: searches are ranked by bm25"))
    return out


def _config(path: Path | None) -> tuple[Config | None, Finding]:
    from backscroll import config as config_mod
    from backscroll import paths
    from backscroll.errors import ConfigError
    from backscroll.readers import READERS

    try:
        cfg = config_mod.load(path, known_hosts=tuple(r.host for r in READERS))
    except ConfigError as exc:
        fix = "fix each problem listed, then run `backscroll config check`"
        return None, Finding("config", "fail", "; ".join(exc.problems), fix)
    where = cfg.source or f"built-in defaults ({path or paths.config_path()} does not exist)"
    return cfg, Finding("config", "ok", f"config: {where}")


def _hosts(cfg: Config) -> list[Finding]:
    from backscroll.indexing.indexer import build_hosts
    from backscroll.readers import READERS

    roots: dict[str, list[Path]] = {}
    for spec in build_hosts(cfg):
        roots.setdefault(spec.host, []).extend(spec.roots)
    out: list[Finding] = []
    indexed = 0
    for host in dict.fromkeys(r.host for r in READERS):
        name = f"host {host}"
        project_files = [f for r in READERS if r.host == host for f in r.project_files]
        if host not in roots:
            out.append(
                Finding(name, "ok", f"not indexed: disabled in config (hosts.{host}.enabled)")
            )
            continue
        if project_files:
            files = ", ".join(project_files)
            out.append(Finding(name, "ok", f"found through project directories ({files})"))
            continue
        looked = list(dict.fromkeys(roots[host]))
        present = [r for r in looked if r.exists()]
        hc = cfg.host(host)
        configured = [Path(os.path.expanduser(r)) for r in (*hc.roots, *hc.extra_roots)]
        missing_configured = [r for r in configured if not r.exists()]
        if missing_configured:
            out.append(
                Finding(
                    name,
                    "warn",
                    "configured roots do not exist: " + ", ".join(map(_home, missing_configured)),
                    f"fix hosts.{host}.roots / extra_roots in {cfg.source or 'the config'}",
                )
            )
        if present:
            indexed += 1
            shown = ", ".join(map(_home, present))
            out.append(Finding(name, "ok", f"indexed: {shown}", roots=_strs(looked)))
        elif not missing_configured:
            first = _home(looked[0]) if looked else "(no default roots)"
            more = f" and {len(looked) - 1} more" if len(looked) > 1 else ""
            detail = f"not indexed: no root exists ({first}{more})"
            out.append(Finding(name, "ok", detail, roots=_strs(looked)))
    if indexed == 0:
        out.append(
            Finding(
                "hosts",
                "warn",
                "no host's transcripts were found on this machine",
                "if an agent keeps them elsewhere, add the directory to "
                "hosts.<host>.extra_roots in the config",
            )
        )
    return out


def _strs(paths: list[Path]) -> tuple[str, ...]:
    return tuple(str(p) for p in paths)


def _home(path: Path) -> str:
    home = str(Path(os.path.expanduser("~")))
    text = str(path)
    return "~" + text[len(home) :] if text == home or text.startswith(home + "/") else text


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def _private(check: str, path: Path, want: int, what: str) -> Finding:
    mode = _mode(path)
    if mode & 0o077:
        return Finding(
            check,
            "warn",
            f"{what} {path} is {mode:04o}: other users may read it",
            f"chmod {want:o} {path}",
        )
    return Finding(check, "ok", f"{what} {path} ({mode:04o})")


def _data(cfg: Config) -> list[Finding]:
    data, db = cfg.data_path(), cfg.db_path()
    elsewhere = "or point BACKSCROLL_HOME elsewhere"
    try:
        exists = data.exists()
    except OSError as exc:  # a directory above it denies access
        fix = f"give yourself access to {data}, {elsewhere}"
        return [Finding("data", "fail", f"cannot look at {data}: {exc.strerror}", fix)]
    if not exists:
        return [_data_to_be(data)]
    if not data.is_dir():
        return [Finding("data", "fail", f"{data} is not a directory", f"remove it, {elsewhere}")]
    if not os.access(data, os.W_OK | os.X_OK):
        return [Finding("data", "fail", f"cannot write {data}", _take_back(data))]
    out = [_private("data", data, 0o700, "data directory")]
    if not db.exists():
        out.append(Finding("index", "ok", f"{db} not created yet: run `backscroll index`"))
        return out
    if not db.is_file():  # (a directory in its place: no mode to advise on)
        what = "a directory" if db.is_dir() else "not a regular file"
        fix = "move it aside; the next `backscroll index` makes a new index there"
        out.append(Finding("index", "fail", f"{db} is {what}, not an index", fix))
        return out
    out.append(_private("index", db, 0o600, "index"))
    out.append(_index_fts(db))
    return out


def _data_to_be(data: Path) -> Finding:
    """A data directory not made yet: fine if the first index can make it."""
    parent = next((p for p in data.parents if p.exists()), None)
    if parent is None or not parent.is_dir():
        return Finding("data", "fail", f"{data} cannot be created: {parent} is not a directory",
                       "point BACKSCROLL_HOME (or data_dir) at a directory you own")  # fmt: skip
    if not os.access(parent, os.W_OK | os.X_OK):
        return Finding("data", "fail", f"{data} cannot be created: {parent} is not writable by you",
                       f"create {data} yourself ({_take_back(parent)}), or point BACKSCROLL_HOME "
                       "elsewhere")  # fmt: skip
    return Finding(
        "data", "ok", f"data directory {data} does not exist yet; the first index creates it"
    )


def _take_back(path: Path) -> str:
    from backscroll.paths import take_back

    return take_back(path, path) or f"`chmod u+rwx {path}`"


def _index_fts(db: Path) -> Finding:
    from backscroll.errors import BackscrollError
    from backscroll.store import fts, open_readonly, schema

    try:
        conn = open_readonly(db)
    except (BackscrollError, sqlite3.Error) as exc:
        return Finding("index", "fail", f"{db} cannot be read: {exc}", "see the message above")
    try:
        built_with = schema.has_fts(conn)
        behind = built_with and fts.deferred(conn)
    except sqlite3.Error:
        built_with = behind = False
    finally:
        conn.close()
    if behind:
        return Finding(
            "index fts",
            "warn",
            "a first index is loading (or was cut short): until it ends, searches are unranked",
            "wait for it to finish; if none runs, `backscroll index` completes it",
        )
    if built_with:
        return Finding("index fts", "ok", "the index has a full-text table (ranked search)")
    if schema.fts5_available():
        return Finding(
            "index fts",
            "warn",
            "the index was built without FTS5, so searches are unranked",
            "stop the daemon and run `backscroll index --rebuild`: it keeps exclusions and the "
            f"turns of deleted transcripts, and keeps the old index as {db.name}.old",
        )
    return Finding("index fts", "warn", "the index has no full-text table: searches are unranked")


def _daemon(cfg: Config) -> list[Finding]:
    from backscroll.client import RemoteError, UntrustedSocket, check_socket, try_connect

    sock = cfg.socket_path()
    out: list[Finding] = []
    if sock.parent.exists():
        out.append(_private("socket dir", sock.parent, 0o700, "socket directory"))
    try:
        check_socket(str(sock))
    except UntrustedSocket as exc:
        out.append(Finding("daemon", "fail", str(exc)))
        return out
    except BackscrollError:
        pass  # no socket: said below
    said: list[str] = []
    client = try_connect(sock, timeout=5, warn=said.append, db=cfg.db_path())
    if client is None and said:  # another index (HOME) or release, or a socket not ours
        fix = (
            "give each HOME its own XDG_RUNTIME_DIR, or set BACKSCROLL_SOCKET, then start one"
            if "serves another index" in said[0]
            else None
        )
        out.append(Finding("daemon", "fail", said[0], fix))
        return out
    if client is None:
        out.append(
            Finding(
                "daemon",
                "warn",
                f"no daemon answers at {sock}: queries read the index directly and "
                "nothing is indexed between them",
                "`backscroll service install` (or run `backscroll daemon`)",
            )
        )
        return out
    try:  # try_connect returns a connected client: `with` would connect again
        info = client.call("status", {}).get("daemon", {})
    except RemoteError as exc:
        out.append(Finding("daemon", "fail", f"the daemon at {sock} answered: {exc}"))
        return out
    finally:
        client.close()
    out.append(_private("socket", sock, 0o600, "socket"))
    version = info.get("version")
    detail = f"daemon pid {info.get('pid')} version {version} on {sock}"
    if version != __version__:
        fix = "restart it: `systemctl --user restart backscroll` (or stop and start it)"
        out.append(Finding("daemon", "warn", f"{detail}; this CLI is {__version__}", fix))
    else:
        out.append(Finding("daemon", "ok", detail))
    return out


def _team(cfg: Config) -> list[Finding]:
    """With ``team.url`` set: the driver, the connection, the schema's version."""
    if not cfg.team.url:
        return []
    from backscroll.errors import BackscrollError
    from backscroll.team.connect import check_schema, connect, machine_id, safe_url, sql_user

    where = safe_url(cfg.team.url)
    try:
        with connect(cfg.team) as conn:
            version = check_schema(conn)
            user = sql_user(conn)
    except BackscrollError as exc:
        return [Finding("team", "fail", str(exc), "fix what the message names; "
                        "`backscroll team init --check` checks again")]  # fmt: skip
    machine = machine_id(cfg.team, cfg.data_path())
    detail = f"{where}: schema version {version}, connected as {user}, machine id {machine}"
    return [Finding("team", "ok", detail)]


def _count_dirs(roots: Iterable[Path], cap: int = DIR_COUNT_CAP) -> int:
    n = 0
    for root in roots:
        if not root.is_dir():
            continue
        for _walk in os.walk(root, onerror=lambda _e: None):
            n += 1
            if n >= cap:
                return n
    return n


def _read_int(path: str) -> int | None:
    try:
        return int(Path(path).read_text().strip())
    except (OSError, ValueError):
        return None


def _inotify(cfg: Config) -> list[Finding]:
    if not sys.platform.startswith("linux"):
        return []
    limit = _read_int("/proc/sys/fs/inotify/max_user_watches")
    if limit is None:
        return []
    from backscroll.indexing.indexer import build_hosts

    roots = list(dict.fromkeys(r for s in build_hosts(cfg) for r in s.roots))
    from backscroll import mounts

    shared = _shared_roots(roots)
    needed = _count_dirs([r for r in roots if r not in shared])
    detail = f"inotify: about {needed} watches needed, limit {limit}"
    if shared:
        kinds = ", ".join(sorted(set(shared.values())))
        some = "1 existing root is" if len(shared) == 1 else f"{len(shared)} existing roots are"
        detail += (
            f"; {some} on a shared file system ({kinds}) and polled every "
            f"{mounts.POLL_SECONDS} s instead: "
            "changes made from outside this machine send no events"
        )
    if needed > limit * 0.8:
        return [
            Finding(
                "inotify",
                "warn",
                f"{detail} (shared with every other program): the daemon falls back to "
                "polling, which is slower to notice changes",
                "echo fs.inotify.max_user_watches=524288 | sudo tee "
                "/etc/sysctl.d/60-backscroll.conf && sudo sysctl --system",
            )
        ]
    return [Finding("inotify", "ok", detail)]


def _shared_roots(roots: list[Path]) -> dict[Path, str]:
    """Existing roots on a file system other machines write to (mounts.REMOTE):
    the daemon polls them."""
    from backscroll.mounts import remote_fs
    from backscroll.paths import is_dir_quietly

    kinds = {r: remote_fs(os.path.realpath(r)) for r in roots if is_dir_quietly(r)}
    return {root: kind for root, kind in kinds.items() if kind is not None}


def _userns_blocked() -> str | None:
    for path, bad in (
        ("/proc/sys/kernel/unprivileged_userns_clone", 0),
        ("/proc/sys/user/max_user_namespaces", 0),
        ("/proc/sys/kernel/apparmor_restrict_unprivileged_userns", 1),
    ):
        if _read_int(path) == bad:
            return f"{path} is {bad}"
    return None


def _service() -> list[Finding]:
    from backscroll import service

    plat = service.detect_platform()
    try:
        layout = service.current_layout(plat)
    except Exception:  # config problems are reported above
        layout = None
    st = service.status(plat, layout)
    out: list[Finding] = []
    if not st.installed:
        out.append(
            Finding(
                "service",
                "warn",
                f"no service installed ({st.path}): the daemon does not start at login",
                "backscroll service install",
            )
        )
        return out
    if not st.ours:
        out.append(Finding("service", "ok", f"{st.path} exists (not written by backscroll)"))
    elif not st.up_to_date:
        out.append(
            Finding(
                "service",
                "warn",
                f"{st.path} differs from what this installation would write "
                "(another executable path, data directory or version)",
                "backscroll service install",
            )
        )
    else:
        out.append(Finding("service", "ok", f"installed: {st.path}"))
    if st.manager:
        state = f"enabled: {st.enabled or '?'}, active: {st.active or '?'}"
        if st.active in ("active", "loaded", "activating", "reloading"):
            out.append(Finding("service state", "ok", state))
        else:
            fix = (
                "systemctl --user enable --now backscroll; journalctl --user -u backscroll "
                "says why it stopped"
                if plat == "systemd"
                else "backscroll service install; see ~/Library/Logs/backscroll/"
            )
            out.append(Finding("service state", "warn", state, fix))
    if plat == "systemd" and st.ours:
        blocked = _userns_blocked()
        if blocked:
            out.append(
                Finding(
                    "sandbox",
                    "warn",
                    f"user namespaces look unavailable ({blocked}); the unit's "
                    "file-system sandbox needs them and the service may fail with 226/NAMESPACE",
                    "systemctl --user edit backscroll, and add under [Service]: "
                    "PrivateUsers=no ProtectSystem=no PrivateTmp=no PrivateDevices=no "
                    "ProtectKernelTunables=no ProtectKernelModules=no ProtectKernelLogs=no "
                    "ProtectClock=no ProtectHostname=no (one per line)",
                )
            )
    return out


def exit_code(findings: list[Finding]) -> int:
    return 1 if any(f.status == "fail" for f in findings) else 0


def render(findings: list[Finding]) -> str:
    lines: list[str] = []
    width = max([22, *(len(f.check) for f in findings)])
    for f in findings:
        lines.append(f"{f.status:<4}  {f.check:<{width}} {f.detail}")
        if f.fix and f.status != "ok":
            lines.append(f"      {'':<{width}} fix: {f.fix}")
    fails = sum(f.status == "fail" for f in findings)
    warns = sum(f.status == "warn" for f in findings)
    lines.append("")
    lines.append(
        "everything looks fine"
        if not fails and not warns
        else f"{fails} to fix, {warns} warning{'s' if warns != 1 else ''}"
    )
    return "\n".join(lines)
