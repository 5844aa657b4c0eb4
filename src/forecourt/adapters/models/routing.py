"""``model.invoke``: route a generic model call to a runtime and model (seed 001 §12 "Agent preferences").

The routes, most preferred first:

1. runtimes: the payload's ``runtime`` if given; else NVIDIA when the payload's ``task`` is one the member lists
   in ``agentConfig.nvidia.useFor``; else the member's ``agentConfig.runtime``; then the remaining runtimes in the
   order of the ``models`` adapter configuration (``runtimes``). Runtime names go through ``aliases``
   (``vertex-agent`` → ``vertex``); a runtime configured with ``enabled: false`` is skipped.
2. models: the payload's ``model`` (which must be one a runtime lists in its ``models``) on each runtime that
   serves it. Else a runtime the payload or the task chose gets the member's ``modelAffinity`` entries it serves,
   then its ``default_model``; after it, each ``modelAffinity`` entry in order on the first runtime (in the order
   of 1.) that serves it — so ``["llama3.1"]`` reaches the OpenAI-compatible runtime even though Vertex comes
   first — and only then each runtime's ``default_model``.
3. only pairs the company's policies allow (the runtime's action, its adapter and the model, with the same
   glob rules as the gateway's own decision) are kept; none left → ``policy.denied``.

The first route runs; when its runtime fails in a way another runtime could avoid (``timeout``,
``upstream.unavailable``, ``credentials.unavailable``, ``models.runtime_not_configured``) and the ``models``
configuration says ``fallback: true`` (a company may set it through its adapter settings), the next route on
another runtime runs instead, and the answer's ``metadata.route`` says which runtime answered and which failed.

The chosen call then runs through :meth:`Gateway.invoke` as the same caller, so policy, rate limits,
credentials, timeouts and audit apply to it exactly as if the agent had called the runtime's action itself.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from forecourt.adapters.errors import ModelNotFound
from forecourt.contract import AdapterResult, ExecutionContext
from forecourt.domain.tenancy import Policy
from forecourt.errors import ForecourtError, InvalidParams, PolicyDenied
from forecourt.gateway.base import Invocation
from forecourt.gateway.policy import matches_any

if TYPE_CHECKING:
    from forecourt.gateway.pipeline import Gateway

logger = logging.getLogger(__name__)

RUNTIME_ACTIONS: dict[str, tuple[str, str]] = {
    "vertex": ("vertex.invokeModel", "vertex"),
    "nvidia": ("nvidia.runInference", "nvidia"),
    "openai": ("openai.invokeModel", "openai"),
    "anthropic": ("anthropic.invokeModel", "anthropic"),
    "huggingface": ("huggingface.invokeModel", "huggingface"),
}
"""Runtime → (action, adapter id)."""
DEFAULT_ORDER = ("vertex", "nvidia", "openai", "anthropic", "huggingface")
ROUTER_ID = "models"
_FORWARDED = ("input", "messages", "system", "kind", "params", "stream")
_CHOSEN = ("payload.runtime", "agentConfig.nvidia.useFor")
FALLBACK_ON = frozenset({"timeout", "upstream.unavailable", "credentials.unavailable", "models.runtime_not_configured"})
"""What a runtime can fail with that another runtime may not: the default of ``fallback_on``."""


@dataclass(frozen=True)
class AgentPreferences:
    """A member's model preferences (``Member.agent_config``)."""

    runtime: str | None = None
    model_affinity: tuple[str, ...] = ()
    nvidia_use_for: tuple[str, ...] = ()

    @classmethod
    def from_agent_config(cls, raw: Mapping[str, Any] | None) -> AgentPreferences:
        """Read ``{"agentConfig": {...}}`` or the inner object; anything malformed is ignored."""
        if not isinstance(raw, Mapping):
            return cls()
        inner = raw.get("agentConfig", raw)
        if not isinstance(inner, Mapping):
            return cls()
        runtime = inner.get("runtime")
        affinity = inner.get("modelAffinity")
        nvidia = inner.get("nvidia")
        use_for = nvidia.get("useFor") if isinstance(nvidia, Mapping) else None
        return cls(
            runtime=runtime if isinstance(runtime, str) and runtime else None,
            model_affinity=tuple(m for m in affinity if isinstance(m, str)) if isinstance(affinity, list) else (),
            nvidia_use_for=tuple(t for t in use_for if isinstance(t, str)) if isinstance(use_for, list) else (),
        )


@dataclass(frozen=True)
class ModelRoute:
    """Where a ``model.invoke`` call goes, and why."""

    runtime: str
    action: str
    model: str
    reason: str


