"""Routes of the A2A front door: discovery documents, JSON-RPC and HTTP+JSON bindings, delivery status.

Paths (DESIGN.md public contract), per dealership ``/dealers/{dealership_id}``:
``/.well-known/agent-card.json``, ``/.well-known/auto-agent-contract.json``,
``/.well-known/auto-agent-llm-guide.md``, ``POST /a2a/jsonrpc`` and ``POST /a2a/message:send`` (plus the
other HTTP+JSON routes of the SDK). The root ``/.well-known/...`` documents describe the dealership whose
configured domain matches the ``Host`` header, else ``settings.default_dealership``.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncGenerator, Awaitable, Callable
from typing import TYPE_CHECKING, Any

from a2a.client.card_resolver import parse_agent_card
from a2a.server.context import ServerCallContext
from a2a.server.events import Event
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import DefaultServerCallContextBuilder, create_jsonrpc_routes, create_rest_routes
from a2a.server.tasks import PushNotificationConfigStore, TaskStore
from a2a.types import CancelTaskRequest, Message, SendMessageRequest, Task
from a2a.utils.errors import TaskNotCancelableError, TaskNotFoundError
from prometheus_client import Counter
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import BaseRoute, Mount, Route

from forecourt.domain.aap_spec import SKILLS, normalise_numbers
from forecourt.domain.tenancy import Company, Dealership
from forecourt.errors import ForecourtError, InternalError, UnsafeTarget
from forecourt.gateway.auth.asgi import credentials_from_scope
from forecourt.gateway.base import Invocation, Principal
from forecourt.gateway.pipeline import Gateway
from forecourt.netguard import check_url_async
from forecourt.settings import Settings
from forecourt.surfaces.a2a import binding_checks, client_faults
from forecourt.surfaces.a2a.card import (
    CARD_PATH,
    GUIDE_PATH,
    JSONRPC_PATH,
    MANIFEST_PATH,
    REST_PATH,
    build_card,
    build_guide,
    build_manifest,
)
from forecourt.surfaces.a2a.direct import DirectSends
from forecourt.surfaces.a2a.ended import ENDED, refuse_if_ended, stored_task
from forecourt.surfaces.a2a.errors import AapError, to_aap_error
from forecourt.surfaces.a2a.executor import AapExecutor, Subscriber, recorded_error
from forecourt.surfaces.a2a.http_cache import conditional, conditional_json
from forecourt.surfaces.a2a.owners import OWNER, PRINCIPAL_SCOPE, is_anonymous, owner_for, task_owner
from forecourt.surfaces.a2a.streaming import stream_with_aap_errors
from forecourt.surfaces.a2a.task_store import BoundedTaskStore
from forecourt.surfaces.http_util import error_body, error_headers

if TYPE_CHECKING:
    from forecourt.store.base import Store

logger = logging.getLogger(__name__)

Endpoint = Callable[[Request], Awaitable[Response]]


class DealerContextBuilder(DefaultServerCallContextBuilder):
    """Adds the dealership, the presented credentials, the tasks' owner and a per-request slot shared with the
    endpoint wrappers.

    The owner is the caller the endpoint wrapper identified (:mod:`forecourt.surfaces.a2a.owners`): a task and
    its push configs belong to the principal that created it, never to the rooftop whose agent was called.
    """

    def build(self, request: Request) -> ServerCallContext:
        """The SDK's call context plus Forecourt's request state."""
        ctx = super().build(request)
        principal = request.scope.get(PRINCIPAL_SCOPE)
        ctx.state["dealership_id"] = request.path_params.get("dealership_id")
        ctx.state["credentials"] = credentials_from_scope(request.scope)
        ctx.state[OWNER] = owner_for(principal if isinstance(principal, Principal) else None)
        ctx.state["aap"] = request.scope.setdefault("aap", {})
        return ctx


class DealerRequestHandler(DefaultRequestHandler):
    """The SDK's handler, but a dealer agent's task is never canceled: every skill answers at once, and a task
    held for approval ends when a person decides it. ``CancelTask`` answers ``TaskNotCancelableError`` to the
    task's owner (``TaskNotFoundError`` to anyone else) and changes nothing."""

    async def on_cancel_task(self, params: CancelTaskRequest, context: ServerCallContext) -> Task | None:
        """Refuse without touching the task."""
        if await self.task_store.get(params.id, context) is None:
            raise TaskNotFoundError
        raise TaskNotCancelableError(message="A dealer agent's task cannot be canceled.")

    async def on_message_send(self, params: SendMessageRequest, context: ServerCallContext) -> Task | Message:
        """``SendMessage``; a message to an ended task is refused first (``surfaces/a2a/ended.py``)."""
        if params.message.task_id:
            refuse_if_ended(params, await stored_task(self.task_store, params.message.task_id, context))
        answer: Task | Message = await super().on_message_send(params, context)
        if isinstance(answer, Task):
            await self._forget_if_unreachable(answer.id, context)
        return answer

    async def on_message_send_stream(
        self, params: SendMessageRequest, context: ServerCallContext
    ) -> AsyncGenerator[Event, None]:
        """``SendStreamingMessage``; a message to an ended task is refused first (``surfaces/a2a/ended.py``)."""
        if params.message.task_id:
            refuse_if_ended(params, await stored_task(self.task_store, params.message.task_id, context))
        task_id = ""
        async for event in super().on_message_send_stream(params, context):
            if isinstance(event, Task):
                task_id = event.id
            yield event
        if task_id:
            await self._forget_if_unreachable(task_id, context)

    async def _forget_if_unreachable(self, task_id: str, context: ServerCallContext) -> None:
        """Drop an anonymous caller's ended task (a free-text search) from the in-memory store.

        Its owner exists for one request (``owners.py``), so no later call can read it: kept, every anonymous
        text message would grow the store for good. A held lead (``input-required``) stays: it has not ended.
        """
        if not is_anonymous(context.state.get(OWNER)):
            return
        task = await stored_task(self.task_store, task_id, context)
        if task is not None and task.status.state in ENDED:
            await self.task_store.delete(task_id, context)


