"""Wire checks both A2A bindings make before the SDK sees a request (A2A v1.0 §9.1, §11.1, §3.1.4).

- A request body must be JSON: ``Content-Type: application/json`` (or ``application/a2a+json``, any ``+json``).
  HTTP+JSON answers anything else with ``415`` and the binding's ``ContentTypeNotSupportedError``; JSON-RPC, whose
  requests the spec requires to be ``application/json`` too, answers ``415`` with the JSON-RPC form of the same error
  (``-32005``, as the A2A TCK checks). A request without a ``Content-Type`` (a body-less
  ``POST .../tasks/{id}:cancel``) is left to the SDK.
- HTTP+JSON answers are ``Content-Type: application/json`` (§11.1, a MUST the TCK checks); the SDK writes
  ``application/a2a+json``, the media type of the specification's examples, which :func:`json_answer` renames.
- ``ListTasks``' ``status`` filter must name a ``TaskState``: the SDK's parser drops an unknown enum value, which
  would turn ``?status=INVALID`` into "every task". Refused as invalid parameters on both bindings instead.
"""

from __future__ import annotations

import json
from typing import Any

from a2a.types import TaskState
from a2a.utils.error_handlers import build_rest_error_payload
from a2a.utils.errors import ContentTypeNotSupportedError, InvalidParamsError
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

JSON_ONLY = "Send the request body as JSON: Content-Type: application/json."
BAD_STATUS = "The status filter must name a task state, e.g. TASK_STATE_WORKING."


def _is_json(content_type: str) -> bool:
    media = content_type.split(";", 1)[0].strip().lower()
    return media in ("application/json", "application/a2a+json") or media.endswith("+json")


def _valid_state(value: Any) -> bool:
    if isinstance(value, int) and not isinstance(value, bool):
        return value in TaskState.values()
    if isinstance(value, str):
        return value in set(TaskState.keys()) or (value.isdigit() and int(value) in TaskState.values())
    return False


def _rest(error: Exception, *, status_code: int | None = None) -> Response:
    payload = build_rest_error_payload(error)
    if status_code is not None:  # the SDK maps ContentTypeNotSupportedError to 400; the spec's table says 415
        payload["error"]["code"] = status_code
    return JSONResponse(payload, status_code=int(payload["error"]["code"]), media_type="application/json")


def rest_refusal(request: Request) -> Response | None:
    """The HTTP+JSON binding's refusal of ``request``, or ``None`` when it may go on."""
    content_type = request.headers.get("content-type")
    if request.method == "POST" and content_type is not None and not _is_json(content_type):
        return _rest(ContentTypeNotSupportedError(message=JSON_ONLY), status_code=415)
    if request.method == "GET" and request.url.path.rstrip("/").endswith("/tasks"):
        statuses = request.query_params.getlist("status")
        if any(not _valid_state(s) for v in statuses for s in v.split(",") if s):
            return _rest(InvalidParamsError(message=BAD_STATUS))
    return None


def _rpc_error(request_id: Any, code: int, message: str, *, status_code: int = 200) -> Response:
    body = {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}
    return JSONResponse(body, status_code=status_code)


async def jsonrpc_refusal(request: Request) -> Response | None:
    """The JSON-RPC binding's refusal of ``request``, or ``None`` when it may go on."""
    content_type = request.headers.get("content-type")
    if content_type is not None and not _is_json(content_type):
        return _rpc_error(None, -32005, JSON_ONLY, status_code=415)
    try:
        body = json.loads(await request.body())
    except ValueError:
        return None  # the SDK answers the parse error
    if not isinstance(body, dict) or body.get("method") != "ListTasks":
        return None
    params = body.get("params")
    status = params.get("status") if isinstance(params, dict) else None
    if status is not None and not _valid_state(status):
        return _rpc_error(body.get("id"), -32602, BAD_STATUS)
    return None


def json_answer(response: Response) -> Response:
    """``response`` with ``Content-Type: application/json`` where the SDK wrote ``application/a2a+json``."""
    if response.headers.get("content-type", "").startswith("application/a2a+json"):
        response.headers["content-type"] = "application/json"
    return response
