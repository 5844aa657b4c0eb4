"""``Gateway.invoke``: the one pipeline every call from every front door passes (seed 001 §4).

authenticate → check claims → validate → resolve dealership → authorize → rate-limit → idempotency
→ cache → inject credentials → adapter (timeout, bulkhead) → redact → audit / metrics / trace.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import dataclasses
import logging
import os
import time
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from datetime import UTC, datetime
from typing import Any

from opentelemetry import trace
from opentelemetry.trace import Status, StatusCode

from forecourt.contract import Action, AdapterResult, Catalogue, ExecutionContext
from forecourt.domain.frozen import with_entry
from forecourt.domain.tenancy import Dealership
from forecourt.errors import (
    ForecourtError,
    InternalError,
    InvalidParams,
    TenancyDenied,
    Timeout,
    Unauthorized,
    UnknownAction,
    UpstreamCredentialRejected,
)
from forecourt.gateway.adapter_runtime import AdapterConfigSource, Bulkhead, check_configured, positive
from forecourt.gateway.approvals import ApprovalGate
from forecourt.gateway.audit import AuditWriter
from forecourt.gateway.audit_record import CallState, audit_member, call_record
from forecourt.gateway.backends.authority import read_once_per_call
from forecourt.gateway.base import (
    Authenticator,
    CredentialProvider,
    IdempotencyStore,
    Invocation,
    IssuedCredential,
    Outcome,
    Principal,
    RateDecision,
    RateLimiter,
    ResultCache,
)
from forecourt.gateway.client_address import ClientAddresses
from forecourt.gateway.credentials.per_call import call_scope, scope_for
from forecourt.gateway.errors import StoreUnavailable
from forecourt.gateway.freshness import ChangeGenerations
from forecourt.gateway.limits import LimitPlan
from forecourt.gateway.number_bounds import check_number_bounds
from forecourt.gateway.policy import Decision, TenancyCache, decide
from forecourt.gateway.protections import Protections, owner_of
from forecourt.gateway.redact import redact_result
from forecourt.gateway.store_faults import STORE_UNAVAILABLE
from forecourt.gateway.stored_results import StoredResults
from forecourt.gateway.telemetry import REQUEST_NOTE, CallSeries, CurrentSpan, Metrics, parent_context
from forecourt.gateway.validation import SchemaValidator, accept_single_strings
from forecourt.settings import Settings
from forecourt.store.audit_context import PendingAudit, pending_audit
from forecourt.store.base import AuditRecord, Store
from forecourt.store.views import ReadOnlyStore

logger = logging.getLogger(__name__)
_SERIES_KEPT = 4096  # metric series remembered per gateway (the least recently used let go)


__all__ = ["AdapterConfigSource", "Bulkhead", "Gateway"]


class Gateway:
    """Runs invocations through every stage; the only place that decides who may do what."""

    def __init__(
        self,
        *,
        settings: Settings,
        store: Store,
        catalogue: Catalogue,
        authenticator: Authenticator,
        rate_limiter: RateLimiter,
        cache: ResultCache,
        idempotency: IdempotencyStore,
        audit: AuditWriter,
        metrics: Metrics,
        tracer: trace.Tracer,
        credentials: CredentialProvider | None = None,
        adapter_configs: AdapterConfigSource | None = None,
        limits: LimitPlan | None = None,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
        freshness: ChangeGenerations | None = None,
    ) -> None:
        self.settings = settings
        self.store = store
        self.catalogue = catalogue
        self.authenticator = authenticator
        self.rate_limiter = rate_limiter
        self.cache = cache
        self.idempotency = idempotency
        self.stored = StoredResults(cache, idempotency)
        self.audit = audit
        self.metrics = metrics
        self.tracer = tracer
        self.credentials = credentials
        self.adapter_configs = adapter_configs or AdapterConfigSource()
        self.limits = limits or LimitPlan.from_settings(settings)
        self.tenancy = TenancyCache(store)
        self.client_addresses = ClientAddresses(settings.trusted_proxies)
        self._read_view = ReadOnlyStore(store)
        self.tenancy.on_invalidate.append(self.adapter_configs.invalidate)
        self.validator = SchemaValidator()
        self.clock = clock
        # Without a dispatcher feeding it the generations are never live: change-tracked actions run uncached.
        self.freshness = freshness or ChangeGenerations()
        self.protect = Protections(self.tenancy, store, self.adapter_configs, metrics.registry)
        self.approvals: ApprovalGate | None = None
        """Holds agents' calls that a policy's ``require_approval`` names (wired by bootstrap)."""
        self._bulkheads: dict[str, Bulkhead] = {}
        # Each call's metric series by its labels (prometheus-client's ``labels`` checks and locks every time).
        self._series = CallSeries(metrics, _SERIES_KEPT)
        self.in_flight = 0
        self._idle = asyncio.Event()
        self._idle.set()

    # ------------------------------------------------------------------ public API

    async def invoke(self, inv: Invocation) -> Outcome:
        """Run one invocation; raises a :class:`ForecourtError` (with ``trace_id`` set) when it fails.

        Its audit record is on disk (the journal's shared fsync) before the answer or the error leaves here.
        """
        try:
            outcome = await self._invoke(inv)
        except ForecourtError:
            await self.audit.settle()
            raise
        await self.audit.settle()
        return outcome

    async def _invoke(self, inv: Invocation) -> Outcome:
        ctx, caller_trace = parent_context(inv.traceparent, inv.trace_id)
        self.in_flight += 1
        self._idle.clear()
        try:
            with read_once_per_call(), CurrentSpan(self.tracer, "gateway.invoke", ctx) as span:
                span.set_attribute("forecourt.action", inv.action[:128])
                trace_id = self._trace_id(inv, span, caller_trace)
                call = CallState(inv=inv, trace_id=trace_id, started=time.perf_counter(), recording=span.is_recording())
                try:
                    outcome = await self._run(call)
                except ForecourtError as exc:
                    self._fail(call, exc, span)
                    raise
                except asyncio.CancelledError:
                    # The client went away (or the server is stopping): record it as such, not as a success.
                    call.status, call.error_code, call.result_class = 499, "cancelled", "cancelled"
                    raise
                except STORE_UNAVAILABLE as exc:
                    # A database restart is the caller's cue to retry, not an internal error.
                    logger.warning("database unavailable in action %s: %s", inv.action[:128], type(exc).__name__)
                    unavailable = StoreUnavailable(details={"retry_after": 1})
                    self._fail(call, unavailable, span)
                    raise unavailable from exc
                except Exception as exc:  # top of the pipeline: nothing internal leaves it
                    logger.exception("unhandled error in action %s (trace %s)", inv.action[:128], call.trace_id)
                    wrapped = InternalError()
                    self._fail(call, wrapped, span)
                    raise wrapped from exc
                else:
                    outcome.trace_id = call.trace_id
                    return outcome
                finally:
                    self._finish(call)
        finally:
            self.in_flight -= 1
            if self.in_flight == 0:
                self._idle.set()

    async def drained(self) -> None:
        """Wait until no invocation is in flight."""
        await self._idle.wait()

    async def principal_for(self, inv: Invocation) -> Principal:
        """Authenticate the invocation's credentials (used by surfaces that list before they call)."""
        return await self._authenticate(inv, None)

    async def allowed_actions(self, principal: Principal, dealership_id: str | None) -> list[Action]:
        """The actions ``principal`` may call at ``dealership_id`` (the same decision as a call)."""
        dealership = await self.tenancy.dealership(dealership_id) if dealership_id else None
        if dealership_id is None and len(principal.dealership_ids) == 1:
            dealership = await self.tenancy.dealership(next(iter(principal.dealership_ids)))
        owner = principal.company_id or (dealership.company_id if dealership else None)
        policies = await self.tenancy.policies(owner)
        allowed: list[Action] = []
        for action in self.catalogue.all():
            target = dealership
            if action.dealer_scoped and target is None and principal.dealership_ids:
                target = await self.tenancy.dealership(sorted(principal.dealership_ids)[0])
            if decide(action, principal, dealership=target, policies=policies).allowed:
                allowed.append(action)
        return allowed

    # ------------------------------------------------------------------ stages

    async def _run(self, call: CallState) -> Outcome:
        inv = call.inv
        action = self.catalogue.get(inv.action)
        if action is None:
            raise UnknownAction(details={"action": inv.action[:100]})
        call.action = action
        if inv.claimed_type is not None and inv.claimed_type not in (action.type, *action.also_types):
            raise InvalidParams("action.type does not match the action.", details={"expected": action.type})
        with self._span(call, "gateway.authenticate"):
            principal = await self._authenticate(inv, action)
        call.principal = principal
        call.company_id = principal.company_id
        if (
            call.company_id is None
            and principal.method == "internal"
            and isinstance(inv.payload.get("company_id"), str)
        ):
            # The operator acts above companies: its admin calls are audited under the company they concern.
            call.company_id = str(inv.payload["company_id"])[:128]
        self._check_claims(inv, principal)
        payload = accept_single_strings(action.input_schema, dict(inv.payload))
        inv = call.inv = self._addressed(action, payload, inv)
        call.freeze(payload)
        with self._span(call, "gateway.validate"):
            self.validator.validate(action.input_schema, payload, form=call.form)
            check_number_bounds(payload)
        with self._span(call, "gateway.authorize"):
            dealership = await self._resolve_dealership(action, payload, principal, inv)
            call.dealership_id = dealership.id if dealership else None
            if action.dealer_scoped and dealership is not None:  # the payload now names it: so does its form
                call.form = with_entry(call.form, "dealership_id", dealership.id)
            if call.company_id is None and dealership is not None:
                # Anonymous calls are audited (and exported) under the company whose dealer agent they reached.
                call.company_id = dealership.company_id
            await self._authorize(action, payload, principal, dealership, inv, call)
        with self._span(call, "gateway.rate_limit"):
            decision = await self._rate_limit(action, principal, call)
        await self.protect.before(call, action, principal, dealership)  # budgets; a restricted session's refusals
        outcome = await self._execute_guarded(call, action, payload, principal, dealership, decision)
        return await self.protect.after(call, action, outcome, principal, dealership)  # provenance, taint, usage

    @staticmethod
    def _addressed(action: Action, payload: dict[str, Any], inv: Invocation) -> Invocation:
        """Take ``dealership_id`` out of a payload whose own schema has none (the AAP skills): on every door it
        addresses the call, as ``/dealers/{id}/...`` does on A2A, and the payload stays the protocol's own."""
        if "dealership_id" not in payload or not action.addressed_separately:
            return inv
        addressed = payload.pop("dealership_id")
        if not isinstance(addressed, str):
            raise InvalidParams("dealership_id must be a string.", details={"field": "dealership_id"})
        if inv.dealership_id is not None and inv.dealership_id != addressed:
            raise InvalidParams("dealership_id does not match the addressed dealership.")
        return dataclasses.replace(inv, dealership_id=addressed, payload=dict(payload))

    def _trace_id(self, inv: Invocation, span: trace.Span, caller_trace: bool) -> str:
        """The trace id the response and the audit record carry.

        The span's (W3C) trace id when there is one, which continues an incoming ``traceparent`` or a
        32-hex ``caller.traceId``; a caller's trace id of another shape is kept as given (it is then
        recorded on the span as ``forecourt.caller_trace_id``).
        """
        span_ctx = span.get_span_context()
        if inv.trace_id and not caller_trace and not inv.traceparent:
            if span.is_recording():
                span.set_attribute("forecourt.caller_trace_id", inv.trace_id[:128])
            return inv.trace_id[:128]
        if span_ctx.is_valid:
            return format(span_ctx.trace_id, "032x")
        return (inv.trace_id or os.urandom(16).hex())[:128]

    def _span(self, call: CallState, name: str) -> AbstractContextManager[Any]:
        """A child span for one stage, or nothing when the call's trace is not being recorded."""
        if not call.recording:
            return contextlib.nullcontext()
        return CurrentSpan(self.tracer, name)

    async def _authenticate(self, inv: Invocation, action: Action | None) -> Principal:
        if inv.principal is not None:
            return inv.principal
        creds = inv.credentials
        has_creds = bool(creds.bearer or creds.client_cert_pem or creds.forwarded_cert)
        if not has_creds:
            if inv.anonymous_dealership is not None or (action is not None and action.public):
                client = self.client_addresses.of(creds)
                return Principal(method="anonymous", company_id=None, member_id=None, client_address=client)
            raise Unauthorized()
        principal = await self.authenticator.authenticate(creds, inv.company_context)
        if principal is None:
            raise Unauthorized()
        return principal

    def _check_claims(self, inv: Invocation, principal: Principal) -> None:
        if principal.anonymous or principal.method == "internal":
            return
        if inv.claimed_agent_id is not None and inv.claimed_agent_id != principal.agent_id:
            raise Unauthorized("caller.agentId does not match the authenticated identity.")
        if inv.company_context is not None and inv.company_context != principal.company_id:
            raise TenancyDenied("companyContext does not match the authenticated identity.")

    async def _resolve_dealership(
        self, action: Action, payload: dict[str, Any], principal: Principal, inv: Invocation
    ) -> Dealership | None:
        explicit = payload.get("dealership_id")
        target = inv.dealership_id or inv.anonymous_dealership
        if isinstance(explicit, str) and target is not None and explicit != target:
            raise InvalidParams("dealership_id does not match the addressed dealership.")
        chosen = explicit if isinstance(explicit, str) else target
        if chosen is None and action.dealer_scoped:
            if len(principal.dealership_ids) == 1:
                chosen = next(iter(principal.dealership_ids))
            else:
                raise InvalidParams(
                    "dealership_id is required: this credential covers several dealerships.",
                    details={"errors": [{"path": "/dealership_id", "rule": "required"}]},
                )
        if chosen is None:
            return None
        dealership = await self.tenancy.dealership(chosen)
        if dealership is None:
            # Indistinguishable from "not yours", so ids cannot be probed.
            raise TenancyDenied()
        if action.dealer_scoped:
            payload["dealership_id"] = dealership.id
        return dealership

    async def _authorize(
        self,
        action: Action,
        payload: Mapping[str, Any],
        principal: Principal,
        dealership: Dealership | None,
        inv: Invocation,
        call: CallState,
    ) -> None:
        policies = await self.tenancy.policies(owner_of(principal, dealership))
        decision: Decision = decide(
            action,
            principal,
            dealership=dealership,
            policies=policies,
            payload=payload,
            allow_side_effects=inv.allow_side_effects,
        )
        if not decision.allowed:
            call.extra["denial"] = decision.reason
            assert decision.error is not None
            raise decision.error

    async def _rate_limit(self, action: Action, principal: Principal, call: CallState) -> RateDecision | None:
        owner = principal.company_id or call.company_id  # an anonymous call counts against the agent's company
        policies = await self.tenancy.policies(owner)
        rules = tuple(self.limits.rules_for(action, principal, policies, owner))
        decisions = await self.rate_limiter.hit_many([(rule.key, rule.limit, rule.window_s) for rule in rules])
        tightest: RateDecision | None = None
        for rule, decision in zip(rules, decisions, strict=True):
            if not decision.allowed:
                self.metrics.rate_limited.labels(rule.scope).inc()
                call.extra["denial"] = "rate_limited"
                raise self.limits.error(decision, rule)
            if tightest is None or decision.remaining < tightest.remaining:
                tightest = decision
        return tightest

    async def _execute_guarded(
        self,
        call: CallState,
        action: Action,
        payload: dict[str, Any],
        principal: Principal,
        dealership: Dealership | None,
        decision: RateDecision | None,
    ) -> Outcome:
        idem_key = call.inv.idempotency_key or (
            payload.get("idempotency_key") if isinstance(payload.get("idempotency_key"), str) else None
        )

        async def run() -> AdapterResult:
            if self.approvals is not None and action.side_effect:
                # After the idempotency key is taken: a retry of a call that ran on approval gets its answer.
                await self.protect.hold(self.approvals, action, payload, principal, dealership, call, idem_key)
            return await self._execute(call, action, payload, principal, dealership)

        def span(name: str) -> AbstractContextManager[Any]:
            return self._span(call, name)

        if action.side_effect and idem_key:
            key = f"idem:{principal.rate_key}:{action.name}:{dealership.id if dealership else '-'}:{idem_key[:200]}"
            result, replayed = await self.stored.idempotent(key, payload, run, span, form=call.form)
            outcome = self._outcome(call, action, result, decision)
            outcome.replayed = replayed
            return outcome
        if action.cacheable and not action.pii and self.settings.cache_enabled:
            company_id = owner_of(principal, dealership)
            redacted = await self.tenancy.redact_fields(company_id)
            scope = self.freshness.cache_scope(action, dealership, company_id, redacted)
            if scope is None:
                # Changes are not being followed right now: a cached result could predate one, so run it.
                self.freshness.bypassed(action.name)
            else:
                result, hit = await self.stored.cached(
                    action.name, action.version, scope, payload, action.cache_ttl_s, run, span, form=call.form
                )
                if hit:
                    self.metrics.cache_hits.labels(action.name).inc()
                outcome = self._outcome(call, action, result, decision)
                outcome.cached = hit
                return outcome
        return self._outcome(call, action, await run(), decision)

    async def _execute(
        self,
        call: CallState,
        action: Action,
        payload: dict[str, Any],
        principal: Principal,
        dealership: Dealership | None,
    ) -> AdapterResult:
        handler = self.catalogue.handler_for(action)
        if handler is None:
            raise InternalError()
        company_id = owner_of(principal, dealership)
        config = await self.adapter_configs.resolve(self.store, action.adapter, company_id)
        check_configured(self.catalogue.adapter_for(action), config)  # before a credential is asked for
        with call_scope(scope_for(action.name, company_id, payload, call.trace_id, config)):  # per-call credentials
            credential = await self._credential(call, action, company_id, config)
        ctx = ExecutionContext(
            action=action,
            principal=principal,
            dealership_id=dealership.id if dealership else None,
            company_id=company_id,
            store=self._read_view if action.store_reads_only else self.store,
            settings=self.settings,
            now=self.clock(),
            trace_id=call.trace_id,
            credential=credential,
            adapter_config=config,
            invoke=self._invoker_for(call.inv, principal),
            idempotency_key=call.inv.idempotency_key,
            dealership=dealership,
            session_id=call.inv.session_id,
            payload_form=call.form,
        )
        timeout_s, concurrency = self._limits(action, config)
        bulkhead = self._bulkhead(action.adapter, concurrency)
        pending = None
        if action.side_effect:
            pending = pending_audit.set(
                PendingAudit(lambda: self._record(call, time.perf_counter() - call.started, committed=True))
            )
        with self._span(call, f"adapter.{action.adapter}"):
            try:
                async with asyncio.timeout(timeout_s):
                    async with bulkhead:
                        result = await handler(payload, ctx)
            except TimeoutError as exc:
                raise Timeout(details={"timeout_s": timeout_s}) from exc
            except UpstreamCredentialRejected:
                if credential is not None and self.credentials is not None:
                    self.credentials.rejected(action.adapter, config, credential)  # the next call gets a fresh one
                raise
            finally:
                if pending is not None:
                    pending_audit.reset(pending)
                if action.side_effect:
                    # Even a failed write may have committed: this process's cached reads move on at once.
                    self.freshness.changed_locally(dealership.id if dealership else None)
        if action.type == "model.invoke" and isinstance(payload.get("model"), str):
            # Labelled only once the adapter accepted the model, so callers cannot mint metric series.
            call.model = str(payload["model"])[:64]
        # The data owner's policy decides (the dealership's company for anonymous callers too); the cache key names
        # that company and its redacted fields, so a cached result is redacted the same way.
        return redact_result(result, await self.tenancy.redact_fields(company_id))

    async def _credential(
        self, call: CallState, action: Action, company_id: str | None, config: Mapping[str, Any]
    ) -> IssuedCredential | None:
        if self.credentials is None or not config.get("credentials"):
            return None
        with self._span(call, "gateway.credentials"):
            return await self.credentials.issue(action.adapter, company_id, config)

    def _limits(self, action: Action, config: Mapping[str, Any]) -> tuple[float, int]:
        """The call's timeout and its adapter's concurrency cap.

        The operator's adapter configuration sets both; a company override may shorten the timeout but
        never lengthen it, and cannot resize the bulkhead every company shares (nor break calls with a
        malformed value).
        """
        operator = self.adapter_configs.defaults.get(action.adapter, {})
        ceiling = positive(operator.get("timeout_s"), action.timeout_s)
        timeout_s = min(positive(config.get("timeout_s"), ceiling), ceiling)
        return timeout_s, int(positive(operator.get("concurrency"), 64))

    def _bulkhead(self, adapter_id: str, size: int) -> Bulkhead:
        bulkhead = self._bulkheads.get(adapter_id)
        if bulkhead is None:
            bulkhead = self._bulkheads[adapter_id] = Bulkhead(adapter_id, size)
        return bulkhead

    def _invoker_for(self, parent: Invocation, principal: Principal) -> Any:
        async def invoke(action: str, payload: Mapping[str, Any]) -> Any:
            child = Invocation(
                action=action,
                payload=payload,
                surface="workflow",
                principal=principal,
                trace_id=parent.trace_id,
                session_id=parent.session_id,
                allow_side_effects=parent.allow_side_effects,
            )
            outcome = await self.invoke(child)
            # Outputs are read-only past the gateway (a cached one is shared with every call that hit it, and a
            # page's items with later pages: stored_results, actions/representations): a script gets a copy.
            return copy.deepcopy(outcome.output)

        return invoke

    # ------------------------------------------------------------------ bookkeeping

    def _outcome(
        self, call: CallState, action: Action, result: AdapterResult, decision: RateDecision | None
    ) -> Outcome:
        return Outcome(
            action=action.name,
            result_type=result.result_type or action.result_type,
            output=result.output,
            metadata=result.metadata,
            dealership_id=call.dealership_id,
            duration_ms=(time.perf_counter() - call.started) * 1000,
            trace_id=call.trace_id,
            processed_by=self.settings.instance_name,
            rate_limit=decision,
        )

    def _fail(self, call: CallState, exc: ForecourtError, span: trace.Span) -> None:
        call.status = exc.http_status
        call.error_code = exc.code
        call.result_class = "denied" if exc.http_status in (401, 403, 429) else "error"
        if exc.code == "approval.pending":
            call.result_class = "pending"  # held for a person's approval (gateway/approvals.py)
        if call.result_class == "denied":
            reason = str(call.extra.get("denial") or exc.code)
            self.metrics.denials.labels(reason, call.action.name if call.action else "unknown").inc()
        exc.trace_id = call.trace_id
        span.set_status(Status(StatusCode.ERROR, exc.code))
        span.set_attribute("forecourt.error_code", exc.code)

    def _finish(self, call: CallState) -> None:
        duration = time.perf_counter() - call.started
        action = call.action
        name = action.name if action else "unknown"
        adapter = action.adapter if action else "-"
        self._series.count((name, adapter, call.company_id or "-", call.model, call.status), duration)
        note = REQUEST_NOTE.get()
        if note is not None:  # the HTTP access log names the company and the trace
            note.company, note.trace_id = call.company_id, call.trace_id
        self.audit.record(self.protect.audited(call, self._record(call, duration)))

    def _record(self, call: CallState, duration_s: float, *, committed: bool = False) -> AuditRecord:
        """The call's audit record; ``committed``: as its effect's own transaction commits (a success so far)."""
        extra: tuple[str, ...] = ()
        if call.company_id is not None:
            extra = tuple(f for p in self.tenancy.cached_policies(call.company_id) for f in p.redact_fields)
        return call_record(
            record_id=call.audit_id,
            member_id=audit_member(call.principal),
            inv=call.inv,
            action=call.action,
            principal=call.principal,
            company_id=call.company_id,
            dealership_id=call.dealership_id,
            status=200 if committed else call.status,
            error_code=None if committed else call.error_code,
            result_class="ok" if committed else call.result_class,
            duration_s=duration_s,
            trace_id=call.trace_id,
            processed_by=self.settings.instance_name,
            extra_redactions=extra,
            clock=self.clock,
            payload_form=call.audit_form,
        )
