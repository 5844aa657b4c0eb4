"""The ``upstream`` adapter: runs upstream tools on the pooled session, and the ``admin.upstreams.*`` actions.

A tool call's output is the upstream's ``CallToolResult`` as JSON (``content``, ``structuredContent``,
``isError``), unchanged, so the MCP surface can hand it on as is; ``metadata.is_error`` tells a tool-level
error. A progress callback put in :data:`PROGRESS` by a front door receives the upstream's progress, and a
:data:`~.relay.RELAY` set there receives what the upstream asks of the caller (sampling, elicitation, logs).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, cast

from forecourt.adapters.upstream.caps import check_result_size
from forecourt.adapters.upstream.hub import Binding, UpstreamHub, spec_public
from forecourt.contract import AdapterResult, ExecutionContext
from forecourt.domain.errors import NamespaceTaken, UpstreamNotFound
from forecourt.domain.upstreams import ADAPTER_ID, parse_spec, require_operator_for
from forecourt.errors import Forbidden, InvalidParams, TenancyDenied, UnknownAction, UpstreamUnavailable
from forecourt.netguard import check_url_async

if TYPE_CHECKING:  # the MCP SDK is imported by the first upstream call, not by the admin actions or the catalogue
    import mcp_types as types
    from mcp import Client
    from mcp.shared.dispatcher import ProgressFnT

    from forecourt.adapters.upstream.pool import UpstreamSession

    ProgressRelay = ProgressFnT

REGISTRATION_LISTING_S = 5.0
"""How long registering a new upstream waits for its first tool listing (to refuse shadowing tool names)."""
PROGRESS: contextvars.ContextVar[ProgressRelay | None] = contextvars.ContextVar(
    "forecourt_upstream_progress", default=None
)
"""Set by the MCP surface around a call: where the upstream's progress notifications go."""


def dump_result(result: Any) -> dict[str, Any]:
    """A result model as its wire JSON (without the transport's ``resultType`` and ``_meta``)."""
    data: dict[str, Any] = result.model_dump(mode="json", by_alias=True, exclude_none=True)
    data.pop("resultType", None)
    data.pop("_meta", None)
    return data


def _strings(value: Any) -> dict[str, str]:
    """A JSON object of prompt or completion arguments as the string map MCP expects."""
    return {str(k): str(v) for k, v in dict(value or {}).items()}


def _completion_ref(payload: Mapping[str, Any]) -> types.PromptReference | types.ResourceTemplateReference:
    """The ``ref`` of a forwarded ``completion/complete`` (already rewritten to the upstream's own names)."""
    import mcp_types as types

    ref = dict(payload.get("ref") or {})
    try:
        if ref.get("type") == "ref/resource":
            return types.ResourceTemplateReference.model_validate(ref)
        return types.PromptReference.model_validate(ref)
    except ValueError:
        raise InvalidParams("ref is not a prompt or resource reference.", details={"field": "ref"}) from None


