"""Clients never talk to a socket another user could have made.

Without ``XDG_RUNTIME_DIR`` the socket lives under the shared temp directory,
where another user can get there first. ``search``, ``status`` and the prompt
hook check the directory's and the socket's owner and mode, and the serving
process's uid (SO_PEERCRED), before sending a byte; on any doubt they say so on
stderr and read the index directly. The impostors here are real: a forked
process that switches to uid nobody and serves forged answers on its own socket.
Also: the daemon never chmods a directory reached through a symlink, and a
config file owned by another user is refused.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from backscroll import config as config_mod
from backscroll import hook
from backscroll.client import Client, UntrustedSocket, try_connect
from backscroll.errors import BackscrollError, ConfigError
from backscroll.store import ensure_private_dir
from tests.conftest import DaemonFactory
from tests.daemon.harness import daemon_env, run_cli, session_uuid
from tests.test_socket_security import MARKER, NOBODY, needs_root, normal_search, plant_corpus

pytestmark = needs_root

FORGED = "FORGEDTEXTFROMANIMPOSTOR"


# --------------------------------------------------------------------------- the impostor


def _serve_forged(path: str, report: int, ready: int) -> None:
    """The impostor's loop (in the forked child): answer every request line with
    forged text, and report what each connection sent before it closed."""
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(path)
    srv.listen(16)
    os.write(ready, b"ready\n")
    while True:
        conn, _ = srv.accept()
        conn.settimeout(5)
        got = b""
        try:
            while chunk := conn.recv(65536):
                got += chunk
                if got.endswith(b"\n"):
                    reply = {
                        "jsonrpc": "2.0",
                        "id": 1,
                        "result": {"protocol": 1, "hits": [{"session_id": FORGED, "text": FORGED}]},
                    }
                    conn.sendall(json.dumps(reply).encode() + b"\n")
        except OSError:
            pass
        conn.close()
        os.write(report, json.dumps({"received": got.decode("utf-8", "replace")}).encode() + b"\n")


@dataclass
class Impostor:
    socket_path: Path
    pid: int
    report: int

    def connections(self) -> list[str]:
        """What each connection sent the impostor (stops it first)."""
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.pid, signal.SIGKILL)
        os.waitpid(self.pid, 0)
        data = b""
        while chunk := os.read(self.report, 65536):
            data += chunk
        return [json.loads(line)["received"] for line in data.splitlines()]


@pytest.fixture
def public_dir() -> Iterator[Path]:
    """A directory outside pytest's private tree that uid nobody can traverse."""
    path = Path(tempfile.mkdtemp(prefix="bs-imp-"))
    os.chmod(path, 0o711)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def impostor(public_dir: Path) -> Iterator[Impostor]:
    """A server run by uid nobody on ``<public_dir>/run/backscroll.sock``, in a
    directory nobody made (as on a shared /tmp)."""
    run = public_dir / "run"
    run.mkdir(mode=0o700)
    os.chown(run, NOBODY, NOBODY)
    sock_path = run / "backscroll.sock"
    report_r, report_w = os.pipe()
    ready_r, ready_w = os.pipe()
    pid = os.fork()
    if pid == 0:  # child: never return into pytest
        try:
            os.close(report_r)
            os.close(ready_r)
            os.setgroups([])
            os.setgid(NOBODY)
            os.setuid(NOBODY)
            os.umask(0)  # the impostor opens its socket wide, as it would
            _serve_forged(str(sock_path), report_w, ready_w)
        finally:
            os._exit(1)
    os.close(report_w)
    os.close(ready_w)
    assert os.read(ready_r, 16) == b"ready\n", "the impostor did not start"
    os.close(ready_r)
    imp = Impostor(sock_path, pid, report_r)
    try:
        yield imp
    finally:
        with contextlib.suppress(ChildProcessError, ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        os.close(report_r)


@pytest.fixture
def indexed(tmp_path: Path) -> Path:
    """``tmp_path`` with the planted corpus indexed (for the direct fallback)."""
    plant_corpus(tmp_path / "home")
    done = run_cli(tmp_path, "index", "--json")
    assert done.returncode == 0, done.stderr
    return tmp_path


def search_cli(tmp: Path, socket_path: Path) -> tuple[dict[str, Any], str]:
    done = run_cli(tmp, "search", MARKER, "--json", env={"BACKSCROLL_SOCKET": str(socket_path)})
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout)
    return result, done.stderr


