"""The gateway agent: Forecourt's own A2A agent for a dealer's agents, where long-running work is an A2A task.

Paths: ``GET /agent/.well-known/agent-card.json``; JSON-RPC at ``POST /agent/a2a/jsonrpc`` (``SendMessage``,
``SendStreamingMessage``, ``GetTask``, ``ListTasks``, ``CancelTask``, ``SubscribeToTask``, push-config methods);
HTTP+JSON under ``/agent/a2a`` (``POST /message:send``, ``POST /message:stream``, ``GET /tasks/{id}``,
``POST /tasks/{id}:cancel``, ``GET /tasks/{id}:subscribe``, ...). Every request needs a credential
(``Authorization: Bearer``); a task belongs to the company member that created it and nobody else sees it.

The SDK's ``DefaultRequestHandler`` runs the protocol; tasks, their versions and their event log live in
Forecourt's database (the SDK's ``VersionedDatabaseTaskStore`` and ``DatabaseTaskEventStream`` on the store's
engine), so ``GetTask``, ``CancelTask`` and ``SubscribeToTask`` (resubscribe) work on any replica, and a stream
opened on one replica follows a task another replica runs. Push-notification configs live there too and are
delivered by :class:`~forecourt.surfaces.a2a.push.SignedPushSender`. A task ended from outside its request (a held
call that ran on approval, a model job that ended) is written by :class:`~forecourt.surfaces.a2a.task_ends.TaskEnds`.
"""

from __future__ import annotations

import base64
import hashlib
import json
import logging
import warnings
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from typing import TYPE_CHECKING, Any

import httpx
from a2a.client.card_resolver import parse_agent_card
from a2a.server.cluster import DatabaseTaskEventStream, VersionedDatabaseTaskStore
from a2a.server.context import ServerCallContext
from a2a.server.events import Event
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import DefaultServerCallContextBuilder, create_jsonrpc_routes, create_rest_routes
from a2a.server.tasks import DatabasePushNotificationConfigStore
from a2a.types import CancelTaskRequest, Message, SendMessageRequest, Task
from sqlalchemy.exc import SAWarning
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Mount, Route

from forecourt import caching
from forecourt.domain.aap_spec import normalise_numbers
from forecourt.errors import ForecourtError, Unauthorized
from forecourt.gateway.auth.asgi import credentials_from_scope
from forecourt.gateway.base import Principal
from forecourt.gateway.pipeline import Gateway
from forecourt.outbound_urls import guarded_transport
from forecourt.settings import Settings
from forecourt.surfaces.a2a import binding_checks
from forecourt.surfaces.a2a.app import push_url_validator
from forecourt.surfaces.a2a.ended import refuse_if_ended, stored_task
from forecourt.surfaces.a2a.http_cache import conditional_json
from forecourt.surfaces.a2a.owners import OWNER, PRINCIPAL_SCOPE, principal_owner, task_owner
from forecourt.surfaces.a2a.push import SignedPushSender
from forecourt.surfaces.a2a.task_ends import TaskEnds
from forecourt.surfaces.a2a.task_executor import GatewayTaskExecutor

if TYPE_CHECKING:
    from forecourt.domain.task_links import JobEnd, LinkedTask

logger = logging.getLogger(__name__)

AGENT_PREFIX = "/agent"
CARD_PATH = AGENT_PREFIX + "/.well-known/agent-card.json"
JSONRPC_PATH = AGENT_PREFIX + "/a2a/jsonrpc"
REST_PATH = AGENT_PREFIX + "/a2a"
TASKS_TABLE = "a2a_agent_tasks"
EVENTS_TABLE = "a2a_agent_task_events"
VERSIONS_TABLE = "a2a_agent_task_versions"
PUSH_TABLE = "a2a_agent_push_configs"
EVENT_POLL_S = 0.1
"""How often a stream on one replica polls the shared event log for a task another replica runs."""
Endpoint = Callable[[Request], Awaitable[Response]]


class MemberContextBuilder(DefaultServerCallContextBuilder):
    """Adds the principal the endpoint wrapper authenticated, and the owner derived from it."""

    def build(self, request: Request) -> ServerCallContext:
        """The SDK's call context plus the caller."""
        ctx = super().build(request)
        principal = request.scope.get(PRINCIPAL_SCOPE)
        ctx.state["principal"] = principal
        if isinstance(principal, Principal):
            ctx.state[OWNER] = principal_owner(principal)
        return ctx


