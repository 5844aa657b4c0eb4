"""Scheduled feeds: SSRF-checked when saved, pulled from a real loopback server by one replica at a time."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from forecourt.errors import ForecourtError
from forecourt.inventory_import.docs import SAMPLE_FEED
from forecourt.inventory_import.schedule import FeedPuller, get_source, save_source
from forecourt.settings import Settings
from forecourt.store import SqlStore

from .conftest import DEALER

T0 = datetime(2026, 11, 20, 15, 0, tzinfo=UTC)


class FeedServer:
    """A dealer's web server on loopback: the sample feed at /feed.csv, 404 elsewhere; counts requests."""

    def __init__(self) -> None:
        self.requests: list[str] = []
        self.gate = threading.Event()
        self.gate.set()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                server.requests.append(self.path)
                server.gate.wait(10)
                body = SAMPLE_FEED.encode() if self.path == "/feed.csv" else b"not here"
                self.send_response(200 if self.path == "/feed.csv" else 404)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                return

        self.http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.http.serve_forever, daemon=True)

    def url(self, path: str = "/feed.csv") -> str:
        return f"http://127.0.0.1:{self.http.server_address[1]}{path}"


@pytest.fixture
def feed_server() -> Iterator[FeedServer]:
    made = FeedServer()
    made.thread.start()
    try:
        yield made
    finally:
        made.gate.set()
        made.http.shutdown()
        made.http.server_close()


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> datetime:
        return self.now


LOOPBACK_OK = Settings(allow_private_targets=True)
PRODUCTION = Settings(allow_private_targets=False)


async def _error_code(coro: Any) -> str:
    with pytest.raises(ForecourtError) as info:
        await coro
    return info.value.code


async def test_a_feed_url_must_be_https_and_public_when_saved(store: SqlStore, feed_server: FeedServer) -> None:
    assert await _error_code(save_source(store, PRODUCTION, DEALER, feed_server.url(), interval_s=3600)) == (
        "net.unsafe_target"
    )
    https_loopback = feed_server.url().replace("http://", "https://")
    assert await _error_code(save_source(store, PRODUCTION, DEALER, https_loopback, interval_s=3600)) == (
        "net.unsafe_target"
    )
    assert await _error_code(save_source(store, PRODUCTION, DEALER, "ftp://example.com/f.csv", interval_s=3600)) == (
        "net.unsafe_target"
    )
    assert await _error_code(save_source(store, LOOPBACK_OK, DEALER, feed_server.url(), interval_s=10)) == (
        "invalid_params"
    )
    assert await _error_code(save_source(store, LOOPBACK_OK, "nowhere", feed_server.url(), interval_s=3600)) == (
        "tenancy.dealership_not_found"
    )
    assert feed_server.requests == []


async def test_a_due_feed_is_pulled_imported_and_its_report_kept_until_the_next_interval(
    store: SqlStore, feed_server: FeedServer
) -> None:
    clock = Clock()
    await save_source(store, LOOPBACK_OK, DEALER, feed_server.url(), interval_s=3600, full=True, now=T0)
    puller = FeedPuller(store, LOOPBACK_OK, clock=clock)
    try:
        assert await puller.run_once() == [DEALER]
        source = await get_source(store, DEALER)
        assert (source.last_status, source.last_run_at, source.lease_owner) == ("ok", T0, None)
        assert source.next_run_at == T0 + timedelta(hours=1)
        assert source.last_report is not None
        assert (source.last_report["created"], source.last_report["rejected"]) == (4, 0)
        clock.now = T0 + timedelta(minutes=59)
        assert await puller.run_once() == []
        clock.now = T0 + timedelta(hours=1)
        assert await puller.run_once() == [DEALER]
        assert (await get_source(store, DEALER)).last_report["unchanged"] == 4  # type: ignore[index]
    finally:
        await puller.aclose()
    assert feed_server.requests == ["/feed.csv", "/feed.csv"]
    async with store.read() as uow:
        assert await uow.inventory.count(DEALER) == 4


async def test_two_replicas_polling_at_once_import_a_due_feed_exactly_once(
    store: SqlStore, feed_server: FeedServer
) -> None:
    await save_source(store, LOOPBACK_OK, DEALER, feed_server.url(), interval_s=3600, now=T0)
    feed_server.gate.clear()  # hold the first pull open while the other replica polls
    first, second = FeedPuller(store, LOOPBACK_OK, clock=Clock()), FeedPuller(store, LOOPBACK_OK, clock=Clock())
    try:
        pulling = asyncio.create_task(first.run_once())
        for _ in range(500):
            if feed_server.requests:
                break
            await asyncio.sleep(0.01)
        assert await second.run_once() == []
        assert await _error_code(second.run_now(DEALER)) == "inventory.feed_busy"
        feed_server.gate.set()
        assert await pulling == [DEALER]
    finally:
        feed_server.gate.set()
        await first.aclose()
        await second.aclose()
    assert feed_server.requests == ["/feed.csv"]


async def test_a_feed_that_answers_an_http_error_is_recorded_as_failed_with_its_code(
    store: SqlStore, feed_server: FeedServer
) -> None:
    await save_source(store, LOOPBACK_OK, DEALER, feed_server.url("/gone.csv"), interval_s=600, now=T0)
    puller = FeedPuller(store, LOOPBACK_OK, clock=Clock())
    try:
        source = await puller.run_now(DEALER)
    finally:
        await puller.aclose()
    assert source.last_status == "failed"
    assert source.last_report == {"error": {"code": "inventory.feed_fetch_failed", "details": {"status": 404},
                                            "message": "the feed URL answered HTTP 404"}}  # fmt: skip
    assert source.next_run_at == T0 + timedelta(minutes=10)