def refused_and_read_directly(tmp: Path, socket_path: Path, why: str) -> None:
    """``search`` and ``status`` refuse the socket, saying why, and answer from the index."""
    result, stderr = search_cli(tmp, socket_path)
    assert result["daemon"] is False
    assert [h["session_id"] for h in result["hits"]] == [session_uuid(1)]
    assert f"not using the socket {socket_path}" in stderr
    assert why in stderr
    assert "reading the index directly" in stderr and "XDG_RUNTIME_DIR" in stderr
    status = run_cli(tmp, "status", "--json", env={"BACKSCROLL_SOCKET": str(socket_path)})
    assert status.returncode == 0, status.stderr
    assert json.loads(status.stdout)["daemon"] is False
    assert FORGED not in status.stdout + result.__repr__()


# --------------------------------------------------------------------------- file checks


def test_a_socket_in_a_directory_another_user_owns_is_never_sent_a_byte(
    indexed: Path, impostor: Impostor
) -> None:
    refused_and_read_directly(indexed, impostor.socket_path, f"belongs to uid {NOBODY}")
    assert impostor.connections() == [], "a client connected to the impostor"


def test_the_prompt_hook_never_injects_an_impostors_text(indexed: Path, impostor: Impostor) -> None:
    env = daemon_env(indexed, {"BACKSCROLL_SOCKET": str(impostor.socket_path)})
    prompt = {"session_id": session_uuid(9), "cwd": "/p", "hook_event_name": "UserPromptSubmit",
              "prompt": f"where did we {MARKER} the quokka marker"}  # fmt: skip
    done = subprocess.run([sys.executable, "-m", "backscroll", "hook", "claude-code"],
                          input=json.dumps(prompt).encode(), env=env, capture_output=True,
                          timeout=60, check=False)  # fmt: skip
    assert done.returncode == 0
    assert FORGED.encode() not in done.stdout
    warning = json.loads(done.stderr.decode().splitlines()[0])
    assert warning["event"] == "untrusted_socket"
    assert str(impostor.socket_path) in warning["error"]
    assert impostor.connections() == []


