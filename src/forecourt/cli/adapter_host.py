"""A remote adapter host: the adapters of one family as their own service (``forecourt adapters serve``).

It runs what the gateway sends it and nothing else: no identity, policy, limits, cache or audit (the gateway keeps
all of it and audits each call once). Each call must carry a service token of this family signed with the shared
secret, pinned to this host's region if pinned at all (:mod:`forecourt.adapters.remote.wire`); its deadline
(``Forecourt-Deadline-Ms``) bounds the adapter's work; its ``traceparent`` names the gateway's trace. The adapters
are built exactly as in the gateway (the same configuration files, the same database and Redis for what they read),
so an adapter behaves the same in either place.

``GET /healthz`` (and ``/readyz``, for the chart's probes) answers ``{"status": "ok", "family", "region"}`` for the
gateways' health checks.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import AsyncIterator, Mapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from forecourt.adapters.errors import HostUnauthorized
from forecourt.adapters.remote.nested import NestedInvoker
from forecourt.adapters.remote.wire import (
    FAMILIES,
    credential_of,
    now_ms,
    result_body,
    trace_of,
    verify_service_token,
)
from forecourt.contract import Action, AdapterResult, AuthMethod, ExecutionContext, Principal
from forecourt.contract.grants import DEADLINE_HEADER, principal_of
from forecourt.errors import ForecourtError, InternalError, InvalidParams, Timeout, UnknownAction, UpstreamUnavailable
from forecourt.settings import Settings

if TYPE_CHECKING:
    import httpx
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse

    from forecourt.bootstrap import Services

logger = logging.getLogger(__name__)

_METHODS = frozenset({"api_key", "oidc", "mtls", "anonymous", "internal"})


class AdapterHost:
    """Runs one family's adapters for gateways that present this family's service token."""

    def __init__(self, services: Services, *, family: str, region: str | None, secret: str, verify: Any = True) -> None:
        self.services = services
        self.family = family
        self.region = region
        self.secret = secret
        self.verify = verify
        """TLS verification of the gateways' callback address (``remote.yaml`` ``tls.ca_file``)."""
        self.adapter_ids = frozenset(FAMILIES[family])
        self.calls = 0
        self._http: httpx.AsyncClient | None = None

    def _error(self, error: ForecourtError) -> JSONResponse:
        from starlette.responses import JSONResponse

        return JSONResponse({"error": error.to_dict()}, status_code=error.http_status, headers=error.headers)

    async def _action(self, raw: Any, adapter_id: str, company_id: Any) -> Action:
        name = raw.get("name") if isinstance(raw, Mapping) else None
        action = self.services.catalogue.get(name) if isinstance(name, str) else None
        if action is None and isinstance(name, str) and isinstance(company_id, str):
            action = await self._upstream_action(name, company_id)
        if action is None or action.adapter != adapter_id:
            raise UnknownAction(details={"adapter": adapter_id})
        return action

    async def _upstream_action(self, name: str, company_id: str) -> Action | None:
        """An upstream tool this host has not listed yet (registered or changed since its last sync): sync now."""
        hub = self.services.upstreams
        if self.family != "upstreams" or hub is None:
            return None
        await hub.reload()
        sessions = hub.of_company(company_id)
        for session in sessions:
            if not session.connected:
                await hub.refresh(session.registered.key)
        action = self.services.catalogue.get(name)
        if action is None and any(not s.connected for s in sessions):
            raise UpstreamUnavailable()  # the gateway listed it; this host cannot reach its upstream right now
        return action

    def _principal(self, ctx: Mapping[str, Any]) -> Principal:
        """The caller as the gateway authenticated it (its member too: admin checks and rooftops read it)."""
        raw = ctx.get("principal")
        if not isinstance(raw, Mapping):  # a gateway of the first wire: who, without scopes or rooftops
            method: AuthMethod = ctx["method"] if ctx.get("method") in _METHODS else "internal"
            return Principal(method=method, company_id=ctx.get("company_id"), member_id=ctx.get("member_id"))
        member = None
        if isinstance(ctx.get("member"), Mapping):
            from forecourt.domain.tenancy import Member

            try:
                member = Member.model_validate(ctx["member"])
            except ValueError as exc:
                raise InvalidParams("The call's member is not valid.") from exc
        return principal_of(raw, member=member)

    def _invoker(self, body: Mapping[str, Any], trace_id: str, deadline_ms: int | None) -> NestedInvoker | None:
        """Nested calls go back to the gateway that sent this one, with its grant (none: the gateway offers none)."""
        nested = body.get("nested")
        if not isinstance(nested, Mapping) or not isinstance(nested.get("url"), str):
            return None
        if not isinstance(nested.get("grant"), str):
            return None
        return NestedInvoker(self.http(), nested["url"], nested["grant"], trace_id=trace_id, deadline_ms=deadline_ms)

    def http(self) -> httpx.AsyncClient:
        """The client of nested calls (keep-alive connections to the gateways)."""
        if self._http is None:
            import httpx

            self._http = httpx.AsyncClient(verify=self.verify, follow_redirects=False, trust_env=False)
        return self._http

    async def aclose(self) -> None:
        """Close the nested calls' connections."""
        if self._http is not None:
            await self._http.aclose()
            self._http = None

    def _context(
        self, body: Mapping[str, Any], action: Action, trace_id: str, deadline_ms: int | None
    ) -> ExecutionContext:
        raw = body.get("context")
        ctx: Mapping[str, Any] = raw if isinstance(raw, Mapping) else {}
        config = ctx.get("adapter_config")
        return ExecutionContext(
            action=action,
            principal=self._principal(ctx),
            dealership_id=ctx.get("dealership_id"),
            company_id=ctx.get("company_id"),
            store=self.services.store,
            settings=self.services.settings,
            now=datetime.now(UTC),
            trace_id=trace_id,
            credential=credential_of(body.get("credential")),
            adapter_config=dict(config) if isinstance(config, Mapping) else {},
            invoke=self._invoker(body, trace_id, deadline_ms),
            idempotency_key=ctx.get("idempotency_key"),
            session_id=ctx.get("session_id"),
        )

    async def execute(self, request: Request) -> JSONResponse:
        """``POST /v1/adapters/{adapter}:execute``."""
        from starlette.responses import JSONResponse

        adapter_id = request.path_params["adapter"]
        try:
            result = await self._run(request, adapter_id)
        except ForecourtError as error:
            if error.http_status >= 500:
                logger.warning("adapter %s answered %s", adapter_id, error.code)
            return self._error(error)
        except Exception:
            logger.exception("adapter %s failed", adapter_id)
            return self._error(InternalError())
        return JSONResponse(result_body(result))

    async def _run(self, request: Request, adapter_id: str) -> AdapterResult:
        auth = request.headers.get("authorization", "")
        if not auth.lower().startswith("bearer "):
            raise HostUnauthorized()
        claims = verify_service_token(auth[7:], self.secret, family=self.family, region=self.region)
        if adapter_id not in self.adapter_ids:
            raise UnknownAction(details={"adapter": adapter_id})
        try:
            body = await request.json()
        except ValueError as exc:
            raise InvalidParams("The call body is not JSON.") from exc
        if not isinstance(body, Mapping) or not isinstance(body.get("payload"), Mapping):
            raise InvalidParams("The call body has no payload.")
        ctx_raw = body.get("context")
        if not isinstance(ctx_raw, Mapping):
            raise InvalidParams("The call body has no context.")
        action = await self._action(body.get("action"), adapter_id, claims.get("company"))
        if claims.get("action") != action.name or claims.get("company") != ctx_raw.get("company_id"):
            raise HostUnauthorized("The service token was issued for another call.")
        trace_id = trace_of(request.headers.get("traceparent")) or str(claims.get("trace") or "")
        deadline = request.headers.get(DEADLINE_HEADER)
        deadline_ms = int(deadline) if deadline and deadline.isdigit() else None
        context = self._context(body, action, trace_id, deadline_ms)
        remaining = (deadline_ms - now_ms()) / 1000 if deadline_ms is not None else action.timeout_s
        if remaining <= 0:
            raise Timeout(details={"timeout_s": 0})
        adapter = self.services.catalogue.adapter_for_id(adapter_id)
        local = getattr(adapter, "local", adapter)  # never a proxy to another host
        if local is None:
            raise UnknownAction(details={"adapter": adapter_id})
        self.calls += 1
        try:
            async with asyncio.timeout(remaining):
                result: AdapterResult = await local.execute(body["payload"], context)
        except TimeoutError as exc:
            raise Timeout(details={"timeout_s": round(remaining, 3)}) from exc
        return result

    async def healthz(self, request: Request) -> JSONResponse:
        """``GET /healthz``."""
        from starlette.responses import JSONResponse

        del request
        return JSONResponse({"status": "ok", "family": self.family, "region": self.region})


