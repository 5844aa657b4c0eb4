"""The tenants file: one YAML document describing a profile, its companies, rooftops, members, policies and
adapter settings. ``forecourt apply`` validates with these models, ``forecourt export-tenants`` writes them,
and docs/tenants.md is generated from them (``python scripts/gen_tenants_doc.py``).

The models are the file's schema only; :func:`to_tenancy` and :func:`from_tenancy` translate to and from the
domain's tenancy records, so a file exported from a database applies back to it without a change.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError, ValidationInfo, field_validator
from pydantic_core import PydanticCustomError

from forecourt.domain.approvals import ApprovalRule
from forecourt.domain.protections import Protections
from forecourt.domain.tenancy import (
    AdapterSetting,
    Address,
    Company,
    DayHours,
    Dealership,
    Member,
    MemberKind,
    Policy,
    Profile,
    SecurityType,
    ToolsetName,
    one_or_many,
)
from forecourt.domain.urls import WebLink, url_problem
from forecourt.domain.values import Rule, checked_email, checked_phones, checked_timezone

StrList = Annotated[list[str], BeforeValidator(one_or_many)]
"""A list of strings; a single string is accepted as a list of one."""

Ident = Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")]
_HOURS_RE = re.compile(r"^([01]\d|2[0-3]):[0-5]\d-([01]\d|2[0-3]):[0-5]\d$")
CLOSED = "closed"


class Weekday(StrEnum):
    """A day of the week."""

    MONDAY = "monday"
    TUESDAY = "tuesday"
    WEDNESDAY = "wednesday"
    THURSDAY = "thursday"
    FRIDAY = "friday"
    SATURDAY = "saturday"
    SUNDAY = "sunday"


class _Spec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ProfileSpec(_Spec):
    """The account that owns the companies of this file."""

    id: Ident = Field(description="Profile id (the `profiles/{profileId}` of agent ids).")
    name: str = Field(min_length=1, description="Display name.")


class OidcSpec(_Spec):
    """The company's own OpenID Connect issuer, for members who sign in with JWTs."""

    issuer: str = Field(description="Issuer (`iss`) URL.")
    audience: str | None = Field(default=None, description="Expected `aud`.")
    jwks_url: str | None = Field(default=None, description="JWKS URL (default: from the issuer's discovery).")


class AddressSpec(_Spec):
    """A postal address."""

    street: str = Field(default="", description="Street and number.")
    city: str = Field(default="", description="City.")
    region: str = Field(default="", description="State or region code.")
    postal_code: str = Field(default="", description="Postal code.")
    country: str = Field(default="US", pattern=r"^[A-Z]{2}$", description="ISO 3166-1 alpha-2 country code.")


DayOpening = Annotated[
    str,
    Field(description='`"HH:MM-HH:MM"` in local time, or `"closed"`.'),
]


class HoursSpec(_Spec):
    """Opening hours per weekday; a day left out is not published."""

    sales: dict[Weekday, DayOpening] = Field(default_factory=dict, description="Showroom hours.")
    service: dict[Weekday, DayOpening] = Field(default_factory=dict, description="Service department hours.")

    @field_validator("sales", "service")
    @classmethod
    def _check_days(cls, value: dict[Weekday, str]) -> dict[Weekday, str]:
        for day, text in value.items():
            if text != CLOSED and not _HOURS_RE.match(text):
                raise ValueError(f'{day.value}: use "HH:MM-HH:MM" or "closed"')
            if text != CLOSED and text[:5] >= text[6:]:
                raise ValueError(f"{day.value}: closing time must be after opening time")
        return value


class CrmSpec(_Spec):
    """Where the rooftop's leads are delivered as ADF/XML."""

    endpoint: str | None = Field(default=None, description="HTTPS URL that receives ADF/XML posts.")

    @field_validator("endpoint")
    @classmethod
    def _https(cls, value: str | None) -> str | None:
        # The shape here, as every door checks it (``unsafe_url``); private targets when the file is applied.
        problem = url_problem(value, allow_private=True) if value is not None else None
        if problem is not None:
            raise PydanticCustomError("unsafe_url", "not an allowed fetch target ({problem})", {"problem": problem})
        return value


