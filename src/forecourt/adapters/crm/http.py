"""Outbound HTTP posts to dealers' systems: ADF leads to a CRM endpoint, A2A push notifications to webhooks.

Every post carries the delivery id in ``Idempotency-Key`` and ``X-Forecourt-Delivery-Id``: deliveries are
at least once, so a receiver that deduplicates on that id sees each lead exactly once. Targets pass the
SSRF guard before every attempt (DNS may change between attempts); redirects are not followed.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass

import httpx

from forecourt.errors import UnsafeTarget
from forecourt.netguard import check_url_async
from forecourt.outbound_urls import guarded_transport

logger = logging.getLogger(__name__)

_RETRY_STATUSES = frozenset({408, 425, 429})


@dataclass(frozen=True)
class PostResult:
    """How one attempt went: delivered, worth retrying, or permanently refused."""

    delivered: bool
    retryable: bool
    error: str | None = None
    status_code: int | None = None


class OutboundPoster:
    """Posts bodies to external endpoints with a bounded timeout and the SSRF guard."""

    def __init__(
        self, *, allow_private: bool, timeout_s: float = 10.0, client: httpx.AsyncClient | None = None
    ) -> None:
        self.allow_private = allow_private
        # Connections are checked again when made (resolved once, connected to the checked address).
        self._client = client or httpx.AsyncClient(
            timeout=timeout_s, follow_redirects=False, transport=guarded_transport(allow_private=allow_private)
        )

    async def post(self, url: str, body: bytes, headers: Mapping[str, str]) -> PostResult:
        """One attempt; never raises for remote failures (they become a :class:`PostResult`)."""
        try:
            await check_url_async(url, allow_private=self.allow_private)
        except UnsafeTarget:
            return PostResult(delivered=False, retryable=False, error="target refused by the SSRF guard")
        try:
            response = await self._client.post(url, content=body, headers=dict(headers))
        except UnsafeTarget:
            return PostResult(delivered=False, retryable=False, error="target refused by the SSRF guard")
        except httpx.HTTPError as exc:
            return PostResult(delivered=False, retryable=True, error=f"{type(exc).__name__}")
        code = response.status_code
        if 200 <= code < 300:
            return PostResult(delivered=True, retryable=False, status_code=code)
        retry = code >= 500 or code in _RETRY_STATUSES
        return PostResult(delivered=False, retryable=retry, error=f"HTTP {code}", status_code=code)

    async def aclose(self) -> None:
        """Release connections."""
        await self._client.aclose()


def crm_headers(delivery_id: str, attempt: int, content_type: str) -> dict[str, str]:
    """Headers of an ADF post to a CRM."""
    return {
        "Content-Type": f"{content_type}; charset=utf-8",
        "Idempotency-Key": delivery_id,
        "X-Forecourt-Delivery-Id": delivery_id,
        "X-Forecourt-Attempt": str(attempt),
        "User-Agent": "Forecourt-ADF/1.0",
    }
