"""A real daemon serving the viewer over real sample transcripts, plus one
session written here with a word found nowhere else."""

from __future__ import annotations

import http.client
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import DaemonFactory
from tests.daemon.harness import DaemonProcess, claude_user_line, populate

#: The session written by :func:`write_long_session`; its turn HIT_TURN holds WORD.
SESSION = "5e551011-0000-4000-8000-0000000000aa"
PROJECT = "/srv/alpha"
WORD = "quokkaharbour"
TURNS = 40
HIT_TURN = 30


def write_long_session(home: Path) -> Path:
    directory = home / ".claude" / "projects" / "-srv-alpha"
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{SESSION}.jsonl"
    with open(path, "w", encoding="utf-8") as fh:
        for n in range(1, TURNS + 1):
            text = f"turn {n} talks about the parser"
            if n == HIT_TURN:
                text = f"turn {n}: move the {WORD} cache behind the parser"
            line = claude_user_line(SESSION, f"u-{n:04d}", text, cwd=PROJECT)
            fh.write(line.replace("22:57:54", f"22:{n // 60:02d}:{n % 60:02d}"))
    return path


@dataclass
class Viewer:
    daemon: DaemonProcess
    url: str
    port: int
    token: str

    def connect(self) -> http.client.HTTPConnection:
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)

    def cookie(self) -> str:
        return f"backscroll-{self.port}={self.token}"

    def get(self, path: str, headers: dict[str, str] | None = None,
            cookie: bool = True) -> tuple[int, dict[str, str], str]:  # fmt: skip
        return self.request("GET", path, headers=headers, cookie=cookie)

    def request(self, method: str, path: str, body: str | None = None,
                headers: dict[str, str] | None = None,
                cookie: bool = True) -> tuple[int, dict[str, str], str]:  # fmt: skip
        conn = self.connect()
        try:
            h = dict(headers or {})
            if cookie:
                h.setdefault("Cookie", self.cookie())
            conn.request(method, path, body=body, headers=h)
            r = conn.getresponse()
            return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read().decode()
        finally:
            conn.close()


def open_viewer(daemon: DaemonProcess) -> Viewer:
    info: dict[str, Any] = daemon.call("ui", {})
    url = str(info["url"])
    return Viewer(daemon, url, int(info["port"]), url.split("token=", 1)[1])


@pytest.fixture
def viewer(daemon_factory: DaemonFactory, tmp_path: Path) -> Iterator[Viewer]:
    home = tmp_path / "home"
    populate(home)
    write_long_session(home)
    d = daemon_factory()
    d.sync()
    yield open_viewer(d)
