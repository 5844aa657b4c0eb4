"""HTTP helpers shared by the front doors: bounded JSON bodies, credentials, error bodies."""

from __future__ import annotations

import json
from typing import Any

from starlette.requests import Request

from forecourt.errors import ForecourtError, InvalidRequest, PayloadTooLarge
from forecourt.gateway.auth.asgi import credentials_from_scope
from forecourt.gateway.base import Credentials
from forecourt.settings import Settings


def json_depth_ok(value: Any, limit: int) -> bool:
    """Whether ``value`` nests no deeper than ``limit`` (iterative, so hostile input cannot blow the stack)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            if depth > limit:
                return False
            stack.extend((v, depth + 1) for v in item.values())
        elif isinstance(item, list):
            if depth > limit:
                return False
            stack.extend((v, depth + 1) for v in item)
    return True


def _raw_depth_ok(body: bytes, limit: int) -> bool:
    """Cheap pre-parse check of bracket nesting, so deeply nested input never reaches the parser."""
    depth = 0
    in_string = False
    escaped = False
    for byte in body:
        if in_string:
            if escaped:
                escaped = False
            elif byte == 0x5C:
                escaped = True
            elif byte == 0x22:
                in_string = False
            continue
        if byte == 0x22:
            in_string = True
        elif byte in (0x5B, 0x7B):
            depth += 1
            if depth > limit:
                return False
        elif byte in (0x5D, 0x7D):
            depth -= 1
    return True


async def read_body(request: Request, settings: Settings) -> bytes:
    """The request body, refused past ``settings.max_body_bytes`` without reading it all."""
    declared = request.headers.get("content-length")
    if declared is not None:
        try:
            if int(declared) > settings.max_body_bytes:
                raise PayloadTooLarge(details={"max_bytes": settings.max_body_bytes})
        except ValueError as exc:
            raise InvalidRequest("Content-Length is not a number.") from exc
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > settings.max_body_bytes:
            raise PayloadTooLarge(details={"max_bytes": settings.max_body_bytes})
        chunks.append(chunk)
    return b"".join(chunks)


def parse_json(body: bytes, settings: Settings) -> Any:
    """Parse a JSON body with bounded nesting; errors never quote the input."""
    if not body.strip():
        raise InvalidRequest("The request body is empty.")
    if not _raw_depth_ok(body, settings.max_json_depth):
        raise InvalidRequest("The JSON nests too deeply.", details={"max_depth": settings.max_json_depth})
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidRequest("The request body is not valid UTF-8.") from exc
    try:
        return json.loads(text, parse_constant=_reject_constant)
    except (ValueError, RecursionError) as exc:
        raise InvalidRequest("The request body is not valid JSON.") from exc


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


async def read_json(request: Request, settings: Settings) -> Any:
    """Read and parse a bounded JSON body."""
    return parse_json(await read_body(request, settings), settings)


def bearer_token(request: Request) -> str | None:
    """The bearer token from ``Authorization``, if any."""
    header = request.headers.get("authorization", "")
    scheme, _, token = header.partition(" ")
    if scheme.lower() == "bearer" and token.strip():
        return token.strip()
    return None


def credentials_from_request(request: Request) -> Credentials:
    """What the request presents: bearer token, TLS peer certificate, proxy-forwarded certificate, address."""
    return credentials_from_scope(request.scope)


CHALLENGE = 'Bearer realm="forecourt"'


def error_headers(exc: ForecourtError) -> dict[str, str]:
    """The headers of an error answer: the error's own, plus a bearer challenge on every 401 (RFC 6750)."""
    headers = dict(exc.headers)
    if exc.http_status == 401:
        headers.setdefault("WWW-Authenticate", CHALLENGE)
    return headers


def error_body(exc: ForecourtError) -> dict[str, Any]:
    """AutomotiveMCP-shaped error body ``{error: {code, message, details, retryable}}``."""
    body = {"error": exc.to_dict()}
    if exc.trace_id:
        body["error"]["trace_id"] = exc.trace_id
    return body
