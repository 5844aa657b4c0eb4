"""Wiring of the AAP dealer agent's runtime pieces: A2A stores, delivery worker, event router."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from a2a.server.tasks import PushNotificationConfigStore, TaskStore

from forecourt.adapters.crm import OutboundPoster
from forecourt.adapters.crm.smtp import SmtpSender
from forecourt.delivery.events import EventRouter, push_headers_from
from forecourt.delivery.worker import DeliveryWorker

if TYPE_CHECKING:
    from forecourt.background import BackgroundTasks
    from forecourt.settings import Settings
    from forecourt.store.base import Store


@dataclass
class AapRuntime:
    """What the A2A surface and the background loops share."""

    task_store: TaskStore
    push_store: PushNotificationConfigStore
    store: Store
    worker: DeliveryWorker
    router: EventRouter
    poster: OutboundPoster

    async def subscribe(self, task_id: str, subjects: list[str], dealership_id: str) -> None:
        """Follow ``subjects`` (a lead, its appointment) with the push configs of ``task_id``."""
        async with self.store.transaction() as uow:
            await uow.aap_records.subscribe(subjects, task_id, dealership_id, datetime.now(UTC))


def build_aap_runtime(store: Store, settings: Settings, tasks: BackgroundTasks) -> AapRuntime:
    """Build the runtime, and register its background loops and closers with ``tasks``."""
    from forecourt.surfaces.a2a.app import a2a_stores

    task_store, push_store = a2a_stores(store)
    poster = OutboundPoster(allow_private=settings.allow_private_targets, timeout_s=settings.delivery_timeout_s)
    mailer = SmtpSender(allow_private=settings.allow_private_targets, timeout_s=max(settings.delivery_timeout_s, 30.0))
    worker = DeliveryWorker(store, settings, poster, push_headers=push_headers_from(push_store), mailer=mailer)
    router = EventRouter(store, push_store, settings)
    runtime = AapRuntime(
        task_store=task_store,
        push_store=push_store,
        store=store,
        worker=worker,
        router=router,
        poster=poster,
    )
    tasks.run(worker.run)
    tasks.on_drain(worker.stop)
    tasks.run(router.run)
    tasks.on_drain(router.stop)
    tasks.on_close(poster.aclose)
    return runtime
