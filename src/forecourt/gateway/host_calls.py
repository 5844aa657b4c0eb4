"""Nested calls from remote adapter hosts: ``POST /v1/adapter-hosts/invoke``, served when a family runs remote.

An adapter running on a host calls other actions (a BPMN service task, ``knowledge.search_inventory``) with the
grant the gateway gave its call (:mod:`forecourt.contract.grants`). Here the grant becomes the caller again
(its member reloaded: one removed or deactivated since is refused) and the child call runs through
``Gateway.invoke`` exactly as ``ExecutionContext.invoke`` runs it in-process: surface ``workflow``, the parent's
trace and session, side effects only under a parent that may have them. So identity, tenancy, policy, scopes,
limits, approvals, budgets and audit apply to it once, here; the host never holds the caller's credential, and no
grant outlives the parent call's deadline.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING

from forecourt.contract import Principal
from forecourt.contract.errors import NestingTooDeep
from forecourt.contract.grants import (
    DEADLINE_HEADER,
    MAX_DEPTH,
    NESTED_DEPTH,
    NESTED_PATH,
    NESTING,
    Grant,
    grant_key,
    verify_grant,
)
from forecourt.errors import ForecourtError, InternalError, InvalidParams, Timeout, Unauthorized
from forecourt.gateway.base import Invocation, Outcome

if TYPE_CHECKING:
    from starlette.requests import Request
    from starlette.responses import JSONResponse
    from starlette.routing import BaseRoute

    from forecourt.gateway.pipeline import Gateway

logger = logging.getLogger(__name__)


class HostCalls:
    """Runs the nested calls of remote adapter hosts through the gateway, as the callers their grants name."""

    def __init__(self, gateway: Gateway) -> None:
        self.gateway = gateway
        self._key = grant_key(gateway.settings.api_key_pepper.get_secret_value())
        self.calls = 0

    async def handle(self, request: Request) -> JSONResponse:
        """``POST /v1/adapter-hosts/invoke``: ``{action, payload}`` → ``{result}`` or ``{error}``."""
        from starlette.responses import JSONResponse

        try:
            outcome = await self._run(request)
        except ForecourtError as error:
            if error.http_status >= 500:
                logger.warning("nested call from an adapter host failed: %s", error.code)
            return JSONResponse({"error": error.to_dict()}, status_code=error.http_status, headers=error.headers)
        except Exception:
            logger.exception("nested call from an adapter host failed")
            internal = InternalError()
            return JSONResponse({"error": internal.to_dict()}, status_code=internal.http_status)
        from pydantic_core import to_jsonable_python

        # An output may hold datetimes, decimals or models (the front doors write them through their models).
        result = {"output": outcome.output, "result_type": outcome.result_type, "metadata": outcome.metadata}
        return JSONResponse({"result": to_jsonable_python(result)})

    async def _run(self, request: Request) -> Outcome:
        auth = request.headers.get("authorization", "")
        if not auth.lower().startswith("bearer "):
            raise Unauthorized("A nested call needs its grant.")
        grant, _ = verify_grant(auth[7:], self._key)
        if grant.depth > MAX_DEPTH:
            raise NestingTooDeep(details={"max_depth": MAX_DEPTH})
        try:
            body = await request.json()
        except ValueError as exc:
            raise InvalidParams("The call body is not JSON.") from exc
        action = body.get("action") if isinstance(body, Mapping) else None
        payload = body.get("payload") if isinstance(body, Mapping) else None
        if not isinstance(action, str) or not isinstance(payload, Mapping):
            raise InvalidParams("A nested call names an action and its payload.")
        remaining = grant.expires_at - time.time()
        deadline = request.headers.get(DEADLINE_HEADER)
        if deadline and deadline.isdigit():
            remaining = min(remaining, int(deadline) / 1000 - time.time())
        if remaining <= 0:
            raise Timeout(details={"timeout_s": 0})
        invocation = Invocation(
            action=action,
            payload=payload,
            surface="workflow",
            principal=await self._principal(grant),
            trace_id=grant.trace_id or None,
            session_id=grant.session_id,
            allow_side_effects=grant.writes,
        )
        self.calls += 1
        depth = NESTED_DEPTH.set(grant.depth)  # a remote call this one makes signs a deeper grant
        try:
            async with asyncio.timeout(remaining):
                return await self.gateway.invoke(invocation)
        except TimeoutError as exc:
            raise Timeout(details={"timeout_s": round(remaining, 3)}) from exc
        finally:
            NESTED_DEPTH.reset(depth)

    async def _principal(self, grant: Grant) -> Principal:
        """The grant's caller, with its member as it is now (one removed or deactivated since is refused)."""
        principal = grant.principal
        if principal.member_id is None:
            if principal.method in ("internal", "anonymous"):
                return principal
            raise Unauthorized("The nested call's grant is not valid.")
        if principal.company_id is None:
            raise Unauthorized("The nested call's grant is not valid.")
        async with self.gateway.store.read() as uow:
            member = await uow.tenancy.get_member(principal.company_id, principal.member_id)
        if member is None or not member.active:
            raise Unauthorized("The nested call's caller is no longer a member.")
        return dataclasses.replace(principal, member=member)


def host_call_routes(gateway: Gateway) -> list[BaseRoute]:
    """The nested-call route, when ``remote.yaml`` runs a family whose adapters call other actions (knowledge,
    workflows) on remote hosts; none otherwise, so a gateway that sends hosts only models or upstreams calls
    accepts no grant at all, whoever holds the key they are signed with."""
    families = gateway.adapter_configs.defaults.get("remote", {}).get("families")
    if not isinstance(families, Mapping) or not NESTING & set(families):
        return []
    from starlette.routing import Route

    calls = HostCalls(gateway)
    return [Route(NESTED_PATH, calls.handle, methods=["POST"], name="adapter-host-calls")]


__all__ = ["HostCalls", "host_call_routes"]
