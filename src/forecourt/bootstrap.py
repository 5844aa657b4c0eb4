"""The one place that wires Forecourt together: ``build_services(settings)`` and ``create_app(settings)``."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.routing import BaseRoute

from forecourt.actions.base import Catalogue
from forecourt.gateway.audit import AuditWriter
from forecourt.gateway.backends import Backends, build_backends
from forecourt.gateway.freshness import ChangeGenerations
from forecourt.gateway.pipeline import AdapterConfigSource, Gateway
from forecourt.gateway.telemetry import Metrics, build_metrics, configure_tracing
from forecourt.settings import Settings
from forecourt.store import open_store
from forecourt.store.base import Store

logger = logging.getLogger(__name__)


@dataclass
class Services:
    """Everything a process runs with; built once per app."""

    settings: Settings
    store: Store
    catalogue: Catalogue
    backends: Backends
    metrics: Metrics
    audit: AuditWriter
    gateway: Gateway
    background: list[Callable[[], Any]] = field(default_factory=list)
    tasks: list[asyncio.Task[Any]] = field(default_factory=list)
    closers: list[Callable[[], Any]] = field(default_factory=list)
    draining: bool = False
    aap: Any = None
    """The AAP dealer agent's runtime (``forecourt.delivery.runtime.AapRuntime``)."""
    events: Any = None
    """The outbox dispatcher (``forecourt.events.OutboxDispatcher``): change events onto the event bus."""
    upstreams: Any = None
    """The upstream MCP server registry (``forecourt.adapters.upstream.UpstreamHub``)."""
    generations: ChangeGenerations | None = None
    """Per-dealership change generations: fed by ``events``, used by ``gateway`` in cache keys."""

    async def start(self) -> None:
        """Start background work (audit flusher, outbox dispatch, deliveries)."""
        self.audit.start()
        for factory in self.background:
            self.tasks.append(asyncio.create_task(factory()))

    async def close(self) -> None:
        """Drain in-flight calls, flush audit, stop background work, release connections."""
        self.draining = True
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(self.settings.drain_timeout_s):
                await self.gateway.drained()
        for task in self.tasks:
            task.cancel()
        for task in self.tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        await self.audit.close()
        for closer in reversed(self.closers):
            with contextlib.suppress(Exception):
                result = closer()
                if asyncio.iscoroutine(result):
                    await result
        await self.backends.close()
        await self.store.close()


def build_catalogue(settings: Settings) -> Catalogue:
    """Every action and adapter Forecourt offers."""
    from forecourt.actions.dealer import register_dealer_actions
    from forecourt.adapters.dealer_data import DealerDataAdapter

    catalogue = Catalogue()
    register_dealer_actions(catalogue, with_adapter=False)
    catalogue.add_adapter(DealerDataAdapter())
    from forecourt.surfaces.mcp.extra_actions import register_appointment_actions

    register_appointment_actions(catalogue)
    from forecourt.aap.actions import register_aap_actions

    register_aap_actions(catalogue)
    from forecourt.adapters.workflow import register_workflow_actions

    register_workflow_actions(catalogue)
    from forecourt.adapters.knowledge import register_knowledge
    from forecourt.adapters.named_queries import register_named_queries

    register_knowledge(catalogue)
    register_named_queries(catalogue)
    return catalogue


