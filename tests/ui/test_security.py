"""Who may reach the viewer: the per-start token, a loopback Host, a CSRF token on
POST; and nothing listens on TCP unless the viewer was asked for. Plain HTTP
against a real daemon (the browser tests repeat the token check in Chromium)."""

from __future__ import annotations

import html
import os
import socket
import sys
from pathlib import Path

import pytest

from backscroll.client import RemoteError
from tests.conftest import DaemonFactory
from tests.daemon.harness import run_cli
from tests.ui.conftest import Viewer, open_viewer


def test_the_token_in_the_url_becomes_an_httponly_cookie_and_leaves_the_url(
    viewer: Viewer,
) -> None:
    status, headers, _ = viewer.get(f"/sessions?host=codex&token={viewer.token}", cookie=False)
    assert status == 303
    assert headers["location"] == "/sessions?host=codex"
    cookie = headers["set-cookie"]
    assert cookie.startswith(f"backscroll-{viewer.port}={viewer.token};")
    assert "HttpOnly" in cookie and "samesite=strict" in cookie.lower()
    status, _, body = viewer.get("/sessions?host=codex")
    assert status == 200 and "codex" in body


def test_a_request_without_the_token_is_refused(viewer: Viewer) -> None:
    status, _, body = viewer.get("/", cookie=False)
    assert status == 401
    assert "backscroll ui" in body
    status, _, _ = viewer.get("/api/search?q=parser", headers={"Cookie": "backscroll-1=x"},
                              cookie=False)  # fmt: skip
    assert status == 401


def test_a_wrong_token_is_refused(viewer: Viewer) -> None:
    status, headers, _ = viewer.get("/?token=" + "A" * len(viewer.token), cookie=False)
    assert status == 401
    assert "set-cookie" not in headers
    wrong = f"backscroll-{viewer.port}={'B' * len(viewer.token)}"
    assert viewer.get("/", headers={"Cookie": wrong}, cookie=False)[0] == 401


@pytest.mark.parametrize("host", ["evil.example", "evil.example:{port}", "127.0.0.1.nip.io:{port}",
                                  "127.0.0.1:1", "10.0.0.1:{port}", ""])  # fmt: skip
def test_a_foreign_host_header_is_refused_even_with_the_token(viewer: Viewer, host: str) -> None:
    status, _, body = viewer.get("/", headers={"Host": host.format(port=viewer.port)})
    assert status == 403
    assert "Host not allowed" in body


@pytest.mark.parametrize("host", ["127.0.0.1:{port}", "localhost:{port}", "LOCALHOST", "[::1]"])
def test_loopback_host_names_are_served(viewer: Viewer, host: str) -> None:
    assert viewer.get("/", headers={"Host": host.format(port=viewer.port)})[0] == 200


def test_a_post_without_the_csrf_token_is_refused(viewer: Viewer) -> None:
    form = {"Content-Type": "application/x-www-form-urlencoded"}
    status, _, body = viewer.request("POST", "/sync", body="", headers=form)
    assert status == 403 and "CSRF" in body
    status, _, _ = viewer.request("POST", "/sync", body="csrf=nope", headers=form)
    assert status == 403
    status, _, _ = viewer.request("POST", "/sync", body="{}",
                                  headers={"Content-Type": "application/json"})  # fmt: skip
    assert status == 403


def test_a_post_with_the_pages_csrf_token_is_served(viewer: Viewer) -> None:
    _, _, page = viewer.get("/health")
    csrf = page.split('name="csrf" value="', 1)[1].split('"', 1)[0]
    form = {"Content-Type": "application/x-www-form-urlencoded"}
    status, headers, _ = viewer.request("POST", "/sync", body=f"csrf={csrf}", headers=form)
    assert status == 303
    assert headers["location"].startswith("/health?synced=")
    status, headers, _ = viewer.request("POST", "/sync", headers={"X-CSRF-Token": csrf})
    assert status == 303


def test_a_post_from_another_origin_is_refused_even_with_the_csrf_token(viewer: Viewer) -> None:
    _, _, page = viewer.get("/health")
    csrf = page.split('name="csrf" value="', 1)[1].split('"', 1)[0]
    headers = {"X-CSRF-Token": csrf, "Origin": "http://evil.example"}
    status, _, body = viewer.request("POST", "/sync", headers=headers)
    assert status == 403 and "another site" in body


def test_pages_forbid_framing_and_inline_scripts(viewer: Viewer) -> None:
    _, headers, _ = viewer.get("/")
    csp = headers["content-security-policy"]
    assert "frame-ancestors 'none'" in csp and "script-src 'self'" in csp
    assert headers["referrer-policy"] == "no-referrer"


