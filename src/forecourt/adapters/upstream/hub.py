"""The upstream registry at run time: sessions per upstream, and their tools as catalogue actions.

:class:`UpstreamHub` reads the ``upstream_servers`` table (at start, every ``settings.upstream_sync_interval_s``
and at once after an admin change on this replica), keeps one :class:`~.pool.UpstreamSession` per enabled
upstream, and mirrors each upstream's tool list into the action catalogue:

- every upstream tool becomes an action named :func:`~.spec.tool_name` (``<namespace>.<tool>``), type
  ``tool.run``, adapter ``upstream``, not dealer-scoped, ``owner_company_id`` = the registering company (so the
  gateway's one policy decision hides it from, and refuses it to, everyone else), with the upstream's input
  and output schemas; scope ``read_scope`` for tools annotated ``readOnlyHint``, else ``write_scope``;
- every upstream also gets hidden actions (names with ``:`` that are never MCP tool names): ``upstream:<c>/<id>``
  for resource reads, subscriptions and prompts, and for pass-through upstreams ``upstream:<c>/<id>#call``
  for calls to tool names the gateway does not list (so the upstream's own "unknown tool" answer comes back).

A name that is already taken (by Forecourt, or by another upstream) is skipped and reported by
``admin.upstreams.list``. When an upstream announces ``notifications/tools/list_changed`` its actions are
rebuilt at once; listeners (the MCP surface) are told so they can tell their clients.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from forecourt.adapters.upstream.pinning import ToolPinning
from forecourt.contract import Action, Catalogue
from forecourt.domain.upstreams import ADAPTER_ID, Registered, UpstreamSpec, forward_action_name, tool_name
from forecourt.errors import ForecourtError
from forecourt.settings import Settings
from forecourt.store.base import Store

if TYPE_CHECKING:  # the MCP SDK is imported when an upstream is first connected, not by every command
    import mcp_types as types

    from forecourt.adapters.upstream.pool import UpstreamSession
logger = logging.getLogger(__name__)

BindingKind = Literal["tool", "forward", "call"]
_FORWARD_OPS = ["resources/read", "resources/subscribe", "resources/unsubscribe", "prompts/get", "completion/complete"]


@dataclass(frozen=True)
class Binding:
    """What a catalogue action stands for upstream."""

    key: str
    company_id: str
    kind: BindingKind
    tool: str = ""


def _tool_action(reg: Registered, tool: types.Tool, name: str) -> Action:
    spec = reg.spec
    ann = tool.annotations
    read_only = bool(ann is not None and ann.read_only_hint)
    destructive = False if read_only else not (ann is not None and ann.destructive_hint is False)
    title = tool.title or (ann.title if ann is not None and ann.title else None) or tool.name
    schema: dict[str, Any] = dict(tool.input_schema or {}) or {"type": "object"}
    return Action(
        name=name,
        type="tool.run",
        title=title,
        description=tool.description or f"Tool {tool.name} of the upstream MCP server {spec.id}.",
        input_schema=schema,
        output_schema=dict(tool.output_schema) if tool.output_schema else None,
        adapter=ADAPTER_ID,
        scope=spec.read_scope if read_only else spec.write_scope,
        side_effect=not read_only,
        destructive=destructive,
        idempotent=bool(ann is not None and ann.idempotent_hint),
        pii=True,
        timeout_s=spec.timeout_s,
        dealer_scoped=False,
        domain="upstream",
        tags=("upstream", spec.id),
        owner_company_id=reg.company_id,
        third_party_text=("upstream_tool_result",),
    )


def _forward_actions(reg: Registered) -> list[tuple[Action, Binding]]:
    spec = reg.spec
    base = forward_action_name(reg.company_id, spec.id)
    common: dict[str, Any] = {
        "type": "tool.run",
        "output_schema": None,
        "adapter": ADAPTER_ID,
        "pii": True,
        "timeout_s": spec.timeout_s,
        "dealer_scoped": False,
        "domain": "upstream",
        "tags": ("upstream", spec.id, "hidden"),
        "owner_company_id": reg.company_id,
        "third_party_text": ("upstream_tool_result",),
    }
    forward = Action(
        name=base,
        title=f"Upstream {spec.id}: resources and prompts",
        description=f"Reads resources and prompts of the upstream MCP server {spec.id}.",
        input_schema={
            "type": "object",
            "properties": {
                "op": {"enum": _FORWARD_OPS},
                "uri": {"type": "string", "maxLength": 2048},
                "name": {"type": "string", "maxLength": 256},
                "arguments": {"type": "object"},
                "ref": {"type": "object"},
                "argument": {"type": "object"},
            },
            "required": ["op"],
        },
        scope=spec.read_scope,
        **common,
    )
    found = [(forward, Binding(reg.key, reg.company_id, "forward"))]
    if spec.passthrough:
        call = Action(
            name=f"{base}#call",
            title=f"Upstream {spec.id}: any tool",
            description=f"Calls a tool of the pass-through upstream MCP server {spec.id} by its own name.",
            input_schema={
                "type": "object",
                "properties": {"name": {"type": "string", "maxLength": 256}, "arguments": {"type": "object"}},
                "required": ["name"],
            },
            scope=spec.write_scope,
            side_effect=True,
            destructive=True,
            idempotent=False,
            **common,
        )
        found.append((call, Binding(reg.key, reg.company_id, "call")))
    return found


class UpstreamHub:
    """Sessions and catalogue actions of every registered upstream (see the module docstring).

    Args:
        store: Where the registry lives.
        catalogue: Receives (and loses) the upstream actions.
        settings: SSRF rule, sync interval.
        credentials: The gateway's credential broker.
        operator_config: The operator's default configuration of the ``upstream`` adapter.
    """

    def __init__(
        self,
        *,
        store: Store,
        catalogue: Catalogue,
        settings: Settings,
        credentials: Any = None,
        operator_config: dict[str, Any] | None = None,
    ) -> None:
        self.store = store
        self.catalogue = catalogue
        self.settings = settings
        self.credentials = credentials
        config = operator_config or {}
        raw = config.get("credentials")
        self.operator_credentials: dict[str, Any] = dict(raw) if isinstance(raw, dict) else {}
        self.registered: dict[str, Registered] = {}
        self.sessions: dict[str, UpstreamSession] = {}
        self.bindings: dict[str, Binding] = {}
        self.skipped: dict[str, list[str]] = {}
        self.tool_listeners: list[Callable[[str], None]] = []
        self.resource_listeners: list[Callable[[str, str], None]] = []
        self.pinning = ToolPinning(store)
        self._wake = asyncio.Event()
        self._tasks: set[asyncio.Task[Any]] = set()
        self._loaded = False

    # ------------------------------------------------------------------ lookups

    def binding(self, action_name: str) -> Binding | None:
        """What ``action_name`` stands for, when it is an upstream action."""
        return self.bindings.get(action_name)

    def session(self, key: str) -> UpstreamSession | None:
        """The pooled session of upstream ``key`` (``company/id``)."""
        return self.sessions.get(key)

    def of_company(self, company_id: str | None) -> list[UpstreamSession]:
        """The enabled upstreams of a company, by id."""
        if company_id is None:
            return []
        return [s for k, s in sorted(self.sessions.items()) if s.registered.company_id == company_id]

    def namespace_owner(self, prefix: str) -> str | None:
        """The key of the upstream that uses namespace ``prefix``, if any."""
        for key, reg in self.registered.items():
            if prefix and reg.spec.prefix == prefix:
                return key
        return None

    # ------------------------------------------------------------------ registry

    async def load(self) -> None:
        """Read the registry once (first use) so that listings and calls see it."""
        if not self._loaded:
            await self.reload()

    async def reload(self) -> None:
        """Re-read the registry: add new upstreams, drop removed ones, restart changed ones."""
        async with self.store.transaction() as uow:
            rows = await uow.upstreams.list()
        self._loaded = True
        wanted = {r.key: r for r in rows if r.spec.enabled}
        for key in [k for k in self.registered if k not in wanted or wanted[k].spec != self.registered[k].spec]:
            await self._drop(key)
        for key, reg in wanted.items():
            if key not in self.registered:
                self._add(reg)
        for key, session in list(self.sessions.items()):
            if not session.connected and session.retry_due():
                self._spawn(self.refresh(key))
            elif session.connected:
                await self.repin(key)

    def _add(self, reg: Registered) -> None:
        from forecourt.adapters.upstream.pool import UpstreamSession

        self.registered[reg.key] = reg
        self.sessions[reg.key] = UpstreamSession(
            reg,
            settings=self.settings,
            credentials=self.credentials,
            operator_credentials=self.operator_credentials,
            on_event=self._event,
        )
        for action, binding in _forward_actions(reg):
            if self.catalogue.get(action.name) is None:
                self.catalogue.add(action)
                self.bindings[action.name] = binding

    async def _drop(self, key: str) -> None:
        self._remove_actions(key, tools_only=False)
        self.registered.pop(key, None)
        self.skipped.pop(key, None)
        session = self.sessions.pop(key, None)
        if session is not None:
            await session.close()
        self._announce(key)

    def _remove_actions(self, key: str, *, tools_only: bool) -> None:
        gone = {n for n, b in self.bindings.items() if b.key == key and (b.kind == "tool" or not tools_only)}
        self.catalogue.remove_where(lambda a: a.name in gone and a.adapter == ADAPTER_ID)
        for name in gone:
            del self.bindings[name]

    # ------------------------------------------------------------------ tools

    async def refresh(self, key: str) -> None:
        """Reconnect if needed, fetch the upstream's lists and rebuild its actions."""
        session = self.sessions.get(key)
        if session is None:
            return
        try:
            await session.refresh()
        except ForecourtError as exc:
            logger.info("upstream %s not refreshed: %s", key, exc.code)
            return
        reg = self.registered.get(key)
        if reg is not None:  # changed tools wait for an administrator (pinning.py)
            self._install_tools(key, await self.pinning.offered(reg, session.tools))

    async def repin(self, key: str) -> None:
        """Offer again what the pins allow of the upstream's last listing (an approval here or on another replica)."""
        session, reg = self.sessions.get(key), self.registered.get(key)
        if session is None or reg is None or not session.connected:
            return
        before = self.pinning.signature.get(key)
        tools = await self.pinning.offered(reg, session.tools)
        if self.pinning.signature.get(key) != before:
            self._install_tools(key, tools)

    def _install_tools(self, key: str, tools: list[types.Tool]) -> None:
        reg = self.registered.get(key)
        if reg is None:
            return
        self._remove_actions(key, tools_only=True)
        skipped: list[str] = []
        taken = {look_alike(a.name) for a in self.catalogue.all()}
        for tool in tools:
            name = tool_name(reg.spec.prefix, tool.name)
            if self.catalogue.get(name) is not None or _reserved(name) or look_alike(name) in taken:
                skipped.append(tool.name)
                continue
            taken.add(look_alike(name))
            self.catalogue.add(_tool_action(reg, tool, name))
            self.bindings[name] = Binding(key, reg.company_id, "tool", tool.name)
        if skipped:
            logger.warning("upstream %s: %d tool name(s) already taken, skipped", key, len(skipped))
        self.skipped[key] = skipped
        self._announce(key)

    def tool_names(self, key: str) -> list[str]:
        """The gateway names of an upstream's tools."""
        return sorted(n for n, b in self.bindings.items() if b.key == key and b.kind == "tool")

    def _announce(self, key: str) -> None:
        for listener in list(self.tool_listeners):
            with contextlib.suppress(Exception):
                listener(key)

    def _event(self, key: str, kind: str, value: Any) -> None:
        if kind in ("tools", "resources", "prompts"):
            self._spawn(self.refresh(key))
        elif kind == "resource_updated":
            for listener in list(self.resource_listeners):
                with contextlib.suppress(Exception):
                    listener(key, str(value))

    def _spawn(self, coro: Any) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    # ------------------------------------------------------------------ lifecycle

    def wake(self) -> None:
        """Re-read the registry now (after an admin change on this replica)."""
        self._wake.set()

    async def run(self) -> None:
        """Background task: keep the registry, sessions and actions current until cancelled."""
        while True:
            try:
                await self.reload()
            except ForecourtError as exc:
                logger.warning("upstream registry not reloaded: %s", exc.code)
            except Exception:  # the loop must survive a database hiccup; the next round retries
                logger.exception("upstream registry reload failed")
            self._wake.clear()
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self.settings.upstream_sync_interval_s):
                    await self._wake.wait()

    async def close(self) -> None:
        """Close every session."""
        for task in list(self._tasks):
            task.cancel()
        for session in list(self.sessions.values()):
            await session.close()


