"""The REST front door (seed 001 §11): ``POST /mcp/{action.name}`` with the seed's envelopes."""

from __future__ import annotations

import logging
import time
import uuid
from typing import Any

import orjson
from pydantic import ValidationError
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from forecourt.errors import ForecourtError, InternalError, InvalidRequest
from forecourt.gateway.base import Invocation, Outcome
from forecourt.gateway.pipeline import Gateway
from forecourt.settings import Settings
from forecourt.surfaces.encoded import plain_json
from forecourt.surfaces.envelope import (
    AuditInfo,
    RequestEnvelope,
    ResponseEnvelope,
    Result,
    Status,
    check_claims,
)
from forecourt.surfaces.http_util import credentials_from_request, read_json

logger = logging.getLogger(__name__)


def _envelope_error(exc: ValidationError) -> InvalidRequest:
    problems = [{"path": "/" + "/".join(str(p) for p in e["loc"]), "rule": e["type"]} for e in exc.errors()[:5]]
    return InvalidRequest("The request envelope is invalid.", details={"errors": problems})


def _dump(body: ResponseEnvelope) -> dict[str, Any]:
    """The wire form: ``status`` carries ``error`` only on failure (the seed's ``status{code, message}``)."""
    data = body.model_dump(mode="json")
    if data["status"].get("error") is None:
        data["status"].pop("error", None)
    return data


def _rate_headers(outcome: Outcome) -> dict[str, str]:
    rl = outcome.rate_limit
    if rl is None:
        return {}
    return {
        "RateLimit-Limit": str(rl.limit),
        "RateLimit-Remaining": str(max(rl.remaining, 0)),
        "RateLimit-Reset": str(max(1, int(rl.reset_after_s + 0.999))),
    }


class RestSurface:
    """Translates envelopes into invocations and outcomes back into envelopes."""

    def __init__(self, gateway: Gateway, settings: Settings) -> None:
        self.gateway = gateway
        self.settings = settings

    def routes(self) -> list[Route]:
        """Starlette routes of this front door."""
        return [Route("/mcp/{action_name:str}", self.handle, methods=["POST"])]

    async def handle(self, request: Request) -> Response:
        """Handle one envelope."""
        started = time.perf_counter()
        action_name = request.path_params["action_name"]
        envelope: RequestEnvelope | None = None
        try:
            raw = await read_json(request, self.settings)
            if not isinstance(raw, dict):
                raise InvalidRequest("The request envelope must be a JSON object.")
            try:
                envelope = RequestEnvelope.model_validate(raw)
            except ValidationError as exc:
                raise _envelope_error(exc) from None
            invocation = self._invocation(request, action_name, envelope)
            outcome = await self.gateway.invoke(invocation)
        except ForecourtError as exc:
            return self._error(exc, envelope, started)
        except Exception:  # top of the surface: never a stack trace on the wire
            logger.exception("unhandled error on REST surface")
            return self._error(InternalError(), envelope, started)
        headers = _rate_headers(outcome)
        if outcome.replayed:
            headers["Idempotent-Replayed"] = "true"
        fast = self._success_bytes(envelope.id, outcome)
        if fast is not None:
            return Response(fast, media_type="application/json", headers=headers)
        body = ResponseEnvelope(
            id=f"mcp-resp:{uuid.uuid4()}",
            inResponseTo=envelope.id,
            status=Status(code=200, message="OK"),
            result=Result(type=outcome.result_type, output=outcome.output, metadata=outcome.metadata),
            audit=AuditInfo(
                processedBy=outcome.processed_by, durationMs=round(outcome.duration_ms, 3), trace=outcome.trace_id
            ),
        )
        return JSONResponse(_dump(body), headers=headers)

    def _success_bytes(self, request_id: str | None, outcome: Outcome) -> bytes | None:
        """The success envelope written from plain JSON parts (a cached output's own JSON is kept), else ``None``.

        The same fields in the same order as the :class:`ResponseEnvelope` below writes them; an output or metadata
        that is not plain JSON goes through that model instead.
        """
        output = plain_json(outcome.output)
        metadata = plain_json(outcome.metadata)
        if output is None or metadata is None:
            return None
        head = orjson.dumps(
            {"id": f"mcp-resp:{uuid.uuid4()}", "inResponseTo": request_id, "status": {"code": 200, "message": "OK"}}
        )
        audit = orjson.dumps(
            {
                "processedBy": outcome.processed_by,
                "durationMs": round(outcome.duration_ms, 3),
                "trace": outcome.trace_id,
            }
        )
        result_type = orjson.dumps(outcome.result_type)
        parts = [head[:-1], b',"result":{"type":', result_type, b',"output":', output, b',"metadata":', metadata]
        parts += [b'},"audit":', audit, b"}"]
        return b"".join(parts)

    def _invocation(self, request: Request, action_name: str, env: RequestEnvelope) -> Invocation:
        if env.action is not None and env.action.name is not None and env.action.name != action_name:
            raise InvalidRequest("action.name does not match the URL.")
        known = self.gateway.catalogue.get(action_name)
        credentials = credentials_from_request(request)
        check_claims(env, known.version if known is not None else None, credentials)
        caller = env.caller
        company = env.security.companyContext.companyId if env.security and env.security.companyContext else None
        idem = request.headers.get("idempotency-key") or env.meta.idempotencyKey
        return Invocation(
            action=action_name,
            payload=env.payload,
            credentials=credentials,
            surface="rest",
            request_id=env.id,
            trace_id=caller.traceId if caller else None,
            traceparent=request.headers.get("traceparent"),
            session_id=caller.sessionId if caller else None,
            claimed_agent_id=caller.agentId if caller else None,
            company_context=company,
            claimed_type=env.action.type if env.action else None,
            allow_side_effects=env.meta.allowSideEffects,
            idempotency_key=idem[:200] if idem else None,
        )

    def _error(self, exc: ForecourtError, env: RequestEnvelope | None, started: float) -> Response:
        error: dict[str, Any] = exc.to_dict()
        body = ResponseEnvelope(
            id=f"mcp-resp:{uuid.uuid4()}",
            inResponseTo=env.id if env else None,
            status=Status(code=exc.http_status, message=exc.message, error=error),
            result=None,
            audit=AuditInfo(
                processedBy=self.settings.instance_name,
                durationMs=round((time.perf_counter() - started) * 1000, 3),
                trace=exc.trace_id or "",
            ),
        )
        headers = dict(exc.headers)
        if exc.http_status == 401:
            headers.setdefault("WWW-Authenticate", 'Bearer realm="forecourt"')
        return JSONResponse(_dump(body), status_code=exc.http_status, headers=headers)
