"""The "try a tool" panel: run one tool as a chosen member through the gateway, show the answer and its audit record.

The member's record comes from ``console.tools.list`` (which checks that the signed-in person administers the
company and answers the member with what it may call); the call itself is one ``Gateway.invoke`` as that member
(its scopes, its rooftops, the company's policies, limits and approval rules: what the member's agent would get),
``surface: console``; its audit record is then read back with ``console.audit.search`` by the call's trace id.
Admin actions cannot be tried: only the tools the member's ``tools/list`` could offer.
"""

from __future__ import annotations

import secrets
from typing import Any

import orjson
from starlette.responses import Response

from forecourt.domain.tenancy import Member
from forecourt.errors import ForecourtError, InvalidParams
from forecourt.gateway.base import Invocation, Principal
from forecourt.surfaces.console.core import Page
from forecourt.surfaces.console.views_main import tools


def _arguments(text: str) -> dict[str, Any]:
    try:
        value = orjson.loads(text.strip() or "{}")
    except orjson.JSONDecodeError as exc:
        raise InvalidParams('The arguments must be a JSON object, e.g. {"dealership_id": "..."}.') from exc
    if not isinstance(value, dict):
        raise InvalidParams('The arguments must be a JSON object, e.g. {"dealership_id": "..."}.')
    return value


async def try_tool(page: Page) -> Response:
    """Run the chosen tool as the chosen member; the Tools page shows the answer and the audit record."""
    member_id = page.field("member_id").strip()
    tool = page.field("tool").strip()
    arguments = _arguments(page.field("arguments"))
    listing = await page.call("console.tools.list", {"company_id": page.company, "member_id": member_id})
    names = {t["name"]: t["name"].replace("aap_", "aap.", 1) for t in listing["tools"]}
    if tool not in names and tool not in names.values():
        raise InvalidParams(f"{member_id} may not call {tool[:128]!r} (or it is not a tool an agent can call).")
    action = names.get(tool, tool)
    member = Member.model_validate(listing["member"])
    principal = Principal.of_member(member, subject=f"console:{page.session.member_id or 'operator'}")
    inv = Invocation(
        action=action, payload=arguments, surface="console", principal=principal, trace_id=secrets.token_hex(16)
    )
    gateway = page.core.gateway
    result: dict[str, Any] = {"member_id": member_id, "tool": action}
    try:
        outcome = await gateway.invoke(inv)
        result.update(ok=True, output=outcome.output, trace_id=outcome.trace_id)
    except ForecourtError as exc:
        error = {"code": exc.code, "message": exc.message, "details": exc.details}
        result.update(ok=False, error=error, trace_id=getattr(exc, "trace_id", None) or inv.trace_id)
    await gateway.audit.flush()
    found = await page.call(
        "console.audit.search",
        {"company_id": page.company, "trace_id": result["trace_id"], "action": action, "limit": 1},
    )
    result["audit"] = found["items"][0] if found["items"] else None
    page.kept = {"form": "try", **{k: v for k, v in (page.form or {}).items() if isinstance(v, str)}}
    page.form = None
    return await tools(page, tried=result)
