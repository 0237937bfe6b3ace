"""The viewer: a Starlette app answering through the daemon's own query methods.

It holds no SQL: every page asks :class:`Backend` (in the daemon, the same
dispatch the Unix socket uses) and renders the result.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from backscroll.protocol import INVALID_PARAMS, ProtocolError
from backscroll.ui import charts, pages
from backscroll.ui.security import HEADERS, Guard, Secrets
from backscroll.wording import worded

STATIC = Path(__file__).parent / "static"
SEARCH_LIMIT = 20
#: Sessions listed at first (the page links to more): a short page paints fast.
SESSIONS_PAGE = 200
#: Activity over 90 days scans every turn of the window: keep an answer this long.
ACTIVITY_TTL_S = 30.0
#: The days an activity page may end on (others show the latest 90 days).
UNTIL_YEARS = (1970, 9000)
#: The doctor's findings are re-checked in the background when older than this.
DOCTOR_TTL_S = 60.0
#: How long the health page waits for the first doctor run before showing the status alone.
DOCTOR_WAIT_S = 1.5


class Backend(Protocol):
    async def call(self, method: str, params: dict[str, Any]) -> Any: ...

    async def doctor(self) -> list[dict[str, Any]]: ...

    def hosts(self) -> list[str]: ...


def _filters(request: Request) -> dict[str, str]:
    q = request.query_params
    out = {k: q.get(k, "").strip() for k in ("host", "project", "role", "since")}
    # A space after the last word says it is finished (no prefix match): keep it.
    out["q"] = q.get("q", "").lstrip()
    return out


def _search_params(f: dict[str, str]) -> dict[str, Any]:
    params: dict[str, Any] = {
        "query": f["q"],
        "limit": SEARCH_LIMIT,
        "max_turn_chars": 600,
        "max_total_chars": SEARCH_LIMIT * 700,
        # Counting every match is a second pass over them (half the time of a
        # frequent word on a large index): the page says "the N best" instead.
        "count": False,
        "prefix": True,  # the last word may be half typed
    }
    for name in ("host", "project", "role"):
        if f[name]:
            params[name] = f[name]
    if f["since"]:
        try:
            params["since_days"] = float(f["since"])
        except ValueError:
            raise ProtocolError(INVALID_PARAMS, "since must be a number of days") from None
    return params


class Viewer:
    def __init__(self, backend: Backend, keys: Secrets) -> None:
        self.backend = backend
        self.keys = keys
        self._activity: dict[str, tuple[float, Any]] = {}
        self._doctor: tuple[float, list[dict[str, Any]]] | None = None
        self._doctor_task: asyncio.Task[None] | None = None

    def html(self, body: str, status: int = 200) -> Response:
        return HTMLResponse(body, status_code=status, headers=HEADERS)

    async def _results(self, f: dict[str, str]) -> tuple[dict[str, Any], str]:
        if not f["q"].strip():
            return {}, ""
        try:
            params = _search_params(f)
            result = worded(await self.backend.call("search", params), "viewer", params)
        except ProtocolError as exc:
            result = {"hits": [], "message": exc.message}
        return result, pages.results(result, f["q"], SEARCH_LIMIT)

    async def search(self, request: Request) -> Response:
        """The search page. With a query it is sent before the search runs (the
        search of a frequent word can take longer than a first paint should): a
        placeholder that app.js fills from ``/results``; ``render=1`` (what a
        browser without scripts is sent to) runs the search first."""
        f = _filters(request)
        hosts = self.backend.hosts()
        if f["q"].strip() and request.query_params.get(pages.RENDER) != "1":
            head = pages.pending_head(f)
            return self.html(pages.search_page(f, hosts, pages.pending(f), self.keys.csrf, head))
        _result, block = await self._results(f)
        return self.html(pages.search_page(f, hosts, block, self.keys.csrf))

    async def results(self, request: Request) -> Response:
        _result, block = await self._results(_filters(request))
        return self.html(block)

    async def api_search(self, request: Request) -> Response:
        f = _filters(request)
        try:
            params = _search_params(f)
            result = worded(await self.backend.call("search", params), "viewer", params)
        except ProtocolError as exc:
            return JSONResponse({"error": exc.message}, status_code=400, headers=HEADERS)
        return JSONResponse(result, headers=HEADERS)

    async def sessions(self, request: Request) -> Response:
        f = _filters(request)
        limit = request.query_params.get("limit", "")
        params: dict[str, Any] = {
            "limit": min(int(limit), 10000) if _count(limit) else SESSIONS_PAGE
        }
        for name in ("host", "project"):
            if f[name]:
                params[name] = f[name]
        if f["since"]:
            with contextlib.suppress(ValueError):
                params["since_days"] = float(f["since"])
        try:
            result = worded(await self.backend.call("sessions", params), "viewer", params)
        except ProtocolError as exc:
            result = {"sessions": [], "message": exc.message}
        body = pages.sessions_page(result, f, params["limit"], self.backend.hosts(), self.keys.csrf)
        return self.html(body)

    async def session(self, request: Request) -> Response:
        q = request.query_params
        sid = q.get("id", "")
        host = q.get("host") or None
        key = q.get("key") or None
        hit: int | None = None
        if key and sid:
            try:
                located = await self.backend.call("locate", _clean(session=sid, key=key, host=host))
                hit = located.get("turn")
            except ProtocolError:
                hit = None
        around = hit
        if _count(q.get("around", "")) is not None:
            around = int(q["around"])
        params = _clean(session=sid, host=host, around=around, window=21, max_turn_chars=20000)
        try:
            result = worded(await self.backend.call("session", params), "viewer", params)
        except ProtocolError as exc:
            result = {"session": None, "message": exc.message}
        status = 200 if result.get("session") else 404
        return self.html(pages.session_page(result, hit, self.keys.csrf), status)

    async def activity(self, request: Request) -> Response:
        params: dict[str, Any] = {"days": 90}
        until = request.query_params.get("until", "")
        if until:
            try:
                day = datetime.strptime(until, "%Y-%m-%d").replace(tzinfo=UTC)
            except ValueError:
                day = None
            # A year before the epoch or near 9999 has no 90 days of dates around it.
            if day is not None and UNTIL_YEARS[0] <= day.year <= UNTIL_YEARS[1]:
                params["until"] = day.timestamp() + 86399
        key = repr(sorted(params.items()))
        now = time.monotonic()
        cached = self._activity.get(key)
        if cached is None or now - cached[0] > ACTIVITY_TTL_S:
            cached = (now, worded(await self.backend.call("activity", params), "viewer", params))
            self._activity = {key: cached}
        return self.html(charts.activity_page(cached[1], self.keys.csrf))

    async def health(self, request: Request) -> Response:
        status = await self.backend.call("status", {})
        findings = await self._findings()
        synced = request.query_params.get("synced")
        return self.html(pages.health_page(status, findings, synced, self.keys.csrf))

    async def _findings(self) -> tuple[float, list[dict[str, Any]]] | None:
        """The doctor's findings, checked in the background: a check can take seconds
        (it walks the hosts' directories), so the page shows the last answer (at most
        DOCTOR_TTL_S old, else a fresh run is started) and waits for a first one only
        briefly."""
        stale = self._doctor is None or time.time() - self._doctor[0] > DOCTOR_TTL_S
        if stale and (self._doctor_task is None or self._doctor_task.done()):
            self._doctor_task = asyncio.get_running_loop().create_task(self._run_doctor())
        if self._doctor is None and self._doctor_task is not None:
            await asyncio.wait({self._doctor_task}, timeout=DOCTOR_WAIT_S)
        return self._doctor

    async def _run_doctor(self) -> None:
        findings = await self.backend.doctor()
        self._doctor = (time.time(), findings)

    async def sync(self, request: Request) -> Response:
        done = await self.backend.call("sync", {})
        note = f"{done.get('files_changed', 0)} files, {done.get('turns_added', 0)} turns"
        return RedirectResponse(f"/health?synced={note}", status_code=303, headers=HEADERS)


def _clean(**params: Any) -> dict[str, Any]:
    return {k: v for k, v in params.items() if v is not None}


def create_app(backend: Backend, keys: Secrets) -> Guard:
    """The viewer's ASGI app, behind the :class:`Guard`."""
    v = Viewer(backend, keys)
    app = Starlette(
        routes=[
            Route("/", v.search),
            Route("/results", v.results),
            Route("/api/search", v.api_search),
            Route("/sessions", v.sessions),
            Route("/session", v.session),
            Route("/activity", v.activity),
            Route("/health", v.health),
            Route("/sync", v.sync, methods=["POST"]),
            Mount("/static", StaticFiles(directory=STATIC), name="static"),
        ]
    )
    return Guard(app, keys)


def _count(text: str) -> int | None:
    """``text`` as a whole number, or None (``"²".isdigit()`` is true, but
    ``int("²")`` fails: only ASCII digits count)."""
    return int(text) if text.isascii() and text.isdigit() else None
