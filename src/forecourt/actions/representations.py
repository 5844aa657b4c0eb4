"""AutomotiveMCP representations of domain objects.

Rules (seed 002 §3.3, §3.7): a stable server-scoped ``id`` plus industry ids as named fields (``vin``,
``ro_number``); money as ``{amount_minor, currency}``; distances as ``{value, unit}``; RFC 3339
timestamps with an offset; enum values in snake_case.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import datetime, tzinfo
from typing import Any

from forecourt import caching
from forecourt.domain.deals import TradeValuation
from forecourt.domain.events import ChangeEvent
from forecourt.domain.measure import Measure
from forecourt.domain.money import Money, in_minor_units
from forecourt.domain.people import ConsentGrant, ConsentStatus, Customer, Lead
from forecourt.domain.service import Appointment, RepairOrder
from forecourt.domain.tenancy import DayHours, Dealership
from forecourt.domain.timeutil import rfc3339
from forecourt.domain.vehicle import Vehicle, VehicleCard

WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")


def ts(value: datetime | None, tz: tzinfo | None = None) -> str | None:
    """RFC 3339 text (optionally in ``tz``), or ``None``."""
    if value is None:
        return None
    return rfc3339(value.astimezone(tz) if tz is not None else value)


def money(value: Money | None) -> dict[str, Any] | None:
    """``{amount_minor, currency}`` or ``None``."""
    return value.to_dict() if value is not None else None


def measure(value: Measure | None) -> dict[str, Any] | None:
    """``{value, unit}`` or ``None``."""
    return {"value": value.value, "unit": value.unit} if value is not None else None


def vehicle_repr(v: Vehicle) -> dict[str, Any]:
    """A vehicle: ``id`` is server-scoped, ``vin`` and ``stock`` are the industry identifiers."""
    return {
        "id": v.id,
        "vin": v.vin,
        "stock": v.stock,
        "year": v.year,
        "make": v.make,
        "model": v.model,
        "trim": v.trim,
        "condition": v.condition.value,
        "body": v.body,
        "transmission": v.transmission,
        "driveline": v.driveline,
        "fuel": v.fuel,
        "engine": v.engine,
        "exterior_color": v.exterior_color,
        "interior_color": v.interior_color,
        "price": money(v.price),
        "list_price": money(v.list_price),
        "msrp": money(v.msrp),
        "mileage": measure(v.mileage),
        "status": v.status.value,
        "available": v.status.offerable,
        "photos": list(v.photos),
        "vdp_url": v.vdp_url,
        "description": v.description,
        "last_verified_at": ts(v.last_verified_at),
        "updated_at": ts(v.updated_at),
        "sold_at": ts(v.sold_at),
    }


def card_repr(c: VehicleCard) -> dict[str, Any]:
    """A vehicle's card: the fields of :func:`vehicle_repr` a list shows, formatted the same way."""
    return {
        "id": c.id,
        "vin": c.vin,
        "year": c.year,
        "make": c.make,
        "model": c.model,
        "trim": c.trim,
        "price": money(c.price),
        "mileage": measure(c.mileage),
        "status": c.status.value,
        "vdp_url": c.vdp_url,
    }


class VehicleReprs:
    """The representation of each vehicle card the SQL store hands out, kept while the memo holds the card.

    The store hands out the same frozen object for an unchanged row it keeps (``store/sql/driver_rows.py``), so a
    compact page of such cards is represented without formatting each again: on the fair workload (the 50 rooftops'
    20 cheapest in turn) that saves 3.5-4.3 % of a call's CPU (docs/benchmarks.md, "Every cache, and what it earns").
    Full vehicles are formatted every time: their memo saved 0.1 %. Entries hold their card
    (``caching.HeldMemo``), so an address is never reused while its entry lives; the representations are shared by
    the pages that hold them: outputs are read-only past the action (redaction copies; workflows and the console get
    copies).
    """

    def __init__(self, render: Callable[[Any], dict[str, Any]], name: str, size: int = 4096) -> None:
        self._memo: caching.HeldMemo[Any, dict[str, Any]] = caching.HeldMemo(name, size, render)

    def of(self, vehicles: Iterable[Vehicle] | Iterable[VehicleCard]) -> list[dict[str, Any]]:
        """The representation of each vehicle, in order."""
        memo = self._memo
        return [memo(v) for v in vehicles]

    def __len__(self) -> int:
        return len(self._memo)


CARD_REPRESENTATIONS = VehicleReprs(card_repr, "actions.card_reprs")
"""The process's memo of vehicle card representations (compact ``inventory.search`` pages)."""


def _hours(hours: dict[str, DayHours]) -> dict[str, Any]:
    lookup = {k.lower(): h for k, h in hours.items()}
    out: dict[str, Any] = {}
    for day in WEEKDAYS:
        h = lookup.get(day) or lookup.get(day[:3])
        out[day] = {"open": h.open, "close": h.close} if h is not None and h.open and h.close else None
    return out


def dealership_repr(d: Dealership) -> dict[str, Any]:
    """The public dealership profile (no customer data)."""
    a = d.address
    return {
        "id": d.id,
        "name": d.name,
        "address": {
            "street": a.street,
            "city": a.city,
            "region": a.region,
            "postal_code": a.postal_code,
            "country": a.country,
        },
        "phones": dict(d.phones),
        "email": d.email,
        "website": d.website,
        "time_zone": d.timezone,
        "currency": d.currency,
        "brands": list(d.brands),
        "capabilities": list(d.capabilities),
        "sales_hours": _hours(d.sales_hours),
        "service_hours": _hours(d.service_hours),
    }