class RooftopSpec(_Spec):
    """One dealership (a rooftop). Every piece of dealer data belongs to one."""

    id: Ident = Field(description="Dealership id, unique across the whole deployment (appears in URLs).")
    name: str = Field(min_length=1, description="Display name.")
    timezone: str = Field(description="IANA time zone, e.g. `America/Chicago`.")
    address: AddressSpec = Field(default_factory=AddressSpec, description="Postal address.")
    domain: str | None = Field(
        default=None, description="Host name whose root `/.well-known/agent-card.json` serves this rooftop."
    )
    public_agent: bool = Field(default=True, description="Whether buyer agents may call its AAP agent anonymously.")
    currency: str = Field(default="USD", pattern=r"^[A-Z]{3}$", description="ISO 4217 currency of its prices.")
    brands: StrList = Field(default_factory=list, description="Franchised brands (empty for an independent).")
    phones: dict[str, str] = Field(
        default_factory=dict,
        description="Phone numbers by department, stored in E.164 (`+15125550100`); a number without `+` is read in "
        "the rooftop's country, and one that is not valid there is refused.",
    )
    email: str | None = Field(default=None, description="Sales e-mail address (one address, no display name).")
    website: WebLink | None = Field(default=None, description="Public website URL (http or https).")
    hours: HoursSpec = Field(default_factory=HoursSpec, description="Opening hours.")
    capabilities: StrList = Field(
        default_factory=list, description="What it offers: `test_drive`, `financing`, `trade_in`, `service`, ..."
    )
    crm: CrmSpec = Field(default_factory=CrmSpec, description="Lead delivery.")
    tax_rate_bps: int = Field(default=0, ge=0, le=10_000, description="Sales tax in basis points (863 = 8.63 %).")
    doc_fee_minor: int = Field(default=0, ge=0, description="Documentation fee in minor units (cents).")

    @field_validator("timezone")
    @classmethod
    def _zone(cls, value: str) -> str:
        return checked_timezone(value)

    @field_validator("phones")
    @classmethod
    def _phones(cls, value: dict[str, str], info: ValidationInfo) -> dict[str, str]:
        address = info.data.get("address")
        return checked_phones(value, address.country if isinstance(address, AddressSpec) else None)

    @field_validator("email")
    @classmethod
    def _email(cls, value: str | None) -> str | None:
        return checked_email(value) if value is not None else None


class MemberSpec(_Spec):
    """An agent or person on the company's team, and what it may do."""

    id: Ident = Field(description="Member id (the `team/{memberId}` of agent ids).")
    name: str = Field(min_length=1, description="Display name.")
    kind: MemberKind = Field(default=MemberKind.AGENT, description="`agent` or `person`.")
    security_type: SecurityType = Field(
        default=SecurityType.ANY, description="How it may authenticate: `api_key`, `oidc`, `mtls` or `any`."
    )
    allowed_tools: StrList = Field(
        default_factory=list, description="Action names or patterns it may call (`inventory.*`, `*`)."
    )
    scopes: StrList = Field(default_factory=list, description="Granted scopes, e.g. `amcp:inventory:read`.")
    dealerships: StrList = Field(default_factory=list, description="Rooftop ids of this company it may act on.")
    admin: bool = Field(default=False, description="Whether it may use the admin API for its company.")
    oidc_subject: str | None = Field(default=None, description="The JWT `sub` that signs in as this member.")
    cert_fingerprint: str | None = Field(default=None, description="SHA-256 fingerprint of its client certificate.")
    agent_config: dict[str, Any] = Field(
        default_factory=dict, description="Agent preferences (`modelAffinity`, `runtime`, ...)."
    )
    active: bool = Field(default=True, description="An inactive member cannot authenticate.")
    toolset: ToolsetName | None = Field(
        default=None,
        description="The MCP role toolset it is offered (it shapes what `tools/list` shows, not what is allowed).",
    )
    tool_names: Literal["canonical", "llm"] | None = Field(
        default=None, description="`llm` lists LLM-safe tool names (`inventory_search`) for hosts that need them."
    )


