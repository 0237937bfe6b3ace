"""The README's first command, in a fresh virtual environment: ``pip install .``
without extras, then ``backscroll mcp`` spoken to over stdio (initialize,
tools/list, tools/call) against a real index of the sample transcripts.

Marked ``install``: it creates a venv and installs backscroll's dependencies
from the package index (or pip's cache) — about 40 s; ``-m "not install"``
leaves it out. Without a reachable package index it is skipped, saying why.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from backscroll import recall
from tests.daemon.harness import daemon_env, populate, session_uuid

ROOT = Path(__file__).resolve().parents[1]
OFFLINE = ("Could not find a version", "No matching distribution", "NewConnectionError",
           "Network is unreachable", "Temporary failure in name resolution")  # fmt: skip


def fresh_install(tmp_path: Path) -> Path:
    """A copy of the source (so the build leaves the worktree alone), a new venv,
    and ``pip install`` of the copy; the venv's bin directory."""
    src = tmp_path / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, src / name)
    shutil.copytree(ROOT / "backscroll", src / "backscroll",
                    ignore=shutil.ignore_patterns("__pycache__"))  # fmt: skip
    venv = tmp_path / "v"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_REQUIRE", "VIRTUAL_ENV"))}
    done = subprocess.run(
        [str(venv / "bin" / "pip"), "install", "-q", "--disable-pip-version-check", str(src)],
        capture_output=True, text=True, timeout=600, env=env, check=False,
    )  # fmt: skip
    if done.returncode != 0:
        if any(sign in done.stderr for sign in OFFLINE):
            pytest.skip(f"no package index reachable for pip install: {done.stderr[-300:]}")
        raise AssertionError(f"pip install . failed:\n{done.stderr[-3000:]}")
    return venv / "bin"


class Stdio:
    def __init__(self, cmd: list[str], env: dict[str, str]) -> None:
        pipe = subprocess.PIPE
        self.proc = subprocess.Popen(cmd, env=env, stdin=pipe, stdout=pipe, stderr=pipe, text=True)
        self.ids = 0

    def send(self, method: str, params: dict[str, Any] | None = None, *, notify: bool = False
             ) -> dict[str, Any] | None:  # fmt: skip
        assert self.proc.stdin is not None and self.proc.stdout is not None
        body: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            body["params"] = params
        if not notify:
            self.ids += 1
            body["id"] = self.ids
        self.proc.stdin.write(json.dumps(body) + "\n")
        self.proc.stdin.flush()
        if notify:
            return None
        line = self.proc.stdout.readline()
        assert line, f"backscroll mcp closed stdout: {self.close()}"
        reply: dict[str, Any] = json.loads(line)
        assert reply["id"] == self.ids
        return reply

    def close(self) -> str:
        assert self.proc.stdin is not None and self.proc.stderr is not None
        self.proc.stdin.close()
        self.proc.wait(30)
        err = self.proc.stderr.read()
        for stream in (self.proc.stdout, self.proc.stderr):
            assert stream is not None
            stream.close()
        return err


@pytest.mark.install
def test_backscroll_mcp_works_right_after_a_plain_pip_install(tmp_path: Path) -> None:
    bin_dir = fresh_install(tmp_path)
    # No MCP SDK came with it, and none is needed.
    sdk = subprocess.run([str(bin_dir / "python"), "-c", "import mcp"], capture_output=True,
                         check=False)  # fmt: skip
    assert sdk.returncode != 0
    populate(tmp_path / "home")
    env = daemon_env(tmp_path)
    for name in recall.SESSION_ENV:
        env.pop(name, None)
    env["PATH"] = f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"
    indexed = subprocess.run([str(bin_dir / "backscroll"), "index", "--json"], env=env,
                             capture_output=True, text=True, timeout=300, check=False)  # fmt: skip
    assert indexed.returncode == 0, indexed.stderr
    server = Stdio([str(bin_dir / "backscroll"), "mcp"], env)
    try:
        init = server.send("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                          "clientInfo": {"name": "t", "version": "0"}})  # fmt: skip
        server.send("notifications/initialized", notify=True)
        tools = server.send("tools/list")
        found = server.send("tools/call", {"name": "search_history",
                                           "arguments": {"query": "phoenix"}})  # fmt: skip
    finally:
        err = server.close()
    assert init and init["result"]["serverInfo"]["name"] == "backscroll", err
    assert tools and [t["name"] for t in tools["result"]["tools"]] == [
        "search_history", "list_sessions", "read_session",
    ]  # fmt: skip
    assert found and found["result"]["isError"] is False
    hits = found["result"]["structuredContent"]["hits"]
    assert session_uuid(4) in {h["session_id"] for h in hits}
    assert all(isinstance(h["n"], int) for h in hits)
    assert found["result"]["content"][0]["text"].startswith(recall.HEADER)
