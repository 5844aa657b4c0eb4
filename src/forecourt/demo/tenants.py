"""The fixed demo tenants named in DESIGN.md: profile, companies, rooftops, members and policies."""

from __future__ import annotations

from dataclasses import dataclass

from forecourt.domain.tenancy import (
    Address,
    Company,
    DayHours,
    Dealership,
    Member,
    MemberKind,
    Policy,
    Profile,
)

PROFILE_ID = "demo"
MOTOR_GROUP = "demo-motor-group"
BAY_AUTOS = "demo-bay-autos"
TOYOTA_SF = "demo-toyota-sf"
HONDA_OAK = "demo-honda-oak"
BAY_SJ = "demo-bay-sj"

WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")

BUYER_TOOLS = (
    "dealer.information",
    "inventory.search",
    "inventory.get",
    "inventory.facets",
    "inventory.vehicle",
    "leads.create",
    "aap.*",
)
BUYER_SCOPES = ("amcp:inventory:read", "amcp:leads:write")
DEALER_DOMAINS = (
    "inventory",
    "leads",
    "customers",
    "consent",
    "service",
    "deals",
    "knowledge",
    "workflow",
    "models",
    "events",
    "reports",
    "upstream",
)
DEALER_SCOPES = tuple(f"amcp:{d}:{rw}" for d in DEALER_DOMAINS for rw in ("read", "write"))


@dataclass(frozen=True, slots=True)
class RooftopPlan:
    """How a demo rooftop's data is generated: its stock-number prefix, brands and sales mix."""

    dealership_id: str
    short: str
    stock_prefix: str
    brands: tuple[str, ...]
    new_share: float
    cpo_share: float
    area_codes: tuple[str, ...]
    service_bays: int


def _hours(
    weekday: tuple[str, str], saturday: tuple[str, str] | None, sunday: tuple[str, str] | None
) -> dict[str, DayHours]:
    days: dict[str, DayHours] = {d: DayHours(open=weekday[0], close=weekday[1]) for d in WEEKDAYS[:5]}
    days["saturday"] = DayHours(open=saturday[0], close=saturday[1]) if saturday else DayHours()
    days["sunday"] = DayHours(open=sunday[0], close=sunday[1]) if sunday else DayHours()
    return days


def _dealership(
    dealership_id: str,
    *,
    company_id: str,
    name: str,
    host: str,
    brands: tuple[str, ...],
    address: Address,
    area: str,
    tax_rate_bps: int,
) -> Dealership:
    website = f"https://{host}"
    return Dealership(
        id=dealership_id,
        company_id=company_id,
        name=name,
        domain=host,
        timezone="America/Los_Angeles",
        currency="USD",
        brands=brands,
        address=address,
        phones={"sales": f"+1{area}5550100", "service": f"+1{area}5550101", "parts": f"+1{area}5550102"},
        email=f"sales@{host}",
        website=website,
        sales_hours=_hours(("09:00", "20:00"), ("09:00", "19:00"), ("10:00", "18:00")),
        service_hours=_hours(("07:00", "18:00"), ("08:00", "16:00"), None),
        capabilities=("test_drive", "financing", "trade_in", "service", "delivery"),
        public_agent=True,
        tax_rate_bps=tax_rate_bps,
        doc_fee_minor=8500,
    )


PROFILE = Profile(id=PROFILE_ID, name="Forecourt demo")

COMPANIES: tuple[Company, ...] = (
    Company(id=MOTOR_GROUP, profile_id=PROFILE_ID, name="Demo Motor Group"),
    Company(id=BAY_AUTOS, profile_id=PROFILE_ID, name="Demo Bay Autos"),
)

DEALERSHIPS: tuple[Dealership, ...] = (
    _dealership(
        TOYOTA_SF,
        company_id=MOTOR_GROUP,
        name="Demo Toyota San Francisco",
        host="toyota-sf.demo.forecourt.example",
        brands=("Toyota",),
        address=Address(street="1600 Van Ness Avenue", city="San Francisco", region="CA", postal_code="94109"),
        area="415",
        tax_rate_bps=863,
    ),
    _dealership(
        HONDA_OAK,
        company_id=MOTOR_GROUP,
        name="Demo Honda Oakland",
        host="honda-oak.demo.forecourt.example",
        brands=("Honda",),
        address=Address(street="2800 Broadway", city="Oakland", region="CA", postal_code="94611"),
        area="510",
        tax_rate_bps=1025,
    ),
    _dealership(
        BAY_SJ,
        company_id=BAY_AUTOS,
        name="Demo Bay Autos San Jose",
        host="bay-sj.demo.forecourt.example",
        brands=("Toyota", "Honda", "Ford", "Chevrolet", "Tesla", "Subaru", "Nissan", "Hyundai", "BMW", "Mazda"),
        address=Address(street="4100 Stevens Creek Boulevard", city="San Jose", region="CA", postal_code="95129"),
        area="408",
        tax_rate_bps=938,
    ),
)

ROOFTOP_PLANS: dict[str, RooftopPlan] = {
    TOYOTA_SF: RooftopPlan(TOYOTA_SF, "tsf", "T", ("Toyota",), 0.55, 0.15, ("415", "628", "650"), 4),
    HONDA_OAK: RooftopPlan(HONDA_OAK, "hoak", "H", ("Honda",), 0.55, 0.15, ("510", "341", "925"), 3),
    BAY_SJ: RooftopPlan(BAY_SJ, "bsj", "B", (), 0.0, 0.0, ("408", "669", "650"), 2),
}

MOTOR_GROUP_ROOFTOPS = (TOYOTA_SF, HONDA_OAK)

MEMBERS: tuple[Member, ...] = (
    Member(
        id="shopper-agent",
        company_id=MOTOR_GROUP,
        profile_id=PROFILE_ID,
        name="Shopper agent (buyer-facing skills)",
        kind=MemberKind.AGENT,
        allowed_tools=BUYER_TOOLS,
        scopes=BUYER_SCOPES,
        dealership_ids=MOTOR_GROUP_ROOFTOPS,
    ),
    Member(
        id="crm-agent",
        company_id=MOTOR_GROUP,
        profile_id=PROFILE_ID,
        name="CRM agent (the group's own agent)",
        kind=MemberKind.AGENT,
        allowed_tools=("*",),
        scopes=DEALER_SCOPES,
        dealership_ids=MOTOR_GROUP_ROOFTOPS,
    ),
    Member(
        id="ops-admin",
        company_id=MOTOR_GROUP,
        profile_id=PROFILE_ID,
        name="Operations admin",
        kind=MemberKind.PERSON,
        allowed_tools=("*",),
        scopes=DEALER_SCOPES,
        dealership_ids=MOTOR_GROUP_ROOFTOPS,
        is_admin=True,
    ),
    Member(
        id="bay-crm-agent",
        company_id=BAY_AUTOS,
        profile_id=PROFILE_ID,
        name="Bay Autos CRM agent",
        kind=MemberKind.AGENT,
        allowed_tools=("*",),
        scopes=DEALER_SCOPES,
        dealership_ids=(BAY_SJ,),
    ),
)

POLICIES: tuple[Policy, ...] = tuple(
    Policy(id=f"{company.id}-default", company_id=company.id, name="default") for company in COMPANIES
)


def dealership(dealership_id: str) -> Dealership:
    """The demo dealership with that id (``KeyError`` when it is not a demo rooftop)."""
    for d in DEALERSHIPS:
        if d.id == dealership_id:
            return d
    raise KeyError(dealership_id)
