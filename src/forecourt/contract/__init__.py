"""The contract between actions and adapters: what an action is, what runs it, and what it runs with.

``Action`` describes one operation (MCP ``tools/list``, the AAP skills, the contract manifest and the REST
endpoints are generated from these descriptions; the gateway uses them to validate, authorize, rate-limit, cache
and route). An adapter or handler runs it with an ``ExecutionContext`` (who is calling, for which dealership, with
which short-lived credential) and answers an ``AdapterResult``; the ``Catalogue`` holds the actions with what runs
them. :mod:`.paging` is the contract of every list and search action (``cursor``, ``limit``, ``{items,
next_cursor}``), which both actions and adapters answer.

Actions, adapters, the gateway and the surfaces all speak this vocabulary, so it sits below all of them and the
store, above ``domain`` only (the import-linter contracts in pyproject.toml; docs/architecture.md).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Hashable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal, Protocol

from forecourt.domain.tenancy import Member

if TYPE_CHECKING:
    from forecourt.domain.tenancy import Dealership
    from forecourt.settings import Settings
    from forecourt.store.base import Store

AuthMethod = Literal["api_key", "oidc", "mtls", "anonymous", "internal"]
OPERATOR_SUBJECT = "operator"
"""The subject of the operator principal (the command line, or an operator key: ``gateway/auth/operator.py``)."""


@dataclass(frozen=True)
class Principal:
    """An authenticated caller."""

    method: AuthMethod
    company_id: str | None
    member_id: str | None
    profile_id: str | None = None
    member: Member | None = None
    scopes: frozenset[str] = frozenset()
    dealership_ids: frozenset[str] = frozenset()
    expires_at: datetime | None = None
    key_prefix: str | None = None
    subject: str | None = None
    client_address: str | None = None

    @property
    def agent_id(self) -> str | None:
        """``profiles/{profileId}/companies/{companyId}/team/{memberId}`` for members, else ``None``."""
        if self.member is not None:
            return self.member.agent_id
        return None

    @classmethod
    def of_member(cls, member: Member, method: AuthMethod = "api_key", **more: Any) -> Principal:
        """``member`` with all its own scopes and rooftops (a credential that narrows nothing); ``more`` sets the
        rest (``subject``, ``expires_at``, ``client_address``, ...)."""
        return cls(
            method=method,
            company_id=member.company_id,
            member_id=member.id,
            profile_id=member.profile_id,
            member=member,
            scopes=frozenset(member.scopes),
            dealership_ids=frozenset(member.dealership_ids),
            **more,
        )

    @property
    def is_operator(self) -> bool:
        """Whether this is the operator (command line, or an operator key)."""
        return self.method == "internal" and self.subject == OPERATOR_SUBJECT

    @property
    def anonymous(self) -> bool:
        """Whether the caller presented no credential (public AAP skills only)."""
        return self.method == "anonymous"

    @property
    def rate_key(self) -> str:
        """The identity rate limits count against."""
        if self.member_id:
            return f"{self.company_id}/{self.member_id}"
        return f"anon/{self.client_address or 'unknown'}"


@dataclass(frozen=True)
class IssuedCredential:
    """A short-lived credential for one adapter call; never logged, never returned, never cached."""

    kind: Literal["bearer", "api_key", "basic", "none"]
    value: str = ""
    expires_at: datetime | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    provider: str = ""
    """Which provider type issued it (``google``, ``jwt``, ``secret``; set by the broker)."""

    def __repr__(self) -> str:
        return f"IssuedCredential(kind={self.kind!r}, value='***', expires_at={self.expires_at!r})"


ActionType = Literal["tool.run", "model.invoke", "db.query", "workflow.run"]


class Invoker(Protocol):
    """Calls another action through the gateway as the same caller (workflows, composite actions)."""

    async def __call__(self, action: str, payload: Mapping[str, Any]) -> Any: ...


@dataclass
class ExecutionContext:
    """What an adapter gets besides the payload: who, where, and the short-lived credential it may use."""

    action: Action
    principal: Principal
    dealership_id: str | None
    company_id: str | None
    store: Store
    settings: Settings
    now: datetime
    trace_id: str
    credential: IssuedCredential | None = None
    adapter_config: Mapping[str, Any] = field(default_factory=dict)
    invoke: Invoker | None = None
    idempotency_key: str | None = None
    dealership: Dealership | None = None
    """The addressed dealership as the gateway resolved it for this call (the same copy its cache key used)."""
    session_id: str | None = None
    """The caller's session (seed 001 envelope ``caller.sessionId``), for runtimes that keep conversation memory."""
    payload_form: Hashable | None = None
    """The payload as the gateway froze it once for the call (``domain/frozen.py``): the key of any memo of work done
    on it (``None``: not frozen, e.g. a handler called directly)."""


@dataclass
class AdapterResult:
    """An adapter's answer: the output, its seed-001 result type and metadata (tokens, model, total...)."""

    output: Any
    result_type: str = "tool.result"
    metadata: dict[str, Any] = field(default_factory=dict)


class Adapter(Protocol):
    """Runs actions of one kind (seed 001 §5: ``execute(payload, config) -> result``)."""

    id: str

    async def execute(self, payload: Mapping[str, Any], context: ExecutionContext) -> AdapterResult: ...


