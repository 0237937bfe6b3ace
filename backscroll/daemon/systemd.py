"""Dependency-free sd_notify: readiness, status and watchdog pings.

Writes datagrams straight to ``$NOTIFY_SOCKET`` (an abstract socket when it
starts with ``@``); a no-op where systemd did not start us.
"""

from __future__ import annotations

import os
import socket


def notify(message: str) -> bool:
    """Send ``message`` (e.g. ``READY=1``); False when there is no notify socket."""
    address = os.environ.get("NOTIFY_SOCKET")
    if not address:
        return False
    if address.startswith("@"):
        address = "\0" + address[1:]
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
            sock.connect(address)
            sock.sendall(message.encode())
    except OSError:
        return False
    return True


def watchdog_interval() -> float | None:
    """Seconds between ``WATCHDOG=1`` pings (half of ``WATCHDOG_USEC``), if asked for."""
    usec = os.environ.get("WATCHDOG_USEC", "")
    pid = os.environ.get("WATCHDOG_PID", "")
    if not (usec.isascii() and usec.isdigit()) or (pid and pid != str(os.getpid())):
        return None
    return int(usec) / 2_000_000
