"""The one place that wires Forecourt together: ``build_services(settings)`` and ``create_app(settings)``."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from forecourt.background import BackgroundTasks
from forecourt.contract import Catalogue
from forecourt.gateway.audit import AuditWriter
from forecourt.gateway.audit_journal import audit_journal_for
from forecourt.gateway.backends import Backends, build_backends
from forecourt.gateway.freshness import ChangeGenerations
from forecourt.gateway.pipeline import AdapterConfigSource, Gateway
from forecourt.gateway.telemetry import Metrics, build_metrics, configure_tracing
from forecourt.lifecycle import Drain
from forecourt.settings import Settings
from forecourt.store import open_store
from forecourt.store.base import Store

if TYPE_CHECKING:  # Starlette is imported by create_app(): one-shot commands build services, not the app
    from starlette.applications import Starlette
    from starlette.middleware import Middleware
    from starlette.routing import BaseRoute

    from forecourt.adapters.upstream.hub import UpstreamHub
    from forecourt.delivery.model_jobs import ModelJobPoller
    from forecourt.delivery.runtime import AapRuntime
    from forecourt.events import OutboxDispatcher

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
    drain: Drain = field(default_factory=Drain)
    """What SIGTERM starts (``forecourt serve``): readiness off, SSE streams told to reconnect, loops stopped."""
    aap: AapRuntime | None = None
    """The AAP dealer agent's runtime: A2A stores, delivery worker, event router."""
    events: OutboxDispatcher | None = None
    """The outbox dispatcher: change events onto the event bus."""
    upstreams: UpstreamHub | None = None
    """The upstream MCP server registry (what the MCP surface federates)."""
    generations: ChangeGenerations | None = None
    """Per-dealership change generations: fed by ``events``, used by ``gateway`` in cache keys."""
    model_jobs: ModelJobPoller | None = None
    """The model-job poller: refreshes fine-tuning and batch jobs, ends their A2A tasks and announces their ends."""

    @property
    def runner(self) -> BackgroundTasks:
        """Where parts register their background loops and closers."""
        return BackgroundTasks(self.background, self.closers, self.drain.callbacks)

    async def start(self, *, background: bool = True) -> None:
        """Start background work (audit flusher, outbox dispatch, deliveries).

        ``background=False`` starts only the audit writer: a one-shot command's own call is all it runs (its change
        events wait in the outbox for a serving process), so no loop competes with it for the database.
        """
        await self.audit.recover()
        self.audit.start()
        if not background:
            return
        for factory in self.background:
            self.tasks.append(asyncio.create_task(factory(), name=getattr(factory, "__qualname__", None)))

    def begin_drain(self) -> None:
        """Start draining: ``/readyz`` 503, SSE streams closed with ``retry:``, background loops stop taking work."""
        self.draining = True
        self.metrics.draining.set(1)
        self.drain.begin()

    async def close(self) -> None:
        """Drain in-flight calls, flush audit, stop background work, release connections."""
        self.begin_drain()
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(self.settings.drain_timeout_s):
                await self.gateway.drained()
        # Write the audit trail while background work still runs normally: a task cancelled in the middle of
        # an SQLite write can leave its lock held until the process ends, and the flush below would then fail.
        with contextlib.suppress(Exception):
            async with asyncio.timeout(5.0):
                await self.audit.flush(attempts=3)
        for task in self.tasks:
            task.cancel()
        if self.tasks:
            _, slow = await asyncio.wait(self.tasks, timeout=self.settings.drain_timeout_s)
            for task in slow:
                # Still waited for: the store and backends close below, under a loop that is still using them.
                logger.warning("background task %s is slow to stop", task.get_name())
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


async def _load_demo(store: Store, options: Mapping[str, Any]) -> dict[str, Any]:
    """``admin.demo.load``: the demo generators sit above the actions, so the action is handed this."""
    from forecourt.demo.operator import load

    return await load(store, options)


