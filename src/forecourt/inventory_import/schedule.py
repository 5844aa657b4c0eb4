"""Scheduled inventory feeds: a dealership names an HTTPS feed URL and an interval; one replica pulls it.

Saving a source checks the URL with the SSRF guard (HTTPS only; plain HTTP and private addresses only
where ``allow_private_targets`` is on, for development and tests). Each run fetches the feed (the guard
again, since DNS may have changed; no redirects; a size cap), imports it exactly like ``forecourt
inventory import``, and keeps the report (errors capped) on the source, for ``forecourt inventory feed
show``. Replica safety is a lease row: a run starts only after one conditional ``UPDATE`` hands the
feed to this replica, which works the same on PostgreSQL (many replicas) and SQLite (one process).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import urlsplit

import httpx
from pydantic import ValidationError

from forecourt.domain.feeds import FeedSource
from forecourt.domain.timeutil import utcnow
from forecourt.errors import DealershipNotFound, ForecourtError, InvalidParams, UnsafeTarget
from forecourt.inventory_import.errors import FeedBusy, FeedFetchFailed, FeedSourceNotFound
from forecourt.inventory_import.importer import import_feed
from forecourt.inventory_import.report import ImportReport
from forecourt.netguard import check_url_async
from forecourt.settings import Settings
from forecourt.store.base import Store

logger = logging.getLogger(__name__)

LEASE = timedelta(minutes=30)
DUE_BATCH = 10
KEPT_ERRORS = 50


def check_scheme(url: str, settings: Settings) -> None:
    """HTTPS only, unless ``allow_private_targets`` (development and tests) also allows plain HTTP."""
    scheme = urlsplit(url).scheme.lower()
    if scheme != "https" and not (scheme == "http" and settings.allow_private_targets):
        raise UnsafeTarget("Feed URLs must use https.", details={"scheme": scheme})


async def save_source(
    store: Store,
    settings: Settings,
    dealership_id: str,
    url: str,
    *,
    interval_s: int,
    full: bool = False,
    enabled: bool = True,
    now: datetime | None = None,
) -> FeedSource:
    """Create or change a dealership's scheduled feed; the first pull is due at once.

    Raises:
        UnsafeTarget: not HTTPS, or the host is not a public address (``net.unsafe_target``).
        InvalidParams: the interval is under 5 minutes or over a week.
        DealershipNotFound: no such dealership.
    """
    at = now or utcnow()
    check_scheme(url, settings)
    await check_url_async(url, allow_private=settings.allow_private_targets)
    async with store.transaction() as uow:
        if await uow.tenancy.get_dealership(dealership_id) is None:
            raise DealershipNotFound(details={"dealership_id": dealership_id})
        old = await uow.feeds.get(dealership_id)
        try:
            source = FeedSource(
                dealership_id=dealership_id, url=url, interval_s=interval_s, full=full, enabled=enabled,
                next_run_at=at, created_at=old.created_at if old else at, updated_at=at,
                last_run_at=old.last_run_at if old else None, last_status=old.last_status if old else None,
                last_report=old.last_report if old else None,
            )  # fmt: skip
        except ValidationError as exc:
            raise InvalidParams(
                "interval_s must be between 300 (5 minutes) and 604800 (a week).", details={"field": "interval_s"}
            ) from exc
        await uow.feeds.upsert(source)
    return source


def kept_report(report: ImportReport) -> dict[str, Any]:
    """What a source keeps of a run's report: everything but the rejected rows past the first 50."""
    data = report.model_dump(mode="json")
    data["rejected_rows"] = data["rejected_rows"][:KEPT_ERRORS]
    data["rejected_rows_omitted"] = max(len(report.rejected_rows) - KEPT_ERRORS, 0)
    return data