def customer_repr(c: Customer) -> dict[str, Any]:
    """A customer (PII)."""
    return {
        "id": c.id,
        "first_name": c.first_name,
        "last_name": c.last_name,
        "email": c.email,
        "phone": c.phone,
        "postal_code": c.postal_code,
        "preferred_channel": c.preferred_channel.value if c.preferred_channel else None,
        "possible_duplicate_of": c.possible_duplicate_of,
        "created_at": ts(c.created_at),
        "updated_at": ts(c.updated_at),
    }


def consent_status(g: ConsentGrant, now: datetime) -> str:
    """``granted`` turns into ``expired`` once ``expires_at`` has passed."""
    if g.status == ConsentStatus.GRANTED and g.expires_at is not None and g.expires_at <= now:
        return ConsentStatus.EXPIRED.value
    return g.status.value


def consent_repr(g: ConsentGrant, now: datetime) -> dict[str, Any]:
    """A consent grant, as recorded; ``status`` reflects expiry at ``now``."""
    revoked = g.evidence.get("revocation") if isinstance(g.evidence.get("revocation"), dict) else None
    return {
        "id": g.id,
        "customer_id": g.customer_id,
        "lead_id": g.lead_id,
        "scope": list(g.scope),
        "allowed_channels": [c.value for c in g.allowed_channels],
        "status": consent_status(g, now),
        "granted_at": ts(g.granted_at),
        "expires_at": ts(g.expires_at),
        "revoked_at": revoked.get("at") if revoked else None,
        "source_agent": g.source_agent,
        "consent_text": g.evidence.get("consent_text"),
        "created_at": ts(g.created_at),
    }


def lead_repr(lead: Lead) -> dict[str, Any]:
    """A lead; the customer is referenced by ``customer_id`` only."""
    return {
        "id": lead.id,
        "status": lead.status.value,
        "customer_id": lead.customer_id,
        "vehicle_id": lead.vehicle_id,
        "vehicle_of_interest": in_minor_units(lead.vehicle_of_interest),
        "trade_in": in_minor_units(lead.trade_in) if lead.trade_in is not None else None,
        "message": lead.message,
        "source": lead.source,
        "source_agent": lead.source_agent,
        "consent_id": lead.consent_id,
        "appointment_id": lead.appointment_id,
        "duplicate_of": lead.duplicate_of,
        "assigned_to": lead.assigned_to,
        "submitted_at": ts(lead.submitted_at),
        "created_at": ts(lead.created_at),
        "updated_at": ts(lead.updated_at),
    }


def repair_order_repr(ro: RepairOrder) -> dict[str, Any]:
    """A repair order: ``id`` plus the dealer's ``ro_number``."""
    return {
        "id": ro.id,
        "ro_number": ro.ro_number,
        "status": ro.status.value,
        "customer_id": ro.customer_id,
        "vin": ro.vin,
        "vehicle_description": ro.vehicle_description,
        "mileage_in": measure(ro.mileage_in),
        "advisor_id": ro.advisor_id,
        "lines": [
            {
                "code": line.code,
                "description": line.description,
                "labor_hours": line.labor_hours,
                "amount": money(line.amount),
            }
            for line in ro.lines
        ],
        "total": money(ro.total),
        "opened_at": ts(ro.opened_at),
        "promised_at": ts(ro.promised_at),
        "closed_at": ts(ro.closed_at),
        "updated_at": ts(ro.updated_at),
    }


def appointment_repr(a: Appointment, tz: tzinfo | None = None) -> dict[str, Any]:
    """An appointment, with times in the dealership's local offset when ``tz`` is given."""
    return {
        "id": a.id,
        "kind": a.kind.value,
        "status": a.status.value,
        "start": ts(a.start, tz),
        "end": ts(a.end, tz),
        "customer_id": a.customer_id,
        "vehicle_id": a.vehicle_id,
        "advisor_id": a.advisor_id,
        "service_codes": list(a.service_codes),
    }


def valuation_repr(v: TradeValuation) -> dict[str, Any]:
    """A trade-in valuation: an actual-cash-value estimate with a low/high band."""
    return {
        "id": v.id,
        "year": v.year,
        "make": v.make,
        "model": v.model,
        "trim": v.trim,
        "mileage": {"value": v.mileage, "unit": "mi"},
        "condition": v.condition,
        "estimate": money(v.estimate),
        "low": money(v.low),
        "high": money(v.high),
        "comparable_count": v.comparable_count,
        "method": v.method,
        "valid_until": ts(v.valid_until),
        "created_at": ts(v.created_at),
    }


def event_repr(e: ChangeEvent) -> dict[str, Any]:
    """A change event (the payload is left out: it may carry PII)."""
    return {
        "event_id": e.id,
        "resource_type": e.resource_type.value,
        "resource_id": e.resource_id,
        "change_type": e.change_type.value,
        "status": e.status,
        "occurred_at": ts(e.occurred_at),
        "dealership_id": e.dealership_id,
    }
