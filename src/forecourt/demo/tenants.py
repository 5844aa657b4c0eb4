"""The fixed demo tenants named in DESIGN.md: profile, companies, rooftops, members and policies.

They live in ``tenants.yaml`` beside this module, a tenants file like any operator's (docs/tenants.md);
``forecourt demo`` applies it. This module keeps the ids and, per rooftop, how its demo data is generated.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from forecourt.domain.tenancy import Company, Dealership, Member, Policy, Profile
from forecourt.domain.tenants_file import Tenancy, parse_tenants, to_tenancy
from forecourt.domain.yaml_documents import load_yaml

PROFILE_ID = "demo"
MOTOR_GROUP = "demo-motor-group"
BAY_AUTOS = "demo-bay-autos"
TOYOTA_SF = "demo-toyota-sf"
HONDA_OAK = "demo-honda-oak"
BAY_SJ = "demo-bay-sj"

WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")


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


DEMO_TENANTS_FILE = Path(__file__).with_name("tenants.yaml")


def demo_document() -> dict[str, Any]:
    """The demo tenants file as loaded YAML (what ``forecourt demo`` applies), read as any operator's file is."""
    data = load_yaml(DEMO_TENANTS_FILE.read_bytes())
    if not isinstance(data, dict):  # pragma: no cover - the packaged file is a mapping
        raise TypeError("the demo tenants file must hold a mapping")
    return data


def _load() -> Tenancy:
    doc, problems = parse_tenants(demo_document())
    if doc is None:  # pragma: no cover - the packaged file is checked by the tests
        raise ValueError(f"the demo tenants file is invalid: {problems[:3]}")
    return to_tenancy(doc)


_DEMO = _load()
PROFILE: Profile = _DEMO.profile
COMPANIES: tuple[Company, ...] = tuple(_DEMO.companies)
DEALERSHIPS: tuple[Dealership, ...] = tuple(_DEMO.dealerships)

ROOFTOP_PLANS: dict[str, RooftopPlan] = {
    TOYOTA_SF: RooftopPlan(TOYOTA_SF, "tsf", "T", ("Toyota",), 0.55, 0.15, ("415", "628", "650"), 4),
    HONDA_OAK: RooftopPlan(HONDA_OAK, "hoak", "H", ("Honda",), 0.55, 0.15, ("510", "341", "925"), 3),
    BAY_SJ: RooftopPlan(BAY_SJ, "bsj", "B", (), 0.0, 0.0, ("408", "669", "650"), 2),
}

MEMBERS: tuple[Member, ...] = tuple(_DEMO.members)
POLICIES: tuple[Policy, ...] = tuple(_DEMO.policies)


def dealership(dealership_id: str) -> Dealership:
    """The demo dealership with that id (``KeyError`` when it is not a demo rooftop)."""
    for d in DEALERSHIPS:
        if d.id == dealership_id:
            return d
    raise KeyError(dealership_id)
