"""Nested calls: how an adapter on a remote adapter host calls other actions, through the gateway, as its caller.

Some adapters call other actions while they run (a BPMN service task calls ``leads.create``,
``knowledge.search_inventory`` calls ``inventory.search``). In the gateway that is ``ExecutionContext.invoke``: a
child call through the whole pipeline as the same caller. On a host the same ``invoke`` sends the child call back
to the gateway, ``POST {callback}/v1/adapter-hosts/invoke`` (:data:`NESTED_PATH`), with the **grant** the gateway
put in the parent call's body, and the gateway runs it through ``Gateway.invoke`` as that caller: identity,
tenancy, policy, scopes, limits, approvals, budgets and audit apply to each child call once, in the gateway, as
they do in-process. The caller's key never leaves the gateway.

The grant is an HS256 JWT that only gateways can sign and read: its key is derived from the API-key pepper
(``FORECOURT_API_KEY_PEPPER``, which every gateway replica shares and a host does not need), so a host cannot
mint a grant, widen one, or turn the family's service secret into a caller's identity. It names the caller (the
principal as the gateway authenticated it: method, company, member, subject, scopes, rooftops), the trace and
session, whether child calls may change data, how deep the nesting already is, and expires with the parent call's
deadline (or the caller's credential, if sooner). Any gateway replica can take the child call.
"""

from __future__ import annotations

import contextvars
import secrets
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from forecourt.contract import AuthMethod, Principal
from forecourt.contract.errors import NestingTooDeep
from forecourt.errors import Unauthorized

GRANT_ISSUER = "forecourt-gateway"
GRANT_AUDIENCE = "forecourt-gateway:nested"
NESTING = frozenset({"knowledge", "workflows"})
"""The families whose adapters call other actions: their calls carry a grant, and only gateways that send them
those families' calls serve :data:`NESTED_PATH`."""
NESTED_PATH = "/v1/adapter-hosts/invoke"
DEADLINE_HEADER = "Forecourt-Deadline-Ms"
"""A call's deadline, epoch milliseconds, from the gateway to a host and from a host back to the gateway."""
MAX_DEPTH = 4
"""How many remote hops one call may nest (a service task calling an action that is itself remote...)."""
NESTED_DEPTH: contextvars.ContextVar[int] = contextvars.ContextVar("forecourt_remote_nested_depth", default=0)
"""Set by the gateway around a nested call: the depth of the grants its own remote calls sign."""
_METHODS = frozenset({"api_key", "oidc", "mtls", "anonymous", "internal"})

__all__ = [
    "MAX_DEPTH",
    "NESTED_DEPTH",
    "NESTED_PATH",
    "Grant",
    "NestingTooDeep",
    "grant_key",
    "sign_grant",
    "verify_grant",
]


def grant_key(pepper: str) -> bytes:
    """The key gateways sign and read grants with (never the hosts' service secret)."""
    from forecourt.secret_keys import derived_key  # cryptography: imported by the first remote call, not at start

    return derived_key(pepper, "adapter-host-grant")


@dataclass(frozen=True)
class Grant:
    """What a valid grant lets a host do: call actions as :attr:`principal`, within the parent call's bounds."""

    principal: Principal
    trace_id: str
    session_id: str | None
    writes: bool
    """Whether child calls may change data (only under a parent action that itself may)."""
    depth: int
    expires_at: float
    """Epoch seconds: the parent call's deadline."""


def principal_claims(principal: Principal) -> dict[str, Any]:
    """The caller as a grant (and a call body) carries it: who, not how they proved it."""
    return {
        "method": principal.method,
        "company_id": principal.company_id,
        "member_id": principal.member_id,
        "profile_id": principal.profile_id,
        "subject": principal.subject,
        "scopes": sorted(principal.scopes),
        "dealership_ids": sorted(principal.dealership_ids),
        "key_prefix": principal.key_prefix,
        "client_address": principal.client_address,
    }


def principal_of(raw: Any, *, member: Any = None) -> Principal:
    """The principal :func:`principal_claims` wrote (``member``: the member it names, loaded by the reader)."""
    claims: Mapping[str, Any] = raw if isinstance(raw, Mapping) else {}
    method: AuthMethod = claims["method"] if claims.get("method") in _METHODS else "internal"

    def text(name: str) -> str | None:
        value = claims.get(name)
        return value if isinstance(value, str) and value else None

    def strings(name: str) -> frozenset[str]:
        value = claims.get(name)
        return frozenset(str(v) for v in value) if isinstance(value, list) else frozenset()

    return Principal(
        method=method,
        company_id=text("company_id"),
        member_id=text("member_id"),
        profile_id=text("profile_id"),
        member=member,
        scopes=strings("scopes"),
        dealership_ids=strings("dealership_ids"),
        subject=text("subject"),
        key_prefix=text("key_prefix"),
        client_address=text("client_address"),
    )


def sign_grant(
    key: bytes,
    principal: Principal,
    *,
    trace_id: str,
    session_id: str | None,
    writes: bool,
    depth: int,
    expires_at: float,
) -> str:
    """A grant for the child calls of one remote call."""
    import jwt

    now = int(time.time())
    if principal.expires_at is not None:
        expires_at = min(expires_at, principal.expires_at.timestamp())
    claims: dict[str, Any] = {
        "iss": GRANT_ISSUER,
        "aud": GRANT_AUDIENCE,
        "iat": now,
        "exp": int(expires_at) + 1,
        "jti": secrets.token_hex(12),
        "principal": principal_claims(principal),
        "trace": trace_id,
        "session": session_id,
        "writes": writes,
        "depth": depth,
    }
    return jwt.encode(claims, key, algorithm="HS256")


def verify_grant(token: str, key: bytes) -> tuple[Grant, Mapping[str, Any]]:
    """The grant ``token`` carries and its principal's claims (the caller reloads the member they name).

    Raises:
        Unauthorized: Forged, expired, or not a grant.
    """
    import jwt

    try:
        claims: dict[str, Any] = jwt.decode(
            token,
            key,
            algorithms=["HS256"],
            audience=GRANT_AUDIENCE,
            issuer=GRANT_ISSUER,
            options={"require": ["exp", "iat", "aud", "iss", "jti"]},
            leeway=2,
        )
    except jwt.PyJWTError as exc:
        raise Unauthorized("The nested call's grant is not valid.") from exc
    raw = claims.get("principal")
    depth = claims.get("depth")
    if not isinstance(raw, Mapping) or not isinstance(depth, int):
        raise Unauthorized("The nested call's grant is not valid.")
    session = claims.get("session")
    grant = Grant(
        principal=principal_of(raw),
        trace_id=str(claims.get("trace") or ""),
        session_id=session if isinstance(session, str) else None,
        writes=claims.get("writes") is True,
        depth=depth,
        expires_at=float(claims["exp"]),
    )
    return grant, raw
