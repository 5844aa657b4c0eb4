"""A small buyer-side client for AAP v0.1 dealer agents (any vendor's), over either A2A binding.

    >>> async with DealerAgentClient("https://dealer.example/dealers/d1") as agent:  # doctest: +SKIP
    ...     found = await agent.call("inventory.search", {"filters": {"make": ["Toyota"]}})
    ...     print(found["data"]["total"])

It speaks plain JSON over httpx (no SDK needed), sends ``A2A-Version: 1.0``, normalises A2A's
float-for-integer numbers, and raises :class:`AapCallError` with the ``aap.error`` payload on failure,
whatever the binding.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

import httpx

from forecourt.adapters.errors import AapCallError
from forecourt.domain.aap_spec import SKILLS_BY_ID, normalise_numbers

A2A_VERSION = "1.0"
BINDINGS = ("JSONRPC", "HTTP+JSON")


@dataclass
class RawReply:
    """Everything one SendMessage produced on the wire, for conformance checks."""

    binding: str
    http_status: int
    body: Any
    payload: dict[str, Any] | None = None
    media_type: str | None = None
    error: dict[str, Any] | None = None
    rpc_code: int | None = None
    problems: list[str] = field(default_factory=list)


def _message(data: dict[str, Any], media_type: str) -> dict[str, Any]:
    return {"messageId": str(uuid.uuid4()), "role": "ROLE_USER", "parts": [{"data": data, "mediaType": media_type}]}


class DealerAgentClient:
    """Calls one dealer agent; ``base_url`` is where its ``/.well-known/agent-card.json`` lives."""

    def __init__(
        self,
        base_url: str,
        *,
        token: str | None = None,
        binding: str = "JSONRPC",
        http: httpx.AsyncClient | None = None,
        timeout_s: float = 15.0,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.binding = binding
        headers = {"A2A-Version": A2A_VERSION}
        if token:
            headers["Authorization"] = f"Bearer {token}"
        self._own = http is None
        self.http = http or httpx.AsyncClient(timeout=timeout_s, follow_redirects=True)
        self.headers = headers
        self._card: dict[str, Any] | None = None

    async def __aenter__(self) -> DealerAgentClient:
        return self

    async def __aexit__(self, *exc: object | TracebackType | None) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the HTTP client if this object created it."""
        if self._own:
            await self.http.aclose()

    async def get_json(self, url: str) -> tuple[int, Any]:
        """GET ``url``; returns the status and the parsed JSON (``None`` when it is not JSON)."""
        response = await self.http.get(url, headers=self.headers)
        try:
            return response.status_code, response.json()
        except ValueError:
            return response.status_code, None

    async def card(self) -> dict[str, Any]:
        """The agent card (fetched once)."""
        if self._card is None:
            status, body = await self.get_json(self.base_url + "/.well-known/agent-card.json")
            if status != 200 or not isinstance(body, dict):
                raise AapCallError("INTERNAL_ERROR", f"agent card fetch failed (HTTP {status})", http_status=status)
            self._card = body
        return self._card

    async def manifest(self) -> dict[str, Any]:
        """The contract manifest named by the card's AAP extension."""
        url = manifest_url(await self.card()) or self.base_url + "/.well-known/auto-agent-contract.json"
        status, body = await self.get_json(url)
        if status != 200 or not isinstance(body, dict):
            raise AapCallError("INTERNAL_ERROR", f"manifest fetch failed (HTTP {status})", http_status=status)
        return body

    async def endpoint(self, binding: str) -> str:
        """The card's URL for ``binding``."""
        for iface in (await self.card()).get("supported_interfaces") or []:
            if isinstance(iface, dict) and iface.get("protocol_binding") == binding:
                return str(iface["url"])
        raise AapCallError("UNSUPPORTED_SKILL", f"the agent card lists no {binding} interface")

    async def send(self, data: dict[str, Any], media_type: str, *, binding: str | None = None) -> RawReply:
        """One SendMessage with ``data`` as the DataPart; nothing is raised for AAP errors."""
        binding = binding or self.binding
        url = await self.endpoint(binding)
        message = _message(data, media_type)
        if binding == "JSONRPC":
            request = {
                "jsonrpc": "2.0",
                "id": str(uuid.uuid4()),
                "method": "SendMessage",
                "params": {"message": message},
            }
            response = await self.http.post(url, json=request, headers=self.headers)
        else:
            response = await self.http.post(
                url.rstrip("/") + "/message:send", json={"message": message}, headers=self.headers
            )
        return _reply(binding, response)

    async def call(
        self, skill_id: str, fields: dict[str, Any] | None = None, *, binding: str | None = None
    ) -> dict[str, Any]:
        """Call ``skill_id`` with the request ``fields`` (``type`` is added); returns the response payload."""
        skill = SKILLS_BY_ID[skill_id]
        reply = await self.send(
            {"type": skill.request_type, **(fields or {})}, skill.request_media_type, binding=binding
        )
        if reply.error is not None:
            raise AapCallError(
                str(reply.error.get("code", "INTERNAL_ERROR")),
                str(reply.error.get("message", "")),
                payload=reply.error,
                http_status=reply.http_status,
            )
        if reply.payload is None:
            raise AapCallError(
                "INTERNAL_ERROR", "; ".join(reply.problems) or "no AAP payload", http_status=reply.http_status
            )
        return reply.payload


def manifest_url(card: dict[str, Any]) -> str | None:
    """``params.manifest_url`` of the card's AAP extension."""
    from forecourt.domain.aap_spec import EXTENSION_URI

    for ext in (card.get("capabilities") or {}).get("extensions") or []:
        if isinstance(ext, dict) and ext.get("uri") == EXTENSION_URI:
            url = (ext.get("params") or {}).get("manifest_url")
            return str(url) if url else None
    return None


def _first_data_part(message: Any) -> tuple[dict[str, Any] | None, str | None]:
    parts = message.get("parts") if isinstance(message, dict) else None
    for part in parts or []:
        if isinstance(part, dict) and isinstance(part.get("data"), dict):
            return normalise_numbers(part["data"]), part.get("mediaType")
    return None, None


def _reply(binding: str, response: httpx.Response) -> RawReply:
    try:
        body = normalise_numbers(response.json())
    except ValueError:
        return RawReply(binding, response.status_code, response.text[:500], problems=["response is not JSON"])
    reply = RawReply(binding, response.status_code, body)
    if binding == "JSONRPC":
        if isinstance(body, dict) and isinstance(body.get("error"), dict):
            reply.rpc_code = body["error"].get("code")
            data = body["error"].get("data")
            reply.error = data if isinstance(data, dict) and data.get("type") == "aap.error" else None
            if reply.error is None:
                reply.problems.append(f"JSON-RPC error without an aap.error payload: {body['error'].get('message')}")
            return reply
        message = (body.get("result") or {}).get("message") if isinstance(body, dict) else None
    else:
        if response.status_code >= 400:
            reply.error = body if isinstance(body, dict) and body.get("type") == "aap.error" else None
            if reply.error is None:
                reply.problems.append(f"HTTP {response.status_code} without an aap.error body")
            return reply
        message = body.get("message") if isinstance(body, dict) else None
    if message is None:
        reply.problems.append("the reply is not a Message")
        return reply
    reply.payload, reply.media_type = _first_data_part(message)
    if reply.payload is None:
        reply.problems.append("the reply Message has no DataPart")
    return reply