def build_services(settings: Settings, *, store: Store | None = None) -> Services:
    """Wire store, backends, authenticators, gateway and audit from ``settings``."""
    from forecourt.actions.admin import AdminAdapter, register_admin_actions
    from forecourt.adapters.config import adapter_defaults_for
    from forecourt.adapters.models import register_model_actions
    from forecourt.gateway.auth import build_authenticator
    from forecourt.gateway.auth.apikeys import ApiKeyService
    from forecourt.gateway.credentials import build_credential_broker

    store = store or open_store(settings)
    backends = build_backends(settings)
    adapter_configs = AdapterConfigSource(adapter_defaults_for(settings))
    metrics = build_metrics()
    audit = AuditWriter(
        store, metrics, batch_size=settings.audit_batch_size, flush_interval_s=settings.audit_flush_interval_s
    )
    catalogue = build_catalogue(settings)
    authenticator = build_authenticator(settings, store, backends.revocations)
    # One set of generations per process: the outbox dispatcher moves them on, the gateway keys its cache by them.
    generations = ChangeGenerations(
        stale_after_s=max(2.0, 20 * settings.events_poll_interval_s), registry=metrics.registry
    )
    gateway = Gateway(
        settings=settings,
        store=store,
        catalogue=catalogue,
        authenticator=authenticator,
        rate_limiter=backends.rate_limiter,
        cache=backends.cache,
        idempotency=backends.idempotency,
        audit=audit,
        metrics=metrics,
        tracer=configure_tracing(settings),
        credentials=build_credential_broker(settings, adapter_defaults=adapter_configs.defaults),
        adapter_configs=adapter_configs,
        freshness=generations,
    )
    register_admin_actions(catalogue)
    model_closers = register_model_actions(catalogue, adapter_configs.defaults, gateway)
    catalogue.add_adapter(
        AdminAdapter(
            ApiKeyService.from_settings(settings, store, backends.revocations), on_change=gateway.tenancy.invalidate
        )
    )
    services = Services(
        settings=settings,
        store=store,
        catalogue=catalogue,
        backends=backends,
        metrics=metrics,
        audit=audit,
        gateway=gateway,
        generations=generations,
    )
    services.closers.append(authenticator.aclose)
    from forecourt.events import OutboxDispatcher

    services.events = OutboxDispatcher(
        store,
        backends.events,
        claims=backends.idempotency if backends.kind == "redis" else None,
        poll_interval_s=settings.events_poll_interval_s,
        generations=generations,
    )
    services.background.append(services.events.run)
    services.closers.extend(model_closers)
    from forecourt.delivery.runtime import build_aap_runtime

    services.aap = build_aap_runtime(services)
    from forecourt.adapters.upstream import register_upstreams

    services.upstreams = register_upstreams(services)
    return services


def _routes(services: Services) -> tuple[list[BaseRoute], list[Middleware]]:
    from forecourt.surfaces.admin_api import AdminApi
    from forecourt.surfaces.health import health_routes
    from forecourt.surfaces.rest import RestSurface

    routes: list[BaseRoute] = []
    routes.extend(health_routes(services.store, services.metrics, lambda: services.draining))
    from forecourt.surfaces.mcp import mcp_routes

    routes.extend(mcp_routes(services))  # "/mcp" exactly; "/mcp/{action}" below stays the REST envelope
    routes.extend(RestSurface(services.gateway, services.settings).routes())
    routes.extend(AdminApi(services.gateway, services.settings).routes())
    from forecourt.surfaces.a2a.app import A2ASurface

    aap = services.aap
    routes.extend(
        A2ASurface(
            services.gateway,
            services.settings,
            aap.directory,
            subscriber=aap.subscribe,
            stores=(aap.task_store, aap.push_store),
        ).routes()
    )
    from forecourt.surfaces.guard import RequestGuard
    from forecourt.surfaces.openapi import openapi_routes

    routes.extend(openapi_routes(services.catalogue))
    # The guard is outermost: every surface (MCP and A2A parse their own bodies) gets bounded input.
    return routes, [Middleware(RequestGuard, settings=services.settings)]


def create_app(settings: Settings | None = None, *, services: Services | None = None) -> Starlette:
    """The ASGI app for ``settings`` (or for already-built ``services``)."""
    settings = settings or (services.settings if services else Settings())
    services = services or build_services(settings)
    routes, middleware = _routes(services)

    @contextlib.asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        await services.start()
        try:
            yield
        finally:
            await services.close()

    app = Starlette(routes=routes, middleware=middleware, lifespan=lifespan)
    app.state.services = services
    return app


def route_paths(app: Starlette) -> Sequence[str]:
    """The paths an app serves (for docs and tests)."""
    return [getattr(r, "path", "") for r in app.routes]
