"""The trade valuation math: adjustments, robust central estimate, band, ACV conversion."""

from __future__ import annotations

import pytest

from forecourt.adapters import valuation as v
from forecourt.domain.vehicle import Condition, TradeCondition
from forecourt.errors import TradeValueUnavailable

from .builders import vehicle


def subject(**overrides: object) -> v.TradeSubject:
    data: dict[str, object] = {
        "year": 2022,
        "make": "Toyota",
        "model": "Camry",
        "mileage_mi": 20_000,
        "condition": TradeCondition.GOOD,
    }
    data.update(overrides)
    return v.TradeSubject(**data)  # type: ignore[arg-type]


def test_percentile_interpolates_between_closest_ranks() -> None:
    assert v.percentile([10, 20, 30, 40], 0.5) == 25
    assert v.percentile([10, 20, 30, 40], 0.25) == 17.5
    assert v.percentile([7], 0.75) == 7


def test_a_comparable_identical_to_the_subject_keeps_its_price() -> None:
    assert v.adjusted_retail(vehicle(1), subject()) == pytest.approx(2_500_000)


def test_a_newer_comparable_is_adjusted_down_by_one_year_of_depreciation() -> None:
    adjusted = v.adjusted_retail(vehicle(1, year=2023), subject())
    assert adjusted == pytest.approx(2_500_000 * (1 - v.YEAR_RATE))


def test_a_subject_with_more_miles_is_worth_less_per_thousand_miles() -> None:
    adjusted = v.adjusted_retail(vehicle(1, mileage=20_000), subject(mileage_mi=30_000))
    assert adjusted == pytest.approx(2_500_000 * (1 - 10 * v.MILEAGE_RATE_PER_1000_MI))


def test_the_mileage_adjustment_is_clamped_so_an_outlier_odometer_cannot_dominate() -> None:
    adjusted = v.adjusted_retail(vehicle(1, mileage=0), subject(mileage_mi=400_000))
    assert adjusted == pytest.approx(2_500_000 * v.MILEAGE_CLAMP[0])


def test_new_units_lose_their_new_car_premium() -> None:
    adjusted = v.adjusted_retail(vehicle(1, condition=Condition.NEW), subject())
    assert adjusted == pytest.approx(2_500_000 * v.NEW_UNIT_FACTOR)


def test_the_estimate_is_the_median_converted_to_actual_cash_value() -> None:
    comps = [vehicle(i, price=p) for i, p in enumerate([2_000_000, 2_400_000, 2_500_000, 2_600_000, 9_900_000])]
    est = v.estimate(comps, subject(), "USD")
    assert est.retail_median == 2_500_000
    assert est.estimate == 2_050_000  # 25,000 x 0.82, rounded to $10
    assert est.low <= est.estimate <= est.high
    assert est.comparable_count == 5


def test_one_outlier_price_does_not_move_the_estimate() -> None:
    base = [vehicle(i, price=p) for i, p in enumerate([2_400_000, 2_500_000, 2_600_000])]
    outlier = [*base, vehicle(9, price=2_500_000), vehicle(10, price=30_000_000)]
    assert v.estimate(outlier, subject(), "USD").estimate == v.estimate(base, subject(), "USD").estimate


def test_poor_condition_is_valued_below_excellent_condition() -> None:
    comps = [vehicle(i) for i in range(4)]
    poor = v.estimate(comps, subject(condition=TradeCondition.POOR), "USD").estimate
    excellent = v.estimate(comps, subject(condition=TradeCondition.EXCELLENT), "USD").estimate
    assert poor < excellent


def test_identical_comparables_still_give_a_band_around_the_estimate() -> None:
    est = v.estimate([vehicle(i) for i in range(3)], subject(), "USD")
    assert est.low < est.estimate < est.high


def test_fewer_than_three_comparables_is_trade_value_unavailable() -> None:
    with pytest.raises(TradeValueUnavailable) as info:
        v.estimate([vehicle(1), vehicle(2)], subject(), "USD")
    assert info.value.code == "deals.trade_value_unavailable"
    assert info.value.details == {"comparable_count": 2, "required": 3}


def test_selection_keeps_the_same_trim_when_there_are_enough() -> None:
    comps = [vehicle(i, trim="XSE") for i in range(3)] + [vehicle(10 + i, trim="LE") for i in range(5)]
    chosen = v.select_comparables(comps, subject(trim="XSE"), "USD")
    assert {c.trim for c in chosen} == {"XSE"}


def test_selection_falls_back_to_all_trims_when_too_few_share_the_trim() -> None:
    comps = [vehicle(1, trim="XSE")] + [vehicle(10 + i, trim="LE") for i in range(3)]
    assert len(v.select_comparables(comps, subject(trim="XSE"), "USD")) == 4


def test_selection_drops_other_currencies_and_the_subject_vin() -> None:
    comps = [vehicle(1), vehicle(2, price=0), vehicle(3)]
    chosen = v.select_comparables(comps, subject(vin=comps[2].vin), "USD")
    assert [c.id for c in chosen] == [comps[0].id]
    assert v.select_comparables(comps, subject(), "CAD") == []


def test_kilometres_are_converted_to_miles() -> None:
    assert v.miles(100_000, "km") == 62_137
    assert v.miles(5, "mi") == 5
