"""The admin HTTP API (``/admin/v1``): thin routes over the admin actions, so the gateway governs them."""

from __future__ import annotations

import logging
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from forecourt.errors import ForecourtError, InternalError, InvalidRequest
from forecourt.gateway.base import Invocation
from forecourt.gateway.pipeline import Gateway
from forecourt.settings import Settings
from forecourt.surfaces.http_util import credentials_from_request, error_body, error_headers, read_json

logger = logging.getLogger(__name__)

# (method, path under /admin/v1/companies/{company_id}, action, body key, path params copied into the body)
_ROUTES: list[tuple[str, str, str, str | None, dict[str, str]]] = [
    ("GET", "", "admin.companies.get", None, {}),
    ("PUT", "", "admin.companies.upsert", "company", {}),
    ("GET", "/dealerships", "admin.dealerships.list", None, {}),
    ("PUT", "/dealerships/{item_id}", "admin.dealerships.upsert", "dealership", {"item_id": "id"}),
    ("GET", "/members", "admin.members.list", None, {}),
    ("PUT", "/members/{item_id}", "admin.members.upsert", "member", {"item_id": "id"}),
    ("GET", "/keys", "admin.keys.list", None, {}),
    ("POST", "/keys", "admin.keys.create", "", {}),
    ("DELETE", "/keys/{item_id}", "admin.keys.revoke", None, {"item_id": "prefix"}),
    ("GET", "/policies", "admin.policies.list", None, {}),
    ("PUT", "/policies/{item_id}", "admin.policies.upsert", "policy", {"item_id": "id"}),
    ("DELETE", "/policies/{item_id}", "admin.policies.delete", None, {"item_id": "policy_id"}),
    ("GET", "/adapters", "admin.adapters.list", None, {}),
    ("PUT", "/adapters/{item_id}", "admin.adapters.upsert", "config", {"item_id": "adapter_id"}),
    ("GET", "/audit", "admin.audit.list", None, {}),
    ("GET", "/workflows", "admin.workflows.list", None, {}),
    ("PUT", "/workflows/{item_id}", "admin.workflows.upload", "", {"item_id": "workflow_id"}),
    ("GET", "/queries", "admin.queries.list", None, {}),
    ("PUT", "/queries/{item_id}", "admin.queries.upsert", "query", {"item_id": "id"}),
    ("DELETE", "/queries/{item_id}", "admin.queries.delete", None, {"item_id": "query_id"}),
    ("GET", "/budgets", "admin.budgets.usage", None, {}),
    ("GET", "/upstreams", "admin.upstreams.list", None, {}),
    ("PUT", "/upstreams/{item_id}", "admin.upstreams.upsert", "upstream", {"item_id": "id"}),
    ("DELETE", "/upstreams/{item_id}", "admin.upstreams.delete", None, {"item_id": "upstream_id"}),
    ("PUT", "/upstreams/{item_id}/enabled", "admin.upstreams.set_enabled", "", {"item_id": "upstream_id"}),
    ("GET", "/upstreams/{item_id}/tool-changes", "admin.upstreams.tool_changes", None, {"item_id": "upstream_id"}),
    (
        "POST",
        "/upstreams/{item_id}/tool-changes/approve",
        "admin.upstreams.approve_tools",
        "",
        {"item_id": "upstream_id"},
    ),
    ("GET", "/dealerships/{dealership_id}/documents", "admin.knowledge.list", None, {"dealership_id": "dealership_id"}),
    (
        "POST",
        "/dealerships/{dealership_id}/documents",
        "admin.knowledge.ingest",
        "",
        {"dealership_id": "dealership_id"},
    ),
    (
        "DELETE",
        "/dealerships/{dealership_id}/documents/{item_id}",
        "admin.knowledge.delete",
        None,
        {"dealership_id": "dealership_id", "item_id": "document_id"},
    ),
]
_QUERY_PARAMS = {"since": str, "after_id": str, "limit": int}


def _by_method(endpoints: dict[str, Any]) -> Any:
    """One endpoint that hands a request to the operation of its method (``HEAD`` is ``GET`` without a body)."""

    async def endpoint(request: Request) -> Response:
        method = "GET" if request.method == "HEAD" else request.method
        response: Response = await endpoints[method](request)
        return response

    return endpoint


class AdminApi:
    """``/admin/v1/companies/{company_id}/...``"""

    def __init__(self, gateway: Gateway, settings: Settings) -> None:
        self.gateway = gateway
        self.settings = settings

    def routes(self) -> list[Route]:
        """One Starlette route per admin path, answering each of the path's methods.

        One route per path (not per operation) so that a method the path does not take answers ``405`` with an
        ``Allow`` header naming every method it does take: Starlette's 405 names only the methods of the first
        route whose path matched.
        """
        by_path: dict[str, dict[str, Any]] = {}
        for method, sub, action, body_key, params in _ROUTES:
            by_path.setdefault(f"/admin/v1/companies/{{company_id}}{sub}", {})[method] = self._endpoint(
                action, body_key, params
            )
        return [Route(path, _by_method(endpoints), methods=sorted(endpoints)) for path, endpoints in by_path.items()]

    def _endpoint(self, action: str, body_key: str | None, params: dict[str, str]) -> Any:
        async def endpoint(request: Request) -> Response:
            return await self._handle(request, action, body_key, params)

        return endpoint

    async def _payload(self, request: Request, body_key: str | None, params: dict[str, str]) -> dict[str, Any]:
        payload: dict[str, Any] = {"company_id": request.path_params["company_id"]}
        for key, kind in _QUERY_PARAMS.items():
            if key in request.query_params:
                try:
                    payload[key] = kind(request.query_params[key])
                except ValueError as exc:
                    raise InvalidRequest(f"Query parameter {key} is invalid.") from exc
        if body_key is not None:
            body = await read_json(request, self.settings)
            if not isinstance(body, dict):
                raise InvalidRequest("The body must be a JSON object.")
            if body_key == "":
                payload.update({k: v for k, v in body.items() if k != "company_id"})
            else:
                payload[body_key] = body
        for path_key, field in params.items():
            value = request.path_params[path_key]
            if body_key and isinstance(payload.get(body_key), dict) and field == "id":
                payload[body_key] = {**payload[body_key], "id": value}
            else:
                payload[field] = value
        return payload

    async def _handle(self, request: Request, action: str, body_key: str | None, params: dict[str, str]) -> Response:
        try:
            payload = await self._payload(request, body_key, params)
            if action == "admin.policies.upsert" and request.query_params.get("dry_run") == "true":
                # The pre-flight alone: AAP checks and MCP tool listing against the would-be policy; nothing saved.
                action, payload = "admin.policies.preflight", {"company_id": payload["company_id"], **payload}
            outcome = await self.gateway.invoke(
                Invocation(
                    action=action,
                    payload=payload,
                    credentials=credentials_from_request(request),
                    surface="rest",
                    traceparent=request.headers.get("traceparent"),
                )
            )
        except ForecourtError as exc:
            return JSONResponse(error_body(exc), status_code=exc.http_status, headers=error_headers(exc))
        except Exception:  # top of the surface
            logger.exception("unhandled error on admin API")
            exc2 = InternalError()
            return JSONResponse(error_body(exc2), status_code=500)
        status = 201 if action == "admin.keys.create" else 200
        return JSONResponse(outcome.output, status_code=status, headers={"Cache-Control": "no-store"})
