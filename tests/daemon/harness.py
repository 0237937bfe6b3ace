"""A real ``backscroll daemon`` subprocess for tests and bench scripts.

``start_daemon(tmp_path)`` runs ``python -m backscroll daemon`` with its HOME,
data directory, runtime directory and socket inside ``tmp_path`` (the socket in
a short private temp directory when ``tmp_path`` is too long for ``sun_path``),
and ``NOTIFY_SOCKET`` pointing at a datagram socket this module owns. It
returns once the daemon has sent ``READY=1`` there: readiness is a message,
never a sleep. The layout matches ``tests/conftest.py``'s ``isolated_home``:
``tmp_path/home``, ``tmp_path/data``, ``tmp_path/run``.

    with start_daemon(tmp_path) as d:
        d.sync()
        hits = d.call("search", {"query": "hello"})
        assert d.stop() == 0
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import TracebackType
from typing import Any

from backscroll.client import Client
from backscroll.paths import SUN_PATH_MAX

#: Seconds to wait for READY=1 (a cold interpreter on a loaded 2-core box).
READY_TIMEOUT = 30.0

#: Variables that move a host's transcripts (or the agent's session id): every test
#: runs without them, so none reads the developer's real data
#: (tests/readers/test_env_isolation.py finds every one a reader reads).
HOST_ENV = (
    "CLAUDE_CONFIG_DIR",
    "CODEX_HOME",
    "COPILOT_HOME",
    "GEMINI_CLI_HOME",
    "PI_CODING_AGENT_DIR",
    "HERMES_HOME",
    "CONTINUE_GLOBAL_DIR",
    "CLAUDE_CODE_SESSION_ID",
    "KIMI_SHARE_DIR",
    "KIMI_CODE_HOME",
    "GROK_HOME",
    "VIBE_HOME",
    "VSCODE_PORTABLE",
    "VSCODE_APPDATA",
    "OPENHANDS_PERSISTENCE_DIR",
    "OPENHANDS_CONVERSATIONS_DIR",
    "APPDATA",
    "LOCALAPPDATA",
    "CLINE_DATA_DIR",
    "CLINE_DIR",
    "CLINE_SESSION_DATA_DIR",
    "CRUSH_GLOBAL_DATA",
    "CURSOR_CONFIG_DIR",
    "FLATPAK_XDG_DATA_HOME",
    "GOOSE_PATH_ROOT",
    "KILO_DB",
    "OPENCODE_DB",
    "OMP_CODING_AGENT_DIR",
    "QWEN_RUNTIME_DIR",
    "XDG_STATE_HOME",
    "WSL_DISTRO_NAME",
)

#: Variables of the caller's environment that would point a daemon at real data.
_SCRUB = (
    "BACKSCROLL_CONFIG",
    "BACKSCROLL_SOCKET",
    "BACKSCROLL_LOG_LEVEL",
    "BACKSCROLL_LOG_FORMAT",
    "NOTIFY_SOCKET",
    "WATCHDOG_USEC",
    "WATCHDOG_PID",
    *HOST_ENV,
)


class DaemonStartError(AssertionError):
    """The daemon exited, or did not say READY=1 in time; carries its stderr."""


def daemon_env(tmp_path: Path, extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment a test daemon (or a CLI run against it) gets."""
    env = {k: v for k, v in os.environ.items() if k not in _SCRUB}
    home = tmp_path / "home"
    env.update(
        HOME=str(home),
        BACKSCROLL_HOME=str(tmp_path / "data"),
        XDG_RUNTIME_DIR=str(tmp_path / "run"),
        XDG_CONFIG_HOME=str(home / ".config"),
        XDG_DATA_HOME=str(home / ".local" / "share"),
        PYTHONUNBUFFERED="1",
    )
    if extra:
        env.update(extra)
    return env


def _short_dir(tmp_path: Path) -> tuple[Path, bool]:
    """A 0700 directory for the sockets, short enough for sun_path; (dir, made_by_us)."""
    candidate = tmp_path / "s"
    if len(os.fsencode(candidate / "backscroll.sock")) < SUN_PATH_MAX - 8:
        candidate.mkdir(mode=0o700, exist_ok=True)
        os.chmod(candidate, 0o700)
        return candidate, False
    return Path(tempfile.mkdtemp(prefix="bs-")), True


