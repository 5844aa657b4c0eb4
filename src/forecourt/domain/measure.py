"""Quantities with a unit (mileage)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

DistanceUnit = Literal["mi", "km"]
_KM_PER_MI = 1.609344


class Measure(BaseModel):
    """A non-negative distance with its unit."""

    model_config = ConfigDict(frozen=True)

    value: int = Field(ge=0)
    unit: DistanceUnit = "mi"

    def to(self, unit: DistanceUnit) -> Measure:
        """The same distance in another unit, rounded to a whole number."""
        if unit == self.unit:
            return self
        factor = _KM_PER_MI if unit == "km" else 1 / _KM_PER_MI
        return Measure(value=round(self.value * factor), unit=unit)
