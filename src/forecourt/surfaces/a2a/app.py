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
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from a2a.client.card_resolver import parse_agent_card
from a2a.server.context import ServerCallContext
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import DefaultServerCallContextBuilder, create_jsonrpc_routes, create_rest_routes
from a2a.server.tasks import InMemoryTaskStore, PushNotificationConfigStore, TaskStore
from prometheus_client import Counter
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response, StreamingResponse
from starlette.routing import BaseRoute, Mount, Route

from forecourt.domain.aap_spec import SKILLS, normalise_numbers
from forecourt.domain.tenancy import Company, Dealership
from forecourt.errors import ForecourtError, InternalError, UnsafeTarget
from forecourt.gateway.auth.asgi import credentials_from_scope
from forecourt.gateway.base import Invocation
from forecourt.gateway.pipeline import Gateway
from forecourt.netguard import check_url_async
from forecourt.settings import Settings
from forecourt.surfaces.a2a import client_faults
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
from forecourt.surfaces.a2a.executor import AapExecutor, Subscriber, recorded_error
from forecourt.surfaces.a2a.streaming import stream_with_aap_errors
from forecourt.surfaces.http_util import error_body, error_headers

if TYPE_CHECKING:
    from forecourt.store.base import Store

logger = logging.getLogger(__name__)

_CACHE = "public, max-age=60"
Endpoint = Callable[[Request], Awaitable[Response]]


def dealership_owner(context: ServerCallContext) -> str:
    """Tasks and push configs belong to the dealership whose agent received the call."""
    return str(context.state.get("dealership_id") or "-")


class DealerContextBuilder(DefaultServerCallContextBuilder):
    """Adds the dealership, the presented credentials and a per-request slot shared with the endpoint wrappers."""

    def build(self, request: Request) -> ServerCallContext:
        """The SDK's call context plus Forecourt's request state."""
        ctx = super().build(request)
        ctx.state["dealership_id"] = request.path_params.get("dealership_id")
        ctx.state["credentials"] = credentials_from_scope(request.scope)
        ctx.state["aap"] = request.scope.setdefault("aap", {})
        return ctx


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
    (a call held for approval answers an input-required Task without history): the task store only holds the
    SDK's per-request bookkeeping and stays in memory. Push configs must outlive the request and be visible to
    every replica, so they live in the database.
    """
    return InMemoryTaskStore(owner_resolver=dealership_owner), store.push_config_store(dealership_owner)


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


def _wrap_jsonrpc(endpoint: Endpoint, faults: Counter, direct: DirectSends) -> Endpoint:
    async def wrapped(request: Request) -> Response:
        answered = await direct.answer(request)
        if answered is not None:
            return answered
        with client_faults.counting_into(faults):
            response = await endpoint(request)
        if isinstance(response, StreamingResponse):
            return stream_with_aap_errors(response, request, jsonrpc=True)
        err = recorded_error(request.scope)
        if err is None:
            return _normalised(response)
        try:
            body = json.loads(await request.body())
            request_id = body.get("id") if isinstance(body, dict) else None
        except ValueError:
            request_id = None
        error = {"code": err.rpc_code, "message": err.payload["message"], "data": err.payload}
        return JSONResponse({"jsonrpc": "2.0", "id": request_id, "error": error}, headers=err.headers)

    wrapped.direct = direct  # type: ignore[attr-defined]  # for tests and diagnostics: route.endpoint.direct
    return wrapped


def _wrap_rest(endpoint: Endpoint, faults: Counter) -> Endpoint:
    async def wrapped(request: Request) -> Response:
        with client_faults.counting_into(faults):
            response = await endpoint(request)
        if isinstance(response, StreamingResponse):
            return stream_with_aap_errors(response, request, jsonrpc=False)
        err = recorded_error(request.scope)
        if err is None:
            return _normalised(response)
        return JSONResponse(
            err.payload, status_code=err.http_status, headers=err.headers, media_type="application/json"
        )

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
        self.handler = DefaultRequestHandler(
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
            Route(r.path, _wrap_jsonrpc(r.endpoint, faults, self.direct), methods=["POST"])
            for r in create_jsonrpc_routes(self.handler, rpc_url=prefix + JSONRPC_PATH, context_builder=self.builder)
            if isinstance(r, Route)
        ]
        rest = [
            Route(r.path, _wrap_rest(r.endpoint, faults), methods=sorted((r.methods or set()) - {"HEAD"}))
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
            return self._render(kind, str(request.base_url), dealer, company)

        return endpoint

    def _render(self, kind: str, root: str, dealer: Dealership, company: Company | None) -> Response:
        headers = {"Cache-Control": _CACHE}
        if kind == "guide":
            return PlainTextResponse(build_guide(root, dealer), media_type="text/markdown", headers=headers)
        body = build_card(root, dealer, company) if kind == "card" else build_manifest(root, dealer, company)
        return JSONResponse(body, headers=headers)

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
