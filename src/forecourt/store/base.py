"""Repository protocols and the unit of work that groups them in one transaction.

Every change to a vehicle, lead, appointment or repair order writes its :class:`ChangeEvent` to the
outbox inside the same transaction (the repositories do it, callers cannot forget).
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractAsyncContextManager
from datetime import datetime
from typing import Any, Protocol

from pydantic import BaseModel

from forecourt.domain.deals import TradeValuation
from forecourt.domain.events import ChangeEvent
from forecourt.domain.people import ConsentGrant, Customer, Lead
from forecourt.domain.service import Appointment, RepairOrder, ServiceSlot
from forecourt.domain.tenancy import AdapterSetting, Company, Dealership, Member, Policy, Profile
from forecourt.domain.vehicle import Facets, InventoryQuery, SearchPage, Vehicle


class ApiKeyRecord(BaseModel):
    """A stored API key: only its public prefix and a keyed hash of the secret are kept."""

    prefix: str
    key_hash: str
    company_id: str
    member_id: str
    name: str = ""
    scopes: tuple[str, ...] = ()
    dealership_ids: tuple[str, ...] = ()
    created_at: datetime
    expires_at: datetime | None = None
    revoked_at: datetime | None = None
    last_used_at: datetime | None = None


class AuditRecord(BaseModel):
    """One invocation, allowed or denied (seed 001 §7)."""

    id: str
    company_id: str | None
    dealership_id: str | None
    member_id: str | None
    action: str
    action_type: str
    args_digest: str
    args_redacted: dict[str, Any]
    result_class: str
    status_code: int
    error_code: str | None
    duration_ms: float
    trace_id: str
    surface: str
    processed_by: str
    occurred_at: datetime


class Delivery(BaseModel):
    """An outbound delivery (CRM ADF post, webhook) driven from the outbox with retries."""

    id: str
    kind: str
    dealership_id: str
    target: str
    subject_id: str
    body: str
    content_type: str
    status: str = "pending"
    attempts: int = 0
    next_attempt_at: datetime
    last_error: str | None = None
    delivered_at: datetime | None = None
    created_at: datetime


class TenancyRepository(Protocol):
    """Profiles, companies, dealerships, members, policies, adapter settings and API keys."""

    async def upsert_profile(self, profile: Profile) -> None: ...
    async def upsert_company(self, company: Company) -> None: ...
    async def get_company(self, company_id: str) -> Company | None: ...
    async def list_companies(self) -> list[Company]: ...
    async def upsert_dealership(self, dealership: Dealership) -> None: ...
    async def get_dealership(self, dealership_id: str) -> Dealership | None: ...
    async def get_dealership_by_domain(self, domain: str) -> Dealership | None: ...
    async def list_dealerships(self, company_id: str | None = None) -> list[Dealership]: ...
    async def upsert_member(self, member: Member) -> None: ...
    async def get_member(self, company_id: str, member_id: str) -> Member | None: ...
    async def list_members(self, company_id: str) -> list[Member]: ...
    async def upsert_policy(self, policy: Policy) -> None: ...
    async def list_policies(self, company_id: str) -> list[Policy]: ...
    async def delete_policy(self, company_id: str, policy_id: str) -> bool: ...
    async def upsert_adapter_setting(self, setting: AdapterSetting) -> None: ...
    async def get_adapter_setting(self, company_id: str, adapter_id: str) -> AdapterSetting | None: ...
    async def list_adapter_settings(self, company_id: str) -> list[AdapterSetting]: ...
    async def add_api_key(self, record: ApiKeyRecord) -> None: ...
    async def get_api_key(self, prefix: str) -> ApiKeyRecord | None: ...
    async def list_api_keys(self, company_id: str) -> list[ApiKeyRecord]: ...
    async def revoke_api_key(self, prefix: str, at: datetime) -> bool: ...


class InventoryRepository(Protocol):
    """A dealership's vehicles."""

    async def get(self, dealership_id: str, vehicle_id: str) -> Vehicle | None: ...
    async def get_by_vin(self, dealership_id: str, vin: str) -> Vehicle | None: ...
    async def get_by_stock(self, dealership_id: str, stock: str) -> Vehicle | None: ...
    async def search(self, query: InventoryQuery) -> SearchPage: ...
    async def facets(self, query: InventoryQuery) -> Facets: ...
    async def upsert(self, vehicle: Vehicle) -> bool:
        """Insert or update by (dealership, VIN); returns True when created. Writes an outbox event."""
        ...

    async def mark_unavailable_except(self, dealership_id: str, keep_vins: set[str], at: datetime) -> int:
        """Mark every offerable vehicle whose VIN is not in ``keep_vins`` as removed; returns how many."""
        ...

    async def set_status(self, dealership_id: str, vehicle_id: str, status: str, at: datetime) -> Vehicle: ...
    async def comparables(
        self, make: str, model: str, year_min: int, year_max: int, mileage_max: int | None
    ) -> list[Vehicle]:
        """Vehicles across all dealerships (sold ones included) used to value a trade-in."""
        ...

    async def count(self, dealership_id: str | None = None) -> int: ...


