"""Value-free protocol errors: the MCP transport's 400 answers must not quote the request back.

The SDK's legacy transport answers a malformed JSON-RPC message with ``Validation error: <pydantic
text>`` or ``Parse error: <decoder text>``, both of which quote parts of the request (``input_value=...``),
and a request can carry a customer's details. This wrapper rewrites those 400 bodies to a fixed
message with the same JSON-RPC code. Forecourt's own structured errors (``data`` is the AutomotiveMCP error
body) are left as they are.
"""

from __future__ import annotations

import json
from typing import Any

from starlette.types import Message, Send

_FIXED = {-32700: "Parse error.", -32602: "Invalid request parameters.", -32600: "Invalid request."}
_MAX_BUFFER = 65_536


def _rewrite(body: bytes) -> bytes:
    try:
        data: Any = json.loads(body)
    except ValueError:
        return json.dumps(
            {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": "Invalid request."}}
        ).encode()
    error = data.get("error") if isinstance(data, dict) else None
    if not isinstance(error, dict) or _structured(error):
        return body
    code = error.get("code")
    error["message"] = _FIXED.get(code, "Invalid request.") if isinstance(code, int) else "Invalid request."
    error.pop("data", None)
    return json.dumps(data).encode()


def _structured(error: dict[str, Any]) -> bool:
    """Whether the error is Forecourt's own: an AutomotiveMCP error body in ``data``, whose words are fixed.

    Such an error (an unknown tool in the 2026-07-28 era, answered ``400`` as that era's table says) keeps its
    message and ``data``: they say what was wrong and quote nothing but a checked tool name.
    """
    data = error.get("data")
    return isinstance(data, dict) and isinstance(data.get("code"), str) and "retryable" in data


def value_free_errors(send: Send) -> Send:
    """A ``send`` that rewrites 400 JSON answers so that no part of the request is echoed."""
    start: Message | None = None
    chunks: list[bytes] = []

    async def wrapped(message: Message) -> None:
        nonlocal start
        if message["type"] == "http.response.start" and message.get("status") == 400:
            start = message
            return
        if start is None or message["type"] != "http.response.body":
            await send(message)
            return
        chunks.append(message.get("body", b""))
        if message.get("more_body", False) and sum(len(c) for c in chunks) < _MAX_BUFFER:
            return
        body = _rewrite(b"".join(chunks))
        headers = [(k, v) for k, v in start.get("headers", []) if k.lower() != b"content-length"]
        headers.append((b"content-length", str(len(body)).encode()))
        await send({**start, "headers": headers})
        await send({"type": "http.response.body", "body": body, "more_body": False})

    return wrapped
