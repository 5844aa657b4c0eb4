"""The OpenAPI 3.1 document of the REST envelope and the admin API, generated from the action catalogue.

``GET /openapi.json`` describes one operation per action (``POST /mcp/{name}``, whose request envelope's
``payload`` is the action's input schema and whose response envelope's ``result.output`` is its output
schema) plus every admin route. It is built from the catalogue on each request, so actions added at run
time (upstream MCP tools, model runtimes) appear without a restart. Action schemas are JSON Schema 2020-12,
which OpenAPI 3.1 uses as is, with their references inlined so that they resolve inside the larger document.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from referencing import Registry
from referencing.jsonschema import DRAFT202012
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from forecourt.contract import Action, Catalogue
from forecourt.surfaces.admin_api import _QUERY_PARAMS, _ROUTES
from forecourt.surfaces.envelope import AUTH_METHODS

if TYPE_CHECKING:
    from referencing._core import Resolver

OPENAPI_VERSION = "3.1.0"
_COMPONENT_NAME = re.compile(r"[^A-Za-z0-9._-]")
_PATH_PARAM = re.compile(r"{(\w+)(?::\w+)?}")

_ERROR_OBJECT: dict[str, Any] = {
    "type": "object",
    "properties": {
        "code": {"type": "string"},
        "message": {"type": "string"},
        "retryable": {"type": "boolean"},
        "details": {"type": "object"},
        "trace_id": {"type": "string"},
    },
    "required": ["code", "message", "retryable"],
}
_ERROR_BODY: dict[str, Any] = {
    "type": "object",
    "properties": {"error": {"$ref": "#/components/schemas/ErrorObject"}},
    "required": ["error"],
}
_CALLER = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "agentId": {"type": ["string", "null"], "maxLength": 512},
        "sessionId": {"type": ["string", "null"], "maxLength": 256},
        "traceId": {"type": ["string", "null"], "maxLength": 128},
    },
}
_META = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "priority": {"enum": ["low", "normal", "high"]},
        "allowSideEffects": {"type": "boolean"},
        "idempotencyKey": {"type": ["string", "null"], "maxLength": 200},
    },
}
_SECURITY_REF = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "auth": {
            "type": ["object", "null"],
            "additionalProperties": False,
            "properties": {"method": {"enum": [*sorted(AUTH_METHODS), None]}},
        },
        "companyContext": {
            "type": ["object", "null"],
            "additionalProperties": False,
            "properties": {"companyId": {"type": ["string", "null"], "maxLength": 128}},
        },
    },
}
_AUDIT_INFO = {
    "type": "object",
    "properties": {"processedBy": {"type": "string"}, "durationMs": {"type": "number"}, "trace": {"type": "string"}},
    "required": ["processedBy", "durationMs", "trace"],
}
_ERROR_ENVELOPE: dict[str, Any] = {
    "type": "object",
    "properties": {
        "id": {"type": "string"},
        "inResponseTo": {"type": ["string", "null"]},
        "status": {
            "type": "object",
            "properties": {
                "code": {"type": "integer"},
                "message": {"type": "string"},
                "error": {"$ref": "#/components/schemas/ErrorObject"},
            },
            "required": ["code", "message", "error"],
        },
        "result": {"type": "null"},
        "audit": {"$ref": "#/components/schemas/AuditInfo"},
    },
    "required": ["id", "inResponseTo", "status", "result", "audit"],
}


def _component_name(prefix: str, action_name: str) -> str:
    return prefix + _COMPONENT_NAME.sub("_", action_name)


_MAX_INLINE_DEPTH = 24
_DROPPED_KEYWORDS = frozenset({"$id", "$defs", "definitions", "$schema", "$anchor", "$comment"})


def _inline(node: Any, resolver: Resolver[Any], depth: int) -> Any:
    """``node`` with every ``$ref`` replaced by what it points at (embedded ``$id``s are honoured).

    Bundled schemas (the AAP ones carry each referenced document under ``$defs`` with its own ``$id``) resolve
    relative references against those ids, which generic OpenAPI tooling does not do; inlining makes the
    document self-contained. Recursion deeper than a fixed bound becomes ``{}`` (accept anything).
    """
    if isinstance(node, list):
        return [_inline(item, resolver, depth) for item in node]
    if not isinstance(node, dict):
        return node
    if depth > _MAX_INLINE_DEPTH:
        return {}
    if isinstance(node.get("$id"), str):
        resolver = resolver.in_subresource(DRAFT202012.create_resource(node))
    out: dict[str, Any] = {}
    ref = node.get("$ref")
    if isinstance(ref, str):
        resolved = resolver.lookup(ref)
        target = _inline(resolved.contents, resolved.resolver, depth + 1)
        if isinstance(target, dict):
            out.update(target)
    for key, value in node.items():
        if key == "$ref" or key in _DROPPED_KEYWORDS:
            continue
        out[key] = _inline(value, resolver, depth)
    return out


def self_contained(schema: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of a JSON Schema with every reference inlined, so it can be embedded in another document."""
    document = copy.deepcopy(dict(schema))
    resource = DRAFT202012.create_resource(document)
    base = str(document.get("$id") or "urn:forecourt:action-schema")
    resolver = Registry().with_resource(base, resource).resolver(base_uri=base)
    inlined = _inline(document, resolver, 0)
    return inlined if isinstance(inlined, dict) else {}


