"""IdempotencyStore contract: reserve, complete, release; memory and Redis."""

from __future__ import annotations

import asyncio

from forecourt.gateway.base import IdempotencyEntry

from .support import Rig, eventually

DAY = 86_400.0


async def test_the_first_reservation_of_a_key_claims_it(rig: Rig) -> None:
    assert await rig.idempotency().reserve("leads.create:k1", "digest-1", DAY) is None


async def test_a_second_reservation_sees_the_pending_claim(rig: Rig) -> None:
    store = rig.idempotency()
    await store.reserve("k1", "digest-1", DAY)
    assert await store.reserve("k1", "digest-1", DAY) == IdempotencyEntry("digest-1", None)


async def test_a_completed_key_returns_the_stored_response_for_replay(rig: Rig) -> None:
    store = rig.idempotency()
    await store.reserve("k1", "digest-1", DAY)
    await store.complete("k1", "digest-1", b'{"lead_id": "L-1"}', DAY)
    assert await store.reserve("k1", "digest-1", DAY) == IdempotencyEntry("digest-1", b'{"lead_id": "L-1"}')


async def test_a_reservation_with_another_digest_returns_the_original_digest(rig: Rig) -> None:
    store = rig.idempotency()
    await store.reserve("k1", "digest-1", DAY)
    existing = await store.reserve("k1", "digest-2", DAY)
    assert existing is not None
    assert existing.request_digest == "digest-1"


async def test_an_empty_response_is_distinct_from_a_pending_claim(rig: Rig) -> None:
    store = rig.idempotency()
    await store.reserve("k1", "d", DAY)
    await store.complete("k1", "d", b"", DAY)
    assert await store.reserve("k1", "d", DAY) == IdempotencyEntry("d", b"")


async def test_a_released_claim_can_be_reserved_again(rig: Rig) -> None:
    store = rig.idempotency()
    await store.reserve("k1", "digest-1", DAY)
    await store.release("k1")
    assert await store.reserve("k1", "digest-1", DAY) is None


async def test_releasing_a_completed_key_keeps_its_response(rig: Rig) -> None:
    store = rig.idempotency()
    await store.reserve("k1", "d", DAY)
    await store.complete("k1", "d", b"done", DAY)
    await store.release("k1")
    assert await store.reserve("k1", "d", DAY) == IdempotencyEntry("d", b"done")


async def test_releasing_an_unknown_key_does_nothing(rig: Rig) -> None:
    store = rig.idempotency()
    await store.release("never-reserved")
    assert await store.reserve("never-reserved", "d", DAY) is None


async def test_an_expired_claim_can_be_reserved_again(rig: Rig) -> None:
    store = rig.idempotency()
    await store.reserve("k1", "digest-1", 0.05)
    rig.clock.advance(0.05)

    async def claimable() -> bool:
        return await store.reserve("k1", "digest-2", DAY) is None

    assert await eventually(claimable)


async def test_concurrent_reservations_of_one_key_have_exactly_one_winner(rig: Rig) -> None:
    store = rig.idempotency()
    results = await asyncio.gather(*(store.reserve("k1", f"digest-{i}", DAY) for i in range(20)))
    winners = [i for i, r in enumerate(results) if r is None]
    assert len(winners) == 1
    assert {r.request_digest for r in results if r is not None} == {f"digest-{winners[0]}"}


async def test_digests_with_separator_characters_round_trip(rig: Rig) -> None:
    store = rig.idempotency()
    digest = "sha256:ab:cd\n12"
    await store.reserve("k1", digest, DAY)
    await store.complete("k1", digest, b"P1:x", DAY)
    assert await store.reserve("k1", digest, DAY) == IdempotencyEntry(digest, b"P1:x")
