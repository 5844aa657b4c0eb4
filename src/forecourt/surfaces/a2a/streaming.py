"""``SendStreamingMessage`` / ``message:stream`` on the AAP dealer agents: the skill's one reply as one SSE event.

Every AAP skill answers at once, so a stream carries exactly one event: the reply ``Message``. When the skill
fails, the executor records the AAP error (it never becomes a stored task) and enqueues a placeholder; this
wrapper replaces that event with the error — JSON-RPC: a JSON-RPC error response whose ``error.data`` is the
``aap.error``; HTTP+JSON: the ``aap.error`` itself — and ends the stream.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

from starlette.requests import Request
from starlette.responses import StreamingResponse

from forecourt.domain.aap_spec import normalise_numbers
from forecourt.surfaces.a2a.executor import recorded_error


def _chunk_text(chunk: Any) -> str:
    """An SSE chunk with integral doubles written as integers (protobuf ``Value`` makes every number a double)."""
    text = chunk.decode("utf-8") if isinstance(chunk, bytes | bytearray) else str(chunk)
    return "\n".join(_normalised_line(line) for line in text.split("\n"))


def _normalised_line(line: str) -> str:
    if not line.startswith("data: "):
        return line
    try:
        return "data: " + json.dumps(normalise_numbers(json.loads(line[6:])))
    except ValueError:
        return line


async def _request_id(request: Request) -> Any:
    try:
        body = json.loads(await request.body())
    except ValueError:
        return None
    return body.get("id") if isinstance(body, dict) else None


def stream_with_aap_errors(response: StreamingResponse, request: Request, *, jsonrpc: bool) -> StreamingResponse:
    """``response``'s events, with a recorded AAP error sent in place of the placeholder reply."""
    upstream = response.body_iterator

    async def events() -> AsyncIterator[str]:
        async for chunk in upstream:
            err = recorded_error(request.scope)
            if err is None:
                yield _chunk_text(chunk)
                continue
            if jsonrpc:
                error = {"code": err.rpc_code, "message": err.payload["message"], "data": err.payload}
                payload: Any = {"jsonrpc": "2.0", "id": await _request_id(request), "error": error}
            else:
                payload = err.payload
            yield f"data: {json.dumps(payload)}\n\n"
            break

    headers = {k: v for k, v in response.headers.items() if k.lower() != "content-length"}
    return StreamingResponse(
        events(), status_code=response.status_code, headers=headers, media_type=response.media_type
    )
