"""One error hierarchy with stable, namespaced codes, and the one table of their wire forms.

Every error a client can see is a :class:`ForecourtError` subclass with a stable ``code``; each class carries
all of its wire forms, so this module is the table that maps an error to every door:

- REST envelope and admin REST: ``http_status`` and the body ``{code, message, retryable, details}``
  (:meth:`ForecourtError.to_dict`);
- MCP: a tool result with ``isError`` and that body, or a JSON-RPC error with ``jsonrpc_code`` and the body as
  ``data`` (protocol faults);
- A2A / AAP: ``aap_code`` → :data:`AAP_CODES` (HTTP status, JSON-RPC code, retryable) in an ``aap.error``.

Surfaces only render these; nothing else turns exceptions into responses. ``details`` must be client-safe: no
PII, no SQL, no provider internals. Errors live here, or in one ``errors.py`` of the package that raises them
(``domain/``, ``contract/``, ``gateway/``, ``adapters/``, ``adapters/workflow/``, ``inventory_import/``, ``delivery/``,
``surfaces/mcp/``, ``surfaces/a2a/``)::

    ForecourtError
      AapCallError  [adapters.errors]
      ApprovalPending
      BudgetExceeded  [gateway.errors]
      Conflict
        AdminLockout
        AlreadyExists
        AppointmentTimeUnavailable
          AapAppointmentUnavailable
        FeedBusy  [inventory_import.errors]
        InvalidConsentTransition
        InvalidLeadTransition
        NamespaceTaken  [domain.errors]
        RunBusy  [adapters.workflow.errors]
        RunConflict  [adapters.workflow.errors]
        RunNotResumable  [adapters.workflow.errors]
        TaskNotWaiting  [adapters.workflow.errors]
        TenantInUse
      ConsentRequired
      CredentialUnavailable  [contract.errors]
      EmbedderUnavailable  [adapters.errors]
      FeedFetchFailed  [inventory_import.errors]
      Forbidden
        ApprovalRejected
        SelfDecision
        CsrfRejected
        InsufficientScope
        OperatorNotAllowed  [adapters.workflow.errors]
        PolicyDenied
        SessionRestricted  [gateway.errors]
        SideEffectsNotAllowed
        TenancyDenied
      GpuQuotaExceeded  [adapters.errors]
      HostUnauthorized  [adapters.errors]
      IdempotencyConflict
      IdempotencyInProgress
      ImportRejected
      InternalError
      InvalidCondition  [surfaces.a2a.errors]
      InvalidConsent
      InvalidCursor
      InvalidParams
        AdapterConfigError  [adapters.errors]
        FieldError  [inventory_import.errors]
        InvalidDefinition  [adapters.workflow.errors]
        InvalidQuery  [domain.errors]
        InvalidQueryParams  [domain.errors]
        InvalidUpstream  [domain.errors]
        InvalidVin
        ModelRequestRejected  [adapters.errors]
        NestingTooDeep  [contract.errors]
        TenantsFileInvalid
        UnsafeExpression  [adapters.workflow.errors]
        VinError  [domain.errors]
        YamlRefused  [domain.errors]
      InvalidRequest
        PayloadTooLarge
      JobFailed  [surfaces.a2a.errors]
      JobStillRunning  [surfaces.a2a.errors]
      NoBackChannel  [surfaces.mcp.errors]
      NoReadyVersion  [adapters.errors]
      NotFound
        AppointmentNotFound
        CompanyNotFound
        ConsentNotFound
        CustomerNotFound
        DealershipNotFound
        DefinitionNotFound  [adapters.workflow.errors]
        DocumentNotFound  [adapters.errors]
        FeedSourceNotFound  [inventory_import.errors]
        JobNotFound  [adapters.errors]
        LeadNotFound
        MailRouteNotFound
        MemberNotFound
        ModelNotFound  [adapters.errors]
        PeerNotConfigured  [adapters.errors]
        QueryNotFound  [domain.errors]
        RepairOrderNotFound
        RunNotFound  [adapters.workflow.errors]
        UpstreamNotFound  [domain.errors]
        VectorNotFound  [adapters.errors]
        VehicleNotFound
      Overloaded
      PeerUnavailable  [adapters.errors]
      RateLimited
      ResultTooLarge
      RuntimeNotConfigured  [adapters.errors]
      SessionsUnavailable  [adapters.errors]
      SlotsUnavailable  [adapters.errors]
      StoreUnavailable  [gateway.errors]
      Timeout
      TradeValueUnavailable
      Unauthorized
        Expired
      UnknownAction
      UnsafeTarget
      UnsupportedSkill  [surfaces.a2a.errors]
        UnsupportedContentType  [surfaces.a2a.errors]
      UpstreamError
        UpstreamCredentialRejected
        UpstreamForbidden  [adapters.errors]
        UpstreamProtocolError  [adapters.errors]
        UpstreamRateLimited
        UpstreamUnavailable
      VehicleUnavailable
"""

