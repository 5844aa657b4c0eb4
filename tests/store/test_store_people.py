"""Customer, consent and lead repository contract, including their outbox events."""

from __future__ import annotations

from datetime import timedelta

import pytest

from forecourt.domain.events import ChangeType, ResourceType
from forecourt.domain.people import ConsentStatus, LeadStatus
from forecourt.errors import AlreadyExists, ConsentNotFound, CustomerNotFound, LeadNotFound
from forecourt.store import SqlStore

from .factories import DEALER, OTHER_DEALER, T0, consent, customer, lead


async def test_customers_add_get_update_and_page(store: SqlStore) -> None:
    async with store.transaction() as uow:
        for n in (1, 2, 3):
            await uow.customers.add(customer(n))
        await uow.customers.update(customer(2, last_name="Renamed", updated_at=T0 + timedelta(days=1)))
        got = await uow.customers.get(DEALER, "cust-2")
        page, total = await uow.customers.page(DEALER, 1, 1)
        empty, zero = await uow.customers.page(OTHER_DEALER, 0, 10)
        events = await uow.outbox.list_after(0, 10)
    assert got == customer(2, last_name="Renamed", updated_at=T0 + timedelta(days=1))
    assert [c.id for c in page] == ["cust-2"]
    assert total == 3
    assert (empty, zero) == ([], 0)
    assert [(e.resource_type, e.change_type) for e in events][-1] == (ResourceType.CUSTOMER, ChangeType.UPDATED)
    assert all("email" not in e.payload and "phone" not in e.payload for e in events)


async def test_customer_lookup_by_contact_matches_email_case_insensitively_then_phone(store: SqlStore) -> None:
    async with store.transaction() as uow:
        await uow.customers.add(customer(1))
        await uow.customers.add(customer(2, email=None))
        by_email = await uow.customers.find_by_contact(DEALER, "PAT1@Example.com", None)
        by_phone = await uow.customers.find_by_contact(DEALER, "unknown@example.com", customer(2).phone)
        nobody = await uow.customers.find_by_contact(DEALER, None, None)
        elsewhere = await uow.customers.find_by_contact(OTHER_DEALER, "pat1@example.com", None)
    assert by_email is not None
    assert by_email.id == "cust-1"
    assert by_phone is not None
    assert by_phone.id == "cust-2"
    assert (nobody, elsewhere) == (None, None)


async def test_adding_a_customer_twice_raises_already_exists(store: SqlStore) -> None:
    async with store.transaction() as uow:
        await uow.customers.add(customer(1))
    with pytest.raises(AlreadyExists) as caught:
        async with store.transaction() as uow:
            await uow.customers.add(customer(1))
    assert caught.value.code == "already_exists"


async def test_updating_an_unknown_customer_raises_customer_not_found(store: SqlStore) -> None:
    with pytest.raises(CustomerNotFound) as caught:
        async with store.transaction() as uow:
            await uow.customers.update(customer(9))
    assert caught.value.code == "customers.customer_not_found"


async def test_consent_grants_are_kept_exactly_and_paged_per_customer(store: SqlStore) -> None:
    async with store.transaction() as uow:
        await uow.consent.add(consent(1))
        await uow.consent.add(consent(2))
        await uow.consent.add(consent(3, customer_id="cust-1"))
        revoked = consent(1, status=ConsentStatus.REVOKED)
        await uow.consent.update(revoked)
        got = await uow.consent.get(DEALER, "consent-1")
        all_grants, total = await uow.consent.page(DEALER, 0, 10)
        mine, mine_total = await uow.consent.page(DEALER, 0, 10, customer_id="cust-1")
        events = await uow.outbox.list_after(0, 10)
        assert await uow.consent.get(OTHER_DEALER, "consent-1") is None
    assert got == revoked
    assert total == 3
    assert [g.id for g in all_grants] == ["consent-1", "consent-2", "consent-3"]
    assert ([g.id for g in mine], mine_total) == (["consent-1", "consent-3"], 2)
    assert (events[-1].resource_type, events[-1].status) == (ResourceType.CONSENT, "revoked")