def _listening_tcp_ports(pid: int) -> set[int]:
    """TCP ports in LISTEN state on sockets the process holds (Linux /proc)."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    ports = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if fields[3] == "0A" and fields[9] in inodes:  # 0A: LISTEN
                ports.add(int(fields[1].rsplit(":", 1)[1], 16))
    return ports


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc (Linux)")
def test_nothing_listens_on_tcp_until_the_viewer_is_asked_for(
    daemon_factory: DaemonFactory,
) -> None:
    d = daemon_factory()
    assert _listening_tcp_ports(d.pid) == set()
    v = open_viewer(d)
    assert _listening_tcp_ports(d.pid) == {v.port}
    assert open_viewer(d).url == v.url  # asked again: the same server, the same token


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_ui_enabled_serves_on_the_configured_port_from_daemon_start(
    daemon_factory: DaemonFactory, tmp_path: Path
) -> None:
    port = _free_port()
    d = daemon_factory(config=f"ui:\n  enabled: true\n  port: {port}\n")
    assert _listening_tcp_ports(d.pid) == {port} or not sys.platform.startswith("linux")
    done = run_cli(tmp_path, "ui", "--no-open", "--json",
                   env={"BACKSCROLL_SOCKET": str(d.socket_path),
                        "BACKSCROLL_CONFIG": str(d.config_path)})  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert f'"url": "http://127.0.0.1:{port}/?token=' in done.stdout
    v = open_viewer(d)
    assert v.port == port
    assert v.get("/")[0] == 200


def test_a_port_in_use_is_a_clear_error_and_the_daemon_keeps_serving(
    daemon_factory: DaemonFactory,
) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        d = daemon_factory(config=f"ui:\n  port: {port}\n")
        with pytest.raises(RemoteError) as err:
            d.call("ui", {})
        assert f"127.0.0.1:{port}" in err.value.message and "ui.port" in err.value.message
        assert d.call("status", {})["daemon"]["writer_alive"]


def test_backscroll_ui_without_a_daemon_says_how_to_start_one(tmp_path: Path) -> None:
    done = run_cli(tmp_path, "ui", "--no-open",
                   env={"BACKSCROLL_SOCKET": str(tmp_path / "none.sock")})  # fmt: skip
    assert done.returncode == 2
    assert "daemon is not running" in done.stderr and "backscroll daemon" in done.stderr


def test_backscroll_ui_opens_the_url_with_the_token_in_the_browser(
    daemon_factory: DaemonFactory, tmp_path: Path
) -> None:
    d = daemon_factory()
    opened = tmp_path / "opened.txt"
    fake = tmp_path / "fake_browser.py"
    fake.write_text(f"import sys\nopen({str(opened)!r}, 'w').write(sys.argv[1])\n")
    done = run_cli(tmp_path, "ui", env={"BACKSCROLL_SOCKET": str(d.socket_path),
                                        "BROWSER": f"{sys.executable} {fake} %s"})  # fmt: skip
    assert done.returncode == 0, done.stderr
    page = opened.read_text()  # a 0600 page that forwards to the URL, not the URL itself
    assert page.startswith("file://") and "token" not in page
    body = Path(page.removeprefix("file://")).read_text()
    url = html.unescape(body.split('href="', 1)[1].split('"', 1)[0])
    assert url.startswith("http://127.0.0.1:") and "/?token=" in url
    assert f"backscroll viewer: {url}" in done.stdout
    assert (
        Viewer(d, url, int(url.split(":")[2].split("/")[0]), url.split("=", 1)[1]).get("/")[0]
        == 200
    )


def test_the_browser_is_given_a_private_page_not_the_url_with_its_token(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A browser's command line is readable by every local user (/proc/<pid>/cmdline).
    import webbrowser

    from backscroll.cli_ui import open_in_browser

    opened: list[str] = []

    def browser(uri: str, new: int = 0) -> bool:
        opened.append(uri)
        return True

    monkeypatch.setattr(webbrowser, "open", browser)
    private = tmp_path / "run"
    private.mkdir(mode=0o700)
    url = "http://127.0.0.1:8765/?token=s3cr3t-t0ken&x=<1>"
    assert open_in_browser(url, private) is True
    (uri,) = opened
    assert uri.startswith("file://") and "s3cr3t" not in uri
    page = private / "open-viewer.html"
    assert uri == page.as_uri()
    assert page.stat().st_mode & 0o777 == 0o600
    body = page.read_text()
    assert "http://127.0.0.1:8765/?token=s3cr3t-t0ken&amp;x=&lt;1&gt;" in body
    assert "<1>" not in body