from __future__ import annotations

from typing import Any, ClassVar

AAP_CODES: dict[str, tuple[int, int, bool]] = {  # AAP code -> (HTTP status, JSON-RPC code, retryable)
    "UNSUPPORTED_SKILL": (404, -32601, False),
    "SCHEMA_VALIDATION_FAILED": (422, -32602, False),
    "MISSING_REQUIRED_FIELD": (422, -32602, False),
    "INVALID_CONDITION": (422, -32602, False),
    "VEHICLE_NOT_FOUND": (404, -32000, False),
    "VEHICLE_UNAVAILABLE": (409, -32000, False),
    "CONTACT_CONSENT_REQUIRED": (403, -32000, False),
    "INVALID_CONSENT": (403, -32000, False),
    "APPOINTMENT_TIME_UNAVAILABLE": (409, -32000, False),
    "IDEMPOTENCY_CONFLICT": (409, -32000, False),
    "AUTH_REQUIRED": (401, -32001, False),
    "RATE_LIMITED": (429, -32002, True),
    "INTERNAL_ERROR": (500, -32603, True),
}
"""The AAP wire form of each AAP error code (AAP v0.1 error table, SPEC-NOTES)."""


class ForecourtError(Exception):
    """Base of every client-visible error."""

    code: str = "internal_error"
    http_status: int = 500
    jsonrpc_code: int = -32603
    retryable: ClassVar[bool] = False
    default_message: ClassVar[str] = "Internal error."
    aap_code: ClassVar[str] = "INTERNAL_ERROR"
    """The AAP ``aap.error`` code (see :data:`AAP_CODES`); schema violations are refined per field."""

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
    aap_code = "SCHEMA_VALIDATION_FAILED"
    http_status = 400
    jsonrpc_code = -32600
    default_message = "The request is malformed."


class TenantsFileInvalid(InvalidParams):
    """The tenants file has problems; ``details.errors`` lists each with its YAML path."""

    code = "tenants.invalid_file"
    default_message = "The tenants file is not valid; nothing was applied."


class PayloadTooLarge(InvalidRequest):
    """The request body exceeds the configured limit."""

    code = "payload_too_large"
    aap_code = "SCHEMA_VALIDATION_FAILED"
    http_status = 413
    default_message = "The request body is too large."


class UnknownAction(ForecourtError):
    """No action of that name exists in the catalogue."""

    code = "action.unknown"
    aap_code = "UNSUPPORTED_SKILL"
    http_status = 404
    jsonrpc_code = -32601
    default_message = "Unknown action."


class InvalidCursor(ForecourtError):
    """A pagination cursor was forged, tampered with, expired or belongs to another query."""

    code = "invalid_cursor"
    aap_code = "SCHEMA_VALIDATION_FAILED"
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
    aap_code = "VEHICLE_NOT_FOUND"
    default_message = "Vehicle not found."


class VehicleUnavailable(ForecourtError):
    code = "inventory.vehicle_unavailable"
    aap_code = "VEHICLE_UNAVAILABLE"
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


class MailRouteNotFound(NotFound):
    code = "crm.mail_route_not_found"
    default_message = "The dealership has no CRM e-mail route."


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


class TenantInUse(Conflict):
    """A rooftop or company still has data referring to it, so it cannot be deleted."""

    code = "tenancy.in_use"
    default_message = "Data still refers to it, so it cannot be deleted."


class AppointmentTimeUnavailable(Conflict):
    code = "service.appointment_time_unavailable"
    aap_code = "APPOINTMENT_TIME_UNAVAILABLE"
    default_message = "No appointment time is available in the requested window."


class TradeValueUnavailable(ForecourtError):
    code = "deals.trade_value_unavailable"
    http_status = 422
    jsonrpc_code = -32000
    default_message = "Too few comparable vehicles to value this trade-in."


class ConsentRequired(ForecourtError):
    code = "consent.contact_consent_required"
    aap_code = "CONTACT_CONSENT_REQUIRED"
    http_status = 403
    jsonrpc_code = -32000
    default_message = "Contact consent is required for this channel."


class InvalidConsent(ForecourtError):
    code = "consent.invalid_consent"
    aap_code = "INVALID_CONSENT"
    http_status = 403
    jsonrpc_code = -32000
    default_message = "The consent grant is invalid."


class IdempotencyConflict(ForecourtError):
    code = "idempotency_conflict"
    aap_code = "IDEMPOTENCY_CONFLICT"
    http_status = 409
    jsonrpc_code = -32000
    default_message = "The idempotency key was already used with a different request."


