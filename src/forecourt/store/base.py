"""Repository protocols and the unit of work that groups them in one transaction.

Every change to a vehicle, lead, appointment or repair order writes its :class:`ChangeEvent` to the
outbox inside the same transaction (the repositories do it, callers cannot forget).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Protocol

from pydantic import BaseModel

from forecourt.domain.deals import TradeValuation
from forecourt.domain.events import ChangeEvent
from forecourt.domain.feeds import CrmMailRoute, FeedSource
from forecourt.domain.named_queries import NamedQuery, QueryRows
from forecourt.domain.people import ConsentGrant, Customer, Lead
from forecourt.domain.service import Appointment, RepairOrder, ServiceSlot
from forecourt.domain.tenancy import AdapterSetting, Company, Dealership, Member, Policy, Profile
from forecourt.domain.tool_pins import ToolPin
from forecourt.domain.upstreams import Registered, UpstreamSpec
from forecourt.domain.vehicle import CardPage, Facets, InventoryQuery, SearchPage, Vehicle
from forecourt.domain.workflows import DefinitionRecord, RunRecord
from forecourt.store.vectors import VectorRepository

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt
    from a2a.server.context import ServerCallContext
    from a2a.server.tasks import PushNotificationConfigStore

    from forecourt.domain.knowledge import ChunkFilter, ChunkRow


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
    toolset: str | None = None
    """The MCP toolset callers with this key are offered (overrides the member's; ``None``: the member's)."""


class OperatorKeyRecord(BaseModel):
    """A stored operator key (prefix and keyed hash only); operator keys act above every company."""

    prefix: str
    key_hash: str
    name: str
    created_at: datetime
    revoked_at: datetime | None = None


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
    async def get_profile(self, profile_id: str) -> Profile | None: ...
    async def delete_dealership(self, dealership_id: str) -> None:
        """Delete a rooftop; ``TenantInUse`` when data still refers to it."""
        ...

    async def delete_member(self, company_id: str, member_id: str) -> None:
        """Delete a member and its API keys."""
        ...

    async def delete_adapter_setting(self, company_id: str, adapter_id: str) -> None: ...
    async def delete_company(self, company_id: str) -> None:
        """Delete a company with no rooftops left; ``TenantInUse`` when data still refers to it."""
        ...

    async def add_operator_key(self, record: OperatorKeyRecord) -> bool:
        """Store an operator key; False when its name is taken (the bootstrap key is made once)."""
        ...

    async def get_operator_key(self, prefix: str) -> OperatorKeyRecord | None: ...
    async def list_operator_keys(self) -> list[OperatorKeyRecord]: ...
    async def revoke_operator_key(self, prefix: str, at: datetime) -> bool: ...


class InventoryRepository(Protocol):
    """A dealership's vehicles."""

    async def get(self, dealership_id: str, vehicle_id: str) -> Vehicle | None: ...
    async def get_by_vin(self, dealership_id: str, vin: str) -> Vehicle | None: ...
    async def get_by_stock(self, dealership_id: str, stock: str) -> Vehicle | None: ...
    async def search(self, query: InventoryQuery) -> SearchPage: ...
    async def search_cards(self, query: InventoryQuery) -> CardPage:
        """:meth:`search` answering each unit's card only (the same units, order and total)."""
        ...

    async def facets(self, query: InventoryQuery) -> Facets: ...
    async def upsert(self, vehicle: Vehicle) -> bool:
        """Insert or update by (dealership, VIN); returns True when created. Writes an outbox event."""
        ...

    async def mark_unavailable_except(self, dealership_id: str, keep_vins: set[str], at: datetime) -> int:
        """Mark every offerable vehicle whose VIN is not in ``keep_vins`` as removed; returns how many."""
        ...

    async def get_many_by_vin(
        self, dealership_id: str, vins: Collection[str], *, lock: bool = False
    ) -> dict[str, Vehicle]:
        """The dealership's vehicles with these VINs, keyed by VIN.

        With ``lock``, the transaction first becomes the outbox writer (which every vehicle writer must be),
        so the answer stays true until it commits: call it so before :meth:`write_import`.
        """
        ...

    async def write_import(
        self, created: Sequence[Vehicle], changed: Sequence[Vehicle], verified: Sequence[str], at: datetime
    ) -> None:
        """Write one batch of a feed import in few round trips, with the events :meth:`upsert` would write.

        ``created`` are new vehicles (``created`` events), ``changed`` replace stored ones with the same id
        (``updated`` events), ``verified`` are ids of unchanged vehicles whose ``last_verified_at`` becomes
        ``at`` (no event).
        """
        ...

    async def offerable_vins(self, dealership_id: str) -> set[str]:
        """VINs of the dealership's vehicles that are on offer (what a full import may remove)."""
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
    async def sharing_contact(
        self, dealership_id: str, email: str | None, phone: str | None, limit: int = 20
    ) -> list[Customer]: ...
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
    async def seqs_between(self, after_seq: int, upto_seq: int) -> list[int]:
        """The ``seq`` of every event with ``after_seq < seq <= upto_seq``, in order (the events are not read)."""
        ...

    async def last_seq(self) -> int: ...


