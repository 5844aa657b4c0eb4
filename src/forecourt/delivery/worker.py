"""The delivery worker: claims due rows of the ``deliveries`` table, posts them, and reschedules failures.

Claiming is a lease: inside one transaction a due delivery gets ``attempts + 1`` and a
``next_attempt_at`` one lease ahead (PostgreSQL hands each replica its own rows with ``SKIP LOCKED``),
so a replica that dies mid-post leaves the row to be retried after the lease. Failures back off
exponentially (``base * 2**(attempts-1)``, capped, with jitter) until ``max_attempts``, then ``failed``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import random
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from forecourt.actions.crm_mail import CRM_SMTP_KIND
from forecourt.adapters.crm import OutboundPoster, PostResult, crm_headers
from forecourt.adapters.crm.smtp import SmtpSender, adf_message
from forecourt.settings import Settings
from forecourt.store.base import Delivery, Store

logger = logging.getLogger(__name__)

LEASE = timedelta(seconds=60)
BATCH = 20
CRM_KIND = "crm_adf"
PUSH_KIND = "a2a_push"

PushHeaders = Callable[[Delivery], Awaitable[dict[str, str] | None]]
"""Authentication headers of a push delivery (from its push config); ``None`` when the config is gone."""


class DeliveryWorker:
    """Runs deliveries until cancelled; ``run_once`` does one batch (tests call it directly)."""

    def __init__(
        self,
        store: Store,
        settings: Settings,
        poster: OutboundPoster,
        *,
        push_headers: PushHeaders | None = None,
        mailer: SmtpSender | None = None,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
        jitter: Callable[[], float] = random.random,
    ) -> None:
        self.store = store
        self.settings = settings
        self.poster = poster
        self.push_headers = push_headers
        self.mailer = mailer
        self.clock = clock
        self.jitter = jitter
        self._stopping = asyncio.Event()

    def backoff(self, attempts: int) -> timedelta:
        """Delay before attempt ``attempts + 1``: exponential, capped, with up to 10 % jitter."""
        base = self.settings.delivery_base_backoff_s * (2 ** max(attempts - 1, 0))
        delay = min(base, self.settings.delivery_max_backoff_s)
        return timedelta(seconds=delay * (1 + 0.1 * self.jitter()))

    async def claim(self) -> list[Delivery]:
        """Lease a batch of due deliveries to this worker."""
        now = self.clock()
        claimed: list[Delivery] = []
        async with self.store.read() as uow:  # a quiet queue is one index lookup, without the write lock
            if not await uow.deliveries.has_due(now):
                return claimed
        async with self.store.transaction() as uow:
            for d in await uow.deliveries.due(now, BATCH):
                leased = d.model_copy(
                    update={"attempts": d.attempts + 1, "next_attempt_at": now + LEASE, "status": "retrying"}
                )
                await uow.deliveries.update(leased)
                claimed.append(leased)
        return claimed

    async def _send(self, d: Delivery) -> PostResult:
        if d.kind == CRM_KIND:
            headers = crm_headers(d.id, d.attempts, d.content_type)
            return await self.poster.post(d.target, d.body.encode("utf-8"), headers)
        if d.kind == PUSH_KIND:
            extra = await self.push_headers(d) if self.push_headers else {}
            if extra is None:
                return PostResult(delivered=False, retryable=False, error="push config removed")
            envelope: dict[str, Any] = json.loads(d.body)
            headers = {
                "Content-Type": "application/json",
                "Idempotency-Key": d.id,
                "X-Forecourt-Delivery-Id": d.id,
                **extra,
            }
            return await self.poster.post(d.target, json.dumps(envelope["notification"]).encode(), headers)
        if d.kind == CRM_SMTP_KIND and self.mailer is not None:
            return await self._mail(d, self.mailer)
        return PostResult(delivered=False, retryable=False, error=f"unknown delivery kind {d.kind}")

    async def _mail(self, d: Delivery, mailer: SmtpSender) -> PostResult:
        """An ADF e-mail, with the dealership's mail route as it is now (so a fixed setting applies at once)."""
        async with self.store.read() as uow:
            route = await uow.crm_mail.get(d.dealership_id)
        if route is None or not route.enabled:
            return PostResult(delivered=False, retryable=False, error="no CRM mail route")
        return await mailer.send(route, adf_message(route, d.target, d.id, d.subject_id, d.body))

    async def _finish(self, d: Delivery, result: PostResult) -> None:
        now = self.clock()
        if result.delivered:
            done = d.model_copy(update={"status": "delivered", "delivered_at": now, "last_error": None})
        elif result.retryable and d.attempts < self.settings.delivery_max_attempts:
            done = d.model_copy(
                update={
                    "status": "retrying",
                    "next_attempt_at": now + self.backoff(d.attempts),
                    "last_error": result.error,
                }
            )
        else:
            done = d.model_copy(update={"status": "failed", "last_error": result.error})
        async with self.store.transaction() as uow:
            await uow.deliveries.update(done)
        if not result.delivered:
            logger.warning("delivery %s (%s) attempt %d: %s", d.id, d.kind, d.attempts, result.error)

    async def run_once(self) -> int:
        """Attempt every due delivery once; returns how many were attempted."""
        batch = await self.claim()
        for d in batch:
            await self._finish(d, await self._send(d))
        return len(batch)

    def stop(self) -> None:
        """Claim no more deliveries: :meth:`run` returns after the batch in hand (the process is draining)."""
        self._stopping.set()

    async def run(self) -> None:
        """Poll until stopped (a background task of the service)."""
        while not self._stopping.is_set():
            try:
                attempted = await self.run_once()
            except Exception:  # a background loop must outlive a database hiccup
                logger.exception("delivery worker iteration failed")
                attempted = 0
            if attempted < BATCH:
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(self.settings.delivery_poll_interval_s):
                        await self._stopping.wait()