def test_the_hook_search_reads_the_index_when_the_socket_is_untrusted(
    indexed: Path, impostor: Impostor, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in daemon_env(indexed).items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("BACKSCROLL_SOCKET", str(impostor.socket_path))
    result = hook.search_index(None)({"query": MARKER, "fallback": False})
    assert result is not None
    assert [h["session_id"] for h in result["hits"]] == [session_uuid(1)]
    assert impostor.connections() == []


@pytest.mark.parametrize(
    ("dir_mode", "sock_mode", "sock_owner", "why"),
    [
        (0o777, 0o600, 0, "is writable by others (mode 777)"),
        (0o700, 0o666, 0, "it is open to others (mode 666)"),
        (0o700, 0o600, NOBODY, f"it belongs to uid {NOBODY}, not 0"),
    ],
    ids=["dir-writable-by-others", "socket-mode-666", "socket-owned-by-nobody"],
)
def test_a_socket_with_the_wrong_mode_or_owner_is_refused(
    indexed: Path, public_dir: Path, dir_mode: int, sock_mode: int, sock_owner: int, why: str
) -> None:
    run = public_dir / "mine"
    run.mkdir()
    sock_path = run / "b.sock"
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(str(sock_path))
    srv.listen(4)
    srv.setblocking(False)
    try:
        os.chmod(run, dir_mode)
        os.chmod(sock_path, sock_mode)
        os.chown(sock_path, sock_owner, -1)
        warnings: list[str] = []
        assert try_connect(sock_path, 5, warn=warnings.append) is None
        assert len(warnings) == 1 and why in warnings[0]
        refused_and_read_directly(indexed, sock_path, why)
        with pytest.raises(BlockingIOError):
            srv.accept()  # nobody ever connected
    finally:
        srv.close()


def test_a_symlink_in_place_of_the_socket_is_refused(public_dir: Path) -> None:
    run = public_dir / "mine"
    run.mkdir(mode=0o700)
    (run / "b.sock").symlink_to(public_dir / "elsewhere.sock")
    with pytest.raises(UntrustedSocket, match="it is a symlink"):
        Client(run / "b.sock", 5).connect()


# --------------------------------------------------------------------------- peer credentials


def test_a_server_of_another_uid_is_refused_by_peer_credentials_before_any_byte(
    indexed: Path, impostor: Impostor
) -> None:
    """Directory and socket look right (ours, private): only SO_PEERCRED shows
    that the process behind them runs as nobody."""
    os.chown(impostor.socket_path.parent, 0, 0)
    os.chown(impostor.socket_path, 0, 0)
    os.chmod(impostor.socket_path, 0o600)
    with pytest.raises(UntrustedSocket, match=f"runs as uid {NOBODY}, not 0"):
        Client(impostor.socket_path, 5).connect()
    refused_and_read_directly(indexed, impostor.socket_path, f"runs as uid {NOBODY}")
    received = impostor.connections()
    assert received and all(r == "" for r in received), "the impostor was sent something"


def test_the_real_daemon_passes_every_check(daemon_factory: DaemonFactory, tmp_path: Path) -> None:
    plant_corpus(tmp_path / "home")
    d = daemon_factory()
    d.sync()
    normal_search(d)
    result, stderr = search_cli(tmp_path, d.socket_path)
    assert result["daemon"] is True and stderr == ""


# --------------------------------------------------------------------------- symlinked dirs


def test_a_socket_directory_reached_through_a_symlink_is_never_chmodded(
    daemon_factory: DaemonFactory, tmp_path: Path, public_dir: Path
) -> None:
    """A planted ``/tmp/backscroll-0 -> /somewhere`` must not make /somewhere 0700."""
    target = public_dir / "somewhere"
    target.mkdir()
    os.chmod(target, 0o755)
    link = public_dir / "backscroll-0"
    link.symlink_to(target)
    plant_corpus(tmp_path / "home")
    d = daemon_factory(env={"BACKSCROLL_SOCKET": str(link / "b.sock")}, wait_ready=False)
    assert d.wait() == 1
    assert stat.S_IMODE(os.stat(target).st_mode) == 0o755
    assert not (target / "b.sock").exists()
    err = d.stderr_text()
    assert "symlink" in err and "never changes permissions through a symlink" in err


def test_a_symlink_to_a_private_directory_of_ones_own_is_used_as_it_is(
    daemon_factory: DaemonFactory, tmp_path: Path, public_dir: Path
) -> None:
    target = public_dir / "private"
    target.mkdir(mode=0o700)
    link = public_dir / "run-link"
    link.symlink_to(target)
    plant_corpus(tmp_path / "home")
    d = daemon_factory(env={"BACKSCROLL_SOCKET": str(link / "b.sock")})
    d.sync()
    normal_search(d)
    assert stat.S_IMODE(os.stat(target).st_mode) == 0o700


def test_ensure_private_dir_refuses_a_symlink_to_another_users_directory(
    public_dir: Path,
) -> None:
    target = public_dir / "theirs"
    target.mkdir(mode=0o700)
    os.chown(target, NOBODY, NOBODY)
    link = public_dir / "data"
    link.symlink_to(target)
    with pytest.raises(BackscrollError, match=f"belongs to uid {NOBODY}"):
        ensure_private_dir(link)
    assert os.stat(target).st_uid == NOBODY
    assert stat.S_IMODE(os.stat(target).st_mode) == 0o700


# --------------------------------------------------------------------------- config


def test_a_config_file_owned_by_another_user_is_refused_naming_it_and_the_fix(
    tmp_path: Path,
) -> None:
    cfg = tmp_path / "config.yaml"
    cfg.write_text(f"socket: {tmp_path}/theirs.sock\n", encoding="utf-8")
    os.chown(cfg, NOBODY, NOBODY)
    with pytest.raises(ConfigError) as caught:
        config_mod.load(cfg)
    message = str(caught.value)
    assert str(cfg) in message and f"owned by uid {NOBODY}" in message
    assert f"chown 0 {cfg}" in message
    done = run_cli(tmp_path, "search", "anything", env={"BACKSCROLL_CONFIG": str(cfg)})
    assert done.returncode != 0
    assert str(cfg) in done.stderr and "chown" in done.stderr
    os.chown(cfg, 0, 0)
    assert config_mod.load(cfg).socket == f"{tmp_path}/theirs.sock"


def test_the_default_config_location_owned_by_another_user_is_refused_too(
    tmp_path: Path,
) -> None:
    env = daemon_env(tmp_path)
    cfg = Path(env["XDG_CONFIG_HOME"]) / "backscroll" / "config.yaml"
    cfg.parent.mkdir(parents=True)
    cfg.write_text("log_level: info\n", encoding="utf-8")
    os.chown(cfg, NOBODY, NOBODY)
    done = run_cli(tmp_path, "status")
    assert done.returncode != 0
    assert str(cfg) in done.stderr and "not by you" in done.stderr


def test_doctor_fails_on_an_untrusted_socket_and_says_why(
    indexed: Path, impostor: Impostor
) -> None:
    done = run_cli(indexed, "doctor", "--json",
                   env={"BACKSCROLL_SOCKET": str(impostor.socket_path)})  # fmt: skip
    report = {f["check"]: f for f in json.loads(done.stdout)["findings"]}
    assert done.returncode == 1
    assert report["daemon"]["status"] == "fail"
    assert f"belongs to uid {NOBODY}" in report["daemon"]["detail"]
    assert impostor.connections() == []