class GatewayRequestHandler(DefaultRequestHandler):
    """The SDK's handler; a follow-up message that names only its ``taskId`` continues the task in the task's context,
    and canceling a workflow task cancels its run.

    The SDK builds a message's request context before it reads the task, so a ``taskId`` without ``contextId`` gets
    a fresh context id; on the replica that ran the task the live task object hides that, but on any other replica
    the new id meets the stored task's and the turn fails ("Context ... doesn't match"). A2A v1.0 lets a client name
    the task alone, so the context is read from the stored task first.
    """

    async def _with_task_context(self, params: SendMessageRequest, context: ServerCallContext) -> None:
        message = params.message
        if not message.task_id:
            return
        found = await stored_task(self.task_store, message.task_id, context)
        refuse_if_ended(params, found)  # before the SDK builds a turn for it (surfaces/a2a/ended.py)
        if found is not None and found.context_id and not message.context_id:
            message.context_id = found.context_id

    async def on_cancel_task(self, params: CancelTaskRequest, context: ServerCallContext) -> Task | None:
        """``CancelTask``; a workflow task's run is canceled with it, whichever replica ran the task."""
        task: Task | None = await super().on_cancel_task(params, context)
        if task is not None and isinstance(self.agent_executor, GatewayTaskExecutor):
            await self.agent_executor.cancel_run(task, context)
        return task

    async def on_message_send(self, params: SendMessageRequest, context: ServerCallContext) -> Task | Message:
        """``SendMessage``, with the task's own context when the message names only the task."""
        await self._with_task_context(params, context)
        answer: Task | Message = await super().on_message_send(params, context)
        return answer

    async def on_message_send_stream(
        self, params: SendMessageRequest, context: ServerCallContext
    ) -> AsyncGenerator[Event, None]:
        """``SendStreamingMessage``, with the task's own context when the message names only the task."""
        await self._with_task_context(params, context)
        async for event in super().on_message_send_stream(params, context):
            yield event