def policy_allows(policies: list[Policy], action: str, adapter: str, model: str) -> bool:
    """Whether every policy lets ``action`` on ``adapter`` use ``model`` (as ``gateway.policy`` decides)."""
    for policy in policies:
        if matches_any(action, policy.denied_actions) or not matches_any(action, policy.allowed_actions):
            return False
        if matches_any(adapter, policy.denied_adapters) or not matches_any(adapter, policy.allowed_adapters):
            return False
        if not matches_any(model, policy.allowed_models):
            return False
    return True


class RoutePlanner:
    """Computes a :class:`ModelRoute` from the payload, preferences, runtime configurations and policies."""

    def __init__(self, router_config: Mapping[str, Any], runtimes: Mapping[str, Mapping[str, Any]]) -> None:
        """Create a planner.

        Args:
            router_config: The ``models`` adapter configuration (``runtimes`` order, ``aliases``).
            runtimes: Each runtime's effective configuration (``models``, ``default_model``, ``enabled``).
        """
        raw_aliases = router_config.get("aliases") or {}
        self.aliases = {str(k): str(v) for k, v in raw_aliases.items()} if isinstance(raw_aliases, Mapping) else {}
        order = router_config.get("runtimes") or DEFAULT_ORDER
        self.order = [self.canonical(r) for r in order if isinstance(r, str)]
        self.runtimes = runtimes

    def canonical(self, name: str) -> str:
        """The runtime a name or alias means."""
        return self.aliases.get(name, name)

    def _enabled(self, runtime: str) -> bool:
        return runtime in RUNTIME_ACTIONS and self.runtimes.get(runtime, {}).get("enabled", True) is not False

    def _serves(self, runtime: str, model: str) -> bool:
        models = self.runtimes.get(runtime, {}).get("models") or []
        return model in models

    def runtime_order(self, payload: Mapping[str, Any], prefs: AgentPreferences) -> list[tuple[str, str]]:
        """Candidate runtimes with the reason each is a candidate, most preferred first."""
        if payload.get("runtime"):
            runtime = self.canonical(str(payload["runtime"]))
            if runtime not in RUNTIME_ACTIONS:
                raise InvalidParams("Unknown runtime.", details={"runtimes": sorted(RUNTIME_ACTIONS)})
            return [(runtime, "payload.runtime")]
        candidates: list[tuple[str, str]] = []
        task = payload.get("task")
        if isinstance(task, str) and task in prefs.nvidia_use_for:
            candidates.append(("nvidia", "agentConfig.nvidia.useFor"))
        if prefs.runtime:
            candidates.append((self.canonical(prefs.runtime), "agentConfig.runtime"))
        candidates.extend((r, "default_order") for r in self.order)
        seen: set[str] = set()
        ordered = []
        for runtime, reason in candidates:
            if runtime not in seen and self._enabled(runtime):
                seen.add(runtime)
                ordered.append((runtime, reason))
        return ordered

    def _candidates(self, payload: Mapping[str, Any], prefs: AgentPreferences) -> Iterator[tuple[str, str, str]]:
        """Every (runtime, model, reason) worth trying, most preferred first (duplicates possible)."""
        runtimes = self.runtime_order(payload, prefs)
        if payload.get("model"):
            model = str(payload["model"])
            if not payload.get("runtime"):
                runtimes = [(r, why) for r, why in runtimes if self._serves(r, model)]
                if not runtimes:
                    raise ModelNotFound("No configured runtime offers this model.")
            for runtime, why in runtimes:
                yield runtime, model, f"{why}+payload.model"
            return
        # A runtime the payload or the task chose is tried first, with the preferred models it serves.
        chosen = [(r, why) for r, why in runtimes if why in _CHOSEN]
        rest = [(r, why) for r, why in runtimes if why not in _CHOSEN]
        for runtime, why in chosen:
            for model in prefs.model_affinity:
                if self._serves(runtime, model):
                    yield runtime, model, f"{why}+agentConfig.modelAffinity"
            yield from self._default(runtime, why)
        # Then the preferred models wherever they are served (agentConfig.runtime only orders the runtimes), then
        # each runtime's default model.
        for model in prefs.model_affinity:
            for runtime, why in rest:
                if self._serves(runtime, model):
                    yield runtime, model, f"{why}+agentConfig.modelAffinity"
        for runtime, why in rest:
            yield from self._default(runtime, why)

    def _default(self, runtime: str, why: str) -> Iterator[tuple[str, str, str]]:
        default = self.runtimes.get(runtime, {}).get("default_model")
        if isinstance(default, str) and default:
            yield runtime, default, f"{why}+default_model"

    def routes(self, payload: Mapping[str, Any], prefs: AgentPreferences, policies: list[Policy]) -> list[ModelRoute]:
        """Every route the call may take, most preferred first; the company's policies allow each.

        Raises:
            InvalidParams: The payload names an unknown runtime.
            ModelNotFound: The payload names a model no candidate runtime offers.
            PolicyDenied: Company policy allows none of the candidates.
        """
        seen: set[tuple[str, str]] = set()
        found: list[ModelRoute] = []
        for runtime, model, reason in self._candidates(payload, prefs):
            action, adapter = RUNTIME_ACTIONS[runtime]
            if (runtime, model) not in seen and policy_allows(policies, action, adapter, model):
                seen.add((runtime, model))
                found.append(ModelRoute(runtime, action, model, reason))
        if not found:
            raise PolicyDenied("Company policy allows none of the models this call could use.")
        return found

    def plan(self, payload: Mapping[str, Any], prefs: AgentPreferences, policies: list[Policy]) -> ModelRoute:
        """The route for one call: the first of :meth:`routes`."""
        return self.routes(payload, prefs, policies)[0]


