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
    from pathlib import Path
    from typing import Any


def cmd_ui(args: argparse.Namespace) -> int:
    from pathlib import Path

    from backscroll import config as config_mod
    from backscroll.client import Client, RemoteError, other_index
    from backscroll.errors import BackscrollError

    cfg = config_mod.load(Path(args.config) if getattr(args, "config", None) else None)
    try:
        with Client(cfg.socket_path(), timeout=30) as client:
            other = other_index(client, cfg.db_path())
            if other is not None:  # (its viewer would show another HOME's index)
                raise BackscrollError(
                    other.split("; answering")[0] + "; start a daemon for "
                    "this one (give each HOME its own XDG_RUNTIME_DIR)"
                )
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
        try:
            opened = open_in_browser(url, cfg.socket_path().parent)
        except OSError as exc:  # the forwarding page could not be written
            print(f"cannot open a browser ({exc}): open the link above in one", file=sys.stderr)
        else:
            if not opened:
                print("no browser found here: open the link above in one", file=sys.stderr)
    return 0


def open_in_browser(url: str, private_dir: Path) -> bool:
    """Open ``url`` through a 0600 page in ``private_dir`` that forwards to it: a
    browser started with the URL itself would show its access token to every
    local user in its command line (``/proc/<pid>/cmdline``)."""
    import html
    import os
    import webbrowser

    page = private_dir / "open-viewer.html"
    target = html.escape(url, quote=True)
    body = (
        '<!doctype html><meta charset="utf-8"><title>backscroll</title>'
        f'<meta http-equiv="refresh" content="0;url={target}">'
        f'<p><a href="{target}">Open the backscroll viewer</a></p>'
    )
    fd = os.open(page, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        os.fchmod(fh.fileno(), 0o600)
        fh.write(body)
    return bool(webbrowser.open(page.as_uri(), new=2))


def register(sub: Any) -> None:
    p = sub.add_parser("ui", help="serve the web viewer on 127.0.0.1 and open it")
    p.add_argument("--no-open", action="store_true", help="only print the URL")
    p.add_argument("--json", action="store_true", help="print {url, port, host} as JSON")
    p.set_defaults(func=cmd_ui)
