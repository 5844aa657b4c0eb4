"""Push notifications of A2A tasks to the caller's webhook: SSRF-checked at registration and at every send, and
signed so the receiver can tell them from forgeries.

Each POST carries the A2A ``StreamResponse`` JSON of the event and, besides the SDK's headers
(``X-A2A-Notification-Token`` when the config has a token, ``Authorization`` when it has credentials),
``X-Forecourt-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256>`` over ``"<t>." + body`` keyed with the
config's token, the secret the caller chose when it registered the webhook (no token: no signature). A receiver
recomputes the HMAC, compares in constant time and rejects stale ``t`` values (replays).

Delivery is best effort (the task never fails because a webhook is down); failures are logged at WARNING
without the URL (it may carry a secret) and counted.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import logging
import time
from collections.abc import Awaitable, Callable

import httpx
from a2a.server.tasks import PushNotificationConfigStore
from a2a.server.tasks.push_notification_sender import PushNotificationEvent, PushNotificationSender
from a2a.types import TaskPushNotificationConfig
from a2a.utils.proto_utils import to_stream_response
from google.protobuf.json_format import MessageToDict  # type: ignore[import-untyped]  # no stubs installed

logger = logging.getLogger(__name__)

SIGNATURE_HEADER = "X-Forecourt-Signature"
Validator = Callable[[str], Awaitable[bool]]


def sign(secret: str, body: bytes, timestamp: int) -> str:
    """The ``X-Forecourt-Signature`` value of ``body`` sent at ``timestamp``."""
    mac = hmac.new(secret.encode("utf-8"), f"{timestamp}.".encode() + body, hashlib.sha256).hexdigest()
    return f"t={timestamp},v1={mac}"


def verify(secret: str, body: bytes, header: str, *, now: float | None = None, tolerance_s: float = 300.0) -> bool:
    """Whether ``header`` is a valid, fresh signature of ``body`` (what a webhook receiver does)."""
    fields = dict(item.split("=", 1) for item in header.split(",") if "=" in item)
    try:
        timestamp = int(fields["t"])
    except (KeyError, ValueError):
        return False
    if abs((now if now is not None else time.time()) - timestamp) > tolerance_s:
        return False
    return hmac.compare_digest(sign(secret, body, timestamp), header)


class SignedPushSender(PushNotificationSender):
    """Posts each task event to every webhook registered for the task, signed, after an SSRF check."""

    def __init__(self, client: httpx.AsyncClient, store: PushNotificationConfigStore, validator: Validator) -> None:
        self.client = client
        self.store = store
        self.validator = validator
        self.sent = 0
        self.failed = 0

    async def send_notification(self, task_id: str, event: PushNotificationEvent) -> None:
        """Deliver ``event`` to the task's webhooks (best effort)."""
        try:
            configs = await self.store.get_info_for_dispatch(task_id)
        except Exception:  # best effort: the store being down must not fail the task
            logger.warning("push configs unreadable for an A2A task", exc_info=True)
            return
        if configs:
            body = json.dumps(MessageToDict(to_stream_response(event)), separators=(",", ":")).encode("utf-8")
            await asyncio.gather(*(self._send(config, body) for config in configs))

    async def _send(self, config: TaskPushNotificationConfig, body: bytes) -> None:
        if not await self.validator(config.url):
            self.failed += 1
            logger.warning("push notification not sent: the webhook address is not allowed")
            return
        headers = {"Content-Type": "application/json"}
        if config.token:
            headers["X-A2A-Notification-Token"] = config.token
            headers[SIGNATURE_HEADER] = sign(config.token, body, int(time.time()))
        if config.HasField("authentication") and config.authentication.scheme and config.authentication.credentials:
            headers["Authorization"] = f"{config.authentication.scheme} {config.authentication.credentials}"
        try:
            response = await self.client.post(config.url, content=body, headers=headers)
            response.raise_for_status()
        except httpx.HTTPError as exc:
            self.failed += 1
            logger.warning("push notification failed: %s", type(exc).__name__)
            return
        self.sent += 1
