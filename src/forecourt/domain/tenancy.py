"""Profiles own companies; companies own dealerships (rooftops), members, policies and adapter settings."""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field


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
    oidc_issuer: str | None = None
    oidc_audience: str | None = None
    oidc_jwks_url: str | None = None


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
    brands: tuple[str, ...] = ()
    address: Address = Address()
    phones: dict[str, str] = Field(default_factory=dict)
    email: str | None = None
    website: str | None = None
    sales_hours: dict[str, DayHours] = Field(default_factory=dict)
    service_hours: dict[str, DayHours] = Field(default_factory=dict)
    capabilities: tuple[str, ...] = ()
    public_agent: bool = True
    crm_endpoint: str | None = None
    tax_rate_bps: int = 0
    doc_fee_minor: int = 0


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


class Member(BaseModel):
    """An agent or person on a company's team."""

    model_config = ConfigDict(frozen=True)

    id: str
    company_id: str
    profile_id: str
    name: str
    kind: MemberKind = MemberKind.AGENT
    security_type: SecurityType = SecurityType.ANY
    allowed_tools: tuple[str, ...] = ()
    scopes: tuple[str, ...] = ()
    dealership_ids: tuple[str, ...] = ()
    is_admin: bool = False
    oidc_subject: str | None = None
    cert_fingerprint: str | None = None
    agent_config: dict[str, Any] = Field(default_factory=dict)
    active: bool = True

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
    allowed_actions: tuple[str, ...] = ("*",)
    denied_actions: tuple[str, ...] = ()
    allowed_adapters: tuple[str, ...] = ("*",)
    denied_adapters: tuple[str, ...] = ()
    allowed_models: tuple[str, ...] = ("*",)
    allow_side_effects: bool = True
    redact_fields: tuple[str, ...] = ()
    audit_retention_days: int = 365
    rate_limits: dict[str, int] = Field(default_factory=dict)


class AdapterSetting(BaseModel):
    """A company's override of an adapter's default configuration."""

    model_config = ConfigDict(frozen=True)

    company_id: str
    adapter_id: str
    config: dict[str, Any] = Field(default_factory=dict)
