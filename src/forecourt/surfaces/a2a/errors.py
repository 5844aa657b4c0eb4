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
from forecourt.errors import AAP_CODES, ForecourtError, RateLimited

_CONDITION_PATHS = ("/vehicle_of_interest/condition", "/trade_in/condition")


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
    return exc.aap_code, None


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
    if isinstance(exc, UnsupportedContentType):  # A2A's own error for the binding, AAP's code in the payload
        status, rpc = exc.http_status, exc.jsonrpc_code
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


# raised in forecourt.surfaces.a2a.errors ---


class UnsupportedSkill(ForecourtError):
    """The request names no AAP skill this agent implements."""

    code = "aap.unsupported_skill"
    aap_code = "UNSUPPORTED_SKILL"
    http_status = 404
    jsonrpc_code = -32601
    default_message = "This dealer agent does not implement that skill."


class UnsupportedContentType(UnsupportedSkill):
    """A message whose parts are neither text nor an AAP DataPart (a file, raw bytes): A2A v1.0's
    ``ContentTypeNotSupportedError`` (HTTP 415, JSON-RPC -32005); the AAP payload keeps ``UNSUPPORTED_SKILL``."""

    code = "aap.unsupported_content_type"
    http_status = 415
    jsonrpc_code = -32005
    default_message = "This dealer agent takes text parts and AAP DataParts only."


class InvalidCondition(ForecourtError):
    """A condition from the wrong vocabulary (sale vs trade-in)."""

    code = "aap.invalid_condition"
    aap_code = "INVALID_CONDITION"
    http_status = 422
    jsonrpc_code = -32602
    default_message = "The condition is not valid here."


class JobFailed(ForecourtError):
    """A job a gateway-agent task followed failed without an error of its own."""

    code = "a2a.job_failed"
    http_status = 502
    jsonrpc_code = -32000
    default_message = "The job failed."


class JobStillRunning(ForecourtError):
    """A gateway-agent task stopped following a job that reports its end to nobody else, while it still ran."""

    code = "a2a.job_still_running"
    http_status = 504
    jsonrpc_code = -32000
    default_message = "The task stopped following the job while it still ran: read the job with its get action."
