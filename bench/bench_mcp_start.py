"""``backscroll mcp`` start-up: spawn to the answer of ``tools/list``, against the
MCP SDK's server doing the same.

Run from the repository root (the SDK arm needs the test extras: ``mcp>=2,<3``)::

    python bench/bench_mcp_start.py              # 20 runs per arm
    python bench/bench_mcp_start.py --runs 40

Each run is one process spoken to over stdio as an agent host does: ``initialize``,
``notifications/initialized``, ``tools/list``; timed from spawn to the
``tools/list`` reply. Arms, interleaved per round:

- ``python -c 'import json'``: the floor, an interpreter that does nothing;
- ``backscroll mcp``: this server (the protocol spoken without the SDK);
- the SDK's low-level server (``mcp.server.Server`` on ``stdio_server``, the API
  backscroll used before) listing the same three tools: the baseline.

Also the import cost alone: ``import backscroll.mcp_server`` against
``import mcp.server, mcp.server.stdio``. p50/p95 in ms and the ratio to the floor.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT)]

SDK_SERVER = """
import anyio
import mcp_types as types
from mcp.server import Server
from mcp.server.stdio import stdio_server

from backscroll.mcp_tools import TOOLS


async def list_tools(ctx, params):
    return types.ListToolsResult(tools=[
        types.Tool(name=t["name"], description=t["description"], input_schema=t["inputSchema"])
        for t in TOOLS
    ])


async def main():
    server = Server("backscroll", version="0", on_list_tools=list_tools)
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


anyio.run(main)
"""

INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "bench", "version": "0"},
    },
}


def session(cmd: list[str]) -> float:
    """Spawn, initialize, list tools; ms from spawn to the tools/list reply."""
    start = time.perf_counter()
    proc = subprocess.Popen(
        cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
    )
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(json.dumps(INIT) + "\n")
    proc.stdin.flush()
    assert json.loads(proc.stdout.readline())["id"] == 1
    proc.stdin.write(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}) + "\n")
    proc.stdin.write(json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}) + "\n")
    proc.stdin.flush()
    reply = json.loads(proc.stdout.readline())
    ms = (time.perf_counter() - start) * 1000
    assert len(reply["result"]["tools"]) == 3, reply
    proc.stdin.close()
    proc.wait(30)
    proc.stdout.close()
    return ms


def timed(cmd: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, check=True, capture_output=True)
    return (time.perf_counter() - start) * 1000


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(round(q * (len(ordered) - 1)), len(ordered) - 1)]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=20)
    args = ap.parse_args(argv)
    try:
        import mcp.server  # noqa: F401
    except ImportError:
        sdk = False
        print("the MCP SDK is not installed (pip install 'mcp>=2,<3'): no baseline arm")
    else:
        sdk = True
    py = sys.executable
    script = Path(py).parent / "backscroll"
    ours = [str(script), "mcp"] if script.exists() else [py, "-m", "backscroll", "mcp"]
    with tempfile.TemporaryDirectory() as tmp:
        sdk_script = Path(tmp) / "sdk_server.py"
        sdk_script.write_text(SDK_SERVER, encoding="utf-8")
        arms: dict[str, list[float]] = {}

        def arm(name: str, fn: object, cmd: list[str]) -> None:
            assert callable(fn)
            arms.setdefault(name, []).append(fn(cmd))

        session(ours)  # warm the page cache
        for _ in range(args.runs):
            arm("floor: python -c 'import json'", timed, [py, "-c", "import json"])
            arm("backscroll mcp: spawn to tools/list", session, ours)
            arm("import backscroll.mcp_server", timed, [py, "-c", "import backscroll.mcp_server"])
            if sdk:
                arm("MCP SDK server: spawn to tools/list", session, [py, str(sdk_script)])
                arm("import mcp.server, mcp.server.stdio", timed,
                    [py, "-c", "import mcp.server, mcp.server.stdio"])  # fmt: skip
    floor = statistics.median(arms["floor: python -c 'import json'"])
    print(f"\n{args.runs} runs per arm, interleaved\n")
    print("| arm | p50 ms | p95 ms | p50 / floor |")
    print("|---|---|---|---|")
    for name, values in arms.items():
        p50 = statistics.median(values)
        print(f"| {name} | {p50:.1f} | {pct(values, 0.95):.1f} | {p50 / floor:.2f}x |")
    if sdk:
        ours_p50 = statistics.median(arms["backscroll mcp: spawn to tools/list"])
        sdk_p50 = statistics.median(arms["MCP SDK server: spawn to tools/list"])
        print(f"\nbackscroll mcp answers tools/list {sdk_p50 / ours_p50:.1f}x sooner than the SDK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
