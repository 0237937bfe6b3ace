"""A real daemon against hostile clients: oversized, malformed and mistyped
requests, stalled and dribbling clients, a flood of idle connections, random
bytes, other users, and private files whatever the umask. Each bad client gets a
JSON-RPC error (or a timeout) and the daemon keeps serving everyone else."""

from __future__ import annotations

import contextlib
import json
import os
import random
import selectors
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from backscroll import protocol
from backscroll.client import Client, RemoteError
from tests.daemon.conftest import DaemonFactory
from tests.daemon.harness import (
    CLAUDE_FIXTURES,
    DaemonProcess,
    claude_user_line,
    run_cli,
    session_uuid,
    start_daemon,
)

#: A word planted in the corpus: a normal search for it must always find one hit.
MARKER = "quokkasecurity"
DEADLINE = 30.0
NOBODY = 65534


def plant_corpus(home: Path) -> None:
    """A real Claude Code transcript plus one prompt carrying :data:`MARKER`."""
    project = home / ".claude" / "projects" / "-p"
    project.mkdir(parents=True, exist_ok=True)
    path = project / f"{session_uuid(1)}.jsonl"
    shutil.copyfile(CLAUDE_FIXTURES[0], path)
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(claude_user_line(session_uuid(1), "u-marker", f"find the {MARKER} please"))


def ready_daemon(tmp_path: Path, factory: Any = None, **kwargs: Any) -> DaemonProcess:
    """A daemon over the planted corpus, synced so :func:`normal_search` can hit."""
    plant_corpus(tmp_path / "home")
    d: DaemonProcess = factory(**kwargs) if factory else start_daemon(tmp_path, **kwargs)
    d.sync()
    return d


def normal_search(d: DaemonProcess) -> None:
    """A well-behaved client on its own connection finds the planted turn."""
    c = Client(d.socket_path, timeout=DEADLINE)
    try:
        c.connect()
        result = c.call("search", {"query": MARKER, "fallback": False})
    finally:
        c.close()
    assert [h["session_id"] for h in result["hits"]] == [session_uuid(1)]


def read_reply(sock: socket.socket) -> dict[str, Any] | None:
    """The next reply line on ``sock``, or None when the daemon closed it first."""
    buf = b""
    while b"\n" not in buf:
        chunk = sock.recv(65536)
        if not chunk:
            return None
        buf += chunk
    reply: dict[str, Any] = json.loads(buf.split(b"\n", 1)[0])
    return reply


