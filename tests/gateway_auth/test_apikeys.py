"""API keys: created once, stored hashed, verified in constant time, revoked everywhere at once."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from forecourt.domain.tenancy import SecurityType
from forecourt.errors import ForecourtError
from forecourt.gateway.auth.apikeys import ApiKeyAuthenticator, ApiKeyHasher, ApiKeyService, parse_api_key
from forecourt.gateway.base import Credentials

from .fakes import ManualClock, MemoryStore, SharedRevocations, member

PEPPER = "test-pepper-0123456789abcdef"


@pytest.fixture
def store() -> MemoryStore:
    s = MemoryStore()
    s.tenancy.members[("acme", "crm")] = member("crm")
    s.tenancy.members[("acme", "cert-only")] = member("cert-only", security_type=SecurityType.MTLS)
    return s


@pytest.fixture
def revocations() -> SharedRevocations:
    return SharedRevocations()


def service(store: MemoryStore, revocations: SharedRevocations) -> ApiKeyService:
    return ApiKeyService(store, PEPPER, revocations)


def authenticator(store: MemoryStore, revocations: SharedRevocations, **kwargs: object) -> ApiKeyAuthenticator:
    return ApiKeyAuthenticator(store, PEPPER, revocations, **kwargs)  # type: ignore[arg-type]


async def code_of(auth: ApiKeyAuthenticator, key: str) -> str:
    with pytest.raises(ForecourtError) as info:
        await auth.authenticate(Credentials(bearer=key), None)
    return info.value.code


async def test_a_new_key_authenticates_as_its_member_with_narrowed_scopes_and_dealerships(store, revocations):
    issued = await service(store, revocations).create(
        "acme", "crm", scopes=("amcp:inventory:read",), dealership_ids=("d2",)
    )
    principal = await authenticator(store, revocations).authenticate(
        Credentials(bearer=issued.key, peer_address="203.0.113.5"), None
    )
    assert principal is not None
    assert (principal.method, principal.company_id, principal.member_id) == ("api_key", "acme", "crm")
    assert principal.scopes == frozenset({"amcp:inventory:read"})
    assert principal.dealership_ids == frozenset({"d2"})
    assert principal.key_prefix == issued.prefix
    assert principal.client_address == "203.0.113.5"


async def test_a_key_naming_a_scope_or_dealership_its_member_lacks_is_refused_when_made(store, revocations):
    keys = service(store, revocations)
    with pytest.raises(ForecourtError) as scope:
        await keys.create("acme", "crm", scopes=("amcp:inventory:read", "amcp:admin:write"))
    with pytest.raises(ForecourtError) as dealership:
        await keys.create("acme", "crm", dealership_ids=("d2", "d9"))
    assert (scope.value.code, dealership.value.code) == ("invalid_params", "auth.tenancy_denied")
    assert store.tenancy.keys == {}


async def test_a_key_without_its_own_scopes_gets_the_members_scopes_and_dealerships(store, revocations):
    issued = await service(store, revocations).create("acme", "crm")
    principal = await authenticator(store, revocations).authenticate(Credentials(bearer=issued.key), None)
    assert principal is not None
    assert principal.scopes == frozenset({"amcp:inventory:read", "amcp:leads:write"})
    assert principal.dealership_ids == frozenset({"d1", "d2"})


async def test_the_store_keeps_only_the_prefix_and_a_keyed_hash(store, revocations):
    issued = await service(store, revocations).create("acme", "crm")
    parsed = parse_api_key(issued.key)
    assert parsed is not None
    assert issued.key.startswith(f"fck_{issued.prefix}_")
    stored = store.tenancy.keys[issued.prefix]
    assert parsed.secret not in stored.model_dump_json()
    assert stored.key_hash.startswith("v1$")
    assert issued.key not in repr(issued)
    assert parsed.secret not in repr(parsed)


async def test_a_wrong_secret_is_unauthorized(store, revocations):
    issued = await service(store, revocations).create("acme", "crm")
    forged = issued.key[:-4] + ("AAAA" if not issued.key.endswith("AAAA") else "BBBB")
    assert await code_of(authenticator(store, revocations), forged) == "auth.unauthorized"


async def test_the_same_secret_under_another_prefix_is_unauthorized(store, revocations):
    svc = service(store, revocations)
    first = await svc.create("acme", "crm")
    second = await svc.create("acme", "crm")
    swapped = f"fck_{second.prefix}_{first.key.rsplit('_', 1)[1]}"
    assert await code_of(authenticator(store, revocations), swapped) == "auth.unauthorized"


@pytest.mark.parametrize("key", ["fck_short_secret", "fck_abcdefghij_" + "x" * 40, "fck_"])
async def test_malformed_or_unknown_keys_are_unauthorized(store, revocations, key):
    assert await code_of(authenticator(store, revocations), key) == "auth.unauthorized"


async def test_a_bearer_token_that_is_not_an_api_key_is_left_to_other_authenticators(store, revocations):
    assert await authenticator(store, revocations).authenticate(Credentials(bearer="a.b.c"), None) is None
    assert await authenticator(store, revocations).authenticate(Credentials(), None) is None


async def test_revocation_on_one_replica_is_effective_at_once_on_another_with_a_warm_cache(store, revocations):
    issued = await service(store, revocations).create("acme", "crm")
    replica_b = authenticator(store, revocations, cache_ttl_s=3600.0)
    assert await replica_b.authenticate(Credentials(bearer=issued.key), None) is not None
    await service(store, revocations).revoke(issued.prefix)  # "replica A"
    assert await code_of(replica_b, issued.key) == "auth.unauthorized"


async def test_a_key_revoked_in_the_store_is_unauthorized_even_off_the_revocation_list(store, revocations):
    issued = await service(store, revocations).create("acme", "crm")
    await store.tenancy.revoke_api_key(issued.prefix, datetime.now(UTC))
    assert await code_of(authenticator(store, revocations), issued.key) == "auth.unauthorized"


async def test_an_expired_key_is_refused_with_auth_expired(store, revocations):
    issued = await service(store, revocations).create("acme", "crm", ttl=timedelta(minutes=5))
    later = datetime.now(UTC) + timedelta(minutes=6)
    auth = authenticator(store, revocations, now=lambda: later)
    assert await code_of(auth, issued.key) == "auth.expired"


async def test_creating_a_key_that_is_already_expired_is_invalid(store, revocations):
    with pytest.raises(ForecourtError) as info:
        await service(store, revocations).create("acme", "crm", expires_at=datetime.now(UTC) - timedelta(seconds=1))
    assert info.value.code == "invalid_params"


async def test_creating_a_key_for_an_unknown_member_is_member_not_found(store, revocations):
    with pytest.raises(ForecourtError) as info:
        await service(store, revocations).create("acme", "ghost")
    assert info.value.code == "tenancy.member_not_found"


async def test_a_deactivated_member_cannot_use_its_key_once_the_cache_expires(store, revocations):
    issued = await service(store, revocations).create("acme", "crm")
    clock = ManualClock()
    auth = authenticator(store, revocations, cache_ttl_s=10.0, clock=clock)
    assert await auth.authenticate(Credentials(bearer=issued.key), None) is not None
    store.tenancy.members[("acme", "crm")] = member("crm", active=False)
    clock.advance(10.0)
    assert await code_of(auth, issued.key) == "auth.unauthorized"


async def test_a_member_declared_mtls_cannot_use_an_api_key(store, revocations):
    issued = await service(store, revocations).create("acme", "cert-only")
    assert await code_of(authenticator(store, revocations), issued.key) == "auth.unauthorized"


async def test_cached_records_spare_the_store_but_the_revocation_list_is_asked_every_time(store, revocations):
    issued = await service(store, revocations).create("acme", "crm")
    auth = authenticator(store, revocations, cache_ttl_s=60.0)
    await auth.authenticate(Credentials(bearer=issued.key), None)
    reads = store.tenancy.reads
    for _ in range(3):
        await auth.authenticate(Credentials(bearer=issued.key), None)
    assert store.tenancy.reads == reads


class CountingHasher(ApiKeyHasher):
    """The real keyed hash, counting its verifications."""

    verified = 0

    def verify(self, prefix: str, secret: str, key_hash: str) -> bool:
        self.verified += 1
        return super().verify(prefix, secret, key_hash)


def counting(auth: ApiKeyAuthenticator) -> CountingHasher:
    hasher = auth._hasher = CountingHasher(PEPPER)
    return hasher


async def test_a_key_used_again_from_the_same_address_is_the_same_principal_without_the_keyed_hash(store, revocations):
    issued = await service(store, revocations).create("acme", "crm")
    auth = authenticator(store, revocations, cache_ttl_s=60.0)
    hasher = counting(auth)
    here = Credentials(bearer=issued.key, peer_address="203.0.113.5")
    first = await auth.authenticate(here, None)
    again = await auth.authenticate(here, None)
    elsewhere = await auth.authenticate(Credentials(bearer=issued.key, peer_address="198.51.100.7"), None)
    assert again is first
    assert elsewhere is not None
    assert elsewhere.client_address == "198.51.100.7"
    assert first is not None
    assert first.client_address == "203.0.113.5"
    assert hasher.verified == 2  # once per address


async def test_a_wrong_secret_after_the_right_one_is_still_unauthorized(store, revocations):
    issued = await service(store, revocations).create("acme", "crm")
    auth = authenticator(store, revocations, cache_ttl_s=60.0)
    assert await auth.authenticate(Credentials(bearer=issued.key), None) is not None
    forged = issued.key[:-4] + ("AAAA" if not issued.key.endswith("AAAA") else "BBBB")
    assert await code_of(auth, forged) == "auth.unauthorized"
    assert await auth.authenticate(Credentials(bearer=issued.key), None) is not None


async def test_a_key_known_to_be_good_is_refused_once_it_expires_or_is_revoked(store, revocations):
    issued = await service(store, revocations).create("acme", "crm", ttl=timedelta(minutes=5))
    now = [datetime.now(UTC)]
    auth = authenticator(store, revocations, cache_ttl_s=3600.0, now=lambda: now[0])
    assert await auth.authenticate(Credentials(bearer=issued.key), None) is not None
    now[0] += timedelta(minutes=6)
    assert await code_of(auth, issued.key) == "auth.expired"
    now[0] -= timedelta(minutes=6)
    assert await auth.authenticate(Credentials(bearer=issued.key), None) is not None
    await service(store, revocations).revoke(issued.prefix)
    assert await code_of(auth, issued.key) == "auth.unauthorized"
