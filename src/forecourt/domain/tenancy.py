"""Profiles own companies; companies own dealerships (rooftops), members, policies and adapter settings."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any, Literal, get_args

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationInfo, field_validator

from forecourt.domain.approvals import ApprovalRule
from forecourt.domain.protections import Protections
from forecourt.domain.urls import CONTEXT_KEY, OutboundUrl, StoredLink
from forecourt.domain.values import checked_email, checked_phones, checked_timezone


def one_or_many(value: Any) -> Any:
    """A single string where a list of strings is expected means a list of that one string."""
    return [value] if isinstance(value, str) else value


Strings = Annotated[tuple[str, ...], BeforeValidator(one_or_many)]
"""Strings (a single string is accepted as one)."""


class Profile(BaseModel):
    """The account that owns companies."""

    model_config = ConfigDict(frozen=True)

    id: str
    name: str


class Company(BaseModel):
    """A dealer or dealer group; policies, adapter settings and audit records belong here."""

    model_config = ConfigDict(frozen=True)

    id: str
    profile_id: str
    name: str
    oidc_issuer: OutboundUrl | None = None
    oidc_audience: str | None = None
    oidc_jwks_url: OutboundUrl | None = None


class Address(BaseModel):
    """A postal address (AAP address shape)."""

    model_config = ConfigDict(frozen=True)

    street: str = ""
    city: str = ""
    region: str = ""
    postal_code: str = ""
    country: str = "US"


class DayHours(BaseModel):
    """Opening hours for one weekday in local time (``HH:MM``); ``None`` means closed."""

    model_config = ConfigDict(frozen=True)

    open: str | None = None
    close: str | None = None


class Dealership(BaseModel):
    """One rooftop. All dealer data is scoped to a dealership."""

    model_config = ConfigDict(frozen=True)

    id: str
    company_id: str
    name: str
    domain: str | None = None
    timezone: str = "America/Los_Angeles"
    currency: str = "USD"
    brands: Strings = ()
    address: Address = Address()
    phones: dict[str, str] = Field(default_factory=dict)
    email: str | None = None
    website: StoredLink = None
    sales_hours: dict[str, DayHours] = Field(default_factory=dict)
    service_hours: dict[str, DayHours] = Field(default_factory=dict)
    capabilities: Strings = ()
    public_agent: bool = True
    crm_endpoint: OutboundUrl | None = None
    tax_rate_bps: int = 0
    doc_fee_minor: int = 0

    # Checked when a record is saved (under ``save_context``, as its URLs are): a row read back as it was stored.
    @field_validator("timezone")
    @classmethod
    def _zone(cls, value: str, info: ValidationInfo) -> str:
        return checked_timezone(value) if _saving(info) else value

    @field_validator("phones")
    @classmethod
    def _phones(cls, value: dict[str, str], info: ValidationInfo) -> dict[str, str]:
        address = info.data.get("address")
        if not _saving(info):
            return value
        return checked_phones(value, address.country if isinstance(address, Address) else None)

    @field_validator("email")
    @classmethod
    def _email(cls, value: str | None, info: ValidationInfo) -> str | None:
        return checked_email(value) if value is not None and _saving(info) else value


def _saving(info: ValidationInfo) -> bool:
    return isinstance(info.context, dict) and CONTEXT_KEY in info.context


class SecurityType(StrEnum):
    """How a member authenticates."""

    API_KEY = "api_key"
    OIDC = "oidc"
    MTLS = "mtls"
    ANY = "any"


class MemberKind(StrEnum):
    """Whether a member is an agent or a person."""

    AGENT = "agent"
    PERSON = "person"


ToolsetName = Literal["crm", "service", "inventory", "models", "workflows", "buyer", "admin"]
"""An MCP role toolset (what each holds, and how a member's and the policies' toolsets combine:
``actions/toolsets.py``)."""

TOOLSET_NAMES: tuple[str, ...] = get_args(ToolsetName)
"""The MCP role toolsets a member, an API key or a company policy may name."""

Toolsets = Annotated[tuple[ToolsetName, ...], BeforeValidator(one_or_many)]
"""Toolset names (a single name is accepted as one)."""


class Member(BaseModel):
    """An agent or person on a company's team."""

    model_config = ConfigDict(frozen=True)

    id: str
    company_id: str
    profile_id: str
    name: str
    kind: MemberKind = MemberKind.AGENT
    security_type: SecurityType = SecurityType.ANY
    allowed_tools: Strings = ()
    scopes: Strings = ()
    dealership_ids: Strings = ()
    is_admin: bool = False
    oidc_subject: str | None = None
    cert_fingerprint: str | None = None
    agent_config: dict[str, Any] = Field(default_factory=dict)
    active: bool = True
    toolset: ToolsetName | None = None
    """Role toolset offered over MCP (``crm``, ``service``, ``inventory``, ``models``, ``workflows``, ``buyer``,
    ``admin``); ``None``: every tool the member may call. It shapes what is listed, not what is permitted."""
    tool_names: str | None = None
    """MCP tool naming: ``llm`` lists LLM-safe names (``inventory_search``) for hosts that cannot add
    ``?names=llm`` to the URL; ``None`` or ``canonical``: the specs' names."""

    @property
    def agent_id(self) -> str:
        """The seed's ``profiles/{profileId}/companies/{companyId}/team/{memberId}`` path."""
        return f"profiles/{self.profile_id}/companies/{self.company_id}/team/{self.id}"


class Policy(BaseModel):
    """A company policy; the company's policies combine (denials win)."""

    model_config = ConfigDict(frozen=True)

    id: str
    company_id: str
    name: str = "default"
    allowed_actions: Strings = ("*",)
    denied_actions: Strings = ()
    allowed_adapters: Strings = ("*",)
    denied_adapters: Strings = ()
    allowed_models: Strings = ("*",)
    allow_side_effects: bool = True
    redact_fields: Strings = ()
    audit_retention_days: int = 365
    rate_limits: dict[str, int] = Field(default_factory=dict)
    require_approval: tuple[ApprovalRule, ...] = ()
    """Side-effect calls by agents that wait for a person's approval (console → Approvals)."""
    toolsets: Toolsets = ()
    """MCP role toolsets the company's members are offered tools from (empty: any). A member without a toolset of
    its own is offered these; a member's (or its key's) toolset narrows them further. Like a member's toolset it
    shapes what ``tools/list`` offers, not what may be called."""
    protections: Protections = Protections()
    """Per-turn restrictions after untrusted output, budgets, upstream auto-accept (docs/security.md)."""


class AdapterSetting(BaseModel):
    """A company's override of an adapter's default configuration."""

    model_config = ConfigDict(frozen=True)

    company_id: str
    adapter_id: str
    config: dict[str, Any] = Field(default_factory=dict)