def push_url_validator(settings: Settings) -> Callable[[str], Awaitable[bool]]:
    """SSRF guard for webhook URLs registered through the push-config methods."""

    async def validate(url: str) -> bool:
        try:
            await check_url_async(url, allow_private=settings.allow_private_targets)
        except UnsafeTarget:
            return False
        return True

    return validate


def a2a_stores(store: Store) -> tuple[TaskStore, PushNotificationConfigStore]:
    """The SDK's task store and the push-config store (the store keeps the latter in the shared database).

    Every AAP skill answers with a single ``Message``, so no Task holding a customer message is ever stored
    (a call held for approval answers an input-required Task without history); a keyed caller's free-text
    search (``free_text.py``) is kept with its text as history, an anonymous caller's is dropped once answered
    (``DealerRequestHandler``). The task store stays in memory, per replica, bounded in number and age
    (``task_store.py``). Push configs must outlive the request and be visible to every replica, so they live in the
    database.
    """
    return BoundedTaskStore(), store.push_config_store(task_owner)


_SDK_MESSAGES = {
    -32700: "The request is not valid JSON.",
    -32600: "The request is not a valid JSON-RPC request.",
    -32601: "Unknown method.",
    -32602: "The request parameters are invalid.",
    -32603: "Internal error.",
    -32001: "Task not found.",
    -32002: "The task cannot be canceled.",
    -32003: "Push notifications are not supported.",
    -32004: "The operation is not supported.",
    -32005: "The content type is not supported.",
    -32009: "The A2A version is not supported; send header A2A-Version: 1.0.",
}


def _clean_details(details: Any) -> list[dict[str, Any]]:
    """SDK error details without ``metadata`` (protobuf parse errors quote the caller's values)."""
    out = []
    for item in details if isinstance(details, list) else []:
        if isinstance(item, dict):
            out.append({k: v for k, v in item.items() if k in ("@type", "reason", "domain")})
    return out


def _sanitised_error(body: dict[str, Any]) -> dict[str, Any]:
    """An SDK-generated error with a value-free message: nothing the caller sent is echoed back."""
    error = body.get("error")
    if not isinstance(error, dict):
        return body
    code = error.get("code")
    message = _SDK_MESSAGES.get(code, "The request was refused.") if isinstance(code, int) else "Refused."
    clean: dict[str, Any] = {"code": code, "message": message}
    if "status" in error:
        clean["status"] = error["status"]
        clean["message"] = str(error["status"]).replace("_", " ").capitalize() + "."
    for key in ("data", "details"):
        if key in error:
            clean[key] = _clean_details(error[key])
    return {**body, "error": clean}


def _normalised(response: Response) -> Response:
    """The SDK's JSON, with integral doubles written as integers and SDK errors stripped of echoed input.

    Protobuf ``Value`` makes every DataPart number a double; and the SDK's parse errors quote the request.
    """
    if "json" not in (response.media_type or response.headers.get("content-type", "")):
        return response
    try:
        body = json.loads(bytes(response.body))
    except (ValueError, AttributeError):
        return response
    is_error = isinstance(body, dict) and "error" in body
    body = _sanitised_error(body) if is_error else normalise_numbers(body)
    headers = {k: v for k, v in response.headers.items() if k.lower() not in ("content-length", "content-type")}
    media_type = response.media_type or "application/json"
    return JSONResponse(body, status_code=response.status_code, headers=headers, media_type=media_type)


