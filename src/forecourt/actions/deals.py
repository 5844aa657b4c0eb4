"""``deals.request_trade_value``: a comps-based trade-in valuation (method in :mod:`forecourt.adapters.valuation`)."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from forecourt.actions.base import Action, AdapterResult, ExecutionContext, Handler
from forecourt.actions.common import (
    ID,
    MILEAGE,
    MILEAGE_INPUT,
    MONEY,
    NULLABLE_STRING,
    TIMESTAMP,
    dealer_action,
    input_schema,
    new_id,
    obj,
    opt_str,
    output_schema,
    require_dealership,
    result,
)
from forecourt.actions.representations import valuation_repr
from forecourt.adapters.valuation import MIN_COMPARABLES, TradeSubject, miles, value_trade
from forecourt.domain.errors import VinError
from forecourt.domain.vehicle import TradeCondition
from forecourt.domain.vin import normalize_vin
from forecourt.errors import DealershipNotFound, InvalidVin

logger = logging.getLogger(__name__)

WRITE = "amcp:deals:write"

VALUATION: dict[str, Any] = obj(
    {
        "id": ID,
        "year": {"type": "integer"},
        "make": {"type": "string"},
        "model": {"type": "string"},
        "trim": NULLABLE_STRING,
        "mileage": MILEAGE,
        "condition": {"enum": [c.value for c in TradeCondition]},
        "estimate": {**MONEY, "description": "Actual cash value the dealership would likely allow."},
        "low": MONEY,
        "high": MONEY,
        "comparable_count": {"type": "integer", "minimum": MIN_COMPARABLES},
        "method": {"type": "string"},
        "valid_until": TIMESTAMP,
        "created_at": TIMESTAMP,
    }
)


def _subject(payload: Mapping[str, Any]) -> TradeSubject:
    vin = opt_str(payload, "vin")
    if vin is not None:
        try:
            vin = normalize_vin(vin)
        except VinError as exc:
            raise InvalidVin(details={"field": "vin", "reason": exc.reason}) from exc
    mileage = payload["mileage"]
    return TradeSubject(
        year=int(payload["year"]),
        make=str(payload["make"]).strip(),
        model=str(payload["model"]).strip(),
        trim=opt_str(payload, "trim"),
        mileage_mi=miles(int(mileage["value"]), mileage.get("unit", "mi")),
        condition=TradeCondition(payload["condition"]),
        vin=vin,
    )


async def request_trade_value(payload: Mapping[str, Any], ctx: ExecutionContext) -> AdapterResult:
    """Value a trade-in and store the valuation."""
    dealership_id = require_dealership(ctx)
    subject = _subject(payload)
    async with ctx.store.transaction() as uow:
        dealership = await uow.tenancy.get_dealership(dealership_id)
        if dealership is None:
            raise DealershipNotFound()
        valuation = await value_trade(
            uow.inventory,
            subject,
            valuation_id=new_id("val"),
            dealership_id=dealership_id,
            currency=dealership.currency,
            now=ctx.now,
        )
        await uow.service.add_valuation(valuation)
    logger.info("trade valuation %s from %d comparables", valuation.id, valuation.comparable_count)
    return result(valuation_repr(valuation), comparable_count=valuation.comparable_count)


ACTIONS: tuple[Action, ...] = (
    dealer_action(
        "deals.request_trade_value",
        title="Request a trade-in value",
        description=(
            "Estimate what the dealership would allow for a trade-in (actual cash value, i.e. wholesale): give "
            "year, make, model, optional trim and VIN, mileage {value, unit} and condition (excellent, good, fair, "
            "poor). The estimate comes from comparable vehicles listed and sold across the platform (same "
            "make/model within 2 model years), adjusted for year, mileage and condition, then reduced for "
            "reconditioning and margin; `low`..`high` is the likely range. Money is integer minor units. The "
            "valuation is stored and valid until `valid_until`. Fails with deals.trade_value_unavailable when fewer "
            "than 3 comparables exist. Use it when a customer asks what their current car is worth."
        ),
        input=input_schema(
            {
                "year": {"type": "integer", "minimum": 1980, "maximum": 2100},
                "make": {"type": "string", "minLength": 1, "maxLength": 60},
                "model": {"type": "string", "minLength": 1, "maxLength": 60},
                "trim": {"type": "string", "minLength": 1, "maxLength": 100},
                "mileage": MILEAGE_INPUT,
                "condition": {"enum": [c.value for c in TradeCondition]},
                "vin": {"type": "string", "pattern": "^[A-HJ-NPR-Za-hj-npr-z0-9]{17}$"},
            },
            ["year", "make", "model", "mileage", "condition"],
        ),
        output=output_schema(VALUATION),
        scope=WRITE,
        side_effect=True,
        idempotent=False,
        timeout_s=15.0,
        pii=False,
        tags=("deals", "trade_in"),
        example={
            "year": 2019,
            "make": "Honda",
            "model": "Civic",
            "mileage": {"value": 42000, "unit": "mi"},
            "condition": "good",
        },
    ),
)

HANDLERS: dict[str, Handler] = {"deals.request_trade_value": request_trade_value}
