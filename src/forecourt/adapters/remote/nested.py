"""The host's side of nested calls: ``ExecutionContext.invoke`` for an adapter running on a remote host.

The gateway put a callback URL and a grant in the call's body (:mod:`forecourt.contract.grants`); each call the
adapter makes of another action is sent there, with the grant, the parent call's deadline and its trace, and the
gateway runs it as the original caller. Its answer is the child action's output (as ``invoke`` answers in the
gateway); its error is the same error class, by code (:func:`~.wire.error_of`).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from forecourt.adapters.remote.wire import error_of, now_ms, traceparent
from forecourt.contract.grants import DEADLINE_HEADER
from forecourt.errors import Timeout, UpstreamUnavailable

if TYPE_CHECKING:
    import httpx

NO_GATEWAY_MESSAGE = "The gateway could not be reached for a nested call; try again shortly."


class NestedInvoker:
    """Calls actions through the gateway that sent the parent call, as its caller (an ``Invoker``)."""

    def __init__(
        self, http: httpx.AsyncClient, url: str, grant: str, *, trace_id: str, deadline_ms: int | None
    ) -> None:
        self.http = http
        self.url = url
        self.grant = grant
        self.trace_id = trace_id
        self.deadline_ms = deadline_ms
        self.calls = 0

    async def __call__(self, action: str, payload: Mapping[str, Any]) -> Any:
        """Run ``action`` with ``payload`` through the gateway; its output."""
        import httpx

        remaining = (self.deadline_ms - now_ms()) / 1000 if self.deadline_ms is not None else 30.0
        if remaining <= 0:
            raise Timeout(details={"timeout_s": 0})
        headers = {"Authorization": f"Bearer {self.grant}"}
        if self.deadline_ms is not None:
            headers[DEADLINE_HEADER] = str(self.deadline_ms)
        parent = traceparent(self.trace_id)
        if parent:
            headers["traceparent"] = parent
        self.calls += 1
        started = time.monotonic()
        try:
            response = await self.http.post(
                self.url, json={"action": action, "payload": dict(payload)}, headers=headers, timeout=remaining
            )
        except httpx.TimeoutException as exc:
            raise Timeout(details={"timeout_s": round(time.monotonic() - started, 3)}) from exc
        except httpx.TransportError as exc:
            raise UpstreamUnavailable(NO_GATEWAY_MESSAGE) from exc
        try:
            parsed = response.json()
        except ValueError:
            parsed = None
        if response.status_code == 200 and isinstance(parsed, Mapping) and isinstance(parsed.get("result"), Mapping):
            return parsed["result"].get("output")
        raise error_of(parsed, response.status_code)
