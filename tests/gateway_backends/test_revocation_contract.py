"""RevocationList contract; memory and Redis."""

from __future__ import annotations

from .support import Rig


async def test_a_key_prefix_is_not_revoked_until_someone_revokes_it(rig: Rig) -> None:
    revocations = rig.revocations()
    assert not await revocations.is_revoked("fc_live_abc123")
    await revocations.revoke("fc_live_abc123")
    assert await revocations.is_revoked("fc_live_abc123")


async def test_revoking_one_prefix_leaves_the_others_valid(rig: Rig) -> None:
    revocations = rig.revocations()
    await revocations.revoke("fc_live_abc123")
    assert not await revocations.is_revoked("fc_live_def456")


async def test_revoking_twice_is_harmless(rig: Rig) -> None:
    revocations = rig.revocations()
    await revocations.revoke("fc_live_abc123")
    await revocations.revoke("fc_live_abc123")
    assert await revocations.is_revoked("fc_live_abc123")
