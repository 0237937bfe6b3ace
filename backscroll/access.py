"""One way to ask a question: the daemon when it runs, the index directly when not.

Used by the CLI, the MCP server and the prompt hooks. Imports neither daemon/
nor store/ unless it has to fall back to the direct path.
"""

from __future__ import annotations

from typing import Any

from backscroll.client import RemoteError, try_connect
from backscroll.config import Config
from backscroll.errors import BackscrollError


def query(
    cfg: Config, method: str, params: dict[str, Any], timeout: float = 60.0
) -> dict[str, Any]:
    """The method's result as a dict, with ``"daemon": true|false`` saying who answered."""
    client = try_connect(cfg.socket_path(), timeout)
    if client is not None:
        with client:
            try:
                result = client.call(method, params)
            except RemoteError as exc:
                raise BackscrollError(exc.message) from None
        out = dict(result)
        if method != "status":
            out["daemon"] = True
        return out
    from backscroll import direct
    from backscroll.protocol import ProtocolError

    try:
        result = direct.query(cfg, method, params)
    except ProtocolError as exc:
        raise BackscrollError(exc.message) from None
    out = dict(result)
    out["daemon"] = False
    return out