def build_services(settings: Settings, *, store: Store | None = None, serving: bool = True) -> Services:
    """Wire store, backends, authenticators, gateway and audit from ``settings``.

    ``serving=False`` is for a one-shot command: it leaves out the parts that only work in background loops
    (outbox dispatch, deliveries and the AAP runtime, feed pulls, model-job polls, the sampler and metric
    export), which such a command never starts, so it neither builds them nor imports what they need.
    """
    from forecourt.actions.catalogue import CatalogueParts, build_catalogue
    from forecourt.adapters.config import adapter_defaults_for
    from forecourt.gateway.auth import build_authenticator
    from forecourt.gateway.auth.apikeys import ApiKeyService
    from forecourt.gateway.auth.operator import OperatorKeys
    from forecourt.gateway.credentials import CredentialBroker, build_credential_broker

    store = store or open_store(settings)
    backends = build_backends(settings)
    adapter_configs = AdapterConfigSource(adapter_defaults_for(settings))
    metrics = build_metrics()
    audit = AuditWriter(
        store,
        metrics,
        batch_size=settings.audit_batch_size,
        flush_interval_s=settings.audit_flush_interval_s,
        journal=audit_journal_for(settings),
    )
    built_gateway: list[Gateway] = []

    async def tenancy_changed(company_ids: tuple[str, ...]) -> None:
        """After a change to tenants committed: this replica forgets at once; every replica's next call re-reads."""
        await backends.authority.moved(company_ids)
        built_gateway[0].tenancy.invalidate()

    built = build_catalogue(
        CatalogueParts(
            adapter_defaults=adapter_configs.defaults,
            gateway=lambda: built_gateway[0],
            api_keys=ApiKeyService.from_settings(settings, store, backends.revocations),
            operator_keys=OperatorKeys(store, settings.api_key_pepper),
            on_tenancy_change=tenancy_changed,
            demo_loader=_load_demo,
        )
    )
    catalogue = built.catalogue
    authenticator = build_authenticator(
        settings, store, backends.revocations, backends.authority, rate_limiter=backends.rate_limiter
    )
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
    gateway.tenancy.authority = backends.authority
    gateway.protect.use(backends.taint, backends.budget_meters)  # shared by the replicas with Redis
    built_gateway.append(gateway)
    _register_console_actions(catalogue, gateway, services_store=store)
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
    if isinstance(gateway.credentials, CredentialBroker):
        services.closers.append(gateway.credentials.aclose)  # the credential providers' HTTP clients
    from forecourt.gateway.cloud_observability import enable_cloud_export

    services.closers.extend(enable_cloud_export(settings, metrics.registry))
    services.drain.sse_retry_ms = settings.sse_retry_ms
    if audit.journal is not None:  # group commit waits only while other requests are being answered
        audit.journal.siblings = lambda: services.drain.requests_open - 1
    if serving:
        _add_background_work(services)
    else:
        _add_log_export(services)
    services.closers.extend(built.closers)
    from forecourt.adapters.upstream import register_upstreams

    services.upstreams = register_upstreams(store, catalogue, settings, gateway, services.runner)
    # Last: the upstream adapter is registered just above, and a remote family replaces every adapter it names.
    services.closers.extend(_remote_adapters(catalogue, adapter_configs))
    return services


def _add_background_work(services: Services) -> None:
    """What a serving process runs in the background: outbox dispatch, sampling, model jobs, AAP, feed pulls."""
    from forecourt.events import OutboxDispatcher

    settings, store, backends = services.settings, services.store, services.backends
    services.events = OutboxDispatcher(
        store,
        backends.events,
        claims=backends.idempotency if backends.kind == "redis" else None,
        poll_interval_s=settings.events_poll_interval_s,
        generations=services.generations,
    )
    services.background.append(services.events.run)
    _add_sampler(services)
    from forecourt.delivery.model_jobs import ModelJobPoller

    services.model_jobs = ModelJobPoller(services.gateway, backends.events)  # fine-tuning and batch jobs
    services.background.append(services.model_jobs.run)
    from forecourt.delivery.runtime import build_aap_runtime

    services.aap = build_aap_runtime(store, settings, services.runner)
    from forecourt.inventory_import.schedule import FeedPuller

    feeds = FeedPuller(store, settings)
    services.runner.run(feeds.run)
    services.runner.on_drain(feeds.stop)
    services.runner.on_close(feeds.aclose)


def _add_log_export(services: Services) -> None:
    """OTLP log export for a one-shot command, when configured (its sampler and metric export are left out)."""
    from forecourt.gateway.telemetry import otlp_url

    if otlp_url(services.settings, "logs") is None:
        return
    from forecourt.gateway.otel_export import configure_log_export

    close_logs = configure_log_export(services.settings)
    if close_logs is not None:
        services.closers.append(close_logs)


def _add_sampler(services: Services) -> None:
    """Process, pool, Redis and backlog gauges sampled in the background; OTLP metrics and logs when configured."""
    from forecourt.gateway.sampler import RuntimeSampler

    dispatcher = services.events
    sampler = RuntimeSampler(
        services.metrics,
        services.store,
        interval_s=services.settings.metrics_sample_interval_s,
        redis_ping=services.backends.ping,
        outbox_position=lambda: dispatcher.position if dispatcher is not None else None,
        certificates={"server": services.settings.tls_certfile} if services.settings.tls_certfile else None,
    )
    sampler.announce()
    services.background.append(sampler.run)
    from forecourt.gateway.otel_export import configure_log_export, metrics_export

    export = metrics_export(services.settings, services.metrics.registry)
    if export is not None:
        services.background.append(export.run)
    close_logs = configure_log_export(services.settings)
    if close_logs is not None:
        services.closers.append(close_logs)


def _multiprocess_dir(settings: Settings) -> Any:
    """``PROMETHEUS_MULTIPROC_DIR`` when prometheus-client really runs multiprocess in this process, else None."""
    from prometheus_client import values

    multiprocess = bool(getattr(values.ValueClass, "_multiprocess", False))
    return settings.prometheus_multiproc_dir if multiprocess else None