def agent_card(base_url: str, settings: Settings) -> dict[str, Any]:
    """The gateway agent's card; ``capabilities`` say what this server really does."""
    root = base_url.rstrip("/")
    return {
        "name": f"{settings.instance_name} gateway agent",
        "description": (
            "Forecourt's MCP gateway as an A2A agent: delegate any catalogue action (workflows, model calls and "
            "jobs, embeddings, dealer data) as a task; long-running work streams its progress, waits for input "
            "at approvals and user tasks, and notifies a webhook."
        ),
        "version": "1.0.0",
        "supportedInterfaces": [
            {"url": root + JSONRPC_PATH, "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
            {"url": root + REST_PATH, "protocolBinding": "HTTP+JSON", "protocolVersion": "1.0"},
        ],
        "capabilities": {"streaming": True, "pushNotifications": True},
        "securitySchemes": {"bearer": {"httpAuthSecurityScheme": {"scheme": "Bearer"}}},
        "securityRequirements": [{"schemes": {"bearer": {"list": []}}}],
        "defaultInputModes": ["application/json"],
        "defaultOutputModes": ["application/json"],
        "skills": [
            {
                "id": "gateway.invoke",
                "name": "Run a gateway action as a task",
                "description": (
                    'Send a DataPart {"action": "<name>", "payload": {...}} (or seed 001\'s {"action": {"type", '
                    '"name"}, "payload"}). Workflows report their log as a streamed artifact and stop in '
                    'input-required at user tasks: answer with {"task_id"?, "data": {...}} on the same task.'
                ),
                "tags": ["workflow", "model", "embedding", "approval", "long-running"],
                "inputModes": ["application/json"],
                "outputModes": ["application/json"],
            }
        ],
    }


@caching.once
def _models() -> tuple[Any, Any, Any, Any]:
    """The SDK's ORM classes for Forecourt's table names, declared once per process."""
    from a2a.server.models import (
        create_push_notification_config_model,
        create_task_event_model,
        create_task_model,
        create_task_version_model,
    )

    with warnings.catch_warnings():
        # The SDK names every generated class like its default one; harmless, declared once here.
        warnings.simplefilter("ignore", SAWarning)
        return (
            create_task_model(TASKS_TABLE),
            create_task_event_model(EVENTS_TABLE),
            create_task_version_model(VERSIONS_TABLE),
            create_push_notification_config_model(PUSH_TABLE),
        )


def _fernet_key(settings: Settings) -> bytes:
    digest = hashlib.sha256(b"forecourt-a2a-push\x00" + settings.cursor_secret.get_secret_value().encode()).digest()
    return base64.urlsafe_b64encode(digest)


class GatewayAgentSurface:
    """Routes of the gateway agent over both A2A bindings."""

    def __init__(
        self,
        gateway: Gateway,
        settings: Settings,
        *,
        http: httpx.AsyncClient | None = None,
        job_ends: list[Callable[[JobEnd], Awaitable[None]]] | None = None,
        job_cancels: list[Callable[[LinkedTask], Awaitable[bool]]] | None = None,
    ) -> None:
        """``job_ends``, ``job_cancels``: the model-job poller's listeners (``ModelJobPoller.on_ended``,
        ``ModelJobPoller.task_canceled``); the surface joins them."""
        engine = getattr(gateway.store, "engine", None)
        if engine is None:
            raise TypeError("the gateway agent keeps its tasks in the SQL store")
        self.gateway = gateway
        self.settings = settings
        task_model, event_model, version_model, push_model = _models()
        # Built with the SDK's default names, then pointed at Forecourt's tables (the ORM classes of those are
        # declared once per process in _models; declaring them per store would clash in one MetaData).
        self.task_store = VersionedDatabaseTaskStore(engine, create_table=True, owner_resolver=task_owner)
        self.task_store._db.task_model = task_model
        self.task_store._event_model = event_model
        self.task_store._version_model = version_model
        self.events = DatabaseTaskEventStream(engine, create_table=True, poll_interval_s=EVENT_POLL_S)
        self.events._event_model = event_model
        self.push_store = DatabasePushNotificationConfigStore(
            engine, create_table=True, encryption_key=_fernet_key(settings), owner_resolver=task_owner
        )
        self.push_store.config_model = push_model
        validator = push_url_validator(settings)
        # Push webhooks are checked when registered and again at every connection (resolved once, connected to
        # the checked address): a name that rebinds to a private address afterwards is still refused.
        self.http = http or httpx.AsyncClient(
            timeout=10.0,
            follow_redirects=False,
            transport=guarded_transport(allow_private=settings.allow_private_targets),
        )
        self.push_sender = SignedPushSender(self.http, self.push_store, validator)
        self.executor = GatewayTaskExecutor(gateway, tasks=self.task_store)
        # A call a policy held ends its waiting task as soon as it runs on approval (any replica may decide); a model
        # job a task started ends the task when the poller of any replica announces the job's end, and is canceled by
        # that poller when its task was canceled on a replica that does not run it.
        self.ends = TaskEnds(self.task_store, self.events, self.push_sender)
        if gateway.approvals is not None:
            gateway.approvals.on_ran.append(self.ends.held_ran)
        self.job_ends = job_ends
        if job_ends is not None:
            job_ends.append(self.ends.job_ended)
        self.job_cancels = job_cancels
        if job_cancels is not None:
            job_cancels.append(self.ends.job_canceled)
        self.handler = GatewayRequestHandler(
            agent_executor=self.executor,
            task_store=self.task_store,
            agent_card=parse_agent_card(agent_card("http://localhost/", settings)),
            push_config_store=self.push_store,
            push_sender=self.push_sender,
            push_url_validator=validator,
            event_stream=self.events,
        )
        self.builder = MemberContextBuilder()

    async def start(self) -> None:
        """Create the SDK's tables when missing (idempotent)."""
        await self.task_store.initialize()
        await self.events.initialize()
        await self.push_store.initialize()

    async def close(self) -> None:
        """Drain running tasks and close the webhook client."""
        if self.gateway.approvals is not None and self.ends.held_ran in self.gateway.approvals.on_ran:
            self.gateway.approvals.on_ran.remove(self.ends.held_ran)
        if self.job_ends is not None and self.ends.job_ended in self.job_ends:
            self.job_ends.remove(self.ends.job_ended)
        if self.job_cancels is not None and self.ends.job_canceled in self.job_cancels:
            self.job_cancels.remove(self.ends.job_canceled)
        await self.handler.aclose()
        await self.http.aclose()

    def routes(self) -> list[BaseRoute]:
        """The card and both bindings."""
        jsonrpc = [
            Route(path, self._authenticated(r.endpoint, jsonrpc=True), methods=["POST"])
            for r in create_jsonrpc_routes(self.handler, rpc_url=JSONRPC_PATH, context_builder=self.builder)
            if isinstance(r, Route)
            for path in (r.path, r.path + "/")  # the same endpoint with a trailing slash
        ]
        rest = [
            Route(
                r.path, self._authenticated(r.endpoint, jsonrpc=False), methods=sorted((r.methods or set()) - {"HEAD"})
            )
            for r in create_rest_routes(self.handler, context_builder=self.builder)
            if isinstance(r, Route)
        ]
        return [Route(CARD_PATH, self.card, methods=["GET"]), *jsonrpc, Mount(REST_PATH, routes=rest)]

    async def card(self, request: Request) -> Response:
        """``GET /agent/.well-known/agent-card.json``."""
        return conditional_json(request, agent_card(str(request.base_url), self.settings))

    def _authenticated(self, endpoint: Endpoint, *, jsonrpc: bool) -> Endpoint:
        async def wrapped(request: Request) -> Response:
            wrong = await binding_checks.jsonrpc_refusal(request) if jsonrpc else binding_checks.rest_refusal(request)
            if wrong is not None:
                return wrong
            try:
                await self.start()
                principal = await self.gateway.authenticator.authenticate(credentials_from_scope(request.scope), None)
                if principal is None or principal.anonymous:
                    raise Unauthorized()
            except ForecourtError as exc:
                return _refusal(exc, jsonrpc=jsonrpc)
            request.scope[PRINCIPAL_SCOPE] = principal
            return binding_checks.json_answer(integral_numbers(await endpoint(request)))

        return wrapped


def integral_numbers(response: Response) -> Response:
    """The SDK's answer with integral doubles written as integers (minor units, years, counts), streamed or not.

    Protobuf ``Value`` makes every DataPart number a double, so an action's ``amount_minor`` would reach the
    client as ``4463500.0``; the dealer agents' answers are normalised the same way (``app._normalised``).
    """
    source = getattr(response, "body_iterator", None)
    if source is not None:  # an SSE stream: events are dicts or ServerSentEvents (sse-starlette), or text
        response.body_iterator = _integral_events(source)  # type: ignore[attr-defined]
        return response
    if "json" not in (response.media_type or response.headers.get("content-type", "")):
        return response
    try:
        body = json.loads(bytes(response.body))
    except (ValueError, AttributeError):
        return response
    headers = {k: v for k, v in response.headers.items() if k.lower() not in ("content-length", "content-type")}
    media_type = response.media_type or "application/json"
    return JSONResponse(
        normalise_numbers(body), status_code=response.status_code, headers=headers, media_type=media_type
    )


async def _integral_events(source: AsyncIterator[Any]) -> AsyncIterator[Any]:
    async for event in source:
        if isinstance(event, dict) and isinstance(event.get("data"), str):
            yield {**event, "data": _integral_json(event["data"])}
        elif isinstance(getattr(event, "data", None), str):
            event.data = _integral_json(event.data)
            yield event
        else:
            yield event


def _integral_json(text: str) -> str:
    try:
        return json.dumps(normalise_numbers(json.loads(text)))
    except ValueError:
        return text


def _refusal(exc: ForecourtError, *, jsonrpc: bool) -> Response:
    headers = {"WWW-Authenticate": 'Bearer realm="forecourt"', **exc.headers}
    if jsonrpc:
        error = {"code": exc.jsonrpc_code, "message": exc.message, "data": exc.to_dict()}
        return JSONResponse(
            {"jsonrpc": "2.0", "id": None, "error": error}, status_code=exc.http_status, headers=headers
        )
    return JSONResponse({"error": exc.to_dict()}, status_code=exc.http_status, headers=headers)


def gateway_agent_routes(services: Any) -> list[BaseRoute]:
    """The gateway agent's routes for an app's services (none without an SQL store); closed with the services."""
    if getattr(services.gateway.store, "engine", None) is None:
        return []
    poller = services.model_jobs
    surface = GatewayAgentSurface(
        services.gateway,
        services.settings,
        job_ends=poller.on_ended if poller is not None else None,
        job_cancels=poller.task_canceled if poller is not None else None,
    )
    services.closers.append(surface.close)
    return surface.routes()
