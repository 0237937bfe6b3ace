"""The web viewer on a large generated corpus: first paint of each page and
search-as-you-type latency, against the same search over the Unix socket.

    python bench/bench_ui.py                          # 200 MB corpus in a temp dir
    python bench/bench_ui.py --corpus DIR --size-mb 2400 --runs 60
    python bench/bench_ui.py --corpus DIR --screenshots   # PNGs of every page in bench/out/

A daemon indexes the corpus (as its $HOME), then serves the viewer. Measured:

- each page over HTTP (one request on a fresh connection, the cookie already
  set): time to first byte and to the last byte, p50/p95 of ``--runs``;
- in headless Chromium (when installed): navigation to each page, time to first
  byte, DOMContentLoaded and first contentful paint, from the Navigation and
  Paint Timing APIs; for the search page opened with a query (sent before its
  search runs), also when app.js has swapped the results in, against the same
  page rendered with its results by the server (``render=1``, the no-script path);
- search as you type: ``/results?q=...`` (the fragment the page swaps in) for a
  mix of frequent and rare words and two-word queries, p50/p95, against the
  ``search`` method with the same parameters on the Unix socket (the baseline:
  the viewer's cost is the ratio).

Targets (issue 16): first paint <= 300 ms, search-as-you-type p50 <= 100 ms.
"""

from __future__ import annotations

import argparse
import http.client
import statistics
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path
from urllib.parse import urlencode

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import corpus  # noqa: E402

from tests.daemon.harness import DaemonProcess, start_daemon  # noqa: E402
from tests.ui import browser  # noqa: E402

PAGES = ("/", "/?q={word}", "/?q={word}&render=1", "/sessions", "/activity?until={day}",
         "/session?id={session}", "/health")  # fmt: skip
OUT = ROOT / "bench" / "out"


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(round(p / 100 * (len(ordered) - 1)), len(ordered) - 1)]


def fmt(values: list[float]) -> str:
    return f"p50 {statistics.median(values):7.1f} ms  p95 {pct(values, 95):7.1f} ms"


class Http:
    def __init__(self, port: int, token: str) -> None:
        self.port = port
        self.cookie = f"backscroll-{port}={token}"

    def get(self, path: str) -> tuple[float, float, int, bytes]:
        """(ms to first byte, ms to last byte, status, body), on a fresh connection."""
        start = time.perf_counter()
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        try:
            conn.request("GET", path, headers={"Cookie": self.cookie})
            r = conn.getresponse()
            first = time.perf_counter()
            body = r.read()
            last = time.perf_counter()
        finally:
            conn.close()
        return (first - start) * 1000, (last - start) * 1000, r.status, body


def queries() -> list[str]:
    words = corpus._WORDS  # Zipf order: frequent first
    picked = [w for w in words if w.isalpha() and len(w) > 3]
    frequent, rare = picked[:10], picked[-10:]
    pairs = [f"{a} {b}" for a, b in zip(picked[10:20], picked[30:40], strict=False)]
    return frequent + rare + pairs


def typed(query: str) -> list[str]:
    """What the page asks while the query is typed (it waits for a 120 ms pause):
    each word half typed (its first 4 letters, matched as a prefix) and whole."""
    out: list[str] = []
    words = query.split()
    for i, word in enumerate(words):
        done = " ".join(words[:i])
        if len(word) > 4:
            out.append(f"{done} {word[:4]}".strip())
        out.append(f"{done} {word}".strip())
    return out


def measure_http(d: DaemonProcess, web: Http, paths: list[str], runs: int) -> None:
    print(f"\npages over HTTP ({runs} runs each, fresh connection, cookie set)")
    for path in paths:
        ttfb, total = [], []
        for _ in range(runs):
            a, b, status, _ = web.get(path)
            assert status == 200, (path, status)
            ttfb.append(a)
            total.append(b)
        print(f"  {path[:44]:<44} first byte {fmt(ttfb)}   last byte p50 "
              f"{statistics.median(total):7.1f} ms")  # fmt: skip


def measure_search(d: DaemonProcess, web: Http, runs: int) -> None:
    client = d.client()
    socket_ms: list[float] = []
    http_ms: list[float] = []
    hits = 0
    for _ in range(runs):
        for query in queries():
            for q in typed(query):
                params = {"query": q, "limit": 20, "max_turn_chars": 600,
                          "max_total_chars": 14000, "prefix": True}  # fmt: skip
                start = time.perf_counter()
                result = client.call("search", params)
                socket_ms.append((time.perf_counter() - start) * 1000)
                hits += len(result["hits"])
                _, last, status, body = web.get("/results?" + urlencode({"q": q}))
                assert status == 200 and b'class="results"' in body
                http_ms.append(last)
    print(f"\nsearch as you type ({len(http_ms)} requests, {hits / max(runs, 1):.0f} hits a round)")
    print(f"  socket `search` (baseline)      {fmt(socket_ms)}")
    print(f"  viewer /results (HTML fragment) {fmt(http_ms)}")
    ratio = statistics.median(http_ms) / statistics.median(socket_ms)
    print(f"  viewer / socket, p50: {ratio:.2f}x")


def measure_activity(d: DaemonProcess, newest: str, runs: int) -> None:
    """The activity query itself (the page keeps an answer 30 s, so HTTP is mostly cached)."""
    client = d.client()
    until = datetime.fromisoformat(newest.replace("Z", "+00:00")).timestamp()
    ms = []
    for _ in range(runs):
        start = time.perf_counter()
        client.call("activity", {"days": 90, "until": until})
        ms.append((time.perf_counter() - start) * 1000)
    print(f"\nactivity over 90 days, uncached, on the socket ({runs} runs): {fmt(ms)}")


