"""AAP events from the outbox: ``lead.status_changed`` / ``appointment.status_changed`` to registered webhooks.

A buyer agent registers a webhook by sending ``lead.submit`` with
``configuration.taskPushNotificationConfig``; the SDK keeps the config in the shared database under the
call's task id and the executor records which lead/appointment that task id follows. This router tails
the outbox (its cursor is in ``aap_cursors``) and turns every update of a followed lead or appointment
into one push delivery per config: an A2A ``StreamResponse`` whose message carries an ``aap.event``
DataPart. Delivery ids are derived from (event, config), so replicas tailing together never duplicate.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from a2a.server.tasks import PushNotificationConfigStore

from forecourt.delivery.worker import PUSH_KIND
from forecourt.domain.aap_spec import EVENT_MEDIA_TYPE
from forecourt.domain.events import ChangeEvent, ChangeType, ResourceType
from forecourt.domain.timeutil import rfc3339
from forecourt.errors import AlreadyExists
from forecourt.settings import Settings
from forecourt.store.base import Delivery, Store

logger = logging.getLogger(__name__)

CURSOR = "aap-events"
PAGE = 500
CATCH_UP = 1000
LEAD_STATUS = {
    "new": "received",
    "duplicate": "duplicate",
    "contacted": "working",
    "qualified": "working",
    "appointment_set": "working",
    "sold": "sold_to",
    "lost": "lost",
}
APPOINTMENT_STATUS = {
    "requested": "requested",
    "proposed": "proposed",
    "confirmed": "confirmed",
    "booked": "confirmed",
    "waitlisted": "requested",
    "cancelled": "rejected",
    "completed": "completed",
    "no_show": "no_show",
}


def aap_event(event: ChangeEvent) -> dict[str, Any] | None:
    """The ``aap.event`` for an outbox event, or ``None`` when AAP has no event for it."""
    if event.change_type != ChangeType.UPDATED or event.status is None:
        return None
    if event.resource_type == ResourceType.LEAD:
        kind, status = "lead.status_changed", LEAD_STATUS.get(event.status)
    elif event.resource_type == ResourceType.APPOINTMENT:
        kind, status = "appointment.status_changed", APPOINTMENT_STATUS.get(event.status)
    else:
        return None
    if status is None:
        return None
    return {
        "type": "aap.event",
        "event_kind": kind,
        "entity_id": event.resource_id,
        "status": status,
        "occurred_at": rfc3339(event.occurred_at),
        "payload": {"event_id": event.id, "dealer_id": event.dealership_id},
    }


def notification(event_id: str, task_id: str, payload: dict[str, Any]) -> dict[str, Any]:
    """The A2A push body (a ``StreamResponse`` with one agent Message carrying the event)."""
    return {
        "message": {
            "messageId": f"evt-{event_id}",
            "taskId": task_id,
            "role": "ROLE_AGENT",
            "parts": [{"data": payload, "mediaType": EVENT_MEDIA_TYPE}],
        }
    }


class EventRouter:
    """Tails the outbox and queues push deliveries for followed leads and appointments."""

    def __init__(
        self,
        store: Store,
        push_store: PushNotificationConfigStore,
        settings: Settings,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self.store = store
        self.push_store = push_store
        self.settings = settings
        self.clock = clock
        self._stopping = asyncio.Event()

    async def _lead_of(self, event: ChangeEvent) -> str:
        if event.resource_type == ResourceType.LEAD:
            return event.resource_id
        async with self.store.transaction() as uow:
            appt = await uow.service.get_appointment(event.dealership_id, event.resource_id)
        return appt.lead_id if appt is not None and appt.lead_id else event.resource_id

    async def _route(self, event: ChangeEvent) -> int:
        payload = aap_event(event)
        if payload is None:
            return 0
        queued = 0
        async with self.store.transaction() as uow:
            task_ids = await uow.aap_records.tasks_for(event.resource_id)
        for task_id in task_ids:
            for config in await self.push_store.get_info_for_dispatch(task_id):
                body = {
                    "task_id": task_id,
                    "config_id": config.id,
                    "notification": notification(event.id, task_id, payload),
                }
                delivery = Delivery(
                    id=f"push-{event.id}-{config.id}"[:200],
                    kind=PUSH_KIND,
                    dealership_id=event.dealership_id,
                    target=config.url,
                    subject_id=await self._lead_of(event),
                    body=json.dumps(body),
                    content_type="application/json",
                    next_attempt_at=self.clock(),
                    created_at=self.clock(),
                )
                try:
                    async with self.store.transaction() as uow:
                        await uow.deliveries.add(delivery)
                    queued += 1
                except AlreadyExists:
                    continue
        return queued

    async def run_once(self) -> int:
        """Route one page of outbox events; returns how many push deliveries were queued.

        The cursor and the page are read in one read-only unit of work; the cursor is written only when the
        page held events (or on the first run), so a quiet outbox never takes the write lock.
        """
        async with self.store.read() as uow:
            cursor = await uow.aap_records.cursor(CURSOR)
            after = cursor if cursor is not None else max(await uow.outbox.last_seq() - CATCH_UP, 0)
            events = await uow.outbox.list_after(after, PAGE)
        queued = 0
        for event in events:
            queued += await self._route(event)
        if events or cursor is None:
            async with self.store.transaction() as uow:
                await uow.aap_records.set_cursor(CURSOR, events[-1].seq if events else after)
        return queued

    def stop(self) -> None:
        """Take no more work: :meth:`run` returns after the page it is routing (the process is draining)."""
        self._stopping.set()

    async def run(self) -> None:
        """Tail the outbox until stopped (a background task of the service)."""
        while not self._stopping.is_set():
            try:
                await self.run_once()
            except Exception:  # a background loop must outlive a database hiccup
                logger.exception("AAP event router iteration failed")
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self.settings.delivery_poll_interval_s):
                    await self._stopping.wait()


def push_headers_from(push_store: PushNotificationConfigStore) -> Any:
    """Headers for a push delivery from its (still registered) config: notification token, authentication."""

    async def headers(delivery: Delivery) -> dict[str, str] | None:
        meta = json.loads(delivery.body)
        configs = await push_store.get_info_for_dispatch(str(meta["task_id"]))
        config = next((c for c in configs if c.id == meta["config_id"]), None)
        if config is None:
            return None
        out: dict[str, str] = {}
        if config.token:
            out["X-A2A-Notification-Token"] = config.token
        if config.HasField("authentication") and config.authentication.scheme and config.authentication.credentials:
            out["Authorization"] = f"{config.authentication.scheme} {config.authentication.credentials}"
        return out

    return headers
