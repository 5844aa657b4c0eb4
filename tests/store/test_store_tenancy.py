"""Tenancy repository contract: profiles, companies, dealerships, members, policies, adapters, API keys."""

from __future__ import annotations

from datetime import timedelta

import pytest

from forecourt.domain.tenancy import (
    AdapterSetting,
    Address,
    Company,
    DayHours,
    Dealership,
    Member,
    MemberKind,
    Policy,
    SecurityType,
)
from forecourt.errors import AlreadyExists
from forecourt.store import SqlStore
from forecourt.store.base import ApiKeyRecord

from .factories import DEALER, OTHER_DEALER, T0


async def test_companies_upsert_get_and_list(store: SqlStore) -> None:
    async with store.transaction() as uow:
        await uow.tenancy.upsert_company(Company(id="c0", profile_id="p1", name="Zero", oidc_issuer="https://i"))
        await uow.tenancy.upsert_company(Company(id="c0", profile_id="p1", name="Zero Renamed"))
        got = await uow.tenancy.get_company("c0")
        listed = await uow.tenancy.list_companies()
        missing = await uow.tenancy.get_company("nope")
    assert got == Company(id="c0", profile_id="p1", name="Zero Renamed")
    assert [c.id for c in listed] == ["c0", "c1"]
    assert missing is None


async def test_dealership_round_trips_nested_fields_and_is_found_by_domain(store: SqlStore) -> None:
    rich = Dealership(
        id="dealer-c",
        company_id="c1",
        name="Dealer C",
        domain="Shop.Example.COM",
        brands=("Toyota", "Lexus"),
        address=Address(street="1 Main St", city="Oakland", region="CA", postal_code="94607"),
        phones={"sales": "+15105550100"},
        sales_hours={"mon": DayHours(open="09:00", close="18:00"), "sun": DayHours()},
        capabilities=("test_drive",),
        tax_rate_bps=925,
        doc_fee_minor=8500,
    )
    async with store.transaction() as uow:
        await uow.tenancy.upsert_dealership(rich)
        got = await uow.tenancy.get_dealership("dealer-c")
        by_domain = await uow.tenancy.get_dealership_by_domain("shop.example.com")
        none = await uow.tenancy.get_dealership_by_domain("other.example.com")
        all_dealers = await uow.tenancy.list_dealerships()
        company_dealers = await uow.tenancy.list_dealerships("c1")
        no_dealers = await uow.tenancy.list_dealerships("c-unknown")
    assert got == rich
    assert by_domain == rich
    assert none is None
    assert [d.id for d in all_dealers] == [DEALER, OTHER_DEALER, "dealer-c"]
    assert len(company_dealers) == 3
    assert no_dealers == []
    assert await _get_dealer(store, "nope") is None


async def _get_dealer(store: SqlStore, dealer_id: str) -> Dealership | None:
    async with store.transaction() as uow:
        return await uow.tenancy.get_dealership(dealer_id)


async def test_members_upsert_get_and_list(store: SqlStore) -> None:
    member = Member(
        id="crm-agent",
        company_id="c1",
        profile_id="p1",
        name="CRM agent",
        kind=MemberKind.AGENT,
        security_type=SecurityType.API_KEY,
        allowed_tools=("inventory.*",),
        scopes=("amcp:inventory:read",),
        dealership_ids=(DEALER,),
        agent_config={"modelAffinity": ["gemini"], "runtime": {"timeout_s": 30}},
    )
    async with store.transaction() as uow:
        await uow.tenancy.upsert_member(member)
        await uow.tenancy.upsert_member(member.model_copy(update={"id": "a-agent", "active": False}))
        got = await uow.tenancy.get_member("c1", "crm-agent")
        listed = await uow.tenancy.list_members("c1")
        assert await uow.tenancy.get_member("c-other", "crm-agent") is None
    assert got == member
    assert [m.id for m in listed] == ["a-agent", "crm-agent"]


async def test_policies_upsert_list_and_delete(store: SqlStore) -> None:
    policy = Policy(id="pol-1", company_id="c1", denied_actions=("vertex.*",), rate_limits={"member_per_min": 60})
    async with store.transaction() as uow:
        await uow.tenancy.upsert_policy(policy)
        await uow.tenancy.upsert_policy(policy.model_copy(update={"id": "pol-2", "allow_side_effects": False}))
        listed = await uow.tenancy.list_policies("c1")
        deleted = await uow.tenancy.delete_policy("c1", "pol-2")
        deleted_again = await uow.tenancy.delete_policy("c1", "pol-2")
        remaining = await uow.tenancy.list_policies("c1")
    assert [p.id for p in listed] == ["pol-1", "pol-2"]
    assert listed[0] == policy
    assert (deleted, deleted_again) == (True, False)
    assert remaining == [policy]


async def test_adapter_settings_upsert_get_and_list(store: SqlStore) -> None:
    setting = AdapterSetting(company_id="c1", adapter_id="vertex", config={"project": "p", "region": "us"})
    async with store.transaction() as uow:
        await uow.tenancy.upsert_adapter_setting(setting)
        await uow.tenancy.upsert_adapter_setting(setting.model_copy(update={"config": {"project": "q"}}))
        await uow.tenancy.upsert_adapter_setting(AdapterSetting(company_id="c1", adapter_id="a"))
        got = await uow.tenancy.get_adapter_setting("c1", "vertex")
        listed = await uow.tenancy.list_adapter_settings("c1")
        missing = await uow.tenancy.get_adapter_setting("c1", "triton")
    assert got is not None
    assert got.config == {"project": "q"}
    assert [s.adapter_id for s in listed] == ["a", "vertex"]
    assert missing is None


def _key(prefix: str, **overrides: object) -> ApiKeyRecord:
    data: dict[str, object] = {
        "prefix": prefix,
        "key_hash": f"hash-{prefix}",
        "company_id": "c1",
        "member_id": "crm-agent",
        "scopes": ("amcp:leads:write",),
        "dealership_ids": (DEALER,),
        "created_at": T0,
        "expires_at": T0 + timedelta(days=90),
    }
    data.update(overrides)
    return ApiKeyRecord.model_validate(data)


async def test_api_keys_add_get_list_and_revoke_once(store: SqlStore) -> None:
    async with store.transaction() as uow:
        await uow.tenancy.add_api_key(_key("fc_a"))
        await uow.tenancy.add_api_key(_key("fc_b", created_at=T0 + timedelta(seconds=1)))
        got = await uow.tenancy.get_api_key("fc_a")
        listed = await uow.tenancy.list_api_keys("c1")
        revoked = await uow.tenancy.revoke_api_key("fc_a", T0 + timedelta(days=1))
        revoked_again = await uow.tenancy.revoke_api_key("fc_a", T0 + timedelta(days=2))
        unknown = await uow.tenancy.revoke_api_key("fc_zzz", T0)
        after = await uow.tenancy.get_api_key("fc_a")
        assert await uow.tenancy.get_api_key("fc_zzz") is None
    assert got == _key("fc_a")
    assert [k.prefix for k in listed] == ["fc_a", "fc_b"]
    assert (revoked, revoked_again, unknown) == (True, False, False)
    assert after is not None
    assert after.revoked_at == T0 + timedelta(days=1)


async def test_adding_an_api_key_with_a_taken_prefix_raises_already_exists(store: SqlStore) -> None:
    async with store.transaction() as uow:
        await uow.tenancy.add_api_key(_key("fc_a"))
    with pytest.raises(AlreadyExists) as caught:
        async with store.transaction() as uow:
            await uow.tenancy.add_api_key(_key("fc_a"))
    assert caught.value.code == "already_exists"
