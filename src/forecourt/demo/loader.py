"""Load the demo tenants and their data into a store; loading again changes nothing."""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Protocol, TypeVar

from forecourt.demo.common import DEFAULT_SEED, default_now
from forecourt.demo.inventory import generate_vehicles
from forecourt.demo.people import generate_customers, generate_leads
from forecourt.demo.service import generate_service
from forecourt.demo.tenants import DEALERSHIPS, ROOFTOP_PLANS, demo_document
from forecourt.domain.service import ServiceSlot
from forecourt.domain.tenancy import Dealership
from forecourt.domain.vehicle import Vehicle
from forecourt.store.base import Store, UnitOfWork

logger = logging.getLogger(__name__)

# Fields that move with the clock; a reload compares everything else.
_VOLATILE = {"created_at", "updated_at", "last_verified_at", "sold_at"}
_REVERIFY_AFTER = timedelta(days=1)


class _Scoped(Protocol):
    @property
    def id(self) -> str: ...
    @property
    def dealership_id(self) -> str: ...


_R = TypeVar("_R", bound=_Scoped)


@dataclass(frozen=True)
class DemoSize:
    """How much data each demo rooftop gets."""

    vehicles: int = 60
    customers: int = 40
    leads: int = 25
    repair_orders: int = 30
    service_appointments: int = 20


@dataclass
class DemoReport:
    """What a demo load wrote: per kind of record, how many were created, updated or already there."""

    dealership_ids: list[str] = field(default_factory=list)
    created: Counter[str] = field(default_factory=Counter)
    updated: Counter[str] = field(default_factory=Counter)
    unchanged: Counter[str] = field(default_factory=Counter)

    @property
    def changed(self) -> int:
        """Records created or updated by this load."""
        return sum(self.created.values()) + sum(self.updated.values())


async def load_demo(
    store: Store,
    *,
    vehicles_per_dealership: int = 60,
    seed: int = DEFAULT_SEED,
    now: datetime | None = None,
    size: DemoSize | None = None,
) -> DemoReport:
    """Load the demo tenants of DESIGN.md with deterministic inventory, customers, leads and service data.

    The same ``seed`` gives the same ids, VINs, stock numbers and prices; only timestamps move with
    ``now`` (``last_verified_at``, lead and appointment times, the next 14 days of service slots).
    Tenancy rows are upserted (reset to their demo definition). Vehicles are upserted by VIN when
    their content differs (a demo unit sold in a session is put back on sale) or their verification is
    over a day old. Customers, consent grants, leads, repair orders, appointments and slots are
    inserted only when their id is not there yet (a lead's later status is kept). Loading twice with
    the same ``now`` therefore changes nothing.

    Args:
        store: Where to write.
        vehicles_per_dealership: Inventory size of each rooftop (overrides ``size.vehicles``).
        seed: Seed of every generator.
        now: Anchor of time-relative data (default: the current minute, UTC).
        size: Record counts per rooftop.

    Returns:
        Counts of what was created, updated or left alone.
    """
    at = now or default_now()
    plan_size = replace(size or DemoSize(), vehicles=vehicles_per_dealership)
    report = DemoReport(dealership_ids=[d.id for d in DEALERSHIPS])
    async with store.transaction() as uow:
        await _load_tenancy(uow, report)
    for dealership in DEALERSHIPS:
        async with store.transaction() as uow:
            await _load_rooftop(uow, dealership, size=plan_size, seed=seed, now=at, report=report)
    from forecourt.demo.knowledge import load_demo_knowledge

    # Dealer documents (FAQ, policies, warranty) and example named queries; unchanged ones are skipped.
    report.created.update(await load_demo_knowledge(store, now=at))
    logger.info(
        "demo loaded: %d records created, %d updated", sum(report.created.values()), sum(report.updated.values())
    )
    return report


async def _load_tenancy(uow: UnitOfWork, report: DemoReport) -> None:
    # The demo tenants file, applied like any operator's (reset to its definition; nothing pruned).
    from forecourt.actions.tenants_apply import apply_tenants

    plan = await apply_tenants(uow, demo_document())
    for step in plan.steps:
        counter = {"create": report.created, "change": report.updated}.get(step.op, report.unchanged)
        counter[step.kind] += 1


async def _load_rooftop(
    uow: UnitOfWork, dealership: Dealership, *, size: DemoSize, seed: int, now: datetime, report: DemoReport
) -> None:
    plan = ROOFTOP_PLANS[dealership.id]
    vehicles = generate_vehicles(dealership, plan, size.vehicles, seed=seed, now=now)
    for vehicle in vehicles:
        await _put_vehicle(uow, vehicle, now, report)
    customers = generate_customers(dealership, plan, size.customers, seed=seed, now=now)
    await _insert_missing(customers, uow.customers.get, uow.customers.add, "customers", report)
    leads = generate_leads(dealership, plan, customers, vehicles, size.leads, seed=seed, now=now)
    service = generate_service(
        dealership,
        plan,
        customers,
        repair_orders=size.repair_orders,
        appointments=size.service_appointments,
        seed=seed,
        now=now,
    )
    appointments = leads.appointments + service.appointments
    await _insert_missing(
        appointments, uow.service.get_appointment, uow.service.add_appointment, "appointments", report
    )
    await _insert_missing(leads.leads, uow.leads.get, uow.leads.add, "leads", report)
    await _insert_missing(leads.consents, uow.consent.get, uow.consent.add, "consents", report)
    await _insert_missing(
        service.repair_orders, uow.service.get_repair_order, uow.service.add_repair_order, "repair_orders", report
    )
    await _put_slots(uow, dealership, service.slots, report)


async def _put_vehicle(uow: UnitOfWork, vehicle: Vehicle, now: datetime, report: DemoReport) -> None:
    existing = await uow.inventory.get_by_vin(vehicle.dealership_id, vehicle.vin)
    if existing is None:
        await uow.inventory.upsert(vehicle)
        report.created["vehicles"] += 1
        return
    wanted = vehicle.model_copy(update={"id": existing.id})
    same = wanted.model_dump(exclude=_VOLATILE) == existing.model_dump(exclude=_VOLATILE)
    if same and existing.last_verified_at >= now - _REVERIFY_AFTER:
        report.unchanged["vehicles"] += 1
        return
    await uow.inventory.upsert(wanted)
    report.updated["vehicles"] += 1


async def _insert_missing(
    items: Sequence[_R],
    get: Callable[[str, str], Awaitable[object | None]],
    add: Callable[[_R], Awaitable[None]],
    kind: str,
    report: DemoReport,
) -> None:
    for item in items:
        if await get(item.dealership_id, item.id) is None:
            await add(item)
            report.created[kind] += 1
        else:
            report.unchanged[kind] += 1


async def _put_slots(uow: UnitOfWork, dealership: Dealership, slots: list[ServiceSlot], report: DemoReport) -> None:
    if not slots:
        return
    have = await uow.service.list_slots(dealership.id, slots[0].start, slots[-1].end)
    known = {s.id for s in have}
    missing = [s for s in slots if s.id not in known]
    if missing:
        await uow.service.add_slots(missing)
    report.created["slots"] += len(missing)
    report.unchanged["slots"] += len(slots) - len(missing)