def look_alike(name: str) -> str:
    """What a tool name looks like to an MCP host: letter case and ``.``/``_``/``-`` do not tell tools apart.

    Hosts lower-case or rewrite ``.`` to ``_`` in tool names, and a model reads ``leads_create`` as
    ``leads.create``: an upstream's tool that folds to the same text as one already offered (Forecourt's own
    above all) would shadow it, so it is skipped.
    """
    return name.lower().replace("-", "_").replace(".", "_")


def _reserved(name: str) -> bool:
    # The MCP surface gives these prefixes their own meaning (AAP tools, admin actions).
    return name.startswith(("aap_", "aap.", "admin.")) or ":" in name


def spec_public(reg: Registered, hub: UpstreamHub) -> dict[str, Any]:
    """An upstream as ``admin.upstreams.list`` shows it, with this replica's view of its state."""
    session = hub.session(reg.key)
    return {
        **reg.spec.public(),
        "operator_managed": reg.operator_managed,
        "updated_at": reg.updated_at.isoformat(),
        "status": {
            "connected": bool(session and session.connected),
            "last_error": session.last_error if session else None,
            "tools": hub.tool_names(reg.key),
            "skipped_tools": hub.skipped.get(reg.key, []),
            "held_tools": sorted(hub.pinning.held.get(reg.key, ())),
        },
    }


__all__ = ["Binding", "UpstreamHub", "UpstreamSpec", "spec_public"]