class UpstreamAdapter:
    """Runs upstream actions and the upstream admin actions."""

    id = ADAPTER_ID

    def __init__(self, hub: UpstreamHub) -> None:
        self.hub = hub

    async def execute(self, payload: Mapping[str, Any], context: ExecutionContext) -> AdapterResult:
        """Run ``context.action``."""
        name = context.action.name
        if name.startswith("admin.upstreams."):
            return await self._admin(name, payload, context)
        binding = self.hub.binding(name)
        if binding is None:
            raise UnknownAction(details={"action": name[:100]})
        if context.company_id != binding.company_id:
            raise TenancyDenied()
        session = self.hub.session(binding.key)
        if session is None:
            raise UpstreamUnavailable()
        if binding.kind == "forward":
            return await self._forward(session, payload)
        tool = binding.tool if binding.kind == "tool" else str(payload["name"])
        if tool in self.hub.pinning.held.get(binding.key, ()):  # a changed tool waits for an administrator
            raise UnknownAction(details={"action": name[:100]})
        arguments = dict(payload) if binding.kind == "tool" else dict(payload.get("arguments") or {})
        result = await self._call(session, binding, tool, arguments)
        check_result_size(result.output, context.settings.mcp_max_result_bytes)  # caps.py: on every door
        return result

    async def _call(
        self, session: UpstreamSession, binding: Binding, tool: str, arguments: dict[str, Any]
    ) -> AdapterResult:
        import mcp_types as types
        from mcp_types.version import MODERN_PROTOCOL_VERSIONS

        from forecourt.adapters.upstream.relay import RELAY

        progress = PROGRESS.get()
        relay = RELAY.get()
        level = relay.log_level if relay is not None else None

        async def run(client: Client) -> types.CallToolResult:
            # A 2026-07-28 upstream logs only to requests that opt in, at the level they name.
            modern = level is not None and client.protocol_version in MODERN_PROTOCOL_VERSIONS
            meta = cast("types.RequestParamsMeta", {types.LOG_LEVEL_META_KEY: level}) if modern else None
            return await client.call_tool(tool, arguments, progress_callback=progress, meta=meta)

        result = await session.call(run)
        return AdapterResult(
            output=dump_result(result),
            result_type="tool.result",
            metadata={"upstream": session.spec.id, "tool": tool[:128], "is_error": bool(result.is_error)},
        )

    async def _forward(self, session: UpstreamSession, payload: Mapping[str, Any]) -> AdapterResult:
        op = str(payload["op"])
        uri = str(payload.get("uri") or "")
        if op.startswith("resources/") and not uri:
            raise InvalidParams("uri is required.", details={"field": "uri"})
        if op == "prompts/get" and not payload.get("name"):
            raise InvalidParams("name is required.", details={"field": "name"})

        async def run(client: Client) -> Any:
            if op == "resources/read":
                return await client.read_resource(uri)
            if op == "resources/subscribe":
                return await client.subscribe_resource(uri)
            if op == "resources/unsubscribe":
                return await client.unsubscribe_resource(uri)
            if op == "completion/complete":
                return await client.complete(_completion_ref(payload), _strings(payload.get("argument")))
            return await client.get_prompt(str(payload["name"]), _strings(payload.get("arguments")))

        result = await session.call(run)
        return AdapterResult(output=dump_result(result), result_type=op, metadata={"upstream": session.spec.id})

    # ------------------------------------------------------------------ admin

    @staticmethod
    def _company(payload: Mapping[str, Any], ctx: ExecutionContext) -> tuple[str, bool]:
        company_id = str(payload["company_id"])
        principal = ctx.principal
        if principal.method == "internal":
            return company_id, True
        member = principal.member
        if member is None or not member.is_admin or principal.company_id != company_id:
            raise Forbidden("Only the company's administrators may do this.")
        return company_id, False

    async def _admin(self, name: str, payload: Mapping[str, Any], ctx: ExecutionContext) -> AdapterResult:
        company_id, operator = self._company(payload, ctx)
        await self.hub.load()
        if name == "admin.upstreams.list":
            async with ctx.store.transaction() as uow:
                rows = await uow.upstreams.list(company_id)
            return AdapterResult(output={"items": [spec_public(r, self.hub) for r in rows]}, result_type="admin.result")
        if name == "admin.upstreams.delete":
            async with ctx.store.transaction() as uow:
                deleted = await uow.upstreams.delete(company_id, str(payload["upstream_id"]))
            if not deleted:
                raise UpstreamNotFound()
            await self.hub.reload()
            return AdapterResult(output={"deleted": True}, result_type="admin.result")
        if name == "admin.upstreams.set_enabled":
            return await self._set_enabled(company_id, payload, ctx)
        if name in ("admin.upstreams.tool_changes", "admin.upstreams.approve_tools"):
            return await self._pins(name, company_id, payload, ctx)
        return await self._upsert(company_id, operator, payload, ctx)

    async def _pins(
        self, name: str, company_id: str, payload: Mapping[str, Any], ctx: ExecutionContext
    ) -> AdapterResult:
        """Pinned tools (pinning.py): the changes waiting for approval, with their diffs, or approving them."""
        upstream_id = str(payload["upstream_id"])
        async with ctx.store.read() as uow:
            found = await uow.upstreams.get(company_id, upstream_id)
        if found is None:
            raise UpstreamNotFound()
        pinning = self.hub.pinning
        if name == "admin.upstreams.tool_changes":
            items = await pinning.changes(company_id, upstream_id)
            return AdapterResult(output={"upstream_id": upstream_id, "items": items}, result_type="admin.result")
        tools = payload.get("tools")
        chosen = [str(t) for t in tools] if isinstance(tools, list) else None
        approved = await pinning.approve(company_id, upstream_id, chosen, by=ctx.principal.member_id)
        await self.hub.repin(found.key)  # other replicas follow at their next registry sync
        return AdapterResult(output={"upstream_id": upstream_id, "approved": approved}, result_type="admin.result")

    async def _refuse_shadowing(self, company_id: str, upstream_id: str, ctx: ExecutionContext) -> None:
        """A new upstream's first listing (pinned as it is): tool names that shadow Forecourt's or another upstream's
        refuse the registration. An upstream that cannot be reached now is pinned when it first answers."""
        key = f"{company_id}/{upstream_id}"
        with contextlib.suppress(TimeoutError):  # a slow upstream is pinned by the hub when it answers
            async with asyncio.timeout(REGISTRATION_LISTING_S):
                await self.hub.refresh(key)
        shadowing = self.hub.skipped.get(key) or []
        if not shadowing:
            return
        async with ctx.store.transaction() as uow:
            await uow.upstreams.delete(company_id, upstream_id)
        await self.hub.reload()
        raise NamespaceTaken(
            "Tools of this upstream would shadow tools already offered.", details={"tools": shadowing[:20]}
        )

    async def _set_enabled(self, company_id: str, payload: Mapping[str, Any], ctx: ExecutionContext) -> AdapterResult:
        """Flip ``enabled`` on the stored definition (who registered it, and its secrets, stay as they were)."""
        async with ctx.store.transaction() as uow:
            repo = uow.upstreams
            found = await repo.get(company_id, str(payload["upstream_id"]))
            if found is None:
                raise UpstreamNotFound()
            spec = found.spec.model_copy(update={"enabled": bool(payload["enabled"])})
            await repo.upsert(company_id, spec, operator=found.operator_managed, now=ctx.now)
        await self.hub.reload()
        return AdapterResult(output={"id": spec.id, "enabled": spec.enabled}, result_type="admin.result")

    async def _upsert(
        self, company_id: str, operator: bool, payload: Mapping[str, Any], ctx: ExecutionContext
    ) -> AdapterResult:
        spec = parse_spec(payload["upstream"])
        require_operator_for(spec, operator)
        if spec.url is not None:
            await check_url_async(spec.url, allow_private=ctx.settings.allow_private_targets)
        owner = self.hub.namespace_owner(spec.prefix)
        if owner is not None and owner != f"{company_id}/{spec.id}":
            raise NamespaceTaken()
        if spec.prefix and any(
            a.name.startswith(f"{spec.prefix}.") and a.adapter != ADAPTER_ID for a in self.hub.catalogue.all()
        ):
            raise NamespaceTaken()
        async with ctx.store.transaction() as uow:
            created = await uow.upstreams.upsert(company_id, spec, operator=operator, now=ctx.now)
        await self.hub.reload()
        if created:
            await self._refuse_shadowing(company_id, spec.id, ctx)
        return AdapterResult(
            output={"id": spec.id, "created": created, "upstream": spec.public()}, result_type="admin.result"
        )
