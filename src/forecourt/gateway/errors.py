"""Errors of the gateway's own resources (the database) and of its protections (budgets, restricted sessions).

Every one derives from :class:`forecourt.errors.ForecourtError`; that module draws the whole tree.
"""

from __future__ import annotations

from forecourt.errors import Forbidden, ForecourtError

# raised in forecourt.gateway.store_faults ---


class StoreUnavailable(ForecourtError):
    """The database is unreachable; nothing was changed, retry shortly."""

    code = "store.unavailable"
    http_status = 503
    jsonrpc_code = -32000
    retryable = True
    default_message = "The service's database is unavailable; try again shortly."


# raised in forecourt.gateway.budgets and forecourt.gateway.protections ---


class BudgetExceeded(ForecourtError):
    """A member's or an API key's budget for this period is spent (calls, model tokens or model spend)."""

    code = "budget.exceeded"
    aap_code = "RATE_LIMITED"
    http_status = 429
    jsonrpc_code = -32029
    retryable = False
    default_message = "The budget for this period is spent; it resets at the start of the next period."


class SessionRestricted(Forbidden):
    """The session has read untrusted output, and company policy refuses this action for the rest of it."""

    code = "policy.session_restricted"
    aap_code = "AUTH_REQUIRED"
    http_status = 403
    jsonrpc_code = -32003
    retryable = False
    default_message = (
        "This session has received untrusted content; company policy does not allow this action for the rest of it."
    )
