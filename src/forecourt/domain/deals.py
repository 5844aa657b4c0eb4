"""Trade-in valuations."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from forecourt.domain.money import Money
from forecourt.domain.timeutil import AwareDatetime


class TradeValuation(BaseModel):
    """A comps-based valuation of a trade-in: a range, a point estimate, and how it was reached."""

    model_config = ConfigDict(frozen=True)

    id: str
    dealership_id: str
    year: int
    make: str
    model: str
    trim: str | None = None
    mileage: int
    condition: str
    low: Money
    estimate: Money
    high: Money
    comparable_count: int
    method: str = "comparables"
    valid_until: AwareDatetime
    created_at: AwareDatetime