class AuditRepository(Protocol):
    """Audit records per company."""

    async def add_many(self, records: Sequence[AuditRecord]) -> None: ...
    async def page(
        self, company_id: str | None, since: datetime | None = None, limit: int = 1000, after_id: str | None = None
    ) -> list[AuditRecord]:
        """A company's records, oldest first; ``None``: the platform's (calls that concerned no one company)."""
        ...

    async def purge_before(self, company_id: str, before: datetime) -> int: ...
    async def count(self, company_id: str | None = None) -> int: ...


class DeliveryRepository(Protocol):
    """Outbound deliveries with retry state."""

    async def add(self, delivery: Delivery) -> None: ...
    async def update(self, delivery: Delivery) -> None: ...
    async def due(self, now: datetime, limit: int) -> list[Delivery]: ...
    async def has_due(self, now: datetime) -> bool:
        """Whether any delivery is due at ``now`` (nothing is locked or read beyond that)."""
        ...

    async def list_for(self, subject_id: str) -> list[Delivery]: ...
    async def backlog(self) -> dict[str, int]: ...


class KnowledgeRepository(Protocol):
    """Knowledge documents and chunks, their vectors, full-text and vector search, and the embedding cache."""

    async def get_document(self, dealership_id: str, document_id: str) -> Mapping[str, Any] | None: ...
    async def list_documents(self, dealership_id: str) -> list[Mapping[str, Any]]: ...
    async def replace_document(self, document: Mapping[str, Any], chunks: Sequence[Mapping[str, Any]]) -> None:
        """Insert or overwrite a document and replace all of its chunks (their vectors go with them)."""
        ...

    async def delete_document(self, dealership_id: str, document_id: str) -> bool: ...
    async def put_vectors(
        self, dealership_id: str, model: str, rows: Sequence[tuple[str, npt.NDArray[np.float32]]]
    ) -> None: ...
    async def chunks_missing_vectors(self, dealership_id: str, model: str, limit: int) -> list[tuple[str, str, str]]:
        """``(chunk_id, heading, text)`` of the dealership's chunks that have no ``model`` vector yet."""
        ...

    async def vector_search(
        self, dealership_id: str, model: str, query: npt.NDArray[np.float32], limit: int, flt: ChunkFilter
    ) -> list[tuple[str, float]]:
        """``(chunk_id, cosine similarity)`` of the nearest chunks, best first."""
        ...

    async def text_search(
        self, dealership_id: str, terms: Sequence[str], limit: int, flt: ChunkFilter
    ) -> list[tuple[str, float]]:
        """``(chunk_id, rank score)`` of chunks matching any of ``terms``, best first (higher is better)."""
        ...

    async def chunk_rows(self, dealership_id: str, chunk_ids: Iterable[str]) -> dict[str, ChunkRow]: ...
    async def cached_vectors(
        self, scope: str, model: str, digests: Sequence[str]
    ) -> dict[str, tuple[npt.NDArray[np.float32], int]]: ...
    async def cache_vectors(
        self, scope: str, model: str, rows: Sequence[tuple[str, npt.NDArray[np.float32], int]], now: datetime
    ) -> None: ...
    async def prune_cache(self, before: datetime) -> int: ...


class WorkflowRepository(Protocol):
    """Workflow definitions (versioned per company), runs and rotation counters."""

    async def add_definition(
        self,
        *,
        company_id: str,
        workflow_id: str,
        process_id: str,
        name: str,
        digest: str,
        bpmn: str,
        created_by: str | None,
        now: datetime,
    ) -> DefinitionRecord:
        """Store a new version (1 + the latest); a concurrent upload of the same id gets ``Conflict``."""
        ...

    async def get_definition(
        self, company_id: str, workflow_id: str, version: int | None
    ) -> DefinitionRecord | None: ...
    async def list_definitions(self, company_id: str) -> list[DefinitionRecord]: ...
    async def insert_run(self, record: RunRecord) -> None: ...
    async def get_run(self, run_id: str) -> RunRecord | None: ...
    async def save_run(self, record: RunRecord) -> bool:
        """Write ``record`` as the next revision unless another writer did first; False when it lost."""
        ...

    async def list_runs(self, dealership_id: str, *, status: str | None, limit: int) -> list[RunRecord]: ...
    async def resumable_runs(self, now: datetime, limit: int = 100) -> list[RunRecord]: ...
    async def next_in_rotation(self, dealership_id: str, pool: str) -> int: ...


class UpstreamRepository(Protocol):
    """Upstream MCP server definitions per company."""

    async def list(self, company_id: str | None = None) -> list[Registered]: ...
    async def get(self, company_id: str, upstream_id: str) -> Registered | None: ...
    async def upsert(self, company_id: str, spec: UpstreamSpec, *, operator: bool, now: datetime) -> bool:
        """Insert or replace an upstream; True when it was new."""
        ...

    async def delete(self, company_id: str, upstream_id: str) -> bool: ...
    async def pins(self, company_id: str, upstream_id: str) -> dict[str, ToolPin]:
        """The pinned tools of one upstream (domain/tool_pins.py), by the upstream's own tool name."""
        ...

    async def save_pins(self, company_id: str, upstream_id: str, pins: dict[str, ToolPin], *, now: datetime) -> None:
        """Replace the pinned tools of one upstream."""
        ...