Handler = Callable[[Mapping[str, Any], ExecutionContext], Awaitable[AdapterResult]]


@dataclass(frozen=True)
class Action:
    """One operation in the catalogue."""

    name: str
    type: ActionType
    title: str
    description: str
    input_schema: Mapping[str, Any]
    output_schema: Mapping[str, Any] | None
    adapter: str
    scope: str
    side_effect: bool = False
    destructive: bool = False
    idempotent: bool = True
    cacheable: bool = False
    cache_ttl_s: float = 60.0
    cache_follows_changes: bool = False
    """Cached results are keyed by the dealership's change generation (``forecourt.gateway.freshness``): a
    change to its data makes them unreachable at once in this process and within one outbox poll on the
    others; while changes cannot be followed the action runs uncached. ``cache_ttl_s`` is the safety net."""
    pii: bool = True
    timeout_s: float = 10.0
    dealer_scoped: bool = True
    anonymous_allowed: bool = False
    public: bool = False
    """Public metadata (agent cards): anyone may read it, with or without a credential, for any dealership."""
    version: str = "v1"
    domain: str = ""
    result_type: str = "tool.result"
    tags: tuple[str, ...] = ()
    store_reads_only: bool = False
    """The adapter only reads the store for this action: it gets a read-only view (no write lock on SQLite)."""
    rate_budget: str | None = None
    """The action whose per-action rate limit this one counts against (its twin on another door, e.g.
    ``aap.inventory.search`` against ``inventory.search``); ``None``: its own name."""
    owner_company_id: str | None = None
    """Set on actions one company brought (its upstream MCP servers' tools): nobody else may see or call them."""
    example: Mapping[str, Any] | None = None
    """The arguments of one typical call, shown to models after the description as ``Example: {...}`` (every MCP
    tool has one; a test validates it against the action's input schema)."""
    also_types: tuple[ActionType, ...] = ()
    """Other seed 001 ``action.type`` values a caller may name for this action (seed 001 §8 A sends
    ``embedding.create`` as ``tool.run``; the catalogue types it ``model.invoke``)."""
    third_party_text: tuple[str, ...] = ()
    """Kinds of text in its output that neither Forecourt nor the caller wrote (``upstream_tool_result``...): such
    results are marked as untrusted on every door (gateway/provenance.py, which also lists Forecourt's own)."""

    @property
    def budget(self) -> str:
        """The name its per-action rate limit is counted under."""
        return self.rate_budget or self.name

    @property
    def addressed_separately(self) -> bool:
        """Whether the dealership is named beside the payload rather than in it.

        Dealer-scoped actions whose payload is fixed by another protocol (the AAP skills) have no
        ``dealership_id`` property; a ``dealership_id`` sent with them addresses the call instead.
        """
        properties = self.input_schema.get("properties")
        return self.dealer_scoped and isinstance(properties, Mapping) and "dealership_id" not in properties

    @property
    def read_only(self) -> bool:
        """Whether the action never changes anything."""
        return not self.side_effect


class Catalogue:
    """Actions by name, each with the handler that runs it (or the adapter that runs a family of them)."""

    def __init__(self) -> None:
        self._actions: dict[str, Action] = {}
        self._adapters: dict[str, Adapter] = {}
        self._handlers: dict[str, Handler] = {}
        self.version = 0
        """Moves on with every change of the set of actions (indexes built over them know when to rebuild)."""

    def add(self, action: Action, handler: Handler | None = None) -> None:
        """Register an action (names are unique) and, for an action defined with its code, its handler."""
        if action.name in self._actions:
            raise ValueError(f"duplicate action {action.name}")
        self._actions[action.name] = action
        self.version += 1
        if handler is not None:
            self._handlers[action.name] = handler

    def add_adapter(self, adapter: Adapter) -> None:
        """Register (or replace) the adapter with ``adapter.id``."""
        self._adapters[adapter.id] = adapter

    def get(self, name: str) -> Action | None:
        """The action called ``name``, if any."""
        return self._actions.get(name)

    def adapter_for(self, action: Action) -> Adapter | None:
        """The adapter that runs ``action``."""
        return self._adapters.get(action.adapter)

    def adapter_for_id(self, adapter_id: str) -> Adapter | None:
        """The adapter registered as ``adapter_id``."""
        return self._adapters.get(adapter_id)

    def handler_for(self, action: Action) -> Handler | None:
        """What runs ``action``: its own handler, else its adapter's ``execute``."""
        handler = self._handlers.get(action.name)
        if handler is not None:
            return handler
        adapter = self._adapters.get(action.adapter)
        return adapter.execute if adapter is not None else None

    def remove_where(self, predicate: Callable[[Action], bool]) -> None:
        """Drop actions matching ``predicate`` (used when upstream tool lists change)."""
        for name in [n for n, a in self._actions.items() if predicate(a)]:
            del self._actions[name]
            self._handlers.pop(name, None)
            self.version += 1

    def __iter__(self) -> Iterator[Action]:
        return iter(sorted(self._actions.values(), key=lambda a: a.name))

    def all(self) -> list[Action]:
        """Every action, sorted by name."""
        return sorted(self._actions.values(), key=lambda a: a.name)

    def __len__(self) -> int:
        return len(self._actions)
