"""Seed 001 §3 envelopes, field names exactly as the seed writes them."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


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