def host_secret(settings: Settings, environ: Mapping[str, str] | None = None) -> str:
    """The shared secret the family's service tokens are signed with (``remote.yaml`` ``secret_env``)."""
    from forecourt.adapters.config import adapter_defaults_for

    remote = adapter_defaults_for(settings).get("remote", {})
    name = str(remote.get("secret_env") or "FORECOURT_ADAPTER_HOST_SECRET")
    secret = (os.environ if environ is None else environ).get(name, "")
    if len(secret) < 32:
        raise SystemExit(f"{name} must hold the secret shared with the gateways (at least 32 characters).")
    return secret


def _callback_verify(settings: Settings) -> Any:
    """How nested calls verify the gateways' TLS: ``remote.yaml`` ``tls.ca_file`` (their CA), else the system's."""
    from forecourt.adapters.config import adapter_defaults_for

    tls = adapter_defaults_for(settings).get("remote", {}).get("tls")
    ca_file = tls.get("ca_file") if isinstance(tls, Mapping) else None
    if not ca_file:
        return True
    import ssl

    return ssl.create_default_context(cafile=str(ca_file))


def create_host_app(settings: Settings, *, family: str, region: str | None, secret: str) -> Starlette:
    """The host's ASGI app; its adapters are built (and closed) by the app's lifespan."""
    from starlette.applications import Starlette
    from starlette.routing import Route

    from forecourt.bootstrap import build_services

    if family not in FAMILIES:
        raise ValueError(f"unknown adapter family {family!r}; one of {sorted(FAMILIES)}")
    services = build_services(settings, serving=False)
    host = AdapterHost(services, family=family, region=region, secret=secret, verify=_callback_verify(settings))

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        del app
        await services.start(background=False)
        if family == "upstreams" and services.upstreams is not None:
            # The host's own sessions to the upstream servers, kept current like a gateway replica's.
            services.tasks.append(asyncio.create_task(services.upstreams.run(), name="adapter-host-upstreams"))
        try:
            yield
        finally:
            await host.aclose()
            await services.close()

    app = Starlette(
        routes=[
            Route("/v1/adapters/{adapter}:execute", host.execute, methods=["POST"]),
            Route("/healthz", host.healthz, methods=["GET"]),
            Route("/readyz", host.healthz, methods=["GET"]),
        ],
        lifespan=lifespan,
    )
    app.state.host = host
    return app