class NamedQueryRepository(Protocol):
    """Named query definitions per company, and running them over the dealer tables."""

    async def get(self, company_id: str, query_id: str) -> NamedQuery | None: ...
    async def list(self, company_id: str) -> list[dict[str, Any]]: ...
    async def upsert(self, company_id: str, query: NamedQuery, now: datetime) -> bool: ...
    async def delete(self, company_id: str, query_id: str) -> bool: ...
    def check(self, query: NamedQuery, params: Mapping[str, Any], *, now: datetime) -> None:
        """Compile ``query`` with ``params`` without running it (``InvalidQuery``/``InvalidQueryParams``)."""
        ...

    async def run(
        self, query: NamedQuery, params: Mapping[str, Any], *, dealership_id: str, now: datetime, timezone: str
    ) -> QueryRows:
        """Run ``query`` with bound ``params``, always scoped to ``dealership_id``."""
        ...


class AapRecordRepository(Protocol):
    """The AAP agent's push subscriptions (lead/appointment -> A2A task) and its outbox cursors."""

    async def subscribe(self, subject_ids: list[str], task_id: str, dealership_id: str, at: datetime) -> None: ...
    async def tasks_for(self, subject_id: str) -> list[str]: ...
    async def cursor(self, name: str) -> int | None: ...
    async def set_cursor(self, name: str, seq: int) -> None:
        """Move the cursor forward (never backwards)."""
        ...


class FeedSourceRepository(Protocol):
    """Dealerships' scheduled inventory feeds, with the lease that lets one replica at a time pull each."""

    async def upsert(self, source: FeedSource) -> None: ...
    async def get(self, dealership_id: str) -> FeedSource | None: ...
    async def list_all(self, dealership_ids: Sequence[str] | None = None) -> list[FeedSource]: ...
    async def delete(self, dealership_id: str) -> bool: ...
    async def due(self, now: datetime, limit: int) -> list[str]: ...
    async def claim(
        self, dealership_id: str, owner: str, now: datetime, lease: timedelta, *, force: bool = False
    ) -> bool:
        """Lease a due (or, with ``force``, any unleased) feed to ``owner``; True for exactly one claimant."""
        ...

    async def finish(
        self,
        dealership_id: str,
        owner: str,
        *,
        status: str,
        report: dict[str, Any],
        at: datetime,
        next_run_at: datetime,
    ) -> bool:
        """Record a run and release the lease if ``owner`` still holds it."""
        ...


class CrmMailRepository(Protocol):
    """Per dealership: the CRM lead inboxes that get ADF leads by e-mail, and how to reach their server."""

    async def upsert(self, route: CrmMailRoute, at: datetime) -> None: ...
    async def get(self, dealership_id: str) -> CrmMailRoute | None: ...
    async def delete(self, dealership_id: str) -> bool: ...


class UnitOfWork(Protocol):
    """Repositories sharing one transaction; committed on clean exit, rolled back on error."""

    @property
    def tenancy(self) -> TenancyRepository: ...
    @property
    def inventory(self) -> InventoryRepository: ...
    @property
    def customers(self) -> CustomerRepository: ...
    @property
    def consent(self) -> ConsentRepository: ...
    @property
    def leads(self) -> LeadRepository: ...
    @property
    def service(self) -> ServiceRepository: ...
    @property
    def outbox(self) -> OutboxRepository: ...
    @property
    def audit(self) -> AuditRepository: ...
    @property
    def deliveries(self) -> DeliveryRepository: ...
    @property
    def feeds(self) -> FeedSourceRepository: ...
    @property
    def crm_mail(self) -> CrmMailRepository: ...
    @property
    def vectors(self) -> VectorRepository: ...

    @property
    def knowledge(self) -> KnowledgeRepository: ...
    @property
    def workflows(self) -> WorkflowRepository: ...
    @property
    def upstreams(self) -> UpstreamRepository: ...
    @property
    def named_queries(self) -> NamedQueryRepository: ...
    @property
    def aap_records(self) -> AapRecordRepository: ...


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

    async def bulk_load_vehicles(
        self,
        vehicles: Iterable[Vehicle],
        *,
        dealership_id: str | None = None,
        batch_size: int = 5_000,
        progress: Callable[[int], None] | None = None,
    ) -> int:
        """Insert many vehicles fast: ``batch_size`` per transaction, no change events; returns how many were offered.

        Vehicles already stored (same id, or same dealership and VIN) are left as they are. With
        ``dealership_id``, every vehicle must belong to that dealership (``InvalidParams`` otherwise;
        batches before the offending one stay written). ``progress(done)`` is called after each batch.
        """
        ...

    def push_config_store(self, owner_resolver: Callable[[ServerCallContext], str]) -> PushNotificationConfigStore:
        """The A2A push-notification config store, kept where every replica sees it."""
        ...

    async def close(self) -> None:
        """Release connections."""
        ...
