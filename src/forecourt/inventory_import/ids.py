"""Stable vehicle identifiers: derived from the rooftop and VIN, never the VIN itself (AutomotiveMCP ids)."""

from __future__ import annotations

import hashlib


def vehicle_id_for(dealership_id: str, vin: str) -> str:
    """The id a vehicle gets when it first enters a dealership's inventory.

    The same dealership and VIN always give the same id, so re-imports and demo reloads line up.
    """
    digest = hashlib.blake2b(f"{dealership_id}\x00{vin}".encode(), digest_size=10).hexdigest()
    return f"veh_{digest}"
