"""Per-call credentials (seed 001 §6: "All runtime credentials (Vertex, NVIDIA) are ephemeral, generated per call").

The gateway names what a call needs (:class:`CallScope`: action, model, company, trace, and the adapter's project
and location) in a context variable while it asks the broker for the call's credential; providers scope what they
mint to it:

- Google (``credentials: {type: google, downscope: {...}}``): the cached source access token is exchanged at the
  Security Token Service (RFC 8693 token exchange, ``POST https://sts.googleapis.com/v1/token``) for a token
  limited by a credential access boundary whose rules are rendered from the call's scope
  (:class:`DownscopedExchange`). Every call exchanges afresh: the per-call token is never handed out twice.
- signed JWTs (``type: jwt``, e.g. an NVIDIA cluster's gateway): a ``call`` claim names the action, model and
  trace id; the token already lives at most five minutes and carries a random ``jti``.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import socket
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from forecourt.contract.errors import CredentialUnavailable

logger = logging.getLogger(__name__)

if TYPE_CHECKING:  # httpx is imported by the first token exchange, not by every process that builds the broker
    import httpx

STS_URL = "https://sts.googleapis.com/v1/token"
TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"  # noqa: S105 (a grant type, not a secret)
ACCESS_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:access_token"  # noqa: S105 (a token type name)
_SAFE_VALUE = re.compile(r"^[A-Za-z0-9._@/:-]{1,200}$")
_PLACEHOLDER = re.compile(r"\{([a-z_]+)\}")


@dataclass(frozen=True)
class CallScope:
    """What one adapter call needs: the values boundary rules and call claims are made from."""

    action: str
    company_id: str | None = None
    model: str | None = None
    trace_id: str | None = None
    project: str | None = None
    location: str | None = None

    def values(self) -> dict[str, str]:
        """The placeholders a boundary rule may use (``{action}``, ``{company}``, ``{model}``, ...)."""
        raw = {
            "action": self.action,
            "company": self.company_id,
            "model": self.model,
            "trace_id": self.trace_id,
            "project": self.project,
            "location": self.location,
        }
        return {k: v for k, v in raw.items() if v}


def scope_for(
    action: str, company_id: str | None, payload: Mapping[str, Any], trace_id: str | None, config: Mapping[str, Any]
) -> CallScope:
    """The scope of one call: its action and company, the payload's model, the adapter's project and location."""

    def text(value: Any) -> str | None:
        return str(value) if isinstance(value, str) and value else None

    return CallScope(
        action=action,
        company_id=company_id,
        model=text(payload.get("model")),
        trace_id=trace_id,
        project=text(config.get("project")),
        location=text(config.get("location")),
    )


_SCOPE: ContextVar[CallScope | None] = ContextVar("forecourt_call_scope", default=None)


@contextmanager
def call_scope(scope: CallScope) -> Iterator[CallScope]:
    """Make ``scope`` the current call's while its credential is issued."""
    token = _SCOPE.set(scope)
    try:
        yield scope
    finally:
        _SCOPE.reset(token)


def current_call_scope() -> CallScope | None:
    """The scope of the call whose credential is being issued, if the gateway named one."""
    return _SCOPE.get()


def render(template: str, values: Mapping[str, str]) -> str:
    """``template`` with ``{name}`` placeholders filled from ``values``.

    A value outside ``[A-Za-z0-9._@/:-]`` (or a placeholder without a value) refuses the credential: rules are
    resource names and CEL expressions, and a caller's model name must never be able to widen one.

    Raises:
        CredentialUnavailable: A placeholder has no value or an unsafe one.
    """

    def fill(match: re.Match[str]) -> str:
        value = values.get(match.group(1))
        if value is None or not _SAFE_VALUE.match(value):
            logger.warning("credential boundary placeholder %s has no safe value", match.group(1))
            raise CredentialUnavailable()
        return value

    return _PLACEHOLDER.sub(fill, template)


