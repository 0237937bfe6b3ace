"""A root behind a directory this user may not enter (another Windows user's
profile seen from WSL, a colleague's home on a share) is skipped with a
warning by the scan and the watcher, and nothing else stops.

Really unreadable: the checks run as an unprivileged user (``nobody`` when the
tests run as root, since root enters any directory)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

CHECK = """
import json, logging, os
from pathlib import Path
import backscroll.daemon.watcher, backscroll.indexing.indexer, backscroll.direct
from backscroll.config import Config
from backscroll.daemon.watcher import Watcher
from backscroll.indexing.indexer import Indexer, build_hosts
from backscroll.readers.base import HostEnv, loads
from backscroll.store import open_writer

loads(b"{{}}")  # (orjson, imported at the first line parsed: before any privilege drop)

records = []
class Keep(logging.Handler):
    def emit(self, record):
        records.append(getattr(record, "event", ""))
logging.getLogger("backscroll").addHandler(Keep())
logging.getLogger("backscroll").setLevel(logging.INFO)
{drop}
users = Path({users!r})
closed = users / "defaultuser0" / "AppData" / "Roaming" / "Cursor" / "User" / "globalStorage"
env = HostEnv(Path({home!r}), {{}}, "linux", wsl_users=users)
homes = [h.name for h in env.windows_homes()]
watcher = Watcher(lambda path, kind: None)
watcher.start()
watcher.set_roots([("cursor", closed, True), ("claude-code", Path({open_root!r}), True)])
modes = {{m["host"]: m["mode"] for m in watcher.modes()}}
watcher.stop()
config = Config(data_dir={data!r})
writer = open_writer(Path({data!r}) / "index.db")
specs = [s for s in build_hosts(config, env) if s.reader.host in ("cursor", "claude-code")]
specs = [type(s)(s.reader, (*s.roots, closed), s.options) for s in specs]
summary = Indexer(writer, specs, config).reconcile()
turns = writer.conn.execute("SELECT count(*) FROM turns").fetchone()[0]
writer.close()
print(json.dumps({{"homes": homes, "modes": modes, "turns": turns, "events": records}}))
"""


def test_a_root_behind_a_closed_directory_is_skipped_with_a_warning_not_a_crash() -> None:
    base = Path(tempfile.mkdtemp(prefix="bs-closed-"))
    try:
        os.chmod(base, 0o755)
        users, home, data = base / "Users", base / "home", base / "data"
        (users / "alice").mkdir(parents=True)
        closed_profile = users / "defaultuser0"
        (closed_profile / "AppData").mkdir(parents=True)
        project = home / ".claude" / "projects" / "-p"
        project.mkdir(parents=True)
        data.mkdir()
        fixture = Path(__file__).parent / "fixtures" / "claude-code" / "spotter-tool_heavy.jsonl"
        shutil.copyfile(fixture, project / "3f2a0000-0000-4000-8000-000000000001.jsonl")
        drop = ""
        if os.geteuid() == 0:
            import pwd

            nobody = pwd.getpwnam("nobody")
            for d in (users, users / "alice", home, data, *project.parents, project):
                if base in d.parents or d == base:
                    os.chown(d, nobody.pw_uid, nobody.pw_gid)
            for f in project.iterdir():
                os.chown(f, nobody.pw_uid, nobody.pw_gid)
            drop = f"os.setgroups([]); os.setgid({nobody.pw_gid}); os.setuid({nobody.pw_uid})"
        os.chmod(closed_profile, 0o700 if os.geteuid() == 0 else 0o000)
        code = CHECK.format(
            drop=drop, users=str(users), home=str(home), data=str(data),
            open_root=str(home / ".claude" / "projects"),
        )  # fmt: skip
        env = {k: v for k, v in os.environ.items() if not k.startswith(("BACKSCROLL", "XDG"))}
        env.update(HOME=str(home), BACKSCROLL_HOME=str(data), XDG_RUNTIME_DIR=str(base / "run"))
        done = subprocess.run(
            [sys.executable, "-c", code], env=env, capture_output=True, text=True, cwd=base,
            check=False,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        out = json.loads(done.stdout.strip().splitlines()[-1])
        assert out["homes"] == ["alice"]  # the closed profile is not offered as a home
        assert out["modes"] == {"cursor": "error", "claude-code": "inotify"}
        assert "watch_error" in out["events"] and "root_unreachable" in out["events"]
        assert out["turns"] > 0  # the open root was still indexed
    finally:
        os.chmod(base / "Users" / "defaultuser0", 0o755)
        shutil.rmtree(base, ignore_errors=True)
