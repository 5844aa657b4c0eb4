"""Who owns an A2A task and its push-notification configs: the principal that created it, on every agent.

One rule for the dealer agents and the gateway agent. The SDK scopes every task and push-config method
(``GetTask``, ``ListTasks``, ``CancelTask``, ``SubscribeToTask``, the four push-config methods) by the owner
its stores resolve from the call context; this module decides that owner once per request:

- an authenticated caller owns its tasks as ``company/member`` (or ``company/subject`` for a credential that
  names no member), so two keys of one member share their tasks and nobody else sees them;
- an anonymous caller (a shopper on a public dealer agent) gets an owner made of 256 random bits for that
  request alone: what it created is answered in the response (and pushed to the webhook it registered with
  the message), but no later call — its own or anyone else's — can read, cancel or reconfigure it.

A context without an owner (a code path that forgot to set one) resolves to a fresh random owner too: it
fails closed, seeing nothing, rather than sharing one bucket.
"""

from __future__ import annotations

import secrets
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from a2a.server.context import ServerCallContext

    from forecourt.gateway.base import Principal

OWNER = "owner"
"""The key of the owner in ``ServerCallContext.state``."""
PRINCIPAL_SCOPE = "forecourt.principal"
"""The key of the authenticated principal in the ASGI scope (set by the endpoint wrappers)."""
_ANONYMOUS = "anonymous:"


def principal_owner(principal: Principal) -> str:
    """The owner of the tasks an authenticated ``principal`` creates."""
    return f"{principal.company_id or '-'}/{principal.member_id or principal.subject or '-'}"


def anonymous_owner() -> str:
    """An owner that exists for one request: nothing it creates can be reached by a later call."""
    return _ANONYMOUS + secrets.token_urlsafe(32)


def is_anonymous(owner: object) -> bool:
    """Whether ``owner`` is a one-request anonymous owner (nothing it owns is reachable after the request)."""
    return isinstance(owner, str) and owner.startswith(_ANONYMOUS)


def owner_for(principal: Principal | None) -> str:
    """The owner of a request's tasks: the principal's, or a one-request owner when anonymous."""
    if principal is None or principal.anonymous:
        return anonymous_owner()
    return principal_owner(principal)


def task_owner(context: ServerCallContext) -> str:
    """The SDK stores' owner resolver: the owner the context builder set, else nobody's."""
    owner = context.state.get(OWNER)
    return str(owner) if owner else anonymous_owner()