class IdempotencyInProgress(ForecourtError):
    code = "idempotency_in_progress"
    aap_code = "IDEMPOTENCY_CONFLICT"
    http_status = 409
    jsonrpc_code = -32000
    retryable = True
    default_message = "A request with this idempotency key is still being processed."


class Unauthorized(ForecourtError):
    code = "auth.unauthorized"
    aap_code = "AUTH_REQUIRED"
    http_status = 401
    jsonrpc_code = -32001
    default_message = "Authentication is required."


class Expired(Unauthorized):
    code = "auth.expired"
    aap_code = "AUTH_REQUIRED"
    default_message = "The credential has expired."


class Forbidden(ForecourtError):
    code = "auth.forbidden"
    aap_code = "AUTH_REQUIRED"
    http_status = 403
    jsonrpc_code = -32003
    default_message = "The caller may not perform this action."


class SelfDecision(Forbidden):
    """The caller that made a held call tried to decide it (``gateway/approvals.py``)."""

    code = "approval.self_decision"
    default_message = "A call held for approval is decided by someone other than the caller that made it."


class ApprovalRejected(Forbidden):
    """A person rejected this call (a policy's ``require_approval`` held it; see gateway/approvals.py)."""

    code = "approval.rejected"
    default_message = "A person rejected this call."


class CsrfRejected(Forbidden):
    """A console form was posted without the session's CSRF token, or from another origin."""

    code = "console.csrf_rejected"
    default_message = "The form's security token is missing or stale. Reload the page and try again."


class ApprovalPending(ForecourtError):
    """The call waits for a person's approval; it runs once approved, and ``approvals.get`` gives its result."""

    code = "approval.pending"
    http_status = 409
    jsonrpc_code = -32010
    retryable = False
    default_message = (
        "This call needs a person's approval. It runs as soon as it is approved; do not send it again: "
        "approvals.get with the approval_id gives its status and, once it ran, its result."
    )


class InsufficientScope(Forbidden):
    code = "auth.insufficient_scope"
    aap_code = "AUTH_REQUIRED"
    default_message = "The credential lacks the scope this action needs."


class TenancyDenied(Forbidden):
    code = "auth.tenancy_denied"
    aap_code = "AUTH_REQUIRED"
    default_message = "The caller has no access to this dealership."


class PolicyDenied(Forbidden):
    code = "policy.denied"
    aap_code = "AUTH_REQUIRED"
    default_message = "Company policy does not allow this action."


class SideEffectsNotAllowed(Forbidden):
    code = "policy.side_effects_not_allowed"
    aap_code = "AUTH_REQUIRED"
    default_message = "Side effects are not allowed for this call."


class RateLimited(ForecourtError):
    code = "rate_limited"
    aap_code = "RATE_LIMITED"
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
    aap_code = "RATE_LIMITED"
    http_status = 503
    jsonrpc_code = -32000
    retryable = True
    default_message = "The service is busy; try again shortly."


class ResultTooLarge(ForecourtError):
    """A result exceeds ``FORECOURT_MCP_MAX_RESULT_BYTES`` (a Forecourt tool's, or an upstream tool's on every door)."""

    code = "mcp.result_too_large"
    http_status = 413
    jsonrpc_code = -32000
    default_message = "The result is too large; ask for a smaller page (limit) or narrower filters."


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
    aap_code = "SCHEMA_VALIDATION_FAILED"
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


# --- raised in forecourt.actions.lead_rules ---


class InvalidLeadTransition(Conflict):
    """A lead status change the lifecycle does not allow (e.g. ``closed`` → ``new``)."""

    code = "leads.invalid_status_transition"
    default_message = "The lead cannot move to that status from its current status."


class InvalidConsentTransition(Conflict):
    """A consent status change other than ``granted`` → ``revoked``."""

    code = "consent.invalid_status_transition"
    default_message = "Only a granted consent can be revoked."


# --- raised in forecourt.actions.sales_appointments ---


class AapAppointmentUnavailable(AppointmentTimeUnavailable):
    """Neither a requested window nor any alternative in the horizon is free."""

    code = "aap.appointment_time_unavailable"
    aap_code = "APPOINTMENT_TIME_UNAVAILABLE"


# --- raised in forecourt.netguard ---


class UnsafeTarget(ForecourtError):
    """An outbound URL was refused: wrong scheme, or its host is private, loopback or otherwise non-public."""

    code = "net.unsafe_target"
    http_status = 400
    jsonrpc_code = -32602
    default_message = "The target URL is not allowed."


# --- raised in forecourt.actions.admin_access ---


class AdminLockout(Conflict):
    """The change would leave the company with no way to administer itself."""

    code = "admin.lockout"
    default_message = "This change would remove the company's last way to administer itself."
