"""The operator console at ``/console/`` (``FORECOURT_CONSOLE_PREFIX``): server-rendered pages over the gateway.

Sign in with the operator key, a company administrator's API key, or the company's OIDC issuer. Every page
reads and changes through ``Gateway.invoke`` (``surface: console``); nothing here touches the store.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import BaseRoute, Mount, Route

from forecourt.gateway.backends.console_sessions import SessionRegistry
from forecourt.gateway.pipeline import Gateway
from forecourt.settings import Settings
from forecourt.surfaces.console import views_main as main
from forecourt.surfaces.console import views_ops as ops
from forecourt.surfaces.console import views_protect as protect
from forecourt.surfaces.console import views_tenants as tenants
from forecourt.surfaces.console import views_try as tryout
from forecourt.surfaces.console.auth import AuthViews
from forecourt.surfaces.console.core import HERE, SECURITY_HEADERS, ConsoleCore, ToolsFor

_STATIC = {"console.css": "text/css", "console.js": "text/javascript"}


async def _static(request: Request) -> Response:
    name = request.path_params["name"]
    if name not in _STATIC:
        return Response("not found", status_code=404)
    body = (HERE / "static" / name).read_bytes()
    headers = {**SECURITY_HEADERS, "Cache-Control": "public, max-age=300"}
    return Response(body, media_type=_STATIC[name], headers=headers)


def console_routes(
    gateway: Gateway,
    settings: Settings,
    *,
    tools_for: ToolsFor | None = None,
    sessions: SessionRegistry | None = None,
) -> list[BaseRoute]:
    """The console's routes, mounted at the configured prefix (``tools_for``: a member's MCP ``tools/list``;
    ``sessions``: where live sessions are recorded, the backends' registry)."""
    core = ConsoleCore(gateway, settings, sessions)
    core.tools_for = tools_for
    auth = AuthViews(core)
    page = core.page
    get, post = ["GET"], ["POST"]
    routes = [
        Route("/", page(main.overview), methods=get),
        Route("/signin", auth.signin_form, methods=get),
        Route("/signin", auth.signin, methods=post),
        Route("/signout", auth.signout, methods=post),
        Route("/oidc/start", auth.oidc_start, methods=get),
        Route("/oidc/callback", auth.oidc_callback, methods=get),
        Route("/static/{name}", _static, methods=get),
        Route("/fragments/overview", page(main.overview_panel), methods=get),
        Route("/company", page(main.switch_company, again=main.overview), methods=post),
        Route("/tenants", page(tenants.tenants), methods=get),
        Route("/tenants/dealerships", page(tenants.save_dealership, again=tenants.tenants), methods=post),
        Route("/tenants/dealerships/{dealership_id}/public", page(tenants.toggle_public), methods=post),
        Route("/tenants/dealerships/{dealership_id}/agent", page(tenants.agent_preview), methods=get),
        Route("/tenants/members", page(tenants.save_member, again=tenants.tenants), methods=post),
        Route("/tenants/keys", page(tenants.create_key, again=tenants.tenants), methods=post),
        Route("/tenants/keys/{prefix}/revoke", page(tenants.revoke_key), methods=post),
        Route("/policies", page(tenants.policies), methods=get),
        Route("/policies", page(tenants.save_policy), methods=post),
        Route("/audit", page(main.audit), methods=get),
        Route("/audit/export.{fmt:str}", page(main.audit_export), methods=get),
        Route("/audit/{record_id}", page(main.audit_record), methods=get),
        Route("/leads", page(ops.leads), methods=get),
        Route("/leads/{dealership_id}/{lead_id}", page(ops.lead), methods=["GET", "POST"]),
        Route("/deliveries", page(ops.deliveries), methods=get),
        Route("/deliveries/{dealership_id}/{delivery_id}/retry", page(ops.retry_delivery), methods=post),
        Route("/inventory", page(ops.inventory), methods=get),
        Route("/inventory/{dealership_id}/upload", page(ops.upload_form), methods=get),
        Route("/inventory/{dealership_id}/upload", page(ops.upload, again=ops.upload_form), methods=post),
        Route("/approvals", page(ops.approvals), methods=get),
        Route("/approvals/task", page(ops.complete_task, again=ops.approvals), methods=post),
        Route("/approvals/held/{approval_id}", page(ops.decide_held, again=ops.approvals), methods=post),
        Route("/tools", page(main.tools), methods=get),
        Route("/tools/try", page(tryout.try_tool, again=main.tools), methods=post),
        Route("/upstreams", page(ops.upstreams), methods=get),
        Route("/upstreams", page(ops.save_upstream, again=ops.upstreams), methods=post),
        Route("/upstreams/{upstream_id}/{op:str}", page(ops.upstream_action), methods=post),
        Route("/tool-changes", page(protect.tool_changes), methods=get),
        Route("/tool-changes/{upstream_id}/{decision}", page(protect.decide, again=protect.tool_changes), methods=post),
        Route("/budgets", page(protect.budgets), methods=get),
    ]
    prefix = core.prefix

    async def bare(_: Request) -> Response:
        return RedirectResponse(prefix + "/", status_code=308)

    return [Route(prefix, bare, methods=get), Mount(prefix, routes=routes)]


__all__ = ["console_routes"]