class ModelRouter:
    """The ``models`` adapter: plans the route, then runs the runtime's action through the gateway."""

    id = ROUTER_ID

    def __init__(self, gateway: Gateway | Callable[[], Gateway]) -> None:
        """Create the router.

        Args:
            gateway: The gateway (or a function returning it, when the router is built first) that runs the
                routed call.
        """
        self._gateway = gateway

    @property
    def gateway(self) -> Gateway:
        """The gateway routed calls run through."""
        gw = self._gateway
        return gw() if callable(gw) else gw

    async def routes(self, payload: Mapping[str, Any], context: ExecutionContext) -> list[ModelRoute]:
        """The routes ``payload`` may take for the calling member, under the company's current policies."""
        gateway = self.gateway
        member = context.principal.member
        prefs = AgentPreferences.from_agent_config(member.agent_config if member is not None else None)
        company = context.company_id
        runtimes = {
            name: await gateway.adapter_configs.resolve(context.store, adapter, company)
            for name, (_, adapter) in RUNTIME_ACTIONS.items()
        }
        policies = await gateway.tenancy.policies(company) if context.principal.method != "internal" else []
        return RoutePlanner(context.adapter_config, runtimes).routes(payload, prefs, policies)

    async def route(self, payload: Mapping[str, Any], context: ExecutionContext) -> ModelRoute:
        """The route ``payload`` takes first."""
        return (await self.routes(payload, context))[0]

    async def execute(self, payload: Mapping[str, Any], context: ExecutionContext) -> AdapterResult:
        """Route and run one call, falling back to the next runtime when allowed; ``metadata.route`` says where
        it went, why, and which runtimes failed before it."""
        routes = await self.routes(payload, context)
        fallback_on = fallback_codes(context.adapter_config)
        failed: list[dict[str, str]] = []
        last: ForecourtError | None = None
        for route in routes:
            if any(f["runtime"] == route.runtime for f in failed):
                continue
            logger.info("model.invoke routed to %s (%s)", route.action, route.reason)
            forwarded = {k: payload[k] for k in _FORWARDED if k in payload}
            forwarded["model"] = route.model
            try:
                outcome = await self.gateway.invoke(
                    Invocation(
                        action=route.action,
                        payload=forwarded,
                        surface="internal",
                        principal=context.principal,
                        trace_id=context.trace_id,
                    )
                )
            except ForecourtError as exc:
                if exc.code not in fallback_on:
                    raise
                logger.warning("model.invoke: runtime %s failed with %s; trying the next", route.runtime, exc.code)
                failed.append({"runtime": route.runtime, "model": route.model, "code": exc.code})
                last = exc
                continue
            metadata = dict(outcome.metadata)
            metadata["route"] = {
                "runtime": route.runtime,
                "action": route.action,
                "model": route.model,
                "reason": route.reason,
            }
            if failed:
                metadata["route"]["fallback_from"] = failed
            return AdapterResult(output=outcome.output, result_type=outcome.result_type, metadata=metadata)
        assert last is not None  # routes is never empty, and every route that did not answer failed
        last.details = {**last.details, "tried": [f["runtime"] for f in failed]}
        raise last


def fallback_codes(config: Mapping[str, Any]) -> frozenset[str]:
    """The error codes after which ``model.invoke`` tries the next runtime (none unless ``fallback: true``)."""
    if config.get("fallback") is not True:
        return frozenset()
    codes = config.get("fallback_on")
    if isinstance(codes, list) and all(isinstance(c, str) for c in codes):
        return frozenset(codes)
    return FALLBACK_ON
