"""AAP error payloads: ``{type: "aap.error", error_id, code, message, retryable, details?, created_at}``.

Every :class:`~forecourt.errors.ForecourtError` maps to one AAP code with the HTTP status and JSON-RPC
code from the table in SPEC-NOTES. Details are client-safe by construction (the gateway never copies
request values into them); AAP surfaces add only what the buyer agent needs to act.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from forecourt.domain.timeutil import rfc3339
from forecourt.errors import ForecourtError, RateLimited

# AAP code -> (HTTP status, JSON-RPC code, retryable)
AAP_CODES: dict[str, tuple[int, int, bool]] = {
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

# Forecourt error code -> AAP code (anything not listed is INTERNAL_ERROR).
_BY_CODE: dict[str, str] = {
    "aap.unsupported_skill": "UNSUPPORTED_SKILL",
    "action.unknown": "UNSUPPORTED_SKILL",
    "invalid_request": "SCHEMA_VALIDATION_FAILED",
    "payload_too_large": "SCHEMA_VALIDATION_FAILED",
    "invalid_cursor": "SCHEMA_VALIDATION_FAILED",
    "inventory.invalid_vin": "SCHEMA_VALIDATION_FAILED",
    "aap.invalid_condition": "INVALID_CONDITION",
    "inventory.vehicle_not_found": "VEHICLE_NOT_FOUND",
    "inventory.vehicle_unavailable": "VEHICLE_UNAVAILABLE",
    "consent.contact_consent_required": "CONTACT_CONSENT_REQUIRED",
    "consent.invalid_consent": "INVALID_CONSENT",
    "service.appointment_time_unavailable": "APPOINTMENT_TIME_UNAVAILABLE",
    "aap.appointment_time_unavailable": "APPOINTMENT_TIME_UNAVAILABLE",
    "idempotency_conflict": "IDEMPOTENCY_CONFLICT",
    "idempotency_in_progress": "IDEMPOTENCY_CONFLICT",
    "auth.unauthorized": "AUTH_REQUIRED",
    "auth.expired": "AUTH_REQUIRED",
    "auth.forbidden": "AUTH_REQUIRED",
    "auth.insufficient_scope": "AUTH_REQUIRED",
    "auth.tenancy_denied": "AUTH_REQUIRED",
    "policy.denied": "AUTH_REQUIRED",
    "policy.side_effects_not_allowed": "AUTH_REQUIRED",
    "rate_limited": "RATE_LIMITED",
    "overloaded": "RATE_LIMITED",
}
_CONDITION_PATHS = ("/vehicle_of_interest/condition", "/trade_in/condition")


class UnsupportedSkill(ForecourtError):
    """The request names no AAP skill this agent implements."""

    code = "aap.unsupported_skill"
    http_status = 404
    jsonrpc_code = -32601
    default_message = "This dealer agent does not implement that skill."


class InvalidCondition(ForecourtError):
    """A condition from the wrong vocabulary (sale vs trade-in)."""

    code = "aap.invalid_condition"
    http_status = 422
    jsonrpc_code = -32602
    default_message = "The condition is not valid here."


@dataclass(frozen=True)
class AapError:
    """An AAP error payload with its HTTP status and JSON-RPC code."""

    payload: dict[str, Any]
    http_status: int
    rpc_code: int
    headers: dict[str, str]

    @property
    def code(self) -> str:
        """The AAP error code."""
        return str(self.payload["code"])


def _validation_code(exc: ForecourtError) -> tuple[str, str | None]:
    """AAP code for a schema violation, and a better message when a rule has its own code."""
    problems = exc.details.get("errors") or []
    paths = [str(p.get("path", "")) for p in problems if isinstance(p, dict)]
    missing = [m for p in problems if isinstance(p, dict) for m in p.get("missing", [])]
    if any(p.startswith("/consent/scope") for p in paths):
        return "INVALID_CONSENT", 'consent.scope must be exactly ["lead_submission"].'
    if any(p.startswith("/consent") for p in paths):
        return "INVALID_CONSENT", "The consent grant is malformed."
    if "consent" in missing:
        return "CONTACT_CONSENT_REQUIRED", "A consent grant is required to submit a lead."
    if any(p in _CONDITION_PATHS for p in paths):
        return "INVALID_CONDITION", (
            "vehicle_of_interest.condition must be new|used|cpo; trade_in.condition must be excellent|good|fair|poor."
        )
    if missing or any(isinstance(p, dict) and p.get("rule") in ("required", "anyOf") for p in problems):
        return "MISSING_REQUIRED_FIELD", None
    return "SCHEMA_VALIDATION_FAILED", None


def aap_code(exc: ForecourtError) -> tuple[str, str | None]:
    """The AAP code for ``exc`` and, for schema violations, a clearer message."""
    if exc.code == "invalid_params":
        return _validation_code(exc)
    return _BY_CODE.get(exc.code, "INTERNAL_ERROR"), None


def _details(exc: ForecourtError, code: str) -> dict[str, Any]:
    details: dict[str, Any] = {"forecourt_code": exc.code}
    if exc.trace_id:
        details["trace_id"] = exc.trace_id
    if code == "INTERNAL_ERROR":
        return details
    details.update({k: v for k, v in exc.details.items() if k != "retry_after"})
    if isinstance(exc, RateLimited):
        details["retry_after_ms"] = round(exc.retry_after_s * 1000)
    return details


def to_aap_error(exc: ForecourtError, *, now: datetime | None = None) -> AapError:
    """The AAP error for a Forecourt error."""
    code, better = aap_code(exc)
    status, rpc, retryable = AAP_CODES[code]
    message = better or (exc.message if code != "INTERNAL_ERROR" else "Internal error.")
    payload: dict[str, Any] = {
        "type": "aap.error",
        "error_id": f"err_{uuid.uuid4().hex}",
        "code": code,
        "message": message,
        "retryable": retryable or exc.retryable,
        "details": _details(exc, code),
        "created_at": rfc3339(now or datetime.now(UTC)),
    }
    headers = dict(exc.headers)
    if status == 401:
        headers.setdefault("WWW-Authenticate", 'Bearer realm="forecourt"')
    return AapError(payload=payload, http_status=status, rpc_code=rpc, headers=headers)


def aap_error(code: str, message: str, *, details: dict[str, Any] | None = None) -> AapError:
    """An AAP error built directly from an AAP code (used for wire-level problems before the gateway)."""
    status, rpc, retryable = AAP_CODES[code]
    payload: dict[str, Any] = {
        "type": "aap.error",
        "error_id": f"err_{uuid.uuid4().hex}",
        "code": code,
        "message": message,
        "retryable": retryable,
        "created_at": rfc3339(datetime.now(UTC)),
    }
    if details:
        payload["details"] = details
    return AapError(payload=payload, http_status=status, rpc_code=rpc, headers={})
