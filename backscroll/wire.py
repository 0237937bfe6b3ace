"""The wire format, without the parameter types: what a thin client needs.

JSON-RPC 2.0, one JSON object per line, over a Unix socket. Kept free of
dataclasses and friends so ``backscroll search`` starts as fast as Python can.
"""

from __future__ import annotations

import json

TYPE_CHECKING = False  # typing is not imported at run time: this is the CLI's hot path
if TYPE_CHECKING:
    from typing import Any

#: Raised whenever a request or its meaning changes, so that a client and a
#: daemon of different releases say "restart the daemon" instead of answering
#: wrongly. 2: the query language (-word, NOT, OR, word*) is parsed by the daemon,
#: and hello names the index it serves.
PROTOCOL_VERSION = 2
#: The most hits one search may ask for (``limit``; ``limits.max_hits`` in the config).
MAX_SEARCH_LIMIT = 1000
#: Version of the JSON result shapes (``"schema"`` in every ``--json`` output).
RESULT_SCHEMA = 1

# JSON-RPC error codes
PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
VERSION_MISMATCH = -32000
REQUEST_TOO_LARGE = -32001
TIMEOUT = -32002
#: The index is corrupt: the daemon neither serves nor writes it until a rebuild.
INDEX_CORRUPT = -32003
#: The daemon holds as many connections as it may; the client reads the index directly.
BUSY = -32005
#: The reply would be larger than ``server.max_reply_bytes``.
REPLY_TOO_LARGE = -32004


class ProtocolError(Exception):
    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


# --------------------------------------------------------------------------- framing


def request(method: str, params: Any, rid: int | str) -> bytes:
    body = {"jsonrpc": "2.0", "id": rid, "method": method, "params": params}
    return json.dumps(body, separators=(",", ":")).encode() + b"\n"


def result(rid: Any, value: Any) -> bytes:
    """A reply line. The daemon encodes with orjson (several times faster on a
    page of hits); the standard library takes what orjson refuses (integers
    beyond 64 bits, lone surrogates)."""
    body = {"jsonrpc": "2.0", "id": rid, "result": value}
    try:
        import orjson  # imported here: thin clients never encode results

        return bytes(orjson.dumps(body, default=str, option=orjson.OPT_APPEND_NEWLINE))
    except (ImportError, TypeError):
        return json.dumps(body, separators=(",", ":"), default=str).encode() + b"\n"


def error(rid: Any, code: int, message: str) -> bytes:
    body = {"jsonrpc": "2.0", "id": rid, "error": {"code": code, "message": message}}
    return json.dumps(body, separators=(",", ":")).encode() + b"\n"


def _whole_text(value: Any) -> Any:
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return "".join("\ufffd" if "\ud800" <= c <= "\udfff" else c for c in value)
        return value
    if isinstance(value, dict):
        return {_whole_text(k): _whole_text(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_whole_text(v) for v in value]
    return value


def parse_request(line: bytes) -> tuple[Any, str, Any]:
    """``(id, method, params)`` from one request line, or ProtocolError."""
    try:
        body = json.loads(line)
    except (ValueError, RecursionError) as exc:
        raise ProtocolError(PARSE_ERROR, f"not valid JSON: {exc}") from None
    if b"\\u" in line:
        # JSON may escape a lone surrogate ("\ud800"), which no UTF-8 text can hold:
        # it becomes U+FFFD here, so no handler meets a string it cannot encode.
        body = _whole_text(body)
    if not isinstance(body, dict):
        raise ProtocolError(INVALID_REQUEST, "a request must be a JSON object")
    if body.get("jsonrpc") != "2.0":
        raise ProtocolError(INVALID_REQUEST, 'missing "jsonrpc": "2.0"')
    method = body.get("method")
    if not isinstance(method, str):
        raise ProtocolError(INVALID_REQUEST, '"method" must be a string')
    rid = body.get("id")
    if rid is not None and not isinstance(rid, int | str):
        raise ProtocolError(INVALID_REQUEST, '"id" must be a number or a string')
    return rid, method, body.get("params")


def check_version(client_version: Any) -> None:
    if client_version != PROTOCOL_VERSION:
        raise ProtocolError(
            VERSION_MISMATCH,
            f"protocol mismatch: the client speaks version {client_version}, the daemon "
            f"speaks {PROTOCOL_VERSION}; restart the daemon after upgrading backscroll "
            f"(`systemctl --user restart backscroll`), or upgrade the client",
        )
