"""Who may talk to the viewer: a loopback Host, the per-start token, and a CSRF
token on anything that changes state.

The viewer listens on 127.0.0.1 only, yet any web page the person visits can
make their browser send requests there. So:

- the ``Host`` header must name loopback (``127.0.0.1``, ``localhost``, ``[::1]``)
  and the viewer's port: a DNS-rebinding page sends its own host name and is
  refused;
- every request carries the random token made when the viewer started: once in
  the URL that ``backscroll ui`` prints (answered with a redirect that moves it
  into an HttpOnly, SameSite=Strict cookie and out of the address bar), then in
  that cookie;
- a request that is not GET/HEAD carries the CSRF token too (an
  ``X-CSRF-Token`` header or a ``csrf`` form field), and its ``Origin``, when
  sent, is the viewer's own.
"""

from __future__ import annotations

import hmac
import secrets
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, urlencode

from starlette.datastructures import Headers
from starlette.responses import HTMLResponse, RedirectResponse, Response

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")
SAFE_METHODS = ("GET", "HEAD")
MAX_FORM_BYTES = 64 * 1024

HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
    "Cache-Control": "no-store",
}


@dataclass(frozen=True)
class Secrets:
    """The access token (URL once, then cookie) and the CSRF token of one start."""

    port: int
    token: str = field(default_factory=lambda: secrets.token_urlsafe(32))
    csrf: str = field(default_factory=lambda: secrets.token_urlsafe(32))

    @property
    def cookie(self) -> str:
        # Cookies are not kept apart by port: one name per viewer port.
        return f"backscroll-{self.port}"


def loopback_host(host: str | None, port: int) -> bool:
    """Whether a Host header names loopback and this port (or no port)."""
    if not host:
        return False
    host = host.strip().lower()
    return any(host in (name, f"{name}:{port}") for name in LOOPBACK_NAMES)


def _same(given: str | None, expected: str) -> bool:
    return given is not None and hmac.compare_digest(given.encode(), expected.encode())


def _refuse(status: int, title: str, detail: str) -> Response:
    body = (
        f"<!doctype html><meta charset=utf-8><title>{title}</title><h1>{title}</h1><p>{detail}</p>"
    )
    return HTMLResponse(body, status_code=status, headers=HEADERS)


class Guard:
    """ASGI middleware enforcing the rules in the module docstring."""

    def __init__(self, app: ASGIApp, keys: Secrets) -> None:
        self.app = app
        self.keys = keys

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return  # no websockets, and lifespan is off
        headers = Headers(scope=scope)
        if not loopback_host(headers.get("host"), self.keys.port):
            await _refuse(
                403,
                "Host not allowed",
                "The viewer answers only requests addressed to 127.0.0.1 or localhost.",
            )(scope, receive, send)
            return
        query = parse_qsl(scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True)
        given = [v for k, v in query if k == "token"]
        if given:
            if not _same(given[0], self.keys.token):
                await self._no_access(scope, receive, send)
                return
            rest = urlencode([(k, v) for k, v in query if k != "token"])
            target = scope.get("path", "/") + (f"?{rest}" if rest else "")
            response = RedirectResponse(target, status_code=303, headers=HEADERS)
            response.set_cookie(
                self.keys.cookie, self.keys.token, httponly=True, samesite="strict", path="/"
            )
            await response(scope, receive, send)
            return
        cookies = _cookies(headers.get("cookie", ""))
        if not _same(cookies.get(self.keys.cookie), self.keys.token):
            await self._no_access(scope, receive, send)
            return
        if scope.get("method", "GET") not in SAFE_METHODS:
            checked = await self._check_csrf(scope, receive, send, headers)
            if checked is None:
                return
            receive = checked
        await self.app(scope, receive, send)

    async def _no_access(self, scope: Scope, receive: Receive, send: Send) -> None:
        await _refuse(
            401,
            "Open the link backscroll printed",
            "This viewer needs the link that <code>backscroll ui</code> printed (it carries "
            "a token made when the viewer started). Run <code>backscroll ui</code> again to "
            "get it.",
        )(scope, receive, send)

    async def _check_csrf(
        self, scope: Scope, receive: Receive, send: Send, headers: Headers
    ) -> Receive | None:
        """The receive channel to hand on (the form body replayed), or None: refused."""
        origin = headers.get("origin")
        if origin and origin != "null":
            host = origin.split("://", 1)[-1]
            if not origin.startswith("http://") or not loopback_host(host, self.keys.port):
                refusal = _refuse(403, "Cross-site request refused", "This came from another site.")
                await refusal(scope, receive, send)
                return None
        if _same(headers.get("x-csrf-token"), self.keys.csrf):
            return receive
        body = b""
        if headers.get("content-type", "").startswith("application/x-www-form-urlencoded"):
            more = True
            while more and len(body) <= MAX_FORM_BYTES:
                message = await receive()
                body += message.get("body", b"")
                more = bool(message.get("more_body"))
        form = dict(parse_qsl(body.decode("latin-1"))) if len(body) <= MAX_FORM_BYTES else {}
        if not _same(form.get("csrf"), self.keys.csrf):
            await _refuse(
                403,
                "Missing or wrong CSRF token",
                "A request that changes something must come from the viewer's own page; "
                "reload the page and try again.",
            )(scope, receive, send)
            return None
        sent = False

        async def replay() -> Message:
            nonlocal sent
            if sent:
                return await receive()
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}

        return replay


def _cookies(header: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for part in header.split(";"):
        name, eq, value = part.strip().partition("=")
        if eq:
            out.setdefault(name, value)
    return out
