"""What a gateway and a remote adapter host say to each other (issue: adapters that deploy on their own).

The gateway keeps all policy; a host only runs the adapter. One call is ``POST {host}/v1/adapters/{adapter}:execute``
with

- ``Authorization: Bearer <service token>``: an HS256 JWT the gateway signs per call with the secret it shares
  with the hosts of the family (never the caller's key): ``iss`` ``forecourt-gateway``, ``aud``
  ``forecourt-adapters:{family}``, ``exp`` ``iat`` + ``ttl_s`` (60 s), a random ``jti``, ``region`` (the company's
  pinned region, or absent), ``company``, ``action`` and ``trace``. A host refuses a token of another family, an
  expired or forged one, and one pinned to a region other than its own.
- ``traceparent`` (W3C trace context: the call's trace id) and ``Forecourt-Deadline-Ms`` (the call's deadline, epoch
  milliseconds): the host stops work past it.
- the body :func:`call_body`: the action (name, type, timeout), its validated payload, the call's context (company,
  dealership, the caller as the gateway authenticated it — method, member, scopes, rooftops — session, idempotency
  key, the resolved adapter configuration), the per-call credential, and ``nested``: where and with which grant the
  adapter's own calls of other actions go back to the gateway (:mod:`forecourt.contract.grants`).

The answer is ``{"result": {output, result_type, metadata}}`` or ``{"error": {code, message, retryable, details}}``
with the error's HTTP status.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from forecourt.adapters.errors import HostUnauthorized
from forecourt.contract import AdapterResult, ExecutionContext, IssuedCredential
from forecourt.errors import ForecourtError, UpstreamError, UpstreamUnavailable

ISSUER = "forecourt-gateway"
TOKEN_TTL_S = 60.0
FAMILIES: dict[str, tuple[str, ...]] = {
    "models": ("vertex", "nvidia", "openai", "anthropic", "huggingface"),
    "knowledge": ("knowledge",),
    "workflows": ("workflow",),
    "upstreams": ("upstream",),
}
"""The adapters each family's hosts run (``model.invoke``'s router stays in the gateway: it is policy)."""


def runs_in_gateway(family: str, action: str) -> bool:
    """Whether ``action`` of a remote ``family`` still runs in the gateway.

    Of the upstreams family, the registry (``admin.upstreams.*``: the gateway's hub mirrors it into the catalogue
    that policy and ``tools/list`` read, and refuses shadowing names against it) and MCP federation's resource,
    prompt and subscription forwards (``upstream:<company>/<id>``: an upstream's resource updates reach the
    gateway's MCP clients only through the gateway's own session) stay in the gateway; tool calls go to the hosts.
    """
    if family != "upstreams":
        return False
    return action.startswith("admin.upstreams.") or (action.startswith("upstream:") and not action.endswith("#call"))


NO_HOST_MESSAGE = "No adapter host is available for this call; try again shortly."


def no_host(family: str, region: str | None) -> UpstreamUnavailable:
    """The retryable error of a call no healthy host of ``family`` (in the company's region) could take."""
    return UpstreamUnavailable(NO_HOST_MESSAGE, details={"family": family, "region": region})


def audience(family: str) -> str:
    """The ``aud`` of a family's service tokens."""
    return f"forecourt-adapters:{family}"


def sign_service_token(
    secret: str,
    *,
    family: str,
    region: str | None,
    company: str | None,
    action: str,
    trace_id: str,
    ttl_s: float = TOKEN_TTL_S,
) -> str:
    """A short-lived token for one call to a host of ``family``."""
    import jwt

    now = int(time.time())
    claims: dict[str, Any] = {
        "iss": ISSUER,
        "aud": audience(family),
        "iat": now,
        "exp": now + int(ttl_s),
        "jti": secrets.token_hex(12),
        "company": company,
        "action": action,
        "trace": trace_id,
    }
    if region:
        claims["region"] = region
    return jwt.encode(claims, secret, algorithm="HS256")


def verify_service_token(token: str, secret: str, *, family: str, region: str | None) -> dict[str, Any]:
    """The claims of a valid token for this host (``family``, ``region``).

    Raises:
        HostUnauthorized: Forged, expired, for another family, or pinned to another region.
    """
    import jwt

    try:
        claims: dict[str, Any] = jwt.decode(
            token,
            secret,
            algorithms=["HS256"],
            audience=audience(family),
            issuer=ISSUER,
            options={"require": ["exp", "iat", "aud", "iss", "jti"]},
            leeway=5,
        )
    except jwt.PyJWTError as exc:
        raise HostUnauthorized() from exc
    pinned = claims.get("region")
    if pinned and region and pinned != region:
        raise HostUnauthorized("This call is pinned to another region.", details={"region": region})
    return claims


def traceparent(trace_id: str) -> str | None:
    """A W3C ``traceparent`` continuing ``trace_id`` (``None`` when it is not a 32-hex trace id)."""
    if len(trace_id) != 32 or not all(c in "0123456789abcdef" for c in trace_id):
        return None
    return f"00-{trace_id}-{secrets.token_hex(8)}-01"


def trace_of(header: str | None) -> str | None:
    """The trace id of a ``traceparent`` header."""
    parts = (header or "").split("-")
    return parts[1] if len(parts) == 4 and len(parts[1]) == 32 else None


def _credential(credential: IssuedCredential | None) -> dict[str, Any] | None:
    if credential is None:
        return None
    return {
        "kind": credential.kind,
        "value": credential.value,
        "headers": dict(credential.headers),
        "expires_at": credential.expires_at.isoformat() if credential.expires_at else None,
        "provider": credential.provider,
    }


def credential_of(raw: Any) -> IssuedCredential | None:
    """The credential a call body carries."""
    if not isinstance(raw, Mapping):
        return None
    expires = raw.get("expires_at")
    return IssuedCredential(
        kind=raw.get("kind", "none"),
        value=str(raw.get("value") or ""),
        headers={str(k): str(v) for k, v in (raw.get("headers") or {}).items()},
        expires_at=datetime.fromisoformat(expires) if isinstance(expires, str) else None,
        provider=str(raw.get("provider") or ""),
    )


def call_body(
    payload: Mapping[str, Any], context: ExecutionContext, nested: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """The body of one remote call (``nested``: the callback URL and grant of its nested calls)."""
    from forecourt.contract.grants import principal_claims

    action = context.action
    principal = context.principal
    caller = principal_claims(principal)
    caller.pop("client_address", None)  # the adapter has no use for it
    body: dict[str, Any] = {
        "action": {"name": action.name, "type": action.type, "timeout_s": action.timeout_s},
        "payload": dict(payload),
        "context": {
            "company_id": context.company_id,
            "dealership_id": context.dealership_id,
            "member_id": principal.member_id,
            "method": principal.method,
            "principal": caller,
            "member": principal.member.model_dump(mode="json") if principal.member is not None else None,
            "session_id": context.session_id,
            "idempotency_key": context.idempotency_key,
            "trace_id": context.trace_id,
            "adapter_config": dict(context.adapter_config),
        },
        "credential": _credential(context.credential),
    }
    if nested:
        body["nested"] = dict(nested)
    return body


def result_body(result: AdapterResult) -> dict[str, Any]:
    """A host's answer (an output may hold datetimes, decimals or models: written as the front doors write them)."""
    from pydantic_core import to_jsonable_python

    answer = {"output": result.output, "result_type": result.result_type, "metadata": result.metadata}
    return {"result": to_jsonable_python(answer)}


def result_of(body: Mapping[str, Any]) -> AdapterResult:
    """The adapter result in a host's answer."""
    raw = body["result"]
    return AdapterResult(output=raw.get("output"), result_type=raw.get("result_type"), metadata=raw.get("metadata", {}))


def _error_classes(base: type[ForecourtError]) -> dict[str, type[ForecourtError]]:
    found: dict[str, type[ForecourtError]] = {}
    for cls in base.__subclasses__():
        found.setdefault(cls.code, cls)
        for code, sub in _error_classes(cls).items():
            found.setdefault(code, sub)
    return found


def error_of(body: Any, status: int) -> ForecourtError:
    """The gateway error a host answered (its class by code; an unknown code keeps code, status and retryable)."""
    raw = body.get("error") if isinstance(body, Mapping) else None
    if not isinstance(raw, Mapping) or not isinstance(raw.get("code"), str):
        return UpstreamError(details={"adapter_host_status": status})
    code = raw["code"]
    details = raw.get("details") if isinstance(raw.get("details"), dict) else None
    message = str(raw.get("message") or "") or None
    cls = _error_classes(ForecourtError).get(code)
    if cls is not None:
        try:
            return cls(message, details=details)
        except TypeError:  # a class whose constructor wants more: the generic form below keeps what matters
            pass
    generic: type[ForecourtError] = type(
        "RemoteError",
        (ForecourtError,),
        {"code": code, "http_status": status, "retryable": bool(raw.get("retryable"))},
    )
    return generic(message, details=details)


def now_ms() -> int:
    """Wall-clock epoch milliseconds (deadlines cross processes)."""
    return int(datetime.now(UTC).timestamp() * 1000)
