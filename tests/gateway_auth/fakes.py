"""In-memory stand-ins for the store and the revocation list: small real classes, not mocks."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import datetime

from forecourt.domain.tenancy import AdapterSetting, Company, Dealership, Member, Policy, Profile
from forecourt.store.base import ApiKeyRecord


@dataclass
class MemoryTenancy:
    profiles: dict[str, Profile] = field(default_factory=dict)
    companies: dict[str, Company] = field(default_factory=dict)
    dealerships: dict[str, Dealership] = field(default_factory=dict)
    members: dict[tuple[str, str], Member] = field(default_factory=dict)
    policies: dict[tuple[str, str], Policy] = field(default_factory=dict)
    settings: dict[tuple[str, str], AdapterSetting] = field(default_factory=dict)
    keys: dict[str, ApiKeyRecord] = field(default_factory=dict)
    reads: int = 0

    async def upsert_profile(self, profile: Profile) -> None:
        self.profiles[profile.id] = profile

    async def upsert_company(self, company: Company) -> None:
        self.companies[company.id] = company

    async def get_company(self, company_id: str) -> Company | None:
        return self.companies.get(company_id)

    async def list_companies(self) -> list[Company]:
        self.reads += 1
        return list(self.companies.values())

    async def upsert_dealership(self, dealership: Dealership) -> None:
        self.dealerships[dealership.id] = dealership

    async def get_dealership(self, dealership_id: str) -> Dealership | None:
        return self.dealerships.get(dealership_id)

    async def get_dealership_by_domain(self, domain: str) -> Dealership | None:
        return next((d for d in self.dealerships.values() if d.domain == domain), None)

    async def list_dealerships(self, company_id: str | None = None) -> list[Dealership]:
        return [d for d in self.dealerships.values() if company_id is None or d.company_id == company_id]

    async def upsert_member(self, member: Member) -> None:
        self.members[(member.company_id, member.id)] = member

    async def get_member(self, company_id: str, member_id: str) -> Member | None:
        self.reads += 1
        return self.members.get((company_id, member_id))

    async def list_members(self, company_id: str) -> list[Member]:
        return [m for (cid, _), m in self.members.items() if cid == company_id]

    async def upsert_policy(self, policy: Policy) -> None:
        self.policies[(policy.company_id, policy.id)] = policy

    async def list_policies(self, company_id: str) -> list[Policy]:
        return [p for (cid, _), p in self.policies.items() if cid == company_id]

    async def delete_policy(self, company_id: str, policy_id: str) -> bool:
        return self.policies.pop((company_id, policy_id), None) is not None

    async def upsert_adapter_setting(self, setting: AdapterSetting) -> None:
        self.settings[(setting.company_id, setting.adapter_id)] = setting

    async def get_adapter_setting(self, company_id: str, adapter_id: str) -> AdapterSetting | None:
        return self.settings.get((company_id, adapter_id))

    async def list_adapter_settings(self, company_id: str) -> list[AdapterSetting]:
        return [s for (cid, _), s in self.settings.items() if cid == company_id]

    async def add_api_key(self, record: ApiKeyRecord) -> None:
        self.keys[record.prefix] = record

    async def get_api_key(self, prefix: str) -> ApiKeyRecord | None:
        self.reads += 1
        return self.keys.get(prefix)

    async def list_api_keys(self, company_id: str) -> list[ApiKeyRecord]:
        return [k for k in self.keys.values() if k.company_id == company_id]

    async def revoke_api_key(self, prefix: str, at: datetime) -> bool:
        record = self.keys.get(prefix)
        if record is None:
            return False
        self.keys[prefix] = record.model_copy(update={"revoked_at": at})
        return True


@dataclass
class MemoryUnit:
    tenancy: MemoryTenancy


class MemoryStore:
    """Just enough of :class:`forecourt.store.base.Store` for authentication."""

    def __init__(self) -> None:
        self.tenancy = MemoryTenancy()
        self.tenancy.companies["acme"] = Company(id="acme", profile_id="p1", name="Acme Motors")

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[MemoryUnit]:
        yield MemoryUnit(self.tenancy)

    @asynccontextmanager
    async def read(self) -> AsyncIterator[MemoryUnit]:
        yield MemoryUnit(self.tenancy)


class SharedRevocations:
    """A revocation list several authenticators (replicas) share, as Redis would make them."""

    def __init__(self) -> None:
        self.revoked: set[str] = set()

    async def revoke(self, prefix: str) -> None:
        self.revoked.add(prefix)

    async def is_revoked(self, prefix: str) -> bool:
        return prefix in self.revoked


class ManualClock:
    """A monotonic clock the test moves by hand."""

    def __init__(self, start: float = 1000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


def member(member_id: str, company_id: str = "acme", **fields: object) -> Member:
    values: dict[str, object] = {
        "id": member_id,
        "company_id": company_id,
        "profile_id": "p1",
        "name": member_id,
        "scopes": ("amcp:inventory:read", "amcp:leads:write"),
        "dealership_ids": ("d1", "d2"),
    }
    values.update(fields)
    return Member.model_validate(values)