def _schema(components: dict[str, Any], name: str, schema: Mapping[str, Any] | None) -> dict[str, Any]:
    """Register ``schema`` as component ``name`` and return a reference to it (``{}`` when there is none)."""
    if schema is None:
        return {}
    components[name] = self_contained(schema)
    return {"$ref": f"#/components/schemas/{name}"}


def _error_responses(ref: str, *, statuses: tuple[str, ...]) -> dict[str, Any]:
    content = {"application/json": {"schema": {"$ref": ref}}}
    return {status: {"description": "Error", "content": content} for status in statuses}


_ENVELOPE_ERRORS = ("400", "401", "403", "404", "409", "413", "422", "429", "500", "502", "503", "504")


def _envelope_operation(action: Action, components: dict[str, Any]) -> dict[str, Any]:
    payload = _schema(components, _component_name("Input.", action.name), action.input_schema)
    output = _schema(components, _component_name("Output.", action.name), action.output_schema)
    request = {
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "id": {"type": ["string", "null"], "maxLength": 128},
            "caller": {"oneOf": [{"type": "null"}, {"$ref": "#/components/schemas/Caller"}]},
            "action": {
                "type": ["object", "null"],
                "additionalProperties": False,
                "properties": {
                    "type": {"enum": [action.type, None]},
                    "name": {"enum": [action.name, None]},
                    "version": {"enum": [action.version, None]},
                },
            },
            "payload": payload,
            "security": {"oneOf": [{"type": "null"}, {"$ref": "#/components/schemas/SecurityRef"}]},
            "meta": {"$ref": "#/components/schemas/Meta"},
        },
    }
    success = {
        "type": "object",
        "properties": {
            "id": {"type": "string"},
            "inResponseTo": {"type": ["string", "null"]},
            "status": {
                "type": "object",
                "properties": {"code": {"const": 200}, "message": {"type": "string"}},
                "required": ["code", "message"],
            },
            "result": {
                "type": "object",
                "properties": {"type": {"type": "string"}, "output": output, "metadata": {"type": "object"}},
                "required": ["type", "output", "metadata"],
            },
            "audit": {"$ref": "#/components/schemas/AuditInfo"},
        },
        "required": ["id", "inResponseTo", "status", "result", "audit"],
    }
    responses: dict[str, Any] = {
        "200": {"description": "The action's result", "content": {"application/json": {"schema": success}}}
    }
    responses.update(_error_responses("#/components/schemas/ErrorEnvelope", statuses=_ENVELOPE_ERRORS))
    operation: dict[str, Any] = {
        "operationId": action.name,
        "summary": action.title,
        "description": action.description,
        "tags": [action.domain or action.name.split(".", 1)[0]],
        "parameters": [
            {"name": "Idempotency-Key", "in": "header", "required": False, "schema": {"type": "string"}},
        ],
        "requestBody": {"required": True, "content": {"application/json": {"schema": request}}},
        "responses": responses,
        "x-forecourt-scope": action.scope,
        "x-forecourt-side-effect": action.side_effect,
    }
    if action.anonymous_allowed:
        operation["security"] = [{"bearer": []}, {}]
    return operation


def _admin_body(action: Action, body_key: str, params: Mapping[str, str]) -> dict[str, Any]:
    properties = dict(action.input_schema.get("properties") or {})
    if body_key:
        return copy.deepcopy(dict(properties.get(body_key) or {"type": "object"}))
    required = [r for r in action.input_schema.get("required") or () if r != "company_id" and r not in params.values()]
    kept = {k: v for k, v in properties.items() if k != "company_id" and k not in params.values()}
    return {"type": "object", "properties": kept, "required": required, "additionalProperties": False}