def _sdk_card() -> Any:
    """The card the SDK handler checks capabilities against (per-dealership cards are served by our routes)."""
    return parse_agent_card(
        {
            "name": "Forecourt dealer agent",
            "description": "AAP v0.1 dealer agent",
            "version": "1",
            "supportedInterfaces": [
                {"url": "http://localhost/", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}
            ],
            "capabilities": {"streaming": True, "pushNotifications": True},
            "defaultInputModes": ["application/json"],
            "defaultOutputModes": ["application/json"],
            "skills": [
                {"id": s.id, "name": s.name, "description": s.description, "tags": list(s.tags)} for s in SKILLS
            ],
        }
    )


Identify = Callable[[Request], Awaitable[AapError | None]]
"""Puts the caller's principal in the request's scope, or answers the AAP error that refuses its credential."""


async def _jsonrpc_error(request: Request, err: AapError) -> Response:
    try:
        body = json.loads(await request.body())
        request_id = body.get("id") if isinstance(body, dict) else None
    except ValueError:
        request_id = None
    error = {"code": err.rpc_code, "message": err.payload["message"], "data": err.payload}
    return JSONResponse({"jsonrpc": "2.0", "id": request_id, "error": error}, headers=err.headers)


def _rest_error(err: AapError) -> Response:
    return JSONResponse(err.payload, status_code=err.http_status, headers=err.headers, media_type="application/json")


def _wrap_jsonrpc(endpoint: Endpoint, faults: Counter, direct: DirectSends, identify: Identify) -> Endpoint:
    async def wrapped(request: Request) -> Response:
        wrong = await binding_checks.jsonrpc_refusal(request)
        if wrong is not None:
            return wrong
        answered = await direct.answer(request)
        if answered is not None:
            return answered
        refused = await identify(request)
        if refused is not None:
            return await _jsonrpc_error(request, refused)
        with client_faults.counting_into(faults):
            response = await endpoint(request)
        if isinstance(response, StreamingResponse):
            return stream_with_aap_errors(response, request, jsonrpc=True)
        err = recorded_error(request.scope)
        if err is None:
            return _normalised(response)
        return await _jsonrpc_error(request, err)

    wrapped.direct = direct  # type: ignore[attr-defined]  # for tests and diagnostics: route.endpoint.direct
    return wrapped


def _wrap_rest(endpoint: Endpoint, faults: Counter, identify: Identify) -> Endpoint:
    async def wrapped(request: Request) -> Response:
        wrong = binding_checks.rest_refusal(request)
        if wrong is not None:
            return wrong
        refused = await identify(request)
        if refused is not None:
            return _rest_error(refused)
        with client_faults.counting_into(faults):
            response = await endpoint(request)
        if isinstance(response, StreamingResponse):
            return stream_with_aap_errors(response, request, jsonrpc=False)
        err = recorded_error(request.scope)
        if err is None:
            return binding_checks.json_answer(_normalised(response))
        return _rest_error(err)

    return wrapped


DISCOVER_ACTION = "aap.discover"
DELIVERY_STATUS_ACTION = "leads.delivery_status"


