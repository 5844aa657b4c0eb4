"""Seed 001 §3 envelopes, field names exactly as the seed writes them, and the checks of what they claim."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from forecourt.errors import InvalidRequest
from forecourt.gateway.auth.apikeys import looks_like_api_key
from forecourt.gateway.auth.jwt import looks_like_jwt
from forecourt.gateway.auth.operator import looks_like_operator_key
from forecourt.gateway.base import Credentials

AUTH_METHODS: dict[str, str] = {
    "mcp-api-key": "api_key",
    "api-key": "api_key",
    "apiKey": "api_key",
    "operator-key": "operator_key",
    "oidc": "oidc",
    "firebase-id-token": "oidc",
    "jwt": "oidc",
    "mtls": "mtls",
    "none": "anonymous",
}
"""``security.auth.method`` values (seed 001 writes ``mcp-api-key``) and the kind of credential each names."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class Caller(_Strict):
    agentId: str | None = Field(default=None, max_length=512)  # noqa: N815
    sessionId: str | None = Field(default=None, max_length=256)  # noqa: N815
    traceId: str | None = Field(default=None, max_length=128)  # noqa: N815


class ActionRef(_Strict):
    type: Literal["tool.run", "model.invoke", "db.query", "workflow.run"] | None = None
    name: str | None = Field(default=None, max_length=128)
    version: str | None = Field(default="v1", max_length=16)


class AuthRef(_Strict):
    method: str | None = Field(default=None, max_length=64)


class CompanyContext(_Strict):
    companyId: str | None = Field(default=None, max_length=128)  # noqa: N815


class Security(_Strict):
    auth: AuthRef | None = None
    companyContext: CompanyContext | None = None  # noqa: N815


class Meta(_Strict):
    priority: Literal["low", "normal", "high"] = "normal"
    allowSideEffects: bool = True  # noqa: N815
    idempotencyKey: str | None = Field(default=None, max_length=200)  # noqa: N815


class RequestEnvelope(_Strict):
    """Agent → gateway."""

    id: str | None = Field(default=None, max_length=128)
    caller: Caller | None = None
    action: ActionRef | None = None
    payload: dict[str, Any] = Field(default_factory=dict)
    security: Security | None = None
    meta: Meta = Field(default_factory=Meta)  # a fresh one, not a deep copy of a shared default


class Status(BaseModel):
    code: int
    message: str
    error: dict[str, Any] | None = None


class Result(BaseModel):
    type: str
    output: Any
    metadata: dict[str, Any] = Field(default_factory=dict)


class AuditInfo(BaseModel):
    processedBy: str  # noqa: N815
    durationMs: float  # noqa: N815
    trace: str


class ResponseEnvelope(BaseModel):
    """Gateway → agent."""

    id: str
    inResponseTo: str | None  # noqa: N815
    status: Status
    result: Result | None = None
    audit: AuditInfo


def presented_kind(credentials: Credentials) -> str | None:
    """The kind of credential the request presents (as :data:`AUTH_METHODS` names them); ``None``: unrecognisable."""
    token = credentials.bearer
    if token:
        if looks_like_api_key(token):
            return "api_key"
        if looks_like_operator_key(token):
            return "operator_key"
        return "oidc" if looks_like_jwt(token) else None
    if credentials.client_cert_pem or credentials.forwarded_cert:
        return "mtls"
    return "anonymous"


def check_claims(envelope: RequestEnvelope, action_version: str | None, credentials: Credentials) -> None:
    """Refuse an envelope whose ``action.version`` or ``security.auth.method`` the call cannot honour.

    Args:
        envelope: The request envelope.
        action_version: The version of the action the URL names (``None``: no such action; the gateway answers).
        credentials: What the request presents.

    Raises:
        InvalidRequest: An unknown version, an unknown method, or a method that names another kind of credential
            than the one presented; ``details`` names the field and what is supported.
    """
    claimed_version = envelope.action.version if envelope.action else None
    if claimed_version is not None and action_version is not None and claimed_version != action_version:
        raise InvalidRequest(
            f"action.version is not supported; this action is version {action_version}.",
            details={"field": "action.version", "supported": [action_version]},
        )
    auth = envelope.security.auth if envelope.security else None
    method = auth.method if auth else None
    if method is None:
        return
    if method not in AUTH_METHODS:
        raise InvalidRequest(
            "security.auth.method is not a supported method.",
            details={"field": "security.auth.method", "supported": sorted(AUTH_METHODS)},
        )
    kind = presented_kind(credentials)
    if kind is not None and AUTH_METHODS[method] != kind:
        matching = sorted(name for name, named in AUTH_METHODS.items() if named == kind)
        raise InvalidRequest(
            "security.auth.method does not match the credential presented.",
            details={"field": "security.auth.method", "supported": matching},
        )
