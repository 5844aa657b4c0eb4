"""Profiles, companies, dealerships, members, policies, adapter settings and API keys in SQL."""

from __future__ import annotations

from datetime import datetime

import sqlalchemy as sa

from forecourt.domain.tenancy import AdapterSetting, Company, Dealership, Member, Policy, Profile
from forecourt.errors import AlreadyExists, TenantInUse
from forecourt.store.base import ApiKeyRecord, OperatorKeyRecord
from forecourt.store.sql.context import TxContext, dump, row_dict
from forecourt.store.sql.operator_tables import operator_keys
from forecourt.store.sql.tables import (
    adapter_settings,
    api_keys,
    companies,
    dealerships,
    members,
    policies,
    profiles,
)

_DEALERSHIP_JSON = ("brands", "address", "phones", "sales_hours", "service_hours", "capabilities")
_MEMBER_JSON = ("allowed_tools", "scopes", "dealership_ids", "agent_config")
_POLICY_JSON = (
    "allowed_actions",
    "denied_actions",
    "allowed_adapters",
    "denied_adapters",
    "allowed_models",
    "redact_fields",
    "rate_limits",
    "require_approval",
    "toolsets",
    "protections",
)
_KEY_JSON = ("scopes", "dealership_ids")


_DEALERSHIP_BY_ID = sa.select(dealerships).where(dealerships.c.id == sa.bindparam("id"))
"""Built once: every call's tenancy check re-reads its dealership after the cache's few seconds."""


def _dealership(row: sa.Row[object]) -> Dealership:
    return Dealership.model_validate(row_dict(row, exclude=("domain_l",)))


