"""Comps-based trade-in valuation.

How a valuation is reached (every constant below is part of the documented method):

1. **Comparables**: vehicles of the same make and model within ``YEAR_WINDOW`` model years, across every
   dealership on the platform, sold units included (``InventoryRepository.comparables``), priced in the
   dealership's currency. When at least ``MIN_COMPARABLES`` share the requested trim, only those are used.
2. **Adjust each comparable's asking price to the subject vehicle**:
   - model year: ``YEAR_RATE`` (8 %) per model year of difference, compounded;
   - mileage: ``MILEAGE_RATE_PER_1000_MI`` (0.5 %) per 1,000 mi of difference, the factor clamped to
     ``MILEAGE_CLAMP`` (0.70..1.30) so one outlier odometer cannot dominate;
   - new units are discounted by ``NEW_UNIT_FACTOR`` (0.90): a new unit's price carries a new-car premium
     that a used trade-in never earns.
3. **Robust central estimate**: the median of the adjusted retail prices; the band is the 25th..75th
   percentile (linear interpolation), widened to at least ``MIN_BAND`` (±5 %) around the estimate.
4. **Retail to actual cash value (wholesale)**: multiply by ``1 - RECON_AND_MARGIN`` (0.82): about 6 %
   reconditioning, 10 % retail gross margin and 2 % holding/transport cost a dealer must cover to retail the
   unit; then by the trade-in condition factor (excellent 1.05, good 1.00, fair 0.90, poor 0.78), since
   retail comparables are front-line-ready (roughly "good").
5. Amounts are rounded to ``ROUND_TO_MAJOR`` (10) major units. Fewer than ``MIN_COMPARABLES`` (3)
   comparables → ``deals.trade_value_unavailable``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from forecourt.domain.deals import TradeValuation
from forecourt.domain.measure import DistanceUnit, Measure
from forecourt.domain.money import Money, currency_exponent
from forecourt.domain.vehicle import Condition, TradeCondition, Vehicle
from forecourt.errors import TradeValueUnavailable
from forecourt.store.base import InventoryRepository

MIN_COMPARABLES = 3
YEAR_WINDOW = 2
YEAR_RATE = 0.08
MILEAGE_RATE_PER_1000_MI = 0.005
MILEAGE_CLAMP = (0.70, 1.30)
NEW_UNIT_FACTOR = 0.90
RECON_AND_MARGIN = 0.18
MIN_BAND = 0.05
ROUND_TO_MAJOR = 10
VALID_FOR = timedelta(days=7)
CONDITION_FACTORS: dict[TradeCondition, float] = {
    TradeCondition.EXCELLENT: 1.05,
    TradeCondition.GOOD: 1.00,
    TradeCondition.FAIR: 0.90,
    TradeCondition.POOR: 0.78,
}
METHOD = "comparables_median_acv_v1"


@dataclass(frozen=True)
class TradeSubject:
    """The vehicle to value."""

    year: int
    make: str
    model: str
    mileage_mi: int
    condition: TradeCondition
    trim: str | None = None
    vin: str | None = None


@dataclass(frozen=True)
class Estimate:
    """An actual-cash-value estimate with its band, in minor units of one currency."""

    low: int
    estimate: int
    high: int
    retail_median: int
    comparable_count: int


def miles(value: int, unit: DistanceUnit) -> int:
    """A distance in whole miles."""
    return Measure(value=value, unit=unit).to("mi").value


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q`` quantile (0..1) of ``values`` by linear interpolation between closest ranks."""
    if not values:
        raise ValueError("percentile of an empty sequence")
    ordered = sorted(values)
    pos = (len(ordered) - 1) * min(max(q, 0.0), 1.0)
    lo, hi = math.floor(pos), math.ceil(pos)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def adjusted_retail(comp: Vehicle, subject: TradeSubject) -> float:
    """A comparable's asking price (minor units) adjusted to the subject's model year and mileage."""
    price = float(comp.price.amount_minor)
    price *= (1.0 - YEAR_RATE) ** (comp.year - subject.year)
    comp_mi = comp.mileage.to("mi").value
    mileage_factor = 1.0 - MILEAGE_RATE_PER_1000_MI * (subject.mileage_mi - comp_mi) / 1000.0
    price *= min(max(mileage_factor, MILEAGE_CLAMP[0]), MILEAGE_CLAMP[1])
    if comp.condition == Condition.NEW:
        price *= NEW_UNIT_FACTOR
    return price


