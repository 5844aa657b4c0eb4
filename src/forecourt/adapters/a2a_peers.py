"""Delegation to another agent over A2A (seed 001 §9: "Agent A → A2A → Agent B → MCP → tool adapter → A2A → A").

``agents.delegate`` sends a task to a peer agent that the company's adapter configuration names, with the
a2a-sdk client (either binding the peer's card offers), and answers the peer's final task: its state, its
artifacts as JSON, and its status message. A peer that stops in ``input-required`` comes back as such, with the
task id, so the caller can answer with ``agents.delegate {peer, task_id, data}``.

Adapter configuration (``settings/adapters/a2a-peers``, or ``a2a-peers.yaml`` in the adapter config folder)::

    peers:
      parts-desk: {card_url: "https://parts.example.com/agent/.well-known/agent-card.json"}
    credentials: {type: secret, env: PARTS_DESK_TOKEN}     # sent as Authorization: Bearer to every peer

Peer URLs pass the SSRF guard (:mod:`forecourt.netguard`) before any request. Every request carries the W3C
``traceparent`` of the call, so the peer's audit names the same trace.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from uuid import uuid4

from forecourt.adapters.errors import PeerNotConfigured, PeerUnavailable
from forecourt.contract import AdapterResult, ExecutionContext
from forecourt.domain.aap_spec import normalise_numbers
from forecourt.errors import InvalidParams, UnsafeTarget
from forecourt.netguard import check_url_async
from forecourt.outbound_urls import add_trace_context

ADAPTER_ID = "a2a-peers"
TERMINAL = {"TASK_STATE_COMPLETED", "TASK_STATE_FAILED", "TASK_STATE_CANCELED", "TASK_STATE_REJECTED"}


def _card_url(ctx: ExecutionContext, peer: str) -> str:
    peers = ctx.adapter_config.get("peers")
    entry = peers.get(peer) if isinstance(peers, Mapping) else None
    url = entry.get("card_url") if isinstance(entry, Mapping) else None
    if not isinstance(url, str) or not url:
        raise PeerNotConfigured(details={"peer": peer[:64]})
    return url


async def _check(url: str, allow_private: bool) -> None:
    try:
        await check_url_async(url, allow_private=allow_private)
    except UnsafeTarget as exc:
        raise PeerUnavailable(details={"reason": "address_not_allowed"}) from exc


def _split_card_url(url: str) -> tuple[str, str]:
    """``(base, relative card path)`` of a card URL (a bare base gets the well-known path)."""
    marker = "/.well-known/"
    if marker in url:
        base, _, rest = url.partition(marker)
        return base, marker + rest
    return url.rstrip("/"), "/.well-known/agent-card.json"


def _request_data(payload: Mapping[str, Any]) -> dict[str, Any]:
    if payload.get("task_id"):
        return {"data": dict(payload.get("data") or {})}
    if not payload.get("action"):
        raise InvalidParams("Name the peer's action (or a task_id to continue).", details={"field": "action"})
    return {"action": str(payload["action"]), "payload": dict(payload.get("payload") or {})}


class A2APeerAdapter:
    """Runs ``agents.delegate`` with the a2a-sdk client."""

    id = ADAPTER_ID

    def __init__(self, *, allow_private: bool = False) -> None:
        self.allow_private = allow_private

    async def execute(self, payload: Mapping[str, Any], context: ExecutionContext) -> AdapterResult:
        """Send the task and wait for it to finish or to need input."""
        import httpx
        from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
        from a2a.client.errors import A2AClientError
        from a2a.helpers import new_data_part
        from a2a.types import Message, Role, SendMessageRequest
        from a2a.utils.errors import A2AError

        url = _card_url(context, str(payload["peer"]))
        data = _request_data(payload)
        allow_private = self.allow_private or context.settings.allow_private_targets
        await _check(url, allow_private)
        headers = {"A2A-Version": "1.0"}
        if context.credential is not None and context.credential.value:
            headers["Authorization"] = f"Bearer {context.credential.value}"
        message = Message(
            message_id=uuid4().hex,
            role=Role.ROLE_USER,
            parts=[new_data_part(data, media_type="application/json")],
            task_id=str(payload.get("task_id") or ""),
        )
        try:
            async with httpx.AsyncClient(
                headers=headers, timeout=context.action.timeout_s, event_hooks={"request": [_traced]}
            ) as http:
                base, path = _split_card_url(url)
                card = await A2ACardResolver(http, base).get_agent_card(relative_card_path=path)
                # The card names the endpoints the client will call: they pass the same SSRF check as the card.
                for interface in card.supported_interfaces:
                    await _check(interface.url, allow_private)
                client = ClientFactory(ClientConfig(httpx_client=http, streaming=False)).create(card)
                try:
                    events = [event async for event in client.send_message(SendMessageRequest(message=message))]
                finally:
                    await client.close()
        except (A2AClientError, A2AError, httpx.HTTPError) as exc:
            raise PeerUnavailable(details={"reason": type(exc).__name__}) from exc
        output = _final(events)
        return AdapterResult(output=output, result_type="agents.task", metadata={"state": output["state"]})


async def _traced(request: Any) -> None:
    """Every request to the peer carries this call's W3C trace context: the peer's gateway continues the trace."""
    add_trace_context(request.headers)


def _final(events: list[Any]) -> dict[str, Any]:
    from google.protobuf.json_format import MessageToDict  # type: ignore[import-untyped]  # no stubs installed

    task = next((e.task for e in reversed(events) if e.HasField("task")), None)
    if task is None:
        message = next((e.message for e in reversed(events) if e.HasField("message")), None)
        body = MessageToDict(message) if message is not None else {}
        return {"state": "TASK_STATE_COMPLETED", "task_id": None, "artifacts": [], "message": normalise_numbers(body)}
    view = normalise_numbers(MessageToDict(task))
    status = view.get("status", {})
    return {
        "state": status.get("state", "TASK_STATE_UNSPECIFIED"),
        "task_id": view.get("id"),
        "context_id": view.get("contextId"),
        "artifacts": [
            {"name": a.get("name"), "data": [p.get("data") for p in a.get("parts", []) if "data" in p]}
            for a in view.get("artifacts", [])
        ],
        "message": status.get("message"),
    }
