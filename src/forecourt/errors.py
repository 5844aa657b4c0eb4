"""One error hierarchy with stable, namespaced codes.

Every error a client can see is a :class:`ForecourtError` subclass with a stable ``code``. Surfaces map
it to their wire form (AAP ``aap.error``, MCP tool error or JSON-RPC error, REST envelope ``status``);
nothing else turns exceptions into responses. ``details`` must be client-safe: no PII, no SQL, no
provider internals.
"""

from __future__ import annotations

from typing import Any, ClassVar


class ForecourtError(Exception):
    """Base of every client-visible error."""

    code: ClassVar[str] = "internal_error"
    http_status: ClassVar[int] = 500
    jsonrpc_code: ClassVar[int] = -32603
    retryable: ClassVar[bool] = False
    default_message: ClassVar[str] = "Internal error."

    def __init__(self, message: str | None = None, *, details: dict[str, Any] | None = None) -> None:
        self.message = message or self.default_message
        self.details: dict[str, Any] = dict(details or {})
        self.trace_id: str | None = None
        self.headers: dict[str, str] = {}
        super().__init__(self.message)

    def to_dict(self) -> dict[str, Any]:
        """The AutomotiveMCP error body ``{code, message, details, retryable}``."""
        body: dict[str, Any] = {"code": self.code, "message": self.message, "retryable": self.retryable}
        if self.details:
            body["details"] = self.details
        return body


class InternalError(ForecourtError):
    """Something failed on our side; the message never says what."""

    retryable = True


class InvalidParams(ForecourtError):
    """The request does not match the action's input schema."""

    code = "invalid_params"
    http_status = 422
    jsonrpc_code = -32602
    default_message = "The request parameters are invalid."


class InvalidRequest(ForecourtError):
    """The request is not well formed (bad JSON, body too large, nesting too deep)."""

    code = "invalid_request"
    http_status = 400
    jsonrpc_code = -32600
    default_message = "The request is malformed."


class PayloadTooLarge(InvalidRequest):
    """The request body exceeds the configured limit."""

    code = "payload_too_large"
    http_status = 413
    default_message = "The request body is too large."


class UnknownAction(ForecourtError):
    """No action of that name exists in the catalogue."""

    code = "action.unknown"
    http_status = 404
    jsonrpc_code = -32601
    default_message = "Unknown action."


class InvalidCursor(ForecourtError):
    """A pagination cursor was forged, tampered with, expired or belongs to another query."""

    code = "invalid_cursor"
    http_status = 400
    jsonrpc_code = -32602
    default_message = "The cursor is invalid."


class NotFound(ForecourtError):
    """Base for missing resources."""

    code = "not_found"
    http_status = 404
    jsonrpc_code = -32002
    default_message = "Not found."


class VehicleNotFound(NotFound):
    code = "inventory.vehicle_not_found"
    default_message = "Vehicle not found."


class VehicleUnavailable(ForecourtError):
    code = "inventory.vehicle_unavailable"
    http_status = 409
    jsonrpc_code = -32000
    default_message = "The vehicle is no longer available."


class DealershipNotFound(NotFound):
    code = "tenancy.dealership_not_found"
    default_message = "Dealership not found."


class CompanyNotFound(NotFound):
    code = "tenancy.company_not_found"
    default_message = "Company not found."


class MemberNotFound(NotFound):
    code = "tenancy.member_not_found"
    default_message = "Member not found."


class LeadNotFound(NotFound):
    code = "leads.lead_not_found"
    default_message = "Lead not found."


class CustomerNotFound(NotFound):
    code = "customers.customer_not_found"
    default_message = "Customer not found."


class ConsentNotFound(NotFound):
    code = "consent.consent_not_found"
    default_message = "Consent record not found."


class RepairOrderNotFound(NotFound):
    code = "service.repair_order_not_found"
    default_message = "Repair order not found."


class AppointmentNotFound(NotFound):
    code = "service.appointment_not_found"
    default_message = "Appointment not found."


class Conflict(ForecourtError):
    """The request conflicts with the current state."""

    code = "conflict"
    http_status = 409
    jsonrpc_code = -32000
    default_message = "The request conflicts with the current state."


class AlreadyExists(Conflict):
    code = "already_exists"
    default_message = "A record with that identifier already exists."


class AppointmentTimeUnavailable(Conflict):
    code = "service.appointment_time_unavailable"
    default_message = "No appointment time is available in the requested window."