class FeedPuller:
    """Pulls due feeds (``run_once``; ``run`` loops) and imports them, one replica per feed at a time."""

    def __init__(
        self,
        store: Store,
        settings: Settings,
        *,
        owner: str | None = None,
        clock: Callable[[], datetime] = utcnow,
        client: httpx.AsyncClient | None = None,
    ) -> None:
        self.store = store
        self.settings = settings
        self.owner = owner or uuid.uuid4().hex
        self.clock = clock
        self._stopping = asyncio.Event()
        self._client = client or httpx.AsyncClient(timeout=settings.feed_fetch_timeout_s, follow_redirects=False)

    async def fetch(self, url: str) -> bytes:
        """The feed's bytes (SSRF guard first; no redirects; at most ``feed_max_bytes``)."""
        check_scheme(url, self.settings)
        await check_url_async(url, allow_private=self.settings.allow_private_targets)
        limit = self.settings.feed_max_bytes
        try:
            async with self._client.stream("GET", url, headers={"User-Agent": "Forecourt-Feeds/1.0"}) as response:
                if response.status_code != 200:
                    raise FeedFetchFailed(f"the feed URL answered HTTP {response.status_code}",
                                          details={"status": response.status_code})  # fmt: skip
                chunks, size = [], 0
                async for chunk in response.aiter_bytes():
                    size += len(chunk)
                    if size > limit:
                        raise FeedFetchFailed("the feed is larger than allowed", details={"max_bytes": limit})
                    chunks.append(chunk)
        except httpx.HTTPError as exc:
            raise FeedFetchFailed(f"the feed URL could not be read ({type(exc).__name__})") from exc
        return b"".join(chunks)

    async def _pull(self, source: FeedSource) -> tuple[str, dict[str, Any]]:
        try:
            data = await self.fetch(source.url)
            filename = urlsplit(source.url).path.rsplit("/", 1)[-1] or None
            report = await import_feed(self.store, data, source.dealership_id, full=source.full, filename=filename)
        except ForecourtError as exc:
            logger.warning("scheduled feed of %s failed: %s", source.dealership_id, exc.code)
            return "failed", {"error": {"code": exc.code, "message": exc.message, "details": exc.details}}
        return ("ok" if report.ok else "rows_rejected"), kept_report(report)

    async def _run(self, dealership_id: str) -> FeedSource:
        async with self.store.read() as uow:
            source = await uow.feeds.get(dealership_id)
        if source is None:
            raise FeedSourceNotFound(details={"dealership_id": dealership_id})
        status, report = await self._pull(source)
        at = self.clock()
        async with self.store.transaction() as uow:
            await uow.feeds.finish(dealership_id, self.owner, status=status, report=report, at=at,
                                   next_run_at=at + timedelta(seconds=source.interval_s))  # fmt: skip
            done = await uow.feeds.get(dealership_id)
        return done or source

    async def run_once(self) -> list[str]:
        """Pull every due feed this replica can lease; returns the dealerships it pulled."""
        now = self.clock()
        async with self.store.transaction() as uow:
            due = await uow.feeds.due(now, DUE_BATCH)
        pulled = []
        for dealership_id in due:
            async with self.store.transaction() as uow:
                claimed = await uow.feeds.claim(dealership_id, self.owner, now, LEASE)
            if claimed:
                await self._run(dealership_id)
                pulled.append(dealership_id)
        return pulled

    async def run_now(self, dealership_id: str) -> FeedSource:
        """Pull one dealership's feed now, whatever its schedule (``forecourt inventory feed run``).

        Raises:
            FeedSourceNotFound: the dealership has no feed.
            FeedBusy: another replica is pulling it right now.
        """
        async with self.store.transaction() as uow:
            if await uow.feeds.get(dealership_id) is None:
                raise FeedSourceNotFound(details={"dealership_id": dealership_id})
            claimed = await uow.feeds.claim(dealership_id, self.owner, self.clock(), LEASE, force=True)
        if not claimed:
            raise FeedBusy(details={"dealership_id": dealership_id})
        return await self._run(dealership_id)

    def stop(self) -> None:
        """Claim no more feeds: :meth:`run` returns after the pull in hand (the process is draining)."""
        self._stopping.set()

    async def run(self) -> None:
        """Poll for due feeds until stopped (a background task of the service)."""
        while not self._stopping.is_set():
            try:
                await self.run_once()
            except Exception:  # a background loop must outlive a database hiccup
                logger.exception("scheduled feed iteration failed")
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self.settings.feed_poll_interval_s):
                    await self._stopping.wait()

    async def aclose(self) -> None:
        """Release connections."""
        await self._client.aclose()


async def get_source(store: Store, dealership_id: str) -> FeedSource:
    """The dealership's feed source; raises ``FeedSourceNotFound``."""
    async with store.read() as uow:
        source = await uow.feeds.get(dealership_id)
    if source is None:
        raise FeedSourceNotFound(details={"dealership_id": dealership_id})
    return source


async def list_sources(store: Store) -> list[FeedSource]:
    """Every feed source."""
    async with store.read() as uow:
        return await uow.feeds.list_all()


async def remove_source(store: Store, dealership_id: str) -> None:
    """Forget the dealership's feed source; raises ``FeedSourceNotFound``."""
    async with store.transaction() as uow:
        if not await uow.feeds.delete(dealership_id):
            raise FeedSourceNotFound(details={"dealership_id": dealership_id})