def _remote_adapters(catalogue: Catalogue, configs: AdapterConfigSource) -> list[Callable[[], Any]]:
    """Proxies to remote adapter hosts for the families ``remote.yaml`` names (none: all adapters in-process)."""
    from forecourt.adapters.remote import install_remote_adapters

    async def region_of(view: Store, company_id: str | None) -> str | None:
        region = (await configs.resolve(view, "remote", company_id)).get("region")
        return region if isinstance(region, str) and region else None

    return list(install_remote_adapters(catalogue, configs.defaults.get("remote", {}), region_of))


def _register_console_actions(catalogue: Catalogue, gateway: Gateway, *, services_store: Store) -> None:
    """The operator console's actions (views, leads, approvals, policy pre-flight) and the approval stage."""
    from forecourt.actions.approvals import register_approvals
    from forecourt.actions.budgets import register_budgets
    from forecourt.actions.console_leads import register_console_leads
    from forecourt.actions.console_tables import register_console_tables
    from forecourt.actions.console_views import register_console_views
    from forecourt.actions.policy_preflight import register_policy_preflight
    from forecourt.gateway.approvals import ApprovalGate
    from forecourt.gateway.held_calls import HeldCalls
    from forecourt.store.console import SqlApprovals

    book = SqlApprovals(services_store)
    gate = ApprovalGate(book, gateway.clock)
    held = HeldCalls(services_store, book, gateway.invoke, gateway.clock, gate.on_ran)
    register_console_views(catalogue, gateway)
    register_console_leads(catalogue)
    register_console_tables(catalogue)
    register_approvals(catalogue, held.run)
    register_budgets(catalogue, gateway.protect.usage_report)
    register_policy_preflight(catalogue, gateway)
    gateway.approvals = gate


def _routes(services: Services) -> tuple[list[BaseRoute], list[Middleware]]:
    from starlette.middleware import Middleware

    from forecourt.surfaces.admin_api import AdminApi
    from forecourt.surfaces.health import health_routes
    from forecourt.surfaces.rest import RestSurface

    routes: list[BaseRoute] = []
    routes.extend(
        health_routes(
            services.store.ping,
            services.metrics,
            services.drain,
            redis_ping=services.backends.ping,
            multiprocess_dir=_multiprocess_dir(services.settings),
        )
    )
    from forecourt.surfaces.mcp.app import mcp_routes

    mcp_surfaces: list[Any] = []
    routes.extend(
        mcp_routes(
            services.gateway,
            services.settings,
            events=services.events,
            hub=services.upstreams,
            tasks=services.runner,
            expose=mcp_surfaces.append,
        )
    )  # "/mcp" exactly; "/mcp/{action}" below stays the REST envelope
    routes.extend(RestSurface(services.gateway, services.settings).routes())
    from forecourt.gateway.host_calls import host_call_routes

    routes.extend(host_call_routes(services.gateway))  # nested calls of remote adapter hosts, when there are some
    from forecourt.surfaces.a2a.app import A2ASurface

    aap = services.aap
    assert aap is not None, "build_services builds the AAP runtime"
    routes.extend(
        A2ASurface(
            services.gateway,
            services.settings,
            subscriber=aap.subscribe,
            stores=(aap.task_store, aap.push_store),
        ).routes()
    )
    from forecourt.surfaces.a2a.tasks_agent import gateway_agent_routes

    routes.extend(gateway_agent_routes(services))
    # After the agents' doors: Starlette tries routes in order, and a dealer agent's call should not first be
    # matched against every admin path (no admin path overlaps theirs).
    routes.extend(AdminApi(services.gateway, services.settings).routes())
    from forecourt.surfaces.guard import RequestGuard
    from forecourt.surfaces.openapi import openapi_routes

    routes.extend(openapi_routes(services.catalogue))
    if services.settings.console_enabled:
        from forecourt.surfaces.console import console_routes

        tools_for = mcp_surfaces[0].member_tools if mcp_surfaces else None
        routes.extend(
            console_routes(
                services.gateway,
                services.settings,
                tools_for=tools_for,
                sessions=services.backends.console_sessions,
            )
        )
    from forecourt.surfaces.access import AccessMiddleware

    # The access log is outermost (it sees every status, the guard's 413s too); then the guard: every surface
    # (MCP and A2A parse their own bodies) gets bounded input.
    access = Middleware(
        AccessMiddleware,
        metrics=services.metrics,
        drain=services.drain,
        routes=routes,
        log=services.settings.access_log,
    )
    return routes, [access, Middleware(RequestGuard, settings=services.settings, rejections=services.audit)]


def create_app(settings: Settings | None = None, *, services: Services | None = None) -> Starlette:
    """The ASGI app for ``settings`` (or for already-built ``services``)."""
    from starlette.applications import Starlette

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
    _connect_preflight(services, app)
    return app


def _connect_preflight(services: Services, app: Starlette) -> None:
    """The policy pre-flight checks the dealer agents through this app, in process."""
    import httpx

    from forecourt.actions.policy_preflight import PolicyPreflight

    adapter = services.catalogue.adapter_for_id("policy_preflight")
    if isinstance(adapter, PolicyPreflight):
        adapter.transport = httpx.ASGITransport(app=app)


def route_paths(app: Starlette) -> Sequence[str]:
    """The paths an app serves (for docs and tests)."""
    return [getattr(r, "path", "") for r in app.routes]
