"""The direct path: a dealer agent's JSON-RPC ``SendMessage`` of a read skill, answered as one ``Message``.

Most traffic to a dealer agent is a buyer agent asking a question (an inventory search, a vehicle, the
dealership's information, facets): one DataPart in, one DataPart out, no task. The SDK's request handler
runs every such message through its task machinery (an active task, an event queue with a producer and a
consumer, protobuf validation and conversion, a ``Struct`` of the answer turned back into JSON): about three
quarters of such a call's CPU. :class:`DirectSends` sits in front of the JSON-RPC endpoint and answers those
messages itself:

- only a request it can read completely: ``A2A-Version: 1.0``, a JSON-RPC 2.0 ``SendMessage`` whose params are
  a ``message`` (``messageId``, ``role: ROLE_USER``, optionally ``contextId``, exactly one part holding an AAP
  ``data`` object and its ``mediaType``) and optionally ``configuration.acceptedOutputModes``;
- only a skill whose action has no side effect (a lead goes through the SDK: its push-notification
  subscription needs the task, and a held call answers a task);
- the skill runs through :meth:`AapExecutor.invoke_skill`, the code the SDK's executor runs (one home); an
  error answers the AAP error the endpoint wrapper writes for the SDK's path;
- the answer is the SDK's: ``{"result": {"message": {messageId, contextId, role: ROLE_AGENT, parts: [{data,
  mediaType}]}}}``, numbers as the wrapper normalises them (integral doubles as integers), the output's JSON
  written by :func:`forecourt.surfaces.encoded.plain_json`.

Anything else (another method, a task id, metadata, extensions, a push config, several parts, a body that
does not parse) goes to the SDK unchanged, so every other answer and error keeps the SDK's wording.
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass
from typing import Any

import orjson
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from forecourt.domain.aap_spec import Skill, normalise_numbers
from forecourt.errors import ForecourtError, InternalError
from forecourt.gateway.auth.asgi import credentials_from_scope
from forecourt.gateway.pipeline import Gateway
from forecourt.surfaces.a2a.errors import to_aap_error
from forecourt.surfaces.a2a.executor import AapExecutor, skill_for
from forecourt.surfaces.encoded import plain_json

logger = logging.getLogger(__name__)

_PARAMS = {"message", "configuration"}
_MESSAGE = {"messageId", "role", "parts", "contextId"}
_PART = {"data", "mediaType"}
_CONFIGURATION = {"acceptedOutputModes"}


@dataclass(frozen=True)
class DirectSend:
    """A ``SendMessage`` the direct path answers."""

    rpc_id: str | int | None
    skill: Skill
    payload: dict[str, Any]
    message_id: str
    context_id: str | None


def _plain_strings(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def read_send(body: Any) -> tuple[str | int | None, dict[str, Any], str, str, str | None] | None:
    """``(rpc id, data, media type, message id, context id)`` of a plain ``SendMessage``, else ``None``."""
    if not isinstance(body, dict) or set(body) != {"jsonrpc", "id", "method", "params"}:
        return None
    rpc_id, params = body["id"], body["params"]
    if body["jsonrpc"] != "2.0" or body["method"] != "SendMessage" or not isinstance(params, dict):
        return None
    if isinstance(rpc_id, bool) or not isinstance(rpc_id, (str, int)) or not set(params) <= _PARAMS:
        return None
    configuration = params.get("configuration", {})
    if not isinstance(configuration, dict) or not set(configuration) <= _CONFIGURATION:
        return None
    if "acceptedOutputModes" in configuration and not _plain_strings(configuration["acceptedOutputModes"]):
        return None
    message = params.get("message")
    if not isinstance(message, dict) or not set(message) <= _MESSAGE or message.get("role") != "ROLE_USER":
        return None
    message_id, context_id, parts = message.get("messageId"), message.get("contextId"), message.get("parts")
    if not isinstance(message_id, str) or not message_id or not isinstance(parts, list) or len(parts) != 1:
        return None
    if context_id is not None and (not isinstance(context_id, str) or not context_id):
        return None
    part = parts[0]
    if not isinstance(part, dict) or not set(part) <= _PART or not isinstance(part.get("data"), dict):
        return None
    media_type = part.get("mediaType", "")
    if not isinstance(media_type, str):
        return None
    return rpc_id, part["data"], media_type, message_id, context_id


class DirectSends:
    """Answers plain read ``SendMessage`` requests of the dealer agents (see the module docstring)."""

    def __init__(self, gateway: Gateway, executor: AapExecutor) -> None:
        self.gateway = gateway
        self.executor = executor
        self.answered = 0
        """Messages answered here (the rest went to the SDK); for tests and diagnostics."""

    def plan(self, raw: bytes, version: str | None) -> DirectSend | None:
        """The message this layer answers, or ``None`` for anything the SDK should see."""
        if version is None or version.strip() != "1.0":
            return None
        try:
            read = read_send(orjson.loads(raw))
        except orjson.JSONDecodeError:
            return None
        if read is None:
            return None
        rpc_id, data, media_type, message_id, context_id = read
        payload = normalise_numbers(data)
        try:
            skill = skill_for(payload, media_type)
        except ForecourtError:
            return None  # the SDK's path answers the unsupported skill
        action = self.gateway.catalogue.get(skill.action)
        if action is None or action.side_effect:
            return None
        return DirectSend(rpc_id, skill, payload, message_id, context_id)

    async def answer(self, request: Request) -> Response | None:
        """The answer to ``request``, or ``None`` when the SDK should answer it."""
        send = self.plan(await request.body(), request.headers.get("a2a-version"))
        if send is None:
            return None
        self.answered += 1
        context_id = send.context_id or str(uuid.uuid4())
        try:
            outcome = await self.executor.invoke_skill(
                send.skill,
                send.payload,
                dealership_id=str(request.path_params.get("dealership_id") or ""),
                credentials=credentials_from_scope(request.scope),
                request_id=str(send.rpc_id or send.message_id or "") or None,
                traceparent=request.headers.get("traceparent"),
                context_id=context_id,
            )
        except ForecourtError as exc:
            return _error(send.rpc_id, exc)
        except Exception:  # top of the surface: nothing internal leaves it
            logger.exception("unhandled error on the A2A direct path")
            return _error(send.rpc_id, InternalError())
        data = plain_json(normalise_numbers(outcome.output))
        if data is None:  # not plain JSON: written as the MCP door writes such values
            data = orjson.dumps(normalise_numbers(outcome.output), default=str, option=orjson.OPT_NON_STR_KEYS)
        head = orjson.dumps({"jsonrpc": "2.0", "id": send.rpc_id})
        message = b'{"messageId":"' + str(uuid.uuid4()).encode() + b'","contextId":' + orjson.dumps(context_id)
        message += b',"role":"ROLE_AGENT","parts":[{"data":' + data
        message += b',"mediaType":' + orjson.dumps(send.skill.response_media_type) + b"}]}"
        return Response(head[:-1] + b',"result":{"message":' + message + b"}}", media_type="application/json")


def _error(rpc_id: str | int | None, exc: ForecourtError) -> Response:
    err = to_aap_error(exc)
    error = {"code": err.rpc_code, "message": err.payload["message"], "data": err.payload}
    return JSONResponse({"jsonrpc": "2.0", "id": rpc_id, "error": error}, headers=err.headers)
