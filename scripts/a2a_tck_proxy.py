"""The proxy scripts/a2a-tck.sh puts in front of the gateway agent for the A2A TCK.

It forwards every request to ``FORECOURT`` with ``Authorization: Bearer KEY`` added (the TCK sends no credentials)
and the ``Host`` header kept (the card then names the proxy's URLs), streams every answer (SSE included) back,
and rewrites the TCK's scenario messages into the gateway agent's form.

The TCK drives its reference agent by the prefix of each ``messageId`` (``tck-complete-task``,
``tck-input-required``, ...) with text parts; the gateway agent runs a catalogue action named in a DataPart. So the
text parts of a ``SendMessage`` / ``SendStreamingMessage`` become: for a message on an existing task, the answer to
its waiting user task (``{"data": {"outcome": "contacted"}}``); for ``tck-input-required``, a lead follow-up
workflow, which waits at a user task; for anything else ``inventory.facets``, which completes. Messages that already
carry a DataPart, and every other request, pass unchanged. Scenarios that ask for particular artifacts (text, file,
URL) or a bare ``Message`` reply have no gateway equivalent and are left as they are (``docs/a2a.md``).

    FORECOURT=http://127.0.0.1:8000 KEY=... DEALER=demo-toyota-sf PORT=8100 .venv/bin/python scripts/a2a_tck_proxy.py
"""

from __future__ import annotations

import itertools
import json
import os
from collections.abc import Iterator
from typing import Any

import httpx
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import StreamingResponse
from starlette.routing import Route

TARGET, KEY, DEALER = os.environ["FORECOURT"], os.environ["KEY"], os.environ.get("DEALER", "demo-toyota-sf")
client = httpx.AsyncClient(
    base_url=TARGET, timeout=httpx.Timeout(30.0, read=600.0), headers={"authorization": f"Bearer {KEY}"}
)
_leads: Iterator[str] | None = None


async def _next_lead() -> str:
    """A new lead of the dealership for each workflow (a lead runs one follow-up at a time)."""
    global _leads
    if _leads is None:
        body = {"payload": {"dealership_id": DEALER, "status": "new", "limit": 100}}
        items = (await client.post("/mcp/leads.list", json=body)).json()["result"]["output"]["items"]
        _leads = itertools.cycle([str(item["id"]) for item in items])
    return next(_leads)


async def _gateway_form(message: dict[str, Any]) -> None:
    parts = message.get("parts") or []
    if any(isinstance(part, dict) and "data" in part for part in parts):
        return
    data: dict[str, Any]
    if message.get("taskId"):
        data = {"data": {"outcome": "contacted"}}
    elif str(message.get("messageId", "")).startswith("tck-input-required"):
        inputs = {"lead_id": await _next_lead()}
        payload = {"dealership_id": DEALER, "workflow_id": "new_lead_follow_up", "inputs": inputs}
        data = {"action": "workflow.run", "payload": payload}
    else:
        data = {"action": "inventory.facets", "payload": {"dealership_id": DEALER}}
    message["parts"] = [{"data": data, "mediaType": "application/json"}]


async def _rewritten(request: Request, body: bytes) -> bytes:
    path = request.url.path
    if request.method != "POST" or not path.startswith("/agent/"):
        return body
    try:
        doc = json.loads(body)
    except ValueError:
        return body
    if not isinstance(doc, dict):
        return body
    if path.rstrip("/").endswith("/jsonrpc") and doc.get("method") in ("SendMessage", "SendStreamingMessage"):
        params = doc.get("params")
        message = params.get("message") if isinstance(params, dict) else None
    elif path.endswith(("/message:send", "/message:stream")):
        message = doc.get("message")
    else:
        return body
    if not isinstance(message, dict):
        return body
    await _gateway_form(message)
    return json.dumps(doc).encode()


async def forward(request: Request) -> StreamingResponse:
    """One request, forwarded with the credential; the answer streamed back as it comes."""
    headers = {k: v for k, v in request.headers.items() if k.lower() not in ("content-length", "authorization")}
    url = httpx.URL(path=request.url.path, query=request.url.query.encode())
    body = await _rewritten(request, await request.body())
    answer = await client.send(client.build_request(request.method, url, headers=headers, content=body), stream=True)
    kept = {k: v for k, v in answer.headers.items() if k.lower() not in ("content-length", "transfer-encoding")}
    return StreamingResponse(answer.aiter_raw(), status_code=answer.status_code, headers=kept)


app = Starlette(routes=[Route("/{path:path}", forward, methods=["GET", "POST", "PUT", "DELETE", "PATCH"])])

if __name__ == "__main__":
    uvicorn.run(app, host="127.0.0.1", port=int(os.environ["PORT"]), log_level="warning")