class CustomerRepository(Protocol):
    """Customers of a dealership."""

    async def add(self, customer: Customer) -> None: ...
    async def update(self, customer: Customer) -> None: ...
    async def get(self, dealership_id: str, customer_id: str) -> Customer | None: ...
    async def find_by_contact(self, dealership_id: str, email: str | None, phone: str | None) -> Customer | None: ...
    async def page(self, dealership_id: str, offset: int, limit: int) -> tuple[list[Customer], int]: ...


class ConsentRepository(Protocol):
    """Consent grants; they are kept, never deleted."""

    async def add(self, grant: ConsentGrant) -> None: ...
    async def update(self, grant: ConsentGrant) -> None: ...
    async def get(self, dealership_id: str, consent_id: str) -> ConsentGrant | None: ...
    async def page(
        self, dealership_id: str, offset: int, limit: int, customer_id: str | None = None
    ) -> tuple[list[ConsentGrant], int]: ...


class LeadRepository(Protocol):
    """Leads of a dealership."""

    async def add(self, lead: Lead) -> None: ...
    async def update(self, lead: Lead) -> None: ...
    async def get(self, dealership_id: str, lead_id: str) -> Lead | None: ...
    async def page(
        self, dealership_id: str, offset: int, limit: int, status: str | None = None
    ) -> tuple[list[Lead], int]: ...
    async def find_by_fingerprint(self, dealership_id: str, fingerprint: str, since: datetime) -> Lead | None: ...
    async def find_by_idempotency_key(self, dealership_id: str, key: str, since: datetime) -> Lead | None: ...


class ServiceRepository(Protocol):
    """Repair orders, appointments and service slots."""

    async def add_repair_order(self, ro: RepairOrder) -> None: ...
    async def update_repair_order(self, ro: RepairOrder) -> None: ...
    async def get_repair_order(self, dealership_id: str, ro_id: str) -> RepairOrder | None: ...
    async def list_repair_orders(
        self, dealership_id: str, offset: int, limit: int, status: str | None = None
    ) -> tuple[list[RepairOrder], int]: ...
    async def add_appointment(self, appt: Appointment) -> None: ...
    async def update_appointment(self, appt: Appointment) -> None: ...
    async def get_appointment(self, dealership_id: str, appointment_id: str) -> Appointment | None: ...
    async def list_appointments(
        self, dealership_id: str, start: datetime, end: datetime, offset: int = 0, limit: int = 100
    ) -> tuple[list[Appointment], int]: ...
    async def add_slots(self, slots: Sequence[ServiceSlot]) -> None: ...
    async def list_slots(self, dealership_id: str, start: datetime, end: datetime) -> list[ServiceSlot]: ...
    async def book_slot(self, dealership_id: str, slot_id: str) -> bool:
        """Take one bay in a slot if one is free (atomic); returns False when the slot is full."""
        ...

    async def add_valuation(self, valuation: TradeValuation) -> None: ...


class OutboxRepository(Protocol):
    """Change events in commit order, for eventing and replay."""

    async def append(self, event: ChangeEvent) -> None: ...
    async def list_after(self, after_seq: int, limit: int, dealership_id: str | None = None) -> list[ChangeEvent]: ...
    async def last_seq(self) -> int: ...


class AuditRepository(Protocol):
    """Audit records per company."""

    async def add_many(self, records: Sequence[AuditRecord]) -> None: ...
    async def page(
        self, company_id: str, since: datetime | None = None, limit: int = 1000, after_id: str | None = None
    ) -> list[AuditRecord]: ...
    async def purge_before(self, company_id: str, before: datetime) -> int: ...
    async def count(self, company_id: str | None = None) -> int: ...


class DeliveryRepository(Protocol):
    """Outbound deliveries with retry state."""

    async def add(self, delivery: Delivery) -> None: ...
    async def update(self, delivery: Delivery) -> None: ...
    async def due(self, now: datetime, limit: int) -> list[Delivery]: ...
    async def list_for(self, subject_id: str) -> list[Delivery]: ...


class UnitOfWork(Protocol):
    """Repositories sharing one transaction; committed on clean exit, rolled back on error."""

    tenancy: TenancyRepository
    inventory: InventoryRepository
    customers: CustomerRepository
    consent: ConsentRepository
    leads: LeadRepository
    service: ServiceRepository
    outbox: OutboxRepository
    audit: AuditRepository
    deliveries: DeliveryRepository


class Store(Protocol):
    """Entry point to persistence."""

    def transaction(self) -> AbstractAsyncContextManager[UnitOfWork]:
        """A unit of work; everything inside commits together or not at all."""
        ...

    def read(self) -> AbstractAsyncContextManager[UnitOfWork]:
        """A unit of work that only reads (it may not wait for writers; writing in it is an error)."""
        ...

    async def ping(self) -> bool:
        """Whether the database answers."""
        ...

    async def close(self) -> None:
        """Release connections."""
        ...
