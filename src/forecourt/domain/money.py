"""Money as integer minor units plus an ISO 4217 currency, with exact conversion to AAP's major units."""

from __future__ import annotations

import re
from collections.abc import Mapping
from decimal import ROUND_HALF_EVEN, Decimal, InvalidOperation
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

# ISO 4217 minor-unit exponents for the currencies dealers price in; everything else defaults to 2.
_EXPONENTS: dict[str, int] = {"JPY": 0, "KRW": 0, "CLP": 0, "ISK": 0, "BHD": 3, "KWD": 3, "OMR": 3, "JOD": 3}


_CURRENCY = re.compile(r"[A-Z]{3}")


def currency_exponent(currency: str) -> int:
    """Number of decimal places of the currency's minor unit."""
    return _EXPONENTS.get(currency, 2)


class Money(BaseModel):
    """An amount in integer minor units (cents for USD) and its ISO 4217 currency."""

    model_config = ConfigDict(frozen=True)

    amount_minor: int
    currency: str = Field(default="USD", pattern=r"^[A-Z]{3}$")

    @field_validator("amount_minor", mode="before")
    @classmethod
    def _no_floats(cls, value: Any) -> Any:
        if isinstance(value, float) and not value.is_integer():
            raise ValueError("minor units must be an integer")
        return value

    @classmethod
    def of(cls, amount_minor: int, currency: str = "USD") -> Money:
        """Money from minor units."""
        return cls(amount_minor=amount_minor, currency=currency)

    @classmethod
    def from_major(cls, amount: Decimal | int | str | float, currency: str = "USD") -> Money:
        """Money from a major-unit amount (AAP's ``{amount, currency}``), exactly.

        A float is converted through its shortest decimal representation (``repr``), so ``19999.99``
        becomes 1999999 cents, never 1999998. Amounts with more decimals than the currency allows are
        rejected rather than rounded.
        """
        try:
            dec = Decimal(repr(amount)) if isinstance(amount, float) else Decimal(amount)
        except InvalidOperation as exc:
            raise ValueError("amount is not a number") from exc
        if not dec.is_finite():
            raise ValueError("amount must be finite")
        scaled = dec.scaleb(currency_exponent(currency))
        if scaled != scaled.to_integral_value():
            raise ValueError("amount has more decimal places than the currency allows")
        return cls(amount_minor=int(scaled), currency=currency)

    def to_major(self) -> Decimal:
        """The amount in major units as an exact :class:`~decimal.Decimal`."""
        exp = currency_exponent(self.currency)
        return Decimal(self.amount_minor).scaleb(-exp).quantize(Decimal(1).scaleb(-exp))

    def to_aap(self) -> dict[str, Any]:
        """AAP v0.1 money: ``{amount: <major units>, currency}``; whole amounts stay integers in JSON."""
        major = self.to_major()
        amount: int | float = int(major) if major == major.to_integral_value() else float(major)
        return {"amount": amount, "currency": self.currency}

    def to_dict(self) -> dict[str, Any]:
        """AutomotiveMCP money: integer minor units and currency."""
        return {"amount_minor": self.amount_minor, "currency": self.currency}

    def __add__(self, other: Money) -> Money:
        if other.currency != self.currency:
            raise ValueError("cannot add different currencies")
        return Money(amount_minor=self.amount_minor + other.amount_minor, currency=self.currency)


def in_minor_units(data: Mapping[str, Any], default_currency: str = "USD") -> dict[str, Any]:
    """``data`` with every AAP money object in it (``{amount: <major units>, currency?}``) as ``{amount_minor,
    currency}``, at any depth.

    Free-form records kept as a buyer agent sent them (a lead's vehicle of interest and trade-in, in AAP's major
    units) are shown in the AutomotiveMCP form. A missing currency is ``default_currency``; more decimals than the
    currency has are rounded half to even (a stored record is shown, never refused).
    """
    return {key: _minor_units(value, default_currency) for key, value in data.items()}


def _minor_units(value: Any, default_currency: str) -> Any:
    if isinstance(value, Mapping):
        amount = value.get("amount")
        if "amount_minor" not in value and isinstance(amount, int | float | str) and not isinstance(amount, bool):
            currency = value.get("currency")
            code = currency if isinstance(currency, str) and _CURRENCY.fullmatch(currency) else default_currency
            try:
                major = Decimal(repr(amount)) if isinstance(amount, float) else Decimal(amount)
            except InvalidOperation:
                return dict(value)
            if not major.is_finite():
                return dict(value)
            minor = major.scaleb(currency_exponent(code)).quantize(Decimal(1), rounding=ROUND_HALF_EVEN)
            return {"amount_minor": int(minor), "currency": code}
        return in_minor_units(value, default_currency)
    if isinstance(value, list):
        return [_minor_units(item, default_currency) for item in value]
    return value