def measure_browser(url: str, port: int, paths: list[str], runs: int, shots: bool) -> None:
    why = browser.missing()
    if why:
        print(f"\nChromium: skipped ({why})")
        return
    js = (  # wait for the paint entry (recorded a frame after load), 2 s at most
        "const done = arguments[0];"
        "const n = performance.getEntriesByType('navigation')[0];"
        "const answer = (p) => done([n.responseStart, n.domContentLoadedEventEnd,"
        " p ? p.startTime : null]);"
        "const seen = performance.getEntriesByName('first-contentful-paint')[0];"
        "if (seen) { answer(seen); } else {"
        " new PerformanceObserver((l) => answer(l.getEntries()[0]))"
        ".observe({type: 'paint', buffered: true});"
        " setTimeout(() => answer(null), 2000); }"
    )
    watch = (  # installed in every page before its own scripts: when the results block lands
        "new MutationObserver((_, obs) => {"
        " if (document.querySelector('#results > .results')) {"
        "  window.__shown = performance.now(); obs.disconnect(); }"
        "}).observe(document, {childList: true, subtree: true});"
    )
    shown = (  # a page sent before its search: when app.js has swapped the results in
        "const done = arguments[0];"
        "const look = () => window.__shown !== undefined ? done(window.__shown)"
        " : setTimeout(look, 20);"
        "look();"
    )
    print(f"\nChromium navigation timing ({runs} loads each)")
    with browser.chromium(1280, 900) as drv:
        drv.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": watch})
        drv.get(url)
        for path in paths:
            first, dcl, fcp, hits = [], [], [], []
            fills = "q=" in path and "render=1" not in path
            for _ in range(runs):
                drv.get(f"http://127.0.0.1:{port}{path}")
                a, b, c = drv.execute_async_script(js)
                first.append(a)
                dcl.append(b)
                if c is not None:
                    fcp.append(c)
                if fills:
                    hits.append(drv.execute_async_script(shown))
            paint = f"first paint p50 {statistics.median(fcp):6.1f} ms" if fcp else ""
            if hits:
                paint += f"  results shown p50 {statistics.median(hits):6.1f} ms"
            print(f"  {path[:44]:<44} first byte p50 {statistics.median(first):6.1f} ms  "
                  f"DOMContentLoaded p50 {statistics.median(dcl):6.1f} ms p95 "
                  f"{pct(dcl, 95):6.1f} ms  {paint}")  # fmt: skip
        if shots:
            OUT.mkdir(parents=True, exist_ok=True)
            for path in paths:
                drv.get(f"http://127.0.0.1:{port}{path}")
                name = path.strip("/").split("?")[0] or "search"
                if "q=" in path:
                    name = "search-rendered" if "render=1" in path else "search-results"
                drv.save_screenshot(str(OUT / f"ui-{name}.png"))
            print(f"  screenshots in {OUT.relative_to(ROOT)}/")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", type=Path, help="reuse (or fill) this corpus directory")
    ap.add_argument("--size-mb", type=int, default=200)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--browser-runs", type=int, default=10)
    ap.add_argument("--screenshots", action="store_true", help="save PNGs to bench/out/")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-ui-") as tmp:
        home = args.corpus or Path(tmp) / "home"
        stamp = home / corpus.STAMP
        if not stamp.exists():
            t = time.perf_counter()
            stats = corpus.generate(home, args.size_mb, args.seed)
            print(f"corpus: {stats.files} sessions, {stats.bytes / 1e6:.0f} MB, "
                  f"{time.perf_counter() - t:.0f} s to write")  # fmt: skip
        size = sum(p.stat().st_size for p in corpus.transcripts(home)) / 1e6
        t = time.perf_counter()
        with start_daemon(Path(tmp), env={"HOME": str(home)}, timeout=120) as d:
            d.client(timeout=3600).call("sync", {})  # the cold index of the whole corpus
            cold = time.perf_counter() - t
            totals = d.call("status", {})
            turns = sum(h["turns"] for h in totals["hosts"].values())
            sessions = sum(h["sessions"] for h in totals["hosts"].values())
            db_mb = d.db_path.stat().st_size / 1e6
            print(f"corpus {size:.0f} MB: {sessions} sessions, {turns} turns, index.db "
                  f"{db_mb:.0f} MB, indexed in {cold:.0f} s")  # fmt: skip
            info = d.call("ui", {})
            url = str(info["url"])
            port, token = int(info["port"]), url.split("token=", 1)[1]
            newest = d.call("activity", {"days": 1})["newest_turn"] or "2026-01-01"
            session = d.call("sessions", {"limit": 1})["sessions"][0]["session_id"]
            word = corpus.common_words(1)[0]
            paths = [p.format(word=word, day=newest[:10], session=session) for p in PAGES]
            web = Http(port, token)
            web.get("/")  # warm the page cache and the code paths once
            measure_http(d, web, paths, args.runs)
            measure_search(d, web, max(args.runs // 10, 1))
            measure_activity(d, newest, max(args.runs // 5, 1))
            measure_browser(url, port, paths, args.browser_runs, args.screenshots)
            rss = d.rss_kb()
            print(f"\ndaemon RSS after the run: {rss / 1024 if rss else 0:.0f} MB")
            d.stop()


if __name__ == "__main__":
    main()
