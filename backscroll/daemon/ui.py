"""The web viewer inside the daemon: a uvicorn server on the daemon's own loop,
answering through the same dispatch as the Unix socket.

Nothing listens until asked: ``ui.enabled`` at start, or the ``ui`` method
(``backscroll ui``). Starlette and uvicorn are imported only then.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from backscroll import protocol
from backscroll.config import Config
from backscroll.daemon.handlers import DaemonContext, dispatch
from backscroll.protocol import ProtocolError, check_query_length

log = logging.getLogger("backscroll.ui")

HOST = "127.0.0.1"
#: Seconds uvicorn may take to start listening on a socket already bound.
START_TIMEOUT_S = 10.0


class DaemonBackend:
    """What the viewer asks for, answered by the daemon's own handlers."""

    def __init__(self, ctx: DaemonContext, config: Config) -> None:
        self.ctx = ctx
        self.config = config

    async def call(self, method: str, params: dict[str, Any]) -> Any:
        # (the same limit as a request on the socket: a query of a thousand words
        # made SQLite's expression tree too deep, an HTTP 500)
        check_query_length(method, params, self.config.server.max_query_chars)
        return await dispatch(self.ctx, method, params)

    async def doctor(self) -> list[dict[str, Any]]:
        from backscroll import doctor

        source = Path(self.config.source) if self.config.source else None
        findings = await asyncio.to_thread(doctor.run, source)
        return [f.as_dict() for f in findings]

    def hosts(self) -> list[str]:
        return sorted(self.ctx.enabled_hosts)


class UiServer:
    def __init__(self, config: Config, ctx: DaemonContext) -> None:
        self.config = config
        self.ctx = ctx
        self.server: Any = None
        self.task: asyncio.Task[None] | None = None
        self.url: str | None = None
        self.port: int | None = None
        self._lock = asyncio.Lock()

    async def start(self) -> dict[str, Any]:
        """Serve (once); the URL with the token, and the port."""
        async with self._lock:
            if self.task is None or self.task.done():
                await self._start()
        return {"url": self.url, "port": self.port, "host": HOST}

    async def _start(self) -> None:
        import uvicorn

        from backscroll.ui.app import create_app
        from backscroll.ui.security import Secrets

        sock = _bind(self.config.ui.port)
        port = int(sock.getsockname()[1])
        keys = Secrets(port=port)
        app = create_app(DaemonBackend(self.ctx, self.config), keys)
        cfg = uvicorn.Config(app, lifespan="off", log_config=None, access_log=False,
                             server_header=False, timeout_graceful_shutdown=2)  # fmt: skip
        server = _server_class()(cfg)
        task = asyncio.get_running_loop().create_task(server.serve(sockets=[sock]))
        deadline = asyncio.get_running_loop().time() + START_TIMEOUT_S
        while not server.started:  # uvicorn sets it once it serves the socket
            if task.done() or asyncio.get_running_loop().time() > deadline:
                sock.close()
                raise ProtocolError(protocol.INTERNAL_ERROR, "the web viewer did not start")
            await asyncio.sleep(0.01)
        self.server, self.task, self.port = server, task, port
        self.url = f"http://{HOST}:{port}/?token={keys.token}"
        log.info("web viewer serving", extra={"event": "ui_ready", "port": port})

    async def stop(self) -> None:
        if self.server is None or self.task is None:
            return
        self.server.should_exit = True
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self.task, 5)
        self.server = self.task = None


def _bind(port: int) -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((HOST, port))
        sock.listen(128)
    except OSError as exc:
        sock.close()
        raise ProtocolError(
            protocol.INTERNAL_ERROR,
            f"the web viewer cannot listen on {HOST}:{port} ({exc.strerror or exc}); set "
            "ui.port in the config to a free port, or to 0 for any free one",
        ) from None
    sock.setblocking(False)
    return sock


def _server_class() -> type:
    import uvicorn

    class Server(uvicorn.Server):
        """uvicorn's server, leaving the signals to the daemon that hosts it."""

        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:
            yield

    return Server
