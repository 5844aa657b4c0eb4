"""What a company registers: one upstream MCP server, and the names its tools get behind the gateway.

Tool names: an upstream tool ``t`` of a server registered with namespace ``ns`` is offered as ``ns.t``. MCP
(2025-11-25) allows ``^[A-Za-z0-9._-]{1,128}$``; many hosts accept only 64 characters, so Forecourt keeps every
name within 64. A name that would be longer, or that holds other characters, is rewritten: disallowed
characters become ``_`` and the tool part is cut so that ``-<8 hex of sha256(original)>`` fits — stable across
restarts and replicas, and distinct for distinct originals. With ``namespace: ""`` (pass-through) the upstream's
names are offered unchanged when they already fit the rule (see docs/mcp.md, "Federation").
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from forecourt.domain.errors import InvalidUpstream, NamespaceTaken, UpstreamNotFound
from forecourt.errors import Forbidden

MAX_TOOL_NAME = 64
TOOL_NAME = re.compile(r"^[A-Za-z0-9._-]{1,64}$")
SLUG = re.compile(r"^[a-z0-9][a-z0-9_-]{0,31}$")
_BAD_CHARS = re.compile(r"[^A-Za-z0-9._-]")
RESERVED_NAMESPACES = frozenset({"aap", "admin", "mcp", "upstream", "forecourt"})
ADAPTER_ID = "upstream"


class UpstreamSpec(BaseModel):
    """One upstream MCP server of a company.

    ``transport`` is ``http`` (Streamable HTTP ``url``) or ``stdio`` (``command`` + ``args``, started by this
    process: operator only). ``namespace`` defaults to the id; ``""`` offers the upstream's tool names unchanged.
    ``credentials`` is a credential-broker section (``{type: secret, env: NAME, kind: bearer}``, ``jwt``,
    ``google``...): a credential is issued for every HTTP request the pooled session sends.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    transport: Literal["http", "stdio"] = "http"
    url: str | None = None
    command: str | None = None
    args: tuple[str, ...] = ()
    env: dict[str, str] = Field(default_factory=dict)
    namespace: str | None = None
    credentials: dict[str, Any] = Field(default_factory=dict)
    read_scope: str = "amcp:upstream:read"
    write_scope: str = "amcp:upstream:write"
    timeout_s: float = Field(default=30.0, gt=0, le=600)
    mode: Literal["legacy", "auto"] = "legacy"
    enabled: bool = True
    description: str = ""

    @field_validator("id")
    @classmethod
    def _slug(cls, value: str) -> str:
        if not SLUG.fullmatch(value):
            raise ValueError("id must match ^[a-z0-9][a-z0-9_-]{0,31}$")
        return value

    @field_validator("namespace")
    @classmethod
    def _namespace(cls, value: str | None) -> str | None:
        if value is None or value == "":
            return value
        if not SLUG.fullmatch(value) or value in RESERVED_NAMESPACES:
            raise ValueError("namespace must be empty or match ^[a-z0-9][a-z0-9_-]{0,31}$ (and not be reserved)")
        return value

    @model_validator(mode="after")
    def _transport(self) -> UpstreamSpec:
        if self.transport == "http" and not self.url:
            raise ValueError("an http upstream needs a url")
        if self.transport == "stdio" and not self.command:
            raise ValueError("a stdio upstream needs a command")
        return self

    @property
    def prefix(self) -> str:
        """The namespace actually used (the id unless set; ``""`` = pass-through)."""
        return self.id if self.namespace is None else self.namespace

    @property
    def passthrough(self) -> bool:
        """Whether the upstream's names are offered unchanged."""
        return self.prefix == ""

    def public(self) -> dict[str, Any]:
        """The definition as the admin API shows it (credential locators and env values are not echoed)."""
        data = self.model_dump(mode="json")
        data["env"] = sorted(self.env)
        data["credentials"] = {"type": self.credentials["type"]} if "type" in self.credentials else {}
        return data


@dataclass(frozen=True)
class Registered:
    """A stored upstream: its company, definition, and whether the operator registered it."""

    company_id: str
    spec: UpstreamSpec
    operator_managed: bool
    updated_at: datetime

    @property
    def key(self) -> str:
        """``company/id``: unique across companies."""
        return f"{self.company_id}/{self.spec.id}"


def parse_spec(raw: Any) -> UpstreamSpec:
    """Validate an upstream definition from the admin API or CLI.

    Raises:
        InvalidUpstream: With value-free details of what is wrong.
    """
    if not isinstance(raw, dict):
        raise InvalidUpstream("The upstream definition must be an object.")
    try:
        return UpstreamSpec.model_validate(raw)
    except ValidationError as exc:
        errors = [{"path": "/" + "/".join(str(p) for p in e["loc"]), "rule": e["type"]} for e in exc.errors()[:5]]
        raise InvalidUpstream(details={"errors": errors}) from None


def _short_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:8]


def tool_name(prefix: str, upstream_tool: str) -> str:
    """The gateway's name for ``upstream_tool`` under namespace ``prefix`` (always matches :data:`TOOL_NAME`)."""
    joined = f"{prefix}.{upstream_tool}" if prefix else upstream_tool
    if TOOL_NAME.fullmatch(joined):
        return joined
    suffix = "-" + _short_hash(upstream_tool)
    cleaned = _BAD_CHARS.sub("_", upstream_tool) or "tool"
    head = f"{prefix}." if prefix else ""
    room = MAX_TOOL_NAME - len(head) - len(suffix)
    return f"{head}{cleaned[:room]}{suffix}"


def forward_action_name(company_id: str, upstream_id: str) -> str:
    """The hidden action that carries resource, prompt and pass-through calls to one upstream.

    It contains ``:`` so it can never clash with (or be offered as) an MCP tool name.
    """
    return f"upstream:{company_id}/{upstream_id}"


def require_operator_for(spec: UpstreamSpec, operator: bool) -> None:
    """Stdio commands and environment variables run on this host: only the operator may register them.

    Raises:
        Forbidden: When a company admin tries.
    """
    if not operator and (spec.transport == "stdio" or spec.env):
        raise Forbidden("Only the operator (forecourt upstreams add) may register stdio upstream servers.")


__all__ = [
    "ADAPTER_ID",
    "InvalidUpstream",
    "NamespaceTaken",
    "Registered",
    "UpstreamNotFound",
    "UpstreamSpec",
    "forward_action_name",
    "parse_spec",
    "require_operator_for",
    "tool_name",
]
