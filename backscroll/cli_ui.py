"""``backscroll ui``: ask the daemon to serve the web viewer, print its URL and
open it in the browser.

The viewer runs inside the daemon (it reads the index through the daemon's own
query methods), so this command only sends the ``ui`` request.
"""

from __future__ import annotations

import argparse
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def cmd_ui(args: argparse.Namespace) -> int:
    from pathlib import Path

    from backscroll import config as config_mod
    from backscroll.client import Client, RemoteError
    from backscroll.errors import BackscrollError

    cfg = config_mod.load(Path(args.config) if getattr(args, "config", None) else None)
    try:
        with Client(cfg.socket_path(), timeout=30) as client:
            info = client.call("ui", {})
    except RemoteError as exc:
        raise BackscrollError(exc.message) from None
    url = str(info["url"])
    if args.json:
        import json

        sys.stdout.write(json.dumps(info) + "\n")
    else:
        print(f"backscroll viewer: {url}")
        print("(the link carries this start's access token; keep it to yourself)")
    if not args.no_open:
        import webbrowser

        if not webbrowser.open(url, new=2):
            print("no browser found here: open the link above in one", file=sys.stderr)
    return 0


def register(sub: Any) -> None:
    p = sub.add_parser("ui", help="serve the web viewer on 127.0.0.1 and open it")
    p.add_argument("--no-open", action="store_true", help="only print the URL")
    p.add_argument("--json", action="store_true", help="print {url, port, host} as JSON")
    p.set_defaults(func=cmd_ui)