class TradeValueUnavailable(ForecourtError):
    code = "deals.trade_value_unavailable"
    http_status = 422
    jsonrpc_code = -32000
    default_message = "Too few comparable vehicles to value this trade-in."


class ConsentRequired(ForecourtError):
    code = "consent.contact_consent_required"
    http_status = 403
    jsonrpc_code = -32000
    default_message = "Contact consent is required for this channel."


class InvalidConsent(ForecourtError):
    code = "consent.invalid_consent"
    http_status = 403
    jsonrpc_code = -32000
    default_message = "The consent grant is invalid."


class IdempotencyConflict(ForecourtError):
    code = "idempotency_conflict"
    http_status = 409
    jsonrpc_code = -32000
    default_message = "The idempotency key was already used with a different request."


class IdempotencyInProgress(ForecourtError):
    code = "idempotency_in_progress"
    http_status = 409
    jsonrpc_code = -32000
    retryable = True
    default_message = "A request with this idempotency key is still being processed."


class Unauthorized(ForecourtError):
    code = "auth.unauthorized"
    http_status = 401
    jsonrpc_code = -32001
    default_message = "Authentication is required."


class Expired(Unauthorized):
    code = "auth.expired"
    default_message = "The credential has expired."


class Forbidden(ForecourtError):
    code = "auth.forbidden"
    http_status = 403
    jsonrpc_code = -32003
    default_message = "The caller may not perform this action."


class InsufficientScope(Forbidden):
    code = "auth.insufficient_scope"
    default_message = "The credential lacks the scope this action needs."


class TenancyDenied(Forbidden):
    code = "auth.tenancy_denied"
    default_message = "The caller has no access to this dealership."


class PolicyDenied(Forbidden):
    code = "policy.denied"
    default_message = "Company policy does not allow this action."


class SideEffectsNotAllowed(Forbidden):
    code = "policy.side_effects_not_allowed"
    default_message = "Side effects are not allowed for this call."


class RateLimited(ForecourtError):
    code = "rate_limited"
    http_status = 429
    jsonrpc_code = -32029
    retryable = True
    default_message = "Too many requests."

    def __init__(self, retry_after_s: float, *, scope: str = "member", message: str | None = None) -> None:
        self.retry_after_s = max(retry_after_s, 0.0)
        super().__init__(message, details={"retry_after": round(self.retry_after_s, 3), "scope": scope})


class Timeout(ForecourtError):
    code = "timeout"
    http_status = 504
    jsonrpc_code = -32000
    retryable = True
    default_message = "The action did not finish in time."


class Overloaded(ForecourtError):
    code = "overloaded"
    http_status = 503
    jsonrpc_code = -32000
    retryable = True
    default_message = "The service is busy; try again shortly."


class UpstreamError(ForecourtError):
    """A runtime or upstream server failed; details never carry the provider's raw message."""

    code = "upstream.error"
    http_status = 502
    jsonrpc_code = -32000
    default_message = "An upstream service failed."


class UpstreamUnavailable(UpstreamError):
    code = "upstream.unavailable"
    http_status = 503
    retryable = True
    default_message = "An upstream service is unavailable."


class UpstreamCredentialRejected(UpstreamError):
    """The runtime refused the short-lived credential (HTTP 401), typically because it expired on the way.

    The gateway tells the credential provider, so the next call gets a fresh credential instead of the
    cached one (``CredentialProvider.rejected``).
    """

    code = "upstream.credential_rejected"
    http_status = 502
    retryable = True
    default_message = "The model runtime rejected the gateway's credential."


class UpstreamRateLimited(UpstreamError):
    code = "upstream.rate_limited"
    http_status = 429
    retryable = True
    default_message = "An upstream service is rate limiting requests."


class ImportRejected(ForecourtError):
    code = "inventory.import_rejected"
    http_status = 422
    jsonrpc_code = -32602
    default_message = "The inventory feed could not be imported."


class InvalidVin(InvalidParams):
    code = "inventory.invalid_vin"
    default_message = "The VIN is invalid."


def all_error_classes() -> list[type[ForecourtError]]:
    """Every concrete error class, for documentation and the uniqueness test."""
    seen: list[type[ForecourtError]] = []
    stack: list[type[ForecourtError]] = [ForecourtError]
    while stack:
        cls = stack.pop()
        seen.append(cls)
        stack.extend(cls.__subclasses__())
    return seen