async def test_consent_errors_have_stable_codes(store: SqlStore) -> None:
    with pytest.raises(ConsentNotFound) as missing:
        async with store.transaction() as uow:
            await uow.consent.update(consent(1))
    async with store.transaction() as uow:
        await uow.consent.add(consent(1))
    with pytest.raises(AlreadyExists) as twice:
        async with store.transaction() as uow:
            await uow.consent.add(consent(1))
    assert (missing.value.code, twice.value.code) == ("consent.consent_not_found", "already_exists")


async def test_leads_add_get_update_and_page_newest_first_with_status_filter(store: SqlStore) -> None:
    async with store.transaction() as uow:
        for n in (1, 2, 3):
            await uow.leads.add(lead(n))
        contacted = lead(2, status=LeadStatus.CONTACTED, updated_at=T0 + timedelta(days=1))
        await uow.leads.update(contacted)
        got = await uow.leads.get(DEALER, "lead-2")
        page, total = await uow.leads.page(DEALER, 0, 2)
        new_only, new_total = await uow.leads.page(DEALER, 0, 10, status="new")
        events = await uow.outbox.list_after(0, 10)
    assert got == contacted
    assert ([x.id for x in page], total) == (["lead-3", "lead-2"], 3)
    assert ([x.id for x in new_only], new_total) == (["lead-3", "lead-1"], 2)
    assert [(e.resource_id, e.change_type, e.status) for e in events] == [
        ("lead-1", ChangeType.CREATED, "new"),
        ("lead-2", ChangeType.CREATED, "new"),
        ("lead-3", ChangeType.CREATED, "new"),
        ("lead-2", ChangeType.UPDATED, "contacted"),
    ]


async def test_lead_fingerprint_lookup_finds_the_original_within_the_window(store: SqlStore) -> None:
    async with store.transaction() as uow:
        await uow.leads.add(lead(1, fingerprint="same"))
        await uow.leads.add(lead(2, fingerprint="same", status=LeadStatus.DUPLICATE, duplicate_of="lead-1"))
        found = await uow.leads.find_by_fingerprint(DEALER, "same", T0)
        too_late = await uow.leads.find_by_fingerprint(DEALER, "same", T0 + timedelta(hours=1))
        other = await uow.leads.find_by_fingerprint(OTHER_DEALER, "same", T0)
    assert found is not None
    assert found.id == "lead-1"
    assert (too_late, other) == (None, None)


async def test_lead_idempotency_key_lookup_respects_the_window(store: SqlStore) -> None:
    async with store.transaction() as uow:
        await uow.leads.add(lead(1, idempotency_key="k-1"))
        found = await uow.leads.find_by_idempotency_key(DEALER, "k-1", T0 - timedelta(hours=24))
        expired = await uow.leads.find_by_idempotency_key(DEALER, "k-1", T0 + timedelta(hours=24))
        unknown = await uow.leads.find_by_idempotency_key(DEALER, "k-2", T0)
    assert found is not None
    assert found.id == "lead-1"
    assert (expired, unknown) == (None, None)


async def test_lead_errors_have_stable_codes(store: SqlStore) -> None:
    with pytest.raises(LeadNotFound) as missing:
        async with store.transaction() as uow:
            await uow.leads.update(lead(1))
    async with store.transaction() as uow:
        await uow.leads.add(lead(1))
    with pytest.raises(AlreadyExists) as twice:
        async with store.transaction() as uow:
            await uow.leads.add(lead(1))
    assert (missing.value.code, twice.value.code) == ("leads.lead_not_found", "already_exists")


async def test_a_rolled_back_lead_leaves_neither_the_row_nor_the_event(store: SqlStore) -> None:
    async def add_then_fail() -> None:
        async with store.transaction() as uow:
            await uow.leads.add(lead(1))
            await uow.leads.update(lead(2))

    with pytest.raises(LeadNotFound):
        await add_then_fail()
    async with store.transaction() as uow:
        assert await uow.leads.get(DEALER, "lead-1") is None
        assert await uow.outbox.last_seq() == 0