def boundary(rules: Any, scope: CallScope | None) -> dict[str, Any]:
    """The credential access boundary (Google's JSON shape) for one call.

    Args:
        rules: ``[{available_resource, available_permissions: [...], availability_condition?: {expression,
            title?, description?}}]`` with placeholders.
        scope: The call's scope (``None``: only rules without placeholders can be rendered).

    Raises:
        CredentialUnavailable: No rules, or a rule cannot be rendered.
    """
    if not isinstance(rules, list) or not rules:
        logger.warning("downscope needs at least one access boundary rule")
        raise CredentialUnavailable()
    values = scope.values() if scope is not None else {}
    out: list[dict[str, Any]] = []
    for rule in rules:
        if not isinstance(rule, Mapping) or not rule.get("available_resource"):
            raise CredentialUnavailable()
        item: dict[str, Any] = {
            "availableResource": render(str(rule["available_resource"]), values),
            "availablePermissions": [render(str(p), values) for p in rule.get("available_permissions") or []],
        }
        condition = rule.get("availability_condition")
        if isinstance(condition, Mapping) and condition.get("expression"):
            item["availabilityCondition"] = {
                "expression": render(str(condition["expression"]), values),
                **{k: str(condition[k]) for k in ("title", "description") if condition.get(k)},
            }
        out.append(item)
    return {"accessBoundary": {"accessBoundaryRules": out}}


class DownscopedExchange:
    """Exchanges a source access token for a downscoped one at an STS endpoint (one HTTP client per event loop)."""

    def __init__(self, timeout_s: float = 10.0) -> None:
        self._timeout_s = timeout_s
        self._clients: dict[int, tuple[asyncio.AbstractEventLoop, httpx.AsyncClient]] = {}

    def _client(self) -> httpx.AsyncClient:
        import httpx

        loop = asyncio.get_running_loop()
        for key in [k for k, (lp, _) in self._clients.items() if lp.is_closed()]:
            del self._clients[key]
        found = self._clients.get(id(loop))
        if found is None:
            # TCP_NODELAY: httpx writes a POST's headers and body separately, and Nagle's algorithm would hold the
            # body back until the peer's delayed ACK (about 40 ms) on every exchange.
            transport = httpx.AsyncHTTPTransport(socket_options=[(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)])
            client = httpx.AsyncClient(timeout=self._timeout_s, follow_redirects=False, transport=transport)
            found = (loop, client)
            self._clients[id(loop)] = found
        return found[1]

    async def exchange(
        self, source_token: str, settings: Mapping[str, Any], scope: CallScope | None, now: datetime
    ) -> tuple[str, datetime | None]:
        """A fresh downscoped token and its expiry.

        Args:
            source_token: The cached source access token.
            settings: The ``downscope`` section: ``{rules: [...], sts_url?}``.
            scope: The call's scope.
            now: The current time (for the expiry).

        Raises:
            CredentialUnavailable: The rules cannot be rendered or the STS refused the exchange.
        """
        options = boundary(settings.get("rules"), scope)
        form = {
            "grant_type": TOKEN_EXCHANGE,
            "subject_token_type": ACCESS_TOKEN_TYPE,
            "requested_token_type": ACCESS_TOKEN_TYPE,
            "subject_token": source_token,
            "options": json.dumps(options, separators=(",", ":")),
        }
        url = str(settings.get("sts_url") or STS_URL)
        import httpx

        try:
            response = await self._client().post(url, data=form)
        except httpx.HTTPError as exc:
            logger.warning("token exchange unreachable: %s", type(exc).__name__)
            raise CredentialUnavailable() from exc
        if response.status_code != 200:
            logger.warning("token exchange answered HTTP %d", response.status_code)
            raise CredentialUnavailable()
        try:
            body = response.json()
            token = str(body["access_token"])
        except (ValueError, KeyError, TypeError) as exc:
            raise CredentialUnavailable() from exc
        expires_in = body.get("expires_in")
        expires_at = now + timedelta(seconds=int(expires_in)) if isinstance(expires_in, int | float) else None
        return token, expires_at

    async def aclose(self) -> None:
        """Close the client of the running loop."""
        loop = asyncio.get_running_loop()
        for key, (lp, client) in list(self._clients.items()):
            if lp is loop:
                del self._clients[key]
                await client.aclose()


def call_claims(scope: CallScope | None) -> dict[str, Any]:
    """The ``call`` claim of a per-call JWT (empty without a scope)."""
    if scope is None:
        return {}
    claim = {"action": scope.action}
    if scope.model:
        claim["model"] = scope.model[:200]
    if scope.trace_id:
        claim["trace_id"] = scope.trace_id[:64]
    return {"call": claim}