class PolicySpec(_Spec):
    """A company policy; a company's policies combine and denials win."""

    id: Ident = Field(description="Policy id.")
    name: str = Field(default="default", description="Display name.")
    allowed_actions: StrList = Field(default_factory=lambda: ["*"], description="Action patterns allowed.")
    denied_actions: StrList = Field(default_factory=list, description="Action patterns denied.")
    allowed_adapters: StrList = Field(default_factory=lambda: ["*"], description="Adapter ids allowed.")
    denied_adapters: StrList = Field(default_factory=list, description="Adapter ids denied.")
    allowed_models: StrList = Field(default_factory=lambda: ["*"], description="Model names allowed.")
    allow_side_effects: bool = Field(default=True, description="Whether actions that change data may run.")
    redact_fields: StrList = Field(default_factory=list, description="Extra result fields to redact.")
    audit_retention_days: int = Field(default=365, ge=1, le=36_500, description="Days audit records are kept.")
    require_approval: list[ApprovalRule] = Field(
        default_factory=list, description="Calls a person must approve first (in the console) before they run."
    )
    rate_limits: dict[str, Annotated[int, Field(ge=1)]] = Field(
        default_factory=dict,
        description="Calls per minute: `company_per_minute`, `member_per_minute`, `action_per_minute`, or an action "
        "name (per member).",
    )
    toolsets: Annotated[list[ToolsetName], BeforeValidator(one_or_many)] = Field(
        default_factory=list,
        description="MCP role toolsets (`crm`, `service`, `inventory`, `models`, `workflows`, `buyer`, `admin`) the "
        "company's members are offered tools from (empty: any); a member's own toolset narrows them further. Shapes "
        "what `tools/list` shows, not what is allowed.",
    )
    protections: Protections = Field(
        default_factory=Protections,
        description="Protections of the company's agents: `after_untrusted` (actions that need approval, or are "
        "refused, once a session has read untrusted output), `budgets` (calls, tokens and spend per member and key "
        "per period) and `auto_accept_upstreams` (upstream servers whose changed tools need no approval). All off by "
        "default; docs/security.md.",
    )


class CompanySpec(_Spec):
    """A dealer or dealer group: its rooftops, team, policies and adapter settings."""

    id: Ident = Field(description="Company id.")
    name: str = Field(min_length=1, description="Display name.")
    oidc: OidcSpec | None = Field(default=None, description="Its own OIDC issuer, if members sign in with JWTs.")
    rooftops: list[RooftopSpec] = Field(default_factory=list, description="Its dealerships.")
    members: list[MemberSpec] = Field(default_factory=list, description="Its agents and people.")
    policies: list[PolicySpec] = Field(default_factory=list, description="Its policies.")
    adapters: dict[str, dict[str, Any]] = Field(
        default_factory=dict,
        description="Overrides of adapter settings by adapter id (`settings/adapters/{adapterId}`).",
    )


class TenantsFile(_Spec):
    """One profile and everything under it."""

    version: Literal[1] = Field(default=1, description="Format version.")
    profile: ProfileSpec = Field(description="The owning profile.")
    companies: list[CompanySpec] = Field(default_factory=list, description="Its companies.")