class SqlTenancyRepository:
    """:class:`~forecourt.store.base.TenancyRepository` over SQL tables."""

    def __init__(self, ctx: TxContext) -> None:
        self._ctx = ctx

    async def upsert_profile(self, profile: Profile) -> None:
        """Create or replace a profile."""
        await self._ctx.upsert(profiles, dump(profile), ("id",))

    async def upsert_company(self, company: Company) -> None:
        """Create or replace a company."""
        await self._ctx.upsert(companies, dump(company), ("id",))

    async def get_company(self, company_id: str) -> Company | None:
        """A company by id."""
        row = (await self._ctx.conn.execute(sa.select(companies).where(companies.c.id == company_id))).first()
        return Company.model_validate(row_dict(row)) if row else None

    async def list_companies(self) -> list[Company]:
        """Every company, by id."""
        rows = await self._ctx.conn.execute(sa.select(companies).order_by(companies.c.id))
        return [Company.model_validate(row_dict(r)) for r in rows]

    async def upsert_dealership(self, dealership: Dealership) -> None:
        """Create or replace a dealership."""
        row = dump(dealership, _DEALERSHIP_JSON)
        row["domain_l"] = dealership.domain.lower() if dealership.domain else None
        await self._ctx.upsert(dealerships, row, ("id",))

    async def get_dealership(self, dealership_id: str) -> Dealership | None:
        """A dealership by id."""
        row = (await self._ctx.conn.execute(_DEALERSHIP_BY_ID, {"id": dealership_id})).first()
        return _dealership(row) if row else None

    async def get_dealership_by_domain(self, domain: str) -> Dealership | None:
        """The dealership whose configured domain is ``domain`` (case-insensitive)."""
        stmt = (
            sa.select(dealerships)
            .where(dealerships.c.domain_l == domain.strip().lower())
            .order_by(dealerships.c.id)
            .limit(1)
        )
        row = (await self._ctx.conn.execute(stmt)).first()
        return _dealership(row) if row else None

    async def list_dealerships(self, company_id: str | None = None) -> list[Dealership]:
        """Dealerships (of one company, or all), by id."""
        stmt = sa.select(dealerships).order_by(dealerships.c.id)
        if company_id is not None:
            stmt = stmt.where(dealerships.c.company_id == company_id)
        return [_dealership(r) for r in await self._ctx.conn.execute(stmt)]

    async def upsert_member(self, member: Member) -> None:
        """Create or replace a member of a company."""
        await self._ctx.upsert(members, dump(member, _MEMBER_JSON), ("company_id", "id"))

    async def get_member(self, company_id: str, member_id: str) -> Member | None:
        """A company's member by id."""
        stmt = sa.select(members).where(members.c.company_id == company_id, members.c.id == member_id)
        row = (await self._ctx.conn.execute(stmt)).first()
        return Member.model_validate(row_dict(row)) if row else None

    async def list_members(self, company_id: str) -> list[Member]:
        """A company's members, by id."""
        stmt = sa.select(members).where(members.c.company_id == company_id).order_by(members.c.id)
        return [Member.model_validate(row_dict(r)) for r in await self._ctx.conn.execute(stmt)]

    async def upsert_policy(self, policy: Policy) -> None:
        """Create or replace a company policy."""
        await self._ctx.upsert(policies, dump(policy, _POLICY_JSON), ("company_id", "id"))

    async def list_policies(self, company_id: str) -> list[Policy]:
        """A company's policies, by id."""
        stmt = sa.select(policies).where(policies.c.company_id == company_id).order_by(policies.c.id)
        return [Policy.model_validate(row_dict(r)) for r in await self._ctx.conn.execute(stmt)]

    async def delete_policy(self, company_id: str, policy_id: str) -> bool:
        """Delete a policy; True when it existed."""
        stmt = sa.delete(policies).where(policies.c.company_id == company_id, policies.c.id == policy_id)
        return bool((await self._ctx.conn.execute(stmt)).rowcount)

    async def upsert_adapter_setting(self, setting: AdapterSetting) -> None:
        """Create or replace a company's override for one adapter."""
        await self._ctx.upsert(adapter_settings, dump(setting, ("config",)), ("company_id", "adapter_id"))

    async def get_adapter_setting(self, company_id: str, adapter_id: str) -> AdapterSetting | None:
        """A company's override for one adapter."""
        c = adapter_settings.c
        stmt = sa.select(adapter_settings).where(c.company_id == company_id, c.adapter_id == adapter_id)
        row = (await self._ctx.conn.execute(stmt)).first()
        return AdapterSetting.model_validate(row_dict(row)) if row else None

    async def list_adapter_settings(self, company_id: str) -> list[AdapterSetting]:
        """A company's adapter overrides, by adapter id."""
        c = adapter_settings.c
        stmt = sa.select(adapter_settings).where(c.company_id == company_id).order_by(c.adapter_id)
        return [AdapterSetting.model_validate(row_dict(r)) for r in await self._ctx.conn.execute(stmt)]

    async def add_api_key(self, record: ApiKeyRecord) -> None:
        """Store a new API key record (prefix and keyed hash only)."""
        if not await self._ctx.insert_ignore(api_keys, dump(record, _KEY_JSON)):
            raise AlreadyExists()

    async def get_api_key(self, prefix: str) -> ApiKeyRecord | None:
        """The key record with ``prefix``."""
        row = (await self._ctx.conn.execute(sa.select(api_keys).where(api_keys.c.prefix == prefix))).first()
        return ApiKeyRecord.model_validate(row_dict(row)) if row else None

    async def list_api_keys(self, company_id: str) -> list[ApiKeyRecord]:
        """A company's key records, oldest first."""
        c = api_keys.c
        stmt = sa.select(api_keys).where(c.company_id == company_id).order_by(c.created_at, c.prefix)
        return [ApiKeyRecord.model_validate(row_dict(r)) for r in await self._ctx.conn.execute(stmt)]

    async def revoke_api_key(self, prefix: str, at: datetime) -> bool:
        """Revoke a key; True when a live key was revoked (False if unknown or already revoked)."""
        c = api_keys.c
        live = (c.prefix == prefix, c.revoked_at.is_(None))
        return await self._ctx.update_where(api_keys, live, {"revoked_at": at}) > 0

    async def get_profile(self, profile_id: str) -> Profile | None:
        """A profile by id."""
        row = (await self._ctx.conn.execute(sa.select(profiles).where(profiles.c.id == profile_id))).first()
        return Profile.model_validate(row_dict(row)) if row else None

    async def _refuse_if_referenced(self, column: sa.Column[str], value: str, what: str) -> None:
        from forecourt.store.sql.schema import metadata

        for table in metadata.sorted_tables:
            for fk in table.foreign_keys:
                if fk.column is column:
                    stmt = sa.select(sa.literal(1)).where(fk.parent == value).limit(1)
                    if (await self._ctx.conn.execute(stmt)).first() is not None:
                        raise TenantInUse(f"{what} {value} still has {table.name}; it cannot be deleted.")

    async def delete_dealership(self, dealership_id: str) -> None:
        """Delete a rooftop; ``TenantInUse`` when data (vehicles, leads, ...) still refers to it."""
        await self._refuse_if_referenced(dealerships.c.id, dealership_id, "dealership")
        await self._ctx.conn.execute(sa.delete(dealerships).where(dealerships.c.id == dealership_id))

    async def delete_member(self, company_id: str, member_id: str) -> None:
        """Delete a member and its API keys."""
        c = api_keys.c
        await self._ctx.conn.execute(sa.delete(api_keys).where(c.company_id == company_id, c.member_id == member_id))
        m = members.c
        await self._ctx.conn.execute(sa.delete(members).where(m.company_id == company_id, m.id == member_id))

    async def delete_adapter_setting(self, company_id: str, adapter_id: str) -> None:
        """Delete a company's override of one adapter."""
        c = adapter_settings.c
        await self._ctx.conn.execute(
            sa.delete(adapter_settings).where(c.company_id == company_id, c.adapter_id == adapter_id)
        )

    async def delete_company(self, company_id: str) -> None:
        """Delete a company, its members, keys, policies and adapter overrides; ``TenantInUse`` when more remains."""
        for table in (api_keys, members, policies, adapter_settings):
            await self._ctx.conn.execute(sa.delete(table).where(table.c.company_id == company_id))
        await self._refuse_if_referenced(companies.c.id, company_id, "company")
        await self._ctx.conn.execute(sa.delete(companies).where(companies.c.id == company_id))

    async def add_operator_key(self, record: OperatorKeyRecord) -> bool:
        """Store an operator key; False when its name is taken."""
        return await self._ctx.insert_ignore(operator_keys, dump(record))

    async def get_operator_key(self, prefix: str) -> OperatorKeyRecord | None:
        """The operator key with ``prefix``."""
        stmt = sa.select(operator_keys).where(operator_keys.c.prefix == prefix)
        row = (await self._ctx.conn.execute(stmt)).first()
        return OperatorKeyRecord.model_validate(row_dict(row)) if row else None

    async def list_operator_keys(self) -> list[OperatorKeyRecord]:
        """Every operator key, oldest first."""
        c = operator_keys.c
        rows = await self._ctx.conn.execute(sa.select(operator_keys).order_by(c.created_at, c.prefix))
        return [OperatorKeyRecord.model_validate(row_dict(r)) for r in rows]

    async def revoke_operator_key(self, prefix: str, at: datetime) -> bool:
        """Revoke an operator key; True when a live key was revoked."""
        c = operator_keys.c
        return (
            await self._ctx.update_where(
                operator_keys, (c.prefix == prefix, c.revoked_at.is_(None)), {"revoked_at": at}
            )
            > 0
        )
