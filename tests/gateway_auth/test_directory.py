"""The member index behind OIDC subjects and certificate fingerprints: fresh enough, and flood-proof."""

from __future__ import annotations

from forecourt.domain.tenancy import Company
from forecourt.gateway.auth.common import MemberDirectory

from .fakes import ManualClock, MemoryStore, member


async def test_a_member_added_after_the_index_loaded_is_found_once_the_reload_interval_passed():
    store, clock = MemoryStore(), ManualClock()
    directory = MemberDirectory(store, ttl_s=30.0, min_reload_s=2.0, clock=clock)
    assert await directory.members_where(lambda m: m.oidc_subject == "s-1") == []
    store.tenancy.members[("acme", "new")] = member("new", oidc_subject="s-1")
    assert await directory.members_where(lambda m: m.oidc_subject == "s-1") == []
    clock.advance(2.0)
    assert [m.id for m in await directory.members_where(lambda m: m.oidc_subject == "s-1")] == ["new"]


async def test_a_flood_of_unknown_issuers_reloads_the_company_list_at_most_once_per_interval():
    store, clock = MemoryStore(), ManualClock()
    directory = MemberDirectory(store, min_reload_s=2.0, clock=clock)
    for n in range(50):
        assert await directory.companies_for_issuer(f"https://unknown-{n}.test") == []
    assert store.tenancy.reads == 1
    clock.advance(2.0)
    store.tenancy.companies["late"] = Company(id="late", profile_id="p1", name="L", oidc_issuer="https://late.test")
    assert [c.id for c in await directory.companies_for_issuer("https://late.test")] == ["late"]