# ---------------------------------------------------------------------------------------------- validation


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a tenants file, at a YAML path such as ``companies[0].rooftops[1].timezone``."""

    path: str
    message: str
    rule: str | None = None
    """The value rule it broke (:class:`~forecourt.domain.values.Rule`, ``invalid_link``), as every door names it."""

    def as_dict(self) -> dict[str, str]:
        """JSON form."""
        out = {"path": self.path, "message": self.message}
        return out | {"rule": self.rule} if self.rule else out


def yaml_path(loc: Iterable[int | str]) -> str:
    """``("companies", 0, "id")`` as ``companies[0].id``."""
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(file)"


_VALUE_RULES = frozenset({*(r.value for r in Rule), "invalid_link", "unsafe_url"})


def value_rule(error_type: str) -> str | None:
    """The value rule a pydantic error type stands for (``None`` for a structural error)."""
    return error_type if error_type in _VALUE_RULES else None


def parse_tenants(data: Any) -> tuple[TenantsFile | None, list[Problem]]:
    """Validate a loaded YAML document: the model, or every problem found (structure and references together)."""
    if not isinstance(data, dict):
        return None, [Problem("(file)", "the file must hold a mapping with `profile` and `companies`")]
    problems: list[Problem] = []
    doc: TenantsFile | None = None
    try:
        doc = TenantsFile.model_validate(data)
    except ValidationError as exc:
        errors = exc.errors(include_url=False)
        problems = [Problem(yaml_path(e["loc"]), e["msg"], value_rule(e["type"])) for e in errors]
    problems += cross_check(data)
    return (None, problems) if problems else (doc, [])


def _items(value: Any) -> list[tuple[int, dict[str, Any]]]:
    return [(i, v) for i, v in enumerate(value)] if isinstance(value, list) else []


def _ids(value: Any) -> list[tuple[int, str]]:
    return [(i, str(v["id"])) for i, v in _items(value) if isinstance(v, dict) and isinstance(v.get("id"), str)]


def _duplicates(ids: list[tuple[int, str]], where: str, kind: str) -> list[Problem]:
    seen: set[str] = set()
    out = []
    for i, value in ids:
        if value in seen:
            out.append(Problem(f"{where}[{i}].id", f"{kind} {value} appears more than once"))
        seen.add(value)
    return out


def cross_check(data: dict[str, Any]) -> list[Problem]:
    """References inside the file: unique ids and domains, members granted only their company's rooftops.

    Works on the raw document, so these problems are reported together with structural ones.
    """
    companies = data.get("companies")
    problems = _duplicates(_ids(companies), "companies", "company")
    rooftops_seen: set[str] = set()
    domains: dict[str, str] = {}
    for ci, company in _items(companies):
        if not isinstance(company, dict):
            continue
        base = f"companies[{ci}]"
        for ri, rooftop in _items(company.get("rooftops")):
            rid, domain = (rooftop.get("id"), rooftop.get("domain")) if isinstance(rooftop, dict) else (None, None)
            if isinstance(rid, str) and rid in rooftops_seen:
                problems.append(Problem(f"{base}.rooftops[{ri}].id", f"dealership {rid} appears more than once"))
            rooftops_seen.add(str(rid))
            if isinstance(domain, str) and domain:
                host = domain.lower()
                if host in domains:
                    problems.append(
                        Problem(f"{base}.rooftops[{ri}].domain", f"domain is already used by {domains[host]}")
                    )
                domains.setdefault(host, str(rid))
        problems += _duplicates(_ids(company.get("members")), f"{base}.members", "member")
        problems += _duplicates(_ids(company.get("policies")), f"{base}.policies", "policy")
        own = {rid for _, rid in _ids(company.get("rooftops"))}
        for mi, member in _items(company.get("members")):
            grants = one_or_many(member.get("dealerships", [])) if isinstance(member, dict) else []
            for di, dealership_id in _items(grants):
                if isinstance(dealership_id, str) and dealership_id not in own:
                    problems.append(
                        Problem(
                            f"{base}.members[{mi}].dealerships[{di}]",
                            f"{dealership_id} is not a rooftop of company {company.get('id')}",
                        )
                    )
    return problems


# ---------------------------------------------------------------------------------------------- translation


@dataclass
class Tenancy:
    """The tenancy records a file describes (or a database holds), ready to compare and write."""

    profile: Profile
    companies: list[Company] = field(default_factory=list)
    dealerships: list[Dealership] = field(default_factory=list)
    members: list[Member] = field(default_factory=list)
    policies: list[Policy] = field(default_factory=list)
    adapter_settings: list[AdapterSetting] = field(default_factory=list)


def _day_hours(text: str) -> DayHours:
    return DayHours() if text == CLOSED else DayHours(open=text[:5], close=text[6:])


def _day_text(hours: DayHours) -> str:
    return f"{hours.open}-{hours.close}" if hours.open and hours.close else CLOSED


def dealership_of(company_id: str, r: RooftopSpec) -> Dealership:
    return Dealership(
        id=r.id,
        company_id=company_id,
        name=r.name,
        domain=r.domain,
        timezone=r.timezone,
        currency=r.currency,
        brands=tuple(r.brands),
        address=Address(**r.address.model_dump()),
        phones=dict(r.phones),
        email=r.email,
        website=r.website,
        sales_hours={d.value: _day_hours(t) for d, t in r.hours.sales.items()},
        service_hours={d.value: _day_hours(t) for d, t in r.hours.service.items()},
        capabilities=tuple(r.capabilities),
        public_agent=r.public_agent,
        crm_endpoint=r.crm.endpoint,
        tax_rate_bps=r.tax_rate_bps,
        doc_fee_minor=r.doc_fee_minor,
    )


def member_of(profile_id: str, company_id: str, m: MemberSpec) -> Member:
    return Member(
        id=m.id,
        company_id=company_id,
        profile_id=profile_id,
        name=m.name,
        kind=m.kind,
        security_type=m.security_type,
        allowed_tools=tuple(m.allowed_tools),
        scopes=tuple(m.scopes),
        dealership_ids=tuple(m.dealerships),
        is_admin=m.admin,
        oidc_subject=m.oidc_subject,
        cert_fingerprint=m.cert_fingerprint,
        agent_config=dict(m.agent_config),
        active=m.active,
        toolset=m.toolset,
        tool_names=m.tool_names,
    )


def _policy(company_id: str, p: PolicySpec) -> Policy:
    data = p.model_dump()
    return Policy(company_id=company_id, **{k: tuple(v) if isinstance(v, list) else v for k, v in data.items()})


def to_tenancy(doc: TenantsFile) -> Tenancy:
    """The records a validated file describes."""
    out = Tenancy(profile=Profile(id=doc.profile.id, name=doc.profile.name))
    for c in doc.companies:
        oidc = c.oidc
        out.companies.append(
            Company(
                id=c.id,
                profile_id=doc.profile.id,
                name=c.name,
                oidc_issuer=oidc.issuer if oidc else None,
                oidc_audience=oidc.audience if oidc else None,
                oidc_jwks_url=oidc.jwks_url if oidc else None,
            )
        )
        out.dealerships += [dealership_of(c.id, r) for r in c.rooftops]
        out.members += [member_of(doc.profile.id, c.id, m) for m in c.members]
        out.policies += [_policy(c.id, p) for p in c.policies]
        out.adapter_settings += [
            AdapterSetting(company_id=c.id, adapter_id=k, config=dict(v)) for k, v in c.adapters.items()
        ]
    return out


def rooftop_spec_of(d: Dealership) -> RooftopSpec:
    """The file form of a stored rooftop, as stored: a value saved before a rule existed is exported as it is, and
    refused (naming its field) when the file is applied or the rooftop next changed."""
    return RooftopSpec.model_construct(
        id=d.id,
        name=d.name,
        timezone=d.timezone,
        address=AddressSpec(**d.address.model_dump()),
        domain=d.domain,
        public_agent=d.public_agent,
        currency=d.currency,
        brands=list(d.brands),
        phones=dict(d.phones),
        email=d.email,
        website=d.website,
        hours=HoursSpec(
            sales={Weekday(k): _day_text(v) for k, v in d.sales_hours.items()},
            service={Weekday(k): _day_text(v) for k, v in d.service_hours.items()},
        ),
        capabilities=list(d.capabilities),
        crm=CrmSpec(endpoint=d.crm_endpoint),
        tax_rate_bps=d.tax_rate_bps,
        doc_fee_minor=d.doc_fee_minor,
    )


def member_spec_of(m: Member) -> MemberSpec:
    return MemberSpec(
        id=m.id,
        name=m.name,
        kind=m.kind,
        security_type=m.security_type,
        allowed_tools=list(m.allowed_tools),
        scopes=list(m.scopes),
        dealerships=list(m.dealership_ids),
        admin=m.is_admin,
        oidc_subject=m.oidc_subject,
        cert_fingerprint=m.cert_fingerprint,
        agent_config=dict(m.agent_config),
        active=m.active,
        toolset=m.toolset,
        tool_names=m.tool_names,
    )


def _policy_spec(p: Policy) -> PolicySpec:
    data = p.model_dump(exclude={"company_id"})
    return PolicySpec.model_validate({k: list(v) if isinstance(v, tuple) else v for k, v in data.items()})


def from_tenancy(state: Tenancy) -> TenantsFile:
    """The file that describes ``state`` (what ``forecourt export-tenants`` writes)."""
    companies = []
    for c in sorted(state.companies, key=lambda x: x.id):
        oidc = (
            OidcSpec(issuer=c.oidc_issuer, audience=c.oidc_audience, jwks_url=c.oidc_jwks_url)
            if c.oidc_issuer
            else None
        )
        companies.append(
            CompanySpec(
                id=c.id,
                name=c.name,
                oidc=oidc,
                rooftops=[
                    rooftop_spec_of(d) for d in sorted(state.dealerships, key=lambda x: x.id) if d.company_id == c.id
                ],
                members=[member_spec_of(m) for m in sorted(state.members, key=lambda x: x.id) if m.company_id == c.id],
                policies=[_policy_spec(p) for p in sorted(state.policies, key=lambda x: x.id) if p.company_id == c.id],
                adapters={s.adapter_id: dict(s.config) for s in state.adapter_settings if s.company_id == c.id},
            )
        )
    return TenantsFile(profile=ProfileSpec(id=state.profile.id, name=state.profile.name), companies=companies)


def dump_tenants(doc: TenantsFile) -> dict[str, Any]:
    """The file as plain data, defaults left out (so an export reads like a hand-written file)."""
    data: dict[str, Any] = doc.model_dump(mode="json", exclude_defaults=True)
    data.setdefault("version", 1)
    return {"version": data.pop("version"), **data}
