"""A throwaway PostgreSQL cluster for the team tests and bench: initdb into a
temp dir, one server on 127.0.0.1 and a free port, its Unix socket in the same
dir. As root, initdb refuses to run, so the cluster belongs to the ``postgres``
system user (or ``nobody``) and its processes run as that user.

Readiness is a real connection, polled until a deadline; never a sleep.
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

SUPERUSER = "postgres"
PASSWORD = "member-secret"


def bindir() -> Path | None:
    """The newest installed PostgreSQL's binaries (Debian keeps them off PATH)."""
    found = sorted(
        glob.glob("/usr/lib/postgresql/*/bin/initdb"),
        key=lambda p: int(Path(p).parts[-3]) if Path(p).parts[-3].isdigit() else 0,
    )
    if found:
        return Path(found[-1]).parent
    which = shutil.which("initdb")
    return Path(which).parent if which else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _run_as() -> dict[str, Any]:
    if os.geteuid() != 0:
        return {}
    for name in ("postgres", "nobody"):
        with contextlib.suppress(KeyError):
            pw = pwd.getpwnam(name)
            return {"user": pw.pw_uid, "group": pw.pw_gid, "extra_groups": []}
    raise RuntimeError("running as root and no postgres or nobody user to run PostgreSQL as")


class PgServer:
    def __init__(self, bin_dir: Path) -> None:
        self.bin = bin_dir
        self.root = Path(tempfile.mkdtemp(prefix="backscroll-pg-"))
        self.data = self.root / "data"
        self.port = _free_port()
        self.proc: subprocess.Popen[bytes] | None = None
        self.as_user = _run_as()
        if self.as_user:
            os.chown(self.root, self.as_user["user"], self.as_user["group"])
        self.log = self.root / "server.log"

    def _cmd(self, *args: str, **kwargs: Any) -> subprocess.CompletedProcess[bytes]:
        return subprocess.run(args, check=True, capture_output=True, **self.as_user, **kwargs)

    def init(self) -> None:
        self._cmd(
            str(self.bin / "initdb"), "-D", str(self.data), "-U", SUPERUSER,
            "--auth-local=trust", "--auth-host=scram-sha-256", "-E", "UTF8", "--no-sync",
            "--locale=C.UTF-8",
        )  # fmt: skip

    def start(self, deadline_s: float = 60.0) -> None:
        log = open(self.log, "ab")  # noqa: SIM115 - the server writes it as long as it runs
        self.proc = subprocess.Popen(
            [str(self.bin / "postgres"), "-D", str(self.data), "-p", str(self.port),
             "-c", "listen_addresses=127.0.0.1", "-c", f"unix_socket_directories={self.root}",
             "-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off"],
            stdout=log, stderr=subprocess.STDOUT, **self.as_user,
        )  # fmt: skip
        log.close()
        self.wait_ready(deadline_s)

    def wait_ready(self, deadline_s: float) -> None:
        import psycopg

        deadline = time.monotonic() + deadline_s
        while True:
            if self.proc is not None and self.proc.poll() is not None:
                raise RuntimeError(f"postgres exited: {self.log.read_text()[-2000:]}")
            try:
                psycopg.connect(self.admin_dsn(), connect_timeout=2).close()
                return
            except psycopg.OperationalError:
                if time.monotonic() > deadline:
                    raise
            time.sleep(0.05)  # the poll interval of a real readiness check

    def stop(self, sig: int = signal.SIGINT) -> None:
        """Fast shutdown (SIGINT): open connections are cut, as by a network failure."""
        if self.proc is None:
            return
        self.proc.send_signal(sig)
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.proc = None

    def destroy(self) -> None:
        self.stop(signal.SIGQUIT)  # immediate: no shutdown checkpoint of a cluster thrown away
        shutil.rmtree(self.root, ignore_errors=True)

    def admin_dsn(self, dbname: str = "postgres") -> str:
        return f"host={self.root} port={self.port} user={SUPERUSER} dbname={dbname}"

    def url(self, user: str, dbname: str) -> str:
        return f"postgresql://{user}@127.0.0.1:{self.port}/{dbname}"

    def admin(self, sql: str, dbname: str = "postgres") -> None:
        import psycopg

        with psycopg.connect(self.admin_dsn(dbname), autocommit=True) as conn:
            conn.execute(sql)  # type: ignore[arg-type, unused-ignore]

    def create_team_db(self, name: str, members: list[str]) -> None:
        """A database with the team schema (as ``team init`` prints it) and
        ``members`` as login roles with :data:`PASSWORD`."""
        from backscroll.team.ddl import init_sql

        self.admin(f"CREATE DATABASE {name}")
        self.admin(init_sql(members), dbname=name)
        for m in members:
            self.admin(f"ALTER ROLE {m} PASSWORD '{PASSWORD}'")


def start_server() -> PgServer | None:
    """A running throwaway server, or None when PostgreSQL is not installed."""
    found = bindir()
    if found is None:
        return None
    server = PgServer(found)
    try:
        server.init()
        server.start()
    except BaseException:
        server.destroy()
        raise
    return server