class DaemonProcess:
    """A running daemon subprocess; a context manager that always cleans up."""

    def __init__(
        self,
        tmp_path: Path,
        env: dict[str, str] | None = None,
        config: str | None = None,
    ) -> None:
        self.tmp_path = tmp_path
        self.sock_dir, self._own_sock_dir = _short_dir(tmp_path)
        extra = dict(env or {})
        extra.setdefault("BACKSCROLL_SOCKET", str(self.sock_dir / "backscroll.sock"))
        if config is not None:
            cfg_path = tmp_path / f"config-{os.getpid()}-{id(self)}.yaml"
            cfg_path.write_text(config, encoding="utf-8")
            extra.setdefault("BACKSCROLL_CONFIG", str(cfg_path))
        self.env = daemon_env(tmp_path, extra)
        self.home = Path(self.env["HOME"])
        self.home.mkdir(parents=True, exist_ok=True)
        self.data_dir = Path(self.env["BACKSCROLL_HOME"])
        self.db_path = self.data_dir / "index.db"
        self.socket_path = Path(self.env["BACKSCROLL_SOCKET"])
        self.config_path = Path(self.env["BACKSCROLL_CONFIG"]) if "BACKSCROLL_CONFIG" in extra \
            else None  # fmt: skip
        self.notify_path = self.sock_dir / f"n{os.getpid()}-{id(self) % 10**6}"
        self._notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        if self.notify_path.exists():
            self.notify_path.unlink()
        self._notify.bind(str(self.notify_path))
        self.env["NOTIFY_SOCKET"] = str(self.notify_path)
        self.notifications: list[str] = []
        self._stderr_path = tmp_path / f"daemon-{os.getpid()}-{id(self)}.stderr"
        self._stderr = open(self._stderr_path, "wb")  # noqa: SIM115 - closed in close()
        self._clients: list[Client] = []
        self._client: Client | None = None
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "backscroll", "daemon"],
            env=self.env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=self._stderr,
            cwd=str(self.home),
        )
        self.returncode: int | None = None

    # ------------------------------------------------------------------ readiness

    @property
    def pid(self) -> int:
        return self.proc.pid

    def wait_ready(self, timeout: float = READY_TIMEOUT) -> None:
        """Block until a datagram with READY=1 arrives; fail with stderr otherwise."""
        if self.wait_for_notification("READY=1", timeout):
            return
        raise DaemonStartError(self._why_not_ready(timeout))

    def wait_for_notification(self, needle: str, timeout: float) -> bool:
        """True once a notify datagram containing ``needle`` has arrived."""
        if any(needle in n for n in self.notifications):
            return True
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self._notify.settimeout(min(0.2, max(deadline - time.monotonic(), 0.001)))
            try:
                data = self._notify.recv(65536)
            except TimeoutError:
                if self.proc.poll() is not None:
                    return self._drain(needle)
                continue
            text = data.decode("utf-8", "replace")
            self.notifications.append(text)
            if needle in text:
                return True
        return False

    def _drain(self, needle: str) -> bool:
        self._notify.setblocking(False)
        try:
            while True:
                text = self._notify.recv(65536).decode("utf-8", "replace")
                self.notifications.append(text)
                if needle in text:
                    return True
        except (BlockingIOError, OSError):
            return False
        finally:
            self._notify.setblocking(True)

    def _why_not_ready(self, timeout: float) -> str:
        code = self.proc.poll()
        state = f"exited with {code}" if code is not None else f"not ready after {timeout:g} s"
        return f"backscroll daemon {state}; stderr:\n{self.stderr_text()}"

    # ------------------------------------------------------------------ talking

    def client(self, timeout: float = 60.0) -> Client:
        """A new connected client (closed when the daemon is stopped)."""
        c = Client(self.socket_path, timeout)
        c.connect()
        self._clients.append(c)
        return c

    def call(self, method: str, params: Any = None) -> Any:
        """One request on a shared connection; RemoteError on an error reply."""
        if self._client is None:
            self._client = self.client()
        return self._client.call(method, params if params is not None else {})

    def sync(self) -> Any:
        """Index everything pending now; returns the sync summary."""
        return self.call("sync", {})

    def raw_connect(self, timeout: float = 10.0) -> socket.socket:
        """A bare stream socket to the daemon (for malformed-request tests)."""
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(timeout)
        sock.connect(str(self.socket_path))
        return sock

    # ------------------------------------------------------------------ stopping

    def send_signal(self, sig: int) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 30.0) -> int:
        """Send ``sig`` and wait for exit; SIGKILL after ``timeout``. The exit code."""
        self._close_clients()
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                raise DaemonStartError(
                    f"daemon did not exit {timeout:g} s after signal {sig}; killed. "
                    f"stderr:\n{self.stderr_text()}"
                ) from None
        self.returncode = self.proc.returncode
        return self.returncode

    def kill(self) -> int:
        """SIGKILL: a crash, nothing cleaned up."""
        self._close_clients()
        if self.proc.poll() is None:
            self.proc.kill()
        self.returncode = self.proc.wait()
        return self.returncode

    def wait(self, timeout: float = 30.0) -> int:
        """Wait for the process to exit by itself (e.g. a refused start)."""
        self.returncode = self.proc.wait(timeout)
        return self.returncode

    def stderr_text(self) -> str:
        self._stderr.flush()
        return self._stderr_path.read_text(encoding="utf-8", errors="replace")

    def peak_rss_kb(self) -> int | None:
        """VmHWM of the live process (Linux), in kB."""
        try:
            for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
        except OSError:
            return None
        return None

    def rss_kb(self) -> int | None:
        """VmRSS of the live process (Linux), in kB."""
        try:
            for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        except OSError:
            return None
        return None

    def _close_clients(self) -> None:
        for c in self._clients:
            c.close()
        self._clients.clear()
        self._client = None

    def close(self) -> None:
        """Stop the process if it still runs, and release every resource."""
        try:
            if self.proc.poll() is None:
                with contextlib.suppress(DaemonStartError):
                    self.stop(signal.SIGTERM, timeout=15)
        finally:
            self._close_clients()
            self._notify.close()
            self._stderr.close()
            with contextlib.suppress(OSError):
                self.notify_path.unlink()
            if self._own_sock_dir:
                shutil.rmtree(self.sock_dir, ignore_errors=True)

    def __enter__(self) -> DaemonProcess:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def start_daemon(
    tmp_path: Path,
    env: dict[str, str] | None = None,
    config: str | None = None,
    *,
    wait_ready: bool = True,
    timeout: float = READY_TIMEOUT,
) -> DaemonProcess:
    """Start a daemon in ``tmp_path`` and (by default) wait for READY=1.

    ``env`` entries override the defaults (e.g. ``BACKSCROLL_SOCKET``);
    ``config`` is YAML written to a file passed as ``BACKSCROLL_CONFIG``.
    With ``wait_ready=False`` the caller waits (or checks a refused start).
    """
    proc = DaemonProcess(tmp_path, env, config)
    if wait_ready:
        try:
            proc.wait_ready(timeout)
        except BaseException:
            proc.close()
            raise
    return proc


