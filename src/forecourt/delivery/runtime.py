"""Wiring of the AAP dealer agent's runtime pieces: A2A stores, directory, delivery worker, event router."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from a2a.server.tasks import PushNotificationConfigStore, TaskStore

from forecourt.aap.discovery import DealerDirectory
from forecourt.adapters.crm import OutboundPoster
from forecourt.delivery.events import EventRouter, push_headers_from
from forecourt.delivery.worker import DeliveryWorker
from forecourt.store.sql.aap_tables import AapRecords

if TYPE_CHECKING:
    from forecourt.bootstrap import Services


@dataclass
class AapRuntime:
    """What the A2A surface and the background loops share."""

    directory: DealerDirectory
    task_store: TaskStore
    push_store: PushNotificationConfigStore
    records: AapRecords | None
    worker: DeliveryWorker
    router: EventRouter | None
    poster: OutboundPoster

    async def subscribe(self, task_id: str, subjects: list[str], dealership_id: str) -> None:
        """Follow ``subjects`` (a lead, its appointment) with the push configs of ``task_id``."""
        if self.records is not None:
            await self.records.subscribe(subjects, task_id, dealership_id, datetime.now(UTC))


def build_aap_runtime(services: Services) -> AapRuntime:
    """Build the runtime, and register its background loops and closers on ``services``."""
    from forecourt.surfaces.a2a.app import a2a_stores

    settings = services.settings
    task_store, push_store = a2a_stores(services.store)
    engine: Any = getattr(services.store, "engine", None)
    records = AapRecords(engine) if engine is not None else None
    poster = OutboundPoster(allow_private=settings.allow_private_targets, timeout_s=settings.delivery_timeout_s)
    worker = DeliveryWorker(services.store, settings, poster, push_headers=push_headers_from(push_store))
    router = EventRouter(services.store, records, push_store, settings) if records is not None else None
    runtime = AapRuntime(
        directory=DealerDirectory(services.store, settings.default_dealership),
        task_store=task_store,
        push_store=push_store,
        records=records,
        worker=worker,
        router=router,
        poster=poster,
    )
    services.background.append(worker.run)
    if router is not None:
        services.background.append(router.run)
    services.closers.append(poster.aclose)
    return runtime