class A2ASurface:
    """One dealer agent per dealership over both A2A bindings, backed by ``Gateway.invoke``."""

    def __init__(
        self,
        gateway: Gateway,
        settings: Settings,
        *,
        subscriber: Subscriber | None = None,
        stores: tuple[TaskStore, PushNotificationConfigStore] | None = None,
    ) -> None:
        self.gateway = gateway
        self.settings = settings
        self.task_store, self.push_store = stores or a2a_stores(gateway.store)
        self.executor = AapExecutor(gateway, subscriber)
        self.direct = DirectSends(gateway, self.executor)
        self.handler = DealerRequestHandler(
            agent_executor=self.executor,
            task_store=self.task_store,
            agent_card=_sdk_card(),
            push_config_store=self.push_store,
            push_url_validator=push_url_validator(settings),
        )
        self.builder = DealerContextBuilder()

    def routes(self) -> list[BaseRoute]:
        """Discovery, bindings and the delivery-status admin route."""
        prefix = "/dealers/{dealership_id}"
        client_faults.install()
        faults = self.gateway.metrics.client_faults
        jsonrpc = [
            Route(path, _wrap_jsonrpc(r.endpoint, faults, self.direct, self.identify), methods=["POST"])
            for r in create_jsonrpc_routes(self.handler, rpc_url=prefix + JSONRPC_PATH, context_builder=self.builder)
            if isinstance(r, Route)
            for path in (r.path, r.path + "/")  # the same endpoint with a trailing slash
        ]
        rest = [
            Route(
                r.path, _wrap_rest(r.endpoint, faults, self.identify), methods=sorted((r.methods or set()) - {"HEAD"})
            )
            for r in create_rest_routes(self.handler, context_builder=self.builder)
            if isinstance(r, Route)
        ]
        return [
            Route(prefix + CARD_PATH, self._doc("card"), methods=["GET"]),
            Route(prefix + MANIFEST_PATH, self._doc("manifest"), methods=["GET"]),
            Route(prefix + GUIDE_PATH, self._doc("guide"), methods=["GET"]),
            Route(CARD_PATH, self._doc("card", by_host=True), methods=["GET"]),
            Route(MANIFEST_PATH, self._doc("manifest", by_host=True), methods=["GET"]),
            Route(GUIDE_PATH, self._doc("guide", by_host=True), methods=["GET"]),
            Route("/admin/v1/dealerships/{dealership_id}/leads/{lead_id}/deliveries", self.deliveries, methods=["GET"]),
            *jsonrpc,
            Mount(prefix + REST_PATH, routes=rest),
        ]

    async def identify(self, request: Request) -> AapError | None:
        """The caller of a request the SDK answers, as the gateway authenticates it (anonymous without a
        credential); a credential that does not authenticate is refused here, before any task is read."""
        credentials = credentials_from_scope(request.scope)
        dealership_id = str(request.path_params.get("dealership_id") or "")
        try:
            principal = await self.gateway.principal_for(
                Invocation(
                    action="",
                    payload={},
                    credentials=credentials,
                    surface="a2a",
                    anonymous_dealership=dealership_id,
                )
            )
        except ForecourtError as exc:
            return to_aap_error(exc)
        request.scope[PRINCIPAL_SCOPE] = principal
        return None

    def _doc(self, kind: str, *, by_host: bool = False) -> Endpoint:
        async def endpoint(request: Request) -> Response:
            payload = (
                {"host": request.headers.get("host") or ""}
                if by_host
                else {"dealer_id": request.path_params["dealership_id"]}
            )
            try:
                outcome = await self.gateway.invoke(
                    Invocation(
                        action=DISCOVER_ACTION,
                        payload=payload,
                        credentials=credentials_from_scope(request.scope),
                        surface="a2a",
                        traceparent=request.headers.get("traceparent"),
                    )
                )
                dealer = Dealership.model_validate(outcome.output["dealership"])
                found = outcome.output.get("company")
                company = Company.model_validate(found) if found else None
            except ForecourtError as exc:
                if exc.http_status == 404:
                    return JSONResponse({"error": {"code": "not_found", "message": "Unknown dealer agent."}}, 404)
                return JSONResponse(error_body(exc), status_code=exc.http_status, headers=exc.headers)
            except Exception:  # top of the surface
                logger.exception("discovery lookup failed")
                return JSONResponse(error_body(InternalError()), status_code=500)
            return self._render(request, kind, dealer, company)

        return endpoint

    def _render(self, request: Request, kind: str, dealer: Dealership, company: Company | None) -> Response:
        root = str(request.base_url)
        if kind == "guide":
            return conditional(request, build_guide(root, dealer).encode(), "text/markdown; charset=utf-8")
        body = build_card(root, dealer, company) if kind == "card" else build_manifest(root, dealer, company)
        return conditional_json(request, body)

    async def deliveries(self, request: Request) -> Response:
        """``GET /admin/v1/dealerships/{d}/leads/{lead}/deliveries`` through the gateway (``leads.delivery_status``)."""
        try:
            outcome = await self.gateway.invoke(
                Invocation(
                    action=DELIVERY_STATUS_ACTION,
                    payload={"lead_id": request.path_params["lead_id"]},
                    credentials=credentials_from_scope(request.scope),
                    surface="rest",
                    dealership_id=request.path_params["dealership_id"],
                    traceparent=request.headers.get("traceparent"),
                )
            )
        except ForecourtError as exc:
            return JSONResponse(error_body(exc), status_code=exc.http_status, headers=error_headers(exc))
        except Exception:  # top of the surface
            logger.exception("unhandled error on the deliveries route")
            return JSONResponse(error_body(InternalError()), status_code=500)
        return JSONResponse(outcome.output, headers={"Cache-Control": "no-store"})
