"""Conditional GET for the discovery documents: a strong ``ETag`` over the body, ``304`` to ``If-None-Match``.

A2A v1.0 (§8.6, agent card caching) asks card servers for ``Cache-Control`` and an ``ETag`` so clients revalidate
cheaply. The tag is a hash of the exact bytes served, so any change to a dealership's settings changes it.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

CACHE_CONTROL = "public, max-age=60"


def etag_of(body: bytes) -> str:
    """The strong entity tag of ``body``."""
    return '"' + hashlib.sha256(body).hexdigest()[:32] + '"'


def _matches(header: str, etag: str) -> bool:
    tags = [t.strip() for t in header.split(",")]
    return "*" in tags or any(t.removeprefix("W/") == etag for t in tags)


def conditional(request: Request, body: bytes, media_type: str, *, cache_control: str = CACHE_CONTROL) -> Response:
    """``body`` with ``ETag`` and ``Cache-Control``, or an empty ``304`` when the client's copy is current."""
    etag = etag_of(body)
    headers = {"ETag": etag, "Cache-Control": cache_control}
    if _matches(request.headers.get("if-none-match", ""), etag):
        return Response(status_code=304, headers=headers)
    return Response(body, media_type=media_type, headers=headers)


def conditional_json(request: Request, document: Any, *, cache_control: str = CACHE_CONTROL) -> Response:
    """A JSON document served as :func:`conditional`."""
    body = json.dumps(document, ensure_ascii=False, separators=(",", ":")).encode()
    return conditional(request, body, "application/json", cache_control=cache_control)