def select_comparables(comps: Sequence[Vehicle], subject: TradeSubject, currency: str) -> list[Vehicle]:
    """Usable comparables: same make/model, priced in ``currency``, not the subject itself; same trim if enough."""
    usable = [
        c
        for c in comps
        if c.make.casefold() == subject.make.casefold()
        and c.model.casefold() == subject.model.casefold()
        and abs(c.year - subject.year) <= YEAR_WINDOW
        and c.price.currency == currency
        and c.price.amount_minor > 0
        and (subject.vin is None or c.vin != subject.vin)
    ]
    if subject.trim:
        same_trim = [c for c in usable if c.trim.casefold() == subject.trim.casefold()]
        if len(same_trim) >= MIN_COMPARABLES:
            return same_trim
    return usable


def _round_minor(amount: float, currency: str) -> int:
    step: int = ROUND_TO_MAJOR * int(10 ** currency_exponent(currency))
    return max(round(amount / step) * step, 0)


def estimate(comps: Sequence[Vehicle], subject: TradeSubject, currency: str) -> Estimate:
    """The ACV estimate and band from already-selected comparables.

    Raises:
        TradeValueUnavailable: Fewer than ``MIN_COMPARABLES`` comparables.
    """
    if len(comps) < MIN_COMPARABLES:
        raise TradeValueUnavailable(details={"comparable_count": len(comps), "required": MIN_COMPARABLES})
    retail = [adjusted_retail(c, subject) for c in comps]
    median = percentile(retail, 0.5)
    low, high = percentile(retail, 0.25), percentile(retail, 0.75)
    low, high = min(low, median * (1 - MIN_BAND)), max(high, median * (1 + MIN_BAND))
    to_acv = (1.0 - RECON_AND_MARGIN) * CONDITION_FACTORS[subject.condition]
    return Estimate(
        low=_round_minor(low * to_acv, currency),
        estimate=_round_minor(median * to_acv, currency),
        high=_round_minor(high * to_acv, currency),
        retail_median=_round_minor(median, currency),
        comparable_count=len(comps),
    )


async def value_trade(
    inventory: InventoryRepository,
    subject: TradeSubject,
    *,
    valuation_id: str,
    dealership_id: str,
    currency: str,
    now: datetime,
) -> TradeValuation:
    """Value a trade-in from the platform's comparables (see the module docstring for the method).

    Args:
        inventory: Where comparables come from (all dealerships, sold units included).
        subject: The trade-in.
        valuation_id: Id of the valuation to create.
        dealership_id: The dealership asking.
        currency: The dealership's currency; only comparables priced in it are used.
        now: The valuation time.

    Returns:
        The valuation (not yet stored).

    Raises:
        TradeValueUnavailable: Too few comparables.
    """
    found = await inventory.comparables(
        subject.make, subject.model, subject.year - YEAR_WINDOW, subject.year + YEAR_WINDOW, None
    )
    est = estimate(select_comparables(found, subject, currency), subject, currency)
    return TradeValuation(
        id=valuation_id,
        dealership_id=dealership_id,
        year=subject.year,
        make=subject.make,
        model=subject.model,
        trim=subject.trim,
        mileage=subject.mileage_mi,
        condition=subject.condition.value,
        low=Money.of(est.low, currency),
        estimate=Money.of(est.estimate, currency),
        high=Money.of(est.high, currency),
        comparable_count=est.comparable_count,
        method=METHOD,
        valid_until=now + VALID_FOR,
        created_at=now,
    )