def _admin_parameters(action: Action, sub: str, params: Mapping[str, str]) -> list[dict[str, Any]]:
    properties = dict(action.input_schema.get("properties") or {})
    parameters: list[dict[str, Any]] = [
        {"name": "company_id", "in": "path", "required": True, "schema": properties.get("company_id", {})}
    ]
    for name in _PATH_PARAM.findall(sub):
        schema = properties.get(params.get(name, name)) or {"type": "string"}
        if schema.get("type") != "string":
            schema = {"type": "string"}
        parameters.append({"name": name, "in": "path", "required": True, "schema": schema})
    for name in _QUERY_PARAMS:
        if name in properties:
            parameters.append({"name": name, "in": "query", "required": False, "schema": properties[name]})
    return parameters


def _admin_paths(catalogue: Catalogue) -> dict[str, dict[str, Any]]:
    paths: dict[str, dict[str, Any]] = {}
    for method, sub, name, body_key, params in _ROUTES:
        action = catalogue.get(name)
        if action is None:
            continue
        status = "201" if name == "admin.keys.create" else "200"
        operation: dict[str, Any] = {
            "operationId": f"http.{name}",
            "summary": action.title,
            "description": action.description,
            "tags": ["admin"],
            "parameters": _admin_parameters(action, sub, params),
            "responses": {
                status: {"description": "OK", "content": {"application/json": {"schema": {}}}},
                **_error_responses(
                    "#/components/schemas/ErrorBody", statuses=("400", "401", "403", "404", "409", "413", "422", "429")
                ),
                **_error_responses("#/components/schemas/ErrorBody", statuses=("500", "503", "504")),
            },
            "x-forecourt-scope": action.scope,
        }
        if body_key is not None:
            schema = _admin_body(action, body_key, params)
            operation["requestBody"] = {"required": True, "content": {"application/json": {"schema": schema}}}
        paths.setdefault(f"/admin/v1/companies/{{company_id}}{sub}", {})[method.lower()] = operation
    return paths


def openapi_document(
    catalogue: Catalogue, *, title: str = "Forecourt", server_url: str | None = None
) -> dict[str, Any]:
    """The OpenAPI 3.1 document for the REST envelope (one path per action) and the admin API.

    Args:
        catalogue: The actions to describe.
        title: ``info.title``.
        server_url: The public base URL, listed under ``servers`` when given.

    Returns:
        The document as a JSON-serialisable dict.
    """
    components: dict[str, Any] = {
        "ErrorObject": _ERROR_OBJECT,
        "ErrorBody": _ERROR_BODY,
        "ErrorEnvelope": _ERROR_ENVELOPE,
        "AuditInfo": _AUDIT_INFO,
        "Caller": _CALLER,
        "Meta": _META,
        "SecurityRef": _SECURITY_REF,
    }
    paths: dict[str, dict[str, Any]] = {}
    for action in catalogue.all():
        paths[f"/mcp/{action.name}"] = {"post": _envelope_operation(action, components)}
    paths.update(_admin_paths(catalogue))
    document: dict[str, Any] = {
        "openapi": OPENAPI_VERSION,
        "info": {
            "title": title,
            "version": "v1",
            "description": "The REST envelope (seed 001 request/response envelopes) and the admin API.",
        },
        "jsonSchemaDialect": "https://json-schema.org/draft/2020-12/schema",
        "paths": paths,
        "components": {
            "schemas": components,
            "securitySchemes": {
                "bearer": {
                    "type": "http",
                    "scheme": "bearer",
                    "description": "An API key (fck_...) or an OIDC JWT.",
                }
            },
        },
        "security": [{"bearer": []}],
    }
    if server_url:
        document["servers"] = [{"url": server_url}]
    return document


def openapi_routes(catalogue: Catalogue, server_url: Callable[[], str | None] | None = None) -> list[Route]:
    """``GET /openapi.json``, built from the catalogue on each request."""

    async def endpoint(_: Request) -> Response:
        url = server_url() if server_url else None
        return JSONResponse(openapi_document(catalogue, server_url=url), headers={"Cache-Control": "no-cache"})

    return [Route("/openapi.json", endpoint, methods=["GET"], include_in_schema=False)]