def blocking_connect(path: Path) -> socket.socket:
    """A raw connection that waits for room in the listen backlog (a connect with a
    timeout fails with EAGAIN when hundreds of clients arrive at once)."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(str(path))
    except BaseException:
        sock.close()
        raise
    sock.settimeout(DEADLINE)
    return sock


def closed_by_peer(sock: socket.socket) -> bool:
    """True when the daemon has closed ``sock`` (EOF or reset), waiting up to the timeout."""
    try:
        return sock.recv(1) == b""
    except ConnectionResetError:
        return True


# --------------------------------------------------------------------------- bad lines


@pytest.fixture(scope="module")
def shared_daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DaemonProcess]:
    """One daemon for the table of bad requests below (starting one per case is slow)."""
    tmp = tmp_path_factory.mktemp("hostile-socket")
    d = ready_daemon(tmp)
    try:
        yield d
    finally:
        d.close()


def _req(method: Any, params: Any = None, rid: Any = 1, **extra: Any) -> bytes:
    body = {"jsonrpc": "2.0", "id": rid, "method": method, **extra}
    if params is not None:
        body["params"] = params
    return json.dumps(body).encode() + b"\n"


# fmt: off
BAD_LINES: list[tuple[str, bytes, int]] = [
    ("not_json", b"this is {not json\n", protocol.PARSE_ERROR),
    ("truncated_object", b'{"jsonrpc": "2.0", "id": 1, "method": "sea\n', protocol.PARSE_ERROR),
    ("invalid_utf8", b'{"jsonrpc":"2.0","id":1,"method":"search\xff\xfe"}\n', protocol.PARSE_ERROR),
    ("nul_bytes", b"\x00\x00\x00\n", protocol.PARSE_ERROR),
    ("deep_nesting", b"[" * 100_000 + b"\n", protocol.PARSE_ERROR),
    ("huge_integer_id", b'{"jsonrpc":"2.0","method":"status","id":' + b"9" * 5000 + b"}\n",
     protocol.PARSE_ERROR),
    ("array", b"[1, 2, 3]\n", protocol.INVALID_REQUEST),
    ("number", b"5\n", protocol.INVALID_REQUEST),
    ("string", b'"status"\n', protocol.INVALID_REQUEST),
    ("null", b"null\n", protocol.INVALID_REQUEST),
    ("method_is_a_number", b'{"jsonrpc":"2.0","method":5}\n', protocol.INVALID_REQUEST),
    ("method_missing", b'{"jsonrpc":"2.0","id":1}\n', protocol.INVALID_REQUEST),
    ("wrong_jsonrpc_version", _req("status", jsonrpc="1.0"), protocol.INVALID_REQUEST),
    ("id_is_an_array", _req("status", rid=[1]), protocol.INVALID_REQUEST),
    ("unknown_method", _req("drop_everything"), protocol.METHOD_NOT_FOUND),
    ("dunder_method", _req("__class__"), protocol.METHOD_NOT_FOUND),
    ("search_limit_is_text", _req("search", {"query": "a", "limit": "x"}), protocol.INVALID_PARAMS),
    ("search_role_admin", _req("search", {"query": "a", "role": "admin"}), protocol.INVALID_PARAMS),
    ("search_query_is_a_number", _req("search", {"query": 7}), protocol.INVALID_PARAMS),
    ("search_query_missing", _req("search", {}), protocol.INVALID_PARAMS),
    ("search_params_array", _req("search", ["a"]), protocol.INVALID_PARAMS),
    ("search_params_string", _req("search", "a"), protocol.INVALID_PARAMS),
    ("search_limit_negative", _req("search", {"query": "a", "limit": -1}), protocol.INVALID_PARAMS),
    ("search_limit_huge", _req("search", {"query": "a", "limit": 10**12}), protocol.INVALID_PARAMS),
    ("search_limit_bool", _req("search", {"query": "a", "limit": True}), protocol.INVALID_PARAMS),
    ("search_limit_infinite", b'{"jsonrpc":"2.0","id":1,"method":"search",'
     b'"params":{"query":"a","limit":1e999}}\n', protocol.INVALID_PARAMS),
    ("search_since_days_nan", b'{"jsonrpc":"2.0","id":1,"method":"search",'
     b'"params":{"query":"a","since_days":NaN}}\n', protocol.INVALID_PARAMS),
    ("search_host_is_an_object", _req("search", {"query": "a", "host": {"$ne": 1}}),
     protocol.INVALID_PARAMS),
    ("search_unknown_param", _req("search", {"query": "a", "sql": "DROP TABLE turns"}),
     protocol.INVALID_PARAMS),
    ("sessions_limit_zero", _req("sessions", {"limit": 0}), protocol.INVALID_PARAMS),
    ("session_empty_id", _req("session", {"session": ""}), protocol.INVALID_PARAMS),
    ("hello_protocol_text", _req("hello", {"protocol": "1"}), protocol.VERSION_MISMATCH),
]
# fmt: on


@pytest.mark.parametrize(
    ("line", "code"), [pytest.param(line, code, id=name) for name, line, code in BAD_LINES]
)
def test_a_bad_request_gets_its_json_rpc_error_and_everyone_is_still_served(
    shared_daemon: DaemonProcess, line: bytes, code: int
) -> None:
    with shared_daemon.raw_connect(timeout=DEADLINE) as sock:
        sock.sendall(line)
        reply = read_reply(sock)
        assert reply is not None, "the daemon closed the connection without a reply"
        assert reply["jsonrpc"] == "2.0"
        assert reply["error"]["code"] == code, reply
        assert reply["error"]["message"]
        # One bad line does not poison the connection: the next good one is answered.
        sock.sendall(_req("status", {}, rid=2))
        follow = read_reply(sock)
        assert follow is not None and follow["id"] == 2 and "result" in follow
    normal_search(shared_daemon)


def test_an_error_reply_carries_the_request_id(shared_daemon: DaemonProcess) -> None:
    with shared_daemon.raw_connect(timeout=DEADLINE) as sock:
        sock.sendall(_req("search", {"query": "a", "limit": "x"}, rid="abc-42"))
        reply = read_reply(sock)
    assert reply is not None and reply["id"] == "abc-42"
    assert "limit" in reply["error"]["message"]


# --------------------------------------------------------------------------- limits and timeouts


def test_a_complete_line_over_max_request_bytes_is_refused_and_closed(
    daemon_factory: DaemonFactory, tmp_path: Path
) -> None:
    d = ready_daemon(tmp_path, daemon_factory, config="server:\n  max_request_bytes: 4096\n")
    big = _req("search", {"query": "word " * 4000})  # about 20 kB, newline included
    assert len(big) > 4096
    with d.raw_connect(timeout=DEADLINE) as sock:
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            sock.sendall(big)
        reply = read_reply(sock)
        assert reply is not None
        assert reply["error"]["code"] == protocol.REQUEST_TOO_LARGE
        assert "4096" in reply["error"]["message"]
        assert closed_by_peer(sock)
    normal_search(d)


def test_an_endless_line_is_refused_and_closed_while_others_are_served(
    daemon_factory: DaemonFactory, tmp_path: Path
) -> None:
    d = ready_daemon(tmp_path, daemon_factory, config="server:\n  max_request_bytes: 4096\n")
    with d.raw_connect(timeout=DEADLINE) as sock:
        sock.sendall(b'{"jsonrpc":"2.0","id":1,"method":"search","params":{"query":"')
        normal_search(d)  # served while a request is half-sent
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            for _ in range(64):
                sock.sendall(b"y" * 1024)
        reply = read_reply(sock)
        assert reply is not None and reply["error"]["code"] == protocol.REQUEST_TOO_LARGE
        assert closed_by_peer(sock)
    normal_search(d)


def test_a_stalled_half_line_times_out_and_is_closed_while_others_are_served(
    daemon_factory: DaemonFactory, tmp_path: Path
) -> None:
    d = ready_daemon(tmp_path, daemon_factory, config="server:\n  request_timeout_s: 0.5\n")
    with d.raw_connect(timeout=DEADLINE) as sock:
        sock.sendall(b'{"jsonrpc": "2.0", "id": 1, "method": "sea')
        normal_search(d)
        reply = read_reply(sock)
        assert reply is not None and reply["error"]["code"] == protocol.TIMEOUT
        assert "0.5" in reply["error"]["message"]
        assert closed_by_peer(sock)
    normal_search(d)


def test_a_client_dribbling_one_byte_at_a_time_still_times_out(
    daemon_factory: DaemonFactory, tmp_path: Path
) -> None:
    """request_timeout_s bounds the whole request line, not the gap between bytes."""
    d = ready_daemon(tmp_path, daemon_factory, config="server:\n  request_timeout_s: 0.5\n")
    request = b'{"jsonrpc":"2.0","id":1,"method":"status","params":{},"pad":"' + b"z" * 100
    sent = 0
    buf = b""
    with d.raw_connect(timeout=DEADLINE) as sock:
        sock.settimeout(0.1)  # each wait for a reply is also the slow client's pace
        for byte in request:  # one byte per 0.1 s: every gap is well under 0.5 s
            try:
                sock.sendall(bytes([byte]))
            except (BrokenPipeError, ConnectionResetError):
                break
            sent += 1
            try:
                buf = sock.recv(65536)
            except TimeoutError:
                continue
            break
        sock.settimeout(DEADLINE)
        while buf and b"\n" not in buf and (chunk := sock.recv(65536)):
            buf += chunk
    assert sent < len(request), "the whole request was dribbled in without a timeout"
    reply = json.loads(buf.split(b"\n", 1)[0])
    assert reply["error"]["code"] == protocol.TIMEOUT
    normal_search(d)


def test_idle_connections_over_the_maximum_are_closed_oldest_first_to_make_room(
    daemon_factory: DaemonFactory, tmp_path: Path
) -> None:
    """300 idle connections (each served once, then silent) against a cap of 256:
    the longest-idle ones are closed (without a word) to make room, and every
    newcomer is served."""
    d = ready_daemon(tmp_path, daemon_factory, config="server:\n  max_connections: 256\n")
    held_already = d.call("status", {})["daemon"]["connections"]  # the harness's own
    socks: list[socket.socket] = []
    try:
        for n in range(300):
            s = blocking_connect(d.socket_path)
            socks.append(s)
            if n < 256 - held_already:  # (past the cap, a reply could race the eviction)
                s.sendall(_req("status", {}, rid=n))
                assert read_reply(s) is not None
        want_closed = 300 + held_already - 256
        closed = _collect_refusals(socks, want=want_closed - held_already)
        assert set(closed) == set(socks[: want_closed - held_already]), "oldest first"
        assert all(reply is None for reply in closed.values())
        held = socks[want_closed - held_already :]
        for n, s in enumerate(held):  # the 256 held ones are all really served
            s.sendall(_req("status", {}, rid=n))
        for n, s in enumerate(held):
            reply = read_reply(s)
            assert reply is not None and reply["id"] == n and "result" in reply
        normal_search(d)  # a newcomer takes the place of the longest idle
        assert d.call("status", {})["daemon"]["connections"] <= 256  # reconnects itself
    finally:
        for s in socks:
            s.close()


def busy_connections(d: DaemonProcess, n: int) -> list[socket.socket]:
    """``n`` connections each in the middle of sending a request (none idle).

    A request and the start of the next go in one write: the reply proves the
    daemon has read both, so no connection is ever idle in between (sent after
    the reply, the half request could still be unread when the next client
    connects, and that connection was evicted as idle)."""
    socks: list[socket.socket] = []
    for rid in range(n):
        s = blocking_connect(d.socket_path)
        socks.append(s)
        s.sendall(_req("status", {}, rid=rid) + b'{"jsonrpc": "2.0", "id": 1, "method": "sta')
        assert read_reply(s) is not None
    return socks


def test_when_every_connection_is_busy_a_newcomer_is_told_so_and_the_cli_reads_the_index(
    daemon_factory: DaemonFactory, tmp_path: Path
) -> None:
    config = "server:\n  max_connections: 8\n  request_timeout_s: 120\n"
    d = ready_daemon(tmp_path, daemon_factory, config=config)
    socks = busy_connections(d, 8)  # the harness's idle connection makes room for one
    try:
        extra = Client(d.socket_path, timeout=DEADLINE)
        with pytest.raises(RemoteError, match="too many connections") as caught:
            extra.connect()
        assert caught.value.code == protocol.BUSY
        extra.close()
        done = run_cli(tmp_path, "search", MARKER, "--json",
                       env={"BACKSCROLL_SOCKET": str(d.socket_path)})  # fmt: skip
        assert done.returncode == 0, done.stderr
        result = json.loads(done.stdout)
        assert result["daemon"] is False
        assert [h["session_id"] for h in result["hits"]] == [session_uuid(1)]
    finally:
        for s in socks:
            s.close()
    deadline = time.monotonic() + DEADLINE
    while True:  # the daemon notices the closes asynchronously
        try:
            normal_search(d)
            break
        except RemoteError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)  # polling interval of a condition, not a readiness wait


def _collect_refusals(
    socks: list[socket.socket], want: int
) -> dict[socket.socket, dict[str, Any] | None]:
    """Sockets the daemon answered and closed, waiting until ``want`` of them are."""
    sel = selectors.DefaultSelector()
    for s in socks:
        sel.register(s, selectors.EVENT_READ)
    out: dict[socket.socket, dict[str, Any] | None] = {}
    deadline = time.monotonic() + DEADLINE
    try:
        while len(out) < want and time.monotonic() < deadline:
            for key, _ in sel.select(timeout=0.5):
                ready = key.fileobj
                assert isinstance(ready, socket.socket)
                sel.unregister(ready)
                out[ready] = read_reply(ready)
                assert closed_by_peer(ready)
    finally:
        sel.close()
    return out


# --------------------------------------------------------------------------- fuzz


VALID_LINES = [
    _req("status", {}),
    _req("hello", {"protocol": protocol.PROTOCOL_VERSION}),
    _req("search", {"query": MARKER}),
    _req("search", {"query": "login handler", "any": True, "limit": 3, "role": "user"}),
    _req("search", {"query": "x", "session": "0000", "since_days": 30, "context": 2}),
    _req("sessions", {"limit": 5}),
    _req("session", {"session": session_uuid(1)[:8], "window": 3}),
]

PARAM_NAMES = ["query", "limit", "role", "host", "project", "session", "since_days", "since",
               "until", "any", "context", "max_turn_chars", "max_total_chars", "window",
               "around", "protocol", "fallback", "exclude_session"]  # fmt: skip
NASTY_TEXT = ["", "*", "NEAR(a b)", '"', "\\", "%", "_", "'; DROP TABLE turns; --", "\x00",
              "\u202e", "\U0001f600", "a" * 300, "user", "admin"]  # fmt: skip


def _json_value(rnd: random.Random, depth: int = 0) -> Any:
    """A random JSON value: scalars of every type, some nasty, a little nesting."""
    pick = rnd.randrange(10 if depth < 2 else 7)
    if pick == 0:
        return None
    if pick == 1:
        return rnd.random() < 0.5
    if pick == 2:
        return rnd.choice([0, 1, -1, 7, 1000, 1001, 2**31, -(2**63), 2**70])
    if pick == 3:
        return rnd.choice([0.5, -0.0, 1e308, -1e308, float("inf"), 3.14])
    if pick in (4, 5):
        return rnd.choice(NASTY_TEXT)
    if pick == 6:
        return "".join(chr(rnd.randrange(1, 0x2FFFF)) for _ in range(rnd.randrange(12)))
    if pick in (7, 8):
        return [_json_value(rnd, depth + 1) for _ in range(rnd.randrange(4))]
    return {rnd.choice(PARAM_NAMES): _json_value(rnd, depth + 1) for _ in range(rnd.randrange(4))}


def _structured(rnd: random.Random) -> bytes:
    """A JSON object shaped like a request, with random methods, ids and params."""
    methods = ["search", "search", "sessions", "session", "status", "hello"]
    method = rnd.choice(methods) if rnd.random() < 0.8 else _json_value(rnd)
    if rnd.random() < 0.8:
        params: Any = {rnd.choice(PARAM_NAMES): _json_value(rnd) for _ in range(rnd.randrange(5))}
        if rnd.random() < 0.6:
            params["query"] = rnd.choice([*NASTY_TEXT, MARKER, "login handler"])
    else:
        params = _json_value(rnd)
    body: dict[str, Any] = {"jsonrpc": rnd.choice(["2.0", "2.0", "2.0", "1.0", 2]),
                            "method": method, "params": params}  # fmt: skip
    if rnd.random() < 0.7:
        body["id"] = _json_value(rnd)
    return json.dumps(body).encode()


def _mutated(rnd: random.Random) -> bytes:
    """A valid request with a few bytes flipped, inserted, deleted or cut off."""
    data = bytearray(rnd.choice(VALID_LINES).rstrip(b"\n"))
    for _ in range(rnd.randrange(1, 5)):
        pos = rnd.randrange(max(len(data), 1))
        op = rnd.randrange(4)
        if op == 0 and data:
            data[pos] = rnd.randrange(256)
        elif op == 1:
            data[pos:pos] = rnd.randbytes(rnd.randrange(1, 9))
        elif op == 2 and data:
            del data[pos]
        elif op == 3:
            del data[pos:]
    return bytes(data)


def _random_line(rnd: random.Random) -> bytes:
    kind = rnd.randrange(5)
    if kind == 0:
        line = rnd.randbytes(rnd.randrange(200))
    elif kind == 1:
        text = "".join(chr(rnd.randrange(1, 0x2FFFF)) for _ in range(rnd.randrange(80)))
        line = text.encode("utf-8", "surrogatepass")
    elif kind == 2:
        line = _mutated(rnd)
    else:
        line = _structured(rnd)
    return line.replace(b"\n", b" ")


#: Hypothesis drives a seeded Random (cheap to draw, reproducible when it fails).
REQUEST_LINES = st.randoms(use_true_random=False).map(_random_line)


class _Line:
    """One raw connection that reconnects when the daemon closes it."""

    def __init__(self, d: DaemonProcess) -> None:
        self.d = d
        self.sock: socket.socket | None = None
        self.reconnects = 0

    def send(self, line: bytes) -> dict[str, Any] | None:
        if self.sock is None:
            self.sock = self.d.raw_connect(timeout=DEADLINE)
            self.reconnects += 1
        try:
            self.sock.sendall(line + b"\n")
            reply = read_reply(self.sock)
        except (BrokenPipeError, ConnectionResetError):
            reply = None
        if reply is None:
            self.close()
        return reply

    def close(self) -> None:
        if self.sock is not None:
            self.sock.close()
            self.sock = None


def test_random_and_mutated_request_lines_never_break_the_daemon(
    daemon_factory: DaemonFactory, tmp_path: Path
) -> None:
    d = ready_daemon(tmp_path, daemon_factory)
    conn = _Line(d)

    @settings(max_examples=1000, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))  # fmt: skip
    @given(REQUEST_LINES)
    def one_line(line: bytes) -> None:
        if not line.strip():
            return  # a blank line gets no reply by design
        reply = conn.send(line)
        assert reply is not None, f"the daemon closed the connection on {line!r}"
        assert reply.get("jsonrpc") == "2.0"
        assert ("result" in reply) != ("error" in reply), reply
        if "error" in reply:
            assert isinstance(reply["error"]["code"], int) and reply["error"]["message"]
            assert reply["error"]["code"] != protocol.INTERNAL_ERROR, (line, reply)

    try:
        one_line()
    finally:
        conn.close()
    assert d.proc.poll() is None, d.stderr_text()
    normal_search(d)
    assert d.call("status", {})["daemon"]["pid"] == d.pid


# --------------------------------------------------------------------------- other users


needs_root = pytest.mark.skipif(
    not hasattr(os, "geteuid") or os.geteuid() != 0,
    reason="switching to a second uid (nobody) needs root",
)


def _as_nobody(socket_path: Path, line: bytes) -> tuple[str, str]:
    """Connect to ``socket_path`` from a forked child running as uid nobody.

    Returns ("denied", errno name) when connect fails, ("reply", raw reply line
    or "") otherwise. A fork (not an exec) so the child needs no Python install
    readable by nobody.
    """
    rfd, wfd = os.pipe()
    pid = os.fork()
    if pid == 0:  # child: never return into pytest
        code = 0
        try:
            os.close(rfd)
            os.setgroups([])
            os.setgid(NOBODY)
            os.setuid(NOBODY)
            out = _child_connect(socket_path, line)
            os.write(wfd, json.dumps(out).encode())
        except BaseException:  # report anything to the parent as a failure
            code = 1
        finally:
            os._exit(code)
    os.close(wfd)
    chunks = []
    while chunk := os.read(rfd, 65536):
        chunks.append(chunk)
    os.close(rfd)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0, "the nobody child failed"
    kind, detail = json.loads(b"".join(chunks))
    return str(kind), str(detail)


def _child_connect(socket_path: Path, line: bytes) -> list[str]:
    import errno

    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(DEADLINE)
    try:
        sock.connect(str(socket_path))
    except OSError as exc:
        return ["denied", errno.errorcode.get(exc.errno or 0, str(exc))]
    with contextlib.suppress(OSError):
        sock.sendall(line)
    buf = b""
    while True:
        try:
            chunk = sock.recv(65536)
        except OSError:
            break
        if not chunk:
            break
        buf += chunk
    return ["reply", buf.decode("utf-8", "replace")]


@pytest.fixture
def public_tmp() -> Iterator[Path]:
    """A directory outside pytest's private (0700) tree, so nobody can reach into it."""
    path = Path(tempfile.mkdtemp(prefix="bs-"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@needs_root
def test_another_user_cannot_even_connect_to_the_private_socket(
    daemon_factory: DaemonFactory, tmp_path: Path, public_tmp: Path
) -> None:
    sock_path = public_tmp / "backscroll.sock"
    os.chmod(public_tmp, 0o755)  # the daemon itself must make it private
    d = ready_daemon(tmp_path, daemon_factory, env={"BACKSCROLL_SOCKET": str(sock_path)})
    assert stat.S_IMODE(os.stat(public_tmp).st_mode) == 0o700
    kind, detail = _as_nobody(sock_path, _req("status", {}))
    assert (kind, detail) == ("denied", "EACCES")
    os.chmod(public_tmp, 0o711)  # a reachable directory: the 0600 socket still says no
    kind, detail = _as_nobody(sock_path, _req("status", {}))
    assert (kind, detail) == ("denied", "EACCES")
    normal_search(d)


@needs_root
def test_another_user_that_reaches_the_socket_is_refused_by_peer_credentials(
    daemon_factory: DaemonFactory, tmp_path: Path, public_tmp: Path
) -> None:
    sock_path = public_tmp / "backscroll.sock"
    d = ready_daemon(tmp_path, daemon_factory, env={"BACKSCROLL_SOCKET": str(sock_path)})
    os.chmod(public_tmp, 0o711)  # opened up by the test only, after READY
    os.chmod(sock_path, 0o666)
    with d.raw_connect(timeout=DEADLINE) as root_sock:  # a connection of the owner, held open
        kind, detail = _as_nobody(sock_path, _req("search", {"query": MARKER}))
        assert kind == "reply"
        lines = [json.loads(x) for x in detail.splitlines() if x.strip()]
        assert len(lines) == 1, "nobody got more than the refusal"  # then EOF: disconnected
        assert lines[0]["error"]["code"] == protocol.INVALID_REQUEST
        assert "serves only its own user" in lines[0]["error"]["message"]
        assert MARKER not in detail
        root_sock.sendall(_req("search", {"query": MARKER, "fallback": False}))
        reply = read_reply(root_sock)
        assert reply is not None and reply["result"]["hits"]
    os.chmod(sock_path, 0o600)  # clients refuse a socket open to others
    normal_search(d)
    d.stop()
    refusals = [json.loads(x) for x in d.stderr_text().splitlines() if '"peer_refused"' in x]
    assert [r["uid"] for r in refusals] == [NOBODY]


# --------------------------------------------------------------------------- private files


@contextlib.contextmanager
def umask(mask: int) -> Iterator[None]:
    old = os.umask(mask)
    try:
        yield
    finally:
        os.umask(old)


def _mode(path: Path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def test_data_and_socket_are_private_even_when_started_with_umask_zero(
    daemon_factory: DaemonFactory, tmp_path: Path
) -> None:
    sock_path = tmp_path / "s" / "fresh" / "backscroll.sock"  # a dir the daemon makes
    with umask(0):  # inherited by the daemon subprocess
        d = ready_daemon(tmp_path, daemon_factory, env={"BACKSCROLL_SOCKET": str(sock_path)})
    assert _mode(d.data_dir) == 0o700
    assert _mode(sock_path.parent) == 0o700
    assert _mode(sock_path) == 0o600
    assert d.stop() == 0
    files = [p for p in d.data_dir.iterdir() if p.is_file()]
    assert d.db_path in files
    assert {p.name: _mode(p) for p in files} == {p.name: 0o600 for p in files}


def test_the_directories_made_above_the_data_directory_are_not_world_writable(
    tmp_path: Path,
) -> None:
    data = tmp_path / "home" / ".local" / "share" / "backscroll"
    env = {**os.environ, "BACKSCROLL_HOME": str(data), "HOME": str(tmp_path / "home")}
    with umask(0):  # inherited by the command
        done = subprocess.run([sys.executable, "-m", "backscroll", "index"], env=env,
                              capture_output=True, text=True, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert _mode(data) == 0o700
    for parent in (data.parent, data.parent.parent, data.parent.parent.parent):
        assert _mode(parent) & 0o022 == 0, (parent, oct(_mode(parent)))


def test_world_readable_data_socket_dir_and_database_are_repaired_at_start(
    daemon_factory: DaemonFactory, tmp_path: Path
) -> None:
    data = tmp_path / "data"
    sock_dir = tmp_path / "s" / "open"
    for directory in (data, sock_dir):
        directory.mkdir(parents=True)
        os.chmod(directory, 0o755)
    env = {"BACKSCROLL_SOCKET": str(sock_dir / "b.sock")}
    with umask(0):
        d = ready_daemon(tmp_path, daemon_factory, env=env)
    assert (_mode(data), _mode(sock_dir), _mode(sock_dir / "b.sock")) == (0o700, 0o700, 0o600)
    assert d.stop() == 0
    os.chmod(data, 0o755)
    os.chmod(d.db_path, 0o644)
    os.chmod(sock_dir, 0o755)
    with umask(0):
        again = daemon_factory(env=env)
    assert (_mode(data), _mode(d.db_path), _mode(sock_dir)) == (0o700, 0o600, 0o700)
    normal_search(again)


def test_a_shared_sticky_socket_directory_is_refused_not_made_private(
    daemon_factory: DaemonFactory, tmp_path: Path
) -> None:
    """A socket put straight in a /tmp-like directory must not chmod that directory
    to 0700 (as root that would lock every other user out of it)."""
    shared = tmp_path / "s" / "shared"
    shared.mkdir(parents=True)
    os.chmod(shared, 0o1777)
    plant_corpus(tmp_path / "home")
    d = daemon_factory(env={"BACKSCROLL_SOCKET": str(shared / "b.sock")}, wait_ready=False)
    assert d.wait() == 1
    assert stat.S_IMODE(os.stat(shared).st_mode) == 0o1777
    assert not (shared / "b.sock").exists()
    assert "BACKSCROLL_SOCKET" in d.stderr_text()


def test_a_client_that_has_just_connected_is_not_closed_to_make_room(
    daemon_factory: DaemonFactory, tmp_path: Path
) -> None:
    """At the cap, the newcomer's room comes from a served, idle connection, not
    from one that connected a moment ago and is about to send (in a burst of
    clients, those got EOF and no reply)."""
    d = ready_daemon(tmp_path, daemon_factory, config="server:\n  max_connections: 3\n")
    assert d.call("status", {})["daemon"]["connections"] == 1  # the harness's own
    fresh = blocking_connect(d.socket_path)  # connected first, not yet sending
    assert d.call("status", {})["daemon"]["connections"] == 2  # (idle again after fresh)
    served = blocking_connect(d.socket_path)
    served.sendall(_req("status", {}, rid=1))
    assert read_reply(served) is not None
    newcomer = blocking_connect(d.socket_path)
    try:
        fresh.sendall(_req("status", {}, rid=2))
        reply = read_reply(fresh)
        assert reply is not None and reply["id"] == 2, "the fresh connection was closed"
        newcomer.sendall(_req("status", {}, rid=3))
        assert (read_reply(newcomer) or {}).get("id") == 3
    finally:
        for s in (fresh, served, newcomer):
            s.close()