# --------------------------------------------------------------------------- comparing indexes

#: One turn as a comparison sees it: (host, session_id, key, role, text).
TurnRow = tuple[str, str, str, str, str]


def dump_turns(db: Path) -> list[TurnRow]:
    """Every turn of ``db``, sorted, opened read-only (duplicates kept, so they show)."""
    import sqlite3

    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        conn.execute("PRAGMA busy_timeout = 10000")
        rows = conn.execute(
            "SELECT s.host, s.session_id, t.key, t.role, t.text"
            " FROM turns t JOIN sessions s ON s.id = t.session"
        ).fetchall()
    finally:
        conn.close()
    return sorted((str(a), str(b), str(c), str(d), str(e)) for a, b, c, d, e in rows)


def run_cli(
    tmp_path: Path, *args: str, env: dict[str, str] | None = None, timeout: float = 300.0
) -> subprocess.CompletedProcess[str]:
    """``python -m backscroll ARGS`` in the same isolated environment as the daemon."""
    return subprocess.run(
        [sys.executable, "-m", "backscroll", *args],
        env=daemon_env(tmp_path, env),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def fresh_index(tmp_path: Path, data_dir: Path, env: dict[str, str] | None = None) -> list[TurnRow]:
    """Index ``tmp_path/home`` from scratch into ``data_dir``; its turns."""
    if (data_dir / "index.db").exists():
        for suffix in ("", "-wal", "-shm"):
            Path(f"{data_dir / 'index.db'}{suffix}").unlink(missing_ok=True)
    extra = dict(env or {})
    extra["BACKSCROLL_HOME"] = str(data_dir)
    done = run_cli(tmp_path, "index", "--json", env=extra)
    if done.returncode != 0:
        raise AssertionError(f"fresh index failed ({done.returncode}): {done.stderr}")
    return dump_turns(data_dir / "index.db")


def claude_user_line(session_id: str, uuid: str, text: str, cwd: str = "/p") -> str:
    """One Claude Code user entry (a JSONL line, newline included)."""
    import json

    entry = {
        "parentUuid": None,
        "isSidechain": False,
        "userType": "external",
        "cwd": cwd,
        "sessionId": session_id,
        "version": "2.1.38",
        "type": "user",
        "message": {"role": "user", "content": text},
        "uuid": uuid,
        "timestamp": "2026-02-10T22:57:54.684Z",
    }
    return json.dumps(entry) + "\n"


# --------------------------------------------------------------------------- corpora

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
CLAUDE_FIXTURES = tuple(sorted((FIXTURES / "claude-code").glob("*.jsonl")))
CODEX_FIXTURES = tuple(sorted((FIXTURES / "codex").glob("*.jsonl")))


def session_uuid(n: int) -> str:
    return f"{n:08x}-0000-4000-8000-{n:012x}"


def populate(home: Path, copies: int = 1, codex: bool = True) -> list[Path]:
    """Real sample transcripts under ``home``: every Claude Code fixture ``copies``
    times (each its own session, 50 per project directory) and every Codex JSONL
    fixture once. Returns the files written."""
    out: list[Path] = []
    n = 0
    for _ in range(copies):
        for src in CLAUDE_FIXTURES:
            n += 1
            project = home / ".claude" / "projects" / f"-p{n // 50}"
            project.mkdir(parents=True, exist_ok=True)
            dest = project / f"{session_uuid(n)}.jsonl"
            shutil.copyfile(src, dest)
            out.append(dest)
    if codex:
        day = home / ".codex" / "sessions" / "2026" / "05" / "11"
        day.mkdir(parents=True, exist_ok=True)
        for i, src in enumerate(CODEX_FIXTURES, 1):
            dest = day / f"rollout-2026-05-11T11-26-5{i}-{session_uuid(10_000 + i)}.jsonl"
            shutil.copyfile(src, dest)
            out.append(dest)
    return out
