"""deals.request_trade_value through the dealer-data adapter on SQLite."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
import sqlalchemy as sa

from forecourt.domain.vehicle import VehicleStatus
from forecourt.errors import ForecourtError

from .builders import NOW, OTHER, vehicle
from .conftest import Harness


def request(**overrides: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "year": 2022,
        "make": "toyota",
        "model": "camry",
        "mileage": {"value": 20_000, "unit": "mi"},
        "condition": "good",
    }
    body.update(overrides)
    return body


async def comparables(harness: Harness) -> None:
    units = [
        vehicle(1, price=2_400_000),
        vehicle(2, price=2_500_000, status=VehicleStatus.SOLD),
        vehicle(3, price=2_600_000, dealership_id=OTHER),
        vehicle(4, model="RAV4", price=9_000_000),
        vehicle(5, year=2015, price=500_000),
    ]
    async with harness.store.transaction() as uow:
        for unit in units:
            await uow.inventory.upsert(unit)


async def test_a_valuation_uses_comparables_across_dealerships_and_sold_units(harness: Harness) -> None:
    await comparables(harness)
    out = await harness.call("deals.request_trade_value", request())
    assert out["comparable_count"] == 3
    assert out["estimate"] == {"amount_minor": 2_050_000, "currency": "USD"}
    assert out["low"]["amount_minor"] < out["estimate"]["amount_minor"] < out["high"]["amount_minor"]
    assert out["mileage"] == {"value": 20_000, "unit": "mi"}
    assert out["valid_until"] == (NOW + timedelta(days=7)).isoformat()


async def test_a_valuation_is_stored(harness: Harness) -> None:
    await comparables(harness)
    out = await harness.call("deals.request_trade_value", request())
    async with harness.store.transaction() as uow:
        conn = uow.connection  # type: ignore[attr-defined]
        ids = (await conn.execute(sa.text("SELECT id FROM trade_valuations"))).scalars().all()
    assert ids == [out["id"]]


async def test_worse_condition_and_more_kilometres_lower_the_estimate(harness: Harness) -> None:
    await comparables(harness)
    good = await harness.call("deals.request_trade_value", request())
    worse = await harness.call(
        "deals.request_trade_value", request(condition="fair", mileage={"value": 80_000, "unit": "km"})
    )
    assert worse["estimate"]["amount_minor"] < good["estimate"]["amount_minor"]
    assert worse["mileage"] == {"value": 49_710, "unit": "mi"}


async def test_too_few_comparables_is_trade_value_unavailable(harness: Harness) -> None:
    await comparables(harness)
    with pytest.raises(ForecourtError) as info:
        await harness.call("deals.request_trade_value", request(model="RAV4"))
    assert info.value.code == "deals.trade_value_unavailable"
    assert info.value.details == {"comparable_count": 1, "required": 3}


async def test_a_vin_with_a_wrong_check_digit_is_invalid_vin(harness: Harness) -> None:
    bad = vehicle(1).vin[:8] + ("0" if vehicle(1).vin[8] != "0" else "1") + vehicle(1).vin[9:]
    with pytest.raises(ForecourtError) as info:
        await harness.call("deals.request_trade_value", request(vin=bad))
    assert info.value.code == "inventory.invalid_vin"
    assert bad not in str(info.value.details)
