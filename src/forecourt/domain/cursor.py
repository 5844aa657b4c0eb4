"""Opaque, tamper-evident pagination cursors.

A cursor carries only an offset, a fingerprint of the query it belongs to and an expiry, signed with
HMAC-SHA256; a search's cursor may also carry the sort value and id of its page's last vehicle (a keyset key:
inventory data, never a customer's). It holds no filter values (so no PII), cannot be edited without
detection, and cannot be replayed against a different query or dealership.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
from collections.abc import Sequence
from typing import Any

import orjson

from forecourt.errors import InvalidCursor

_TTL_S = 24 * 3600
# Built once: ``json.dumps`` with options builds an encoder on every call. The digest's bytes must not change
# (a cursor issued before an upgrade names its query by them).
_FINGERPRINT_JSON = json.JSONEncoder(sort_keys=True, separators=(",", ":"), default=str)


def query_fingerprint(scope: str, params: dict[str, Any]) -> str:
    """A short digest of a query's scope and parameters, with paging keys removed."""
    clean = {k: v for k, v in params.items() if k not in ("cursor", "limit", "offset")}
    raw = _FINGERPRINT_JSON.encode([scope, clean])
    return hashlib.sha256(raw.encode()).hexdigest()[:16]


class CursorCodec:
    """Encodes and verifies cursors with one secret (shared by every replica)."""

    def __init__(self, secret: bytes, ttl_s: int = _TTL_S) -> None:
        self._keyed = hmac.new(secret, digestmod=hashlib.sha256)  # copied per cursor: the key is set up once
        self._ttl_s = ttl_s

    def _sign(self, body: bytes) -> bytes:
        mac = self._keyed.copy()
        mac.update(body)
        return mac.digest()[:16]

    def encode(
        self, offset: int, fingerprint: str, *, now: float | None = None, key: Sequence[int | str] | None = None
    ) -> str:
        """A cursor for ``offset`` in the query identified by ``fingerprint`` (and the keyset ``key`` there)."""
        exp = int((now if now is not None else time.time()) + self._ttl_s)
        fields: dict[str, Any] = {"o": offset, "f": fingerprint, "e": exp}
        if key is not None:
            fields["k"] = list(key)
        body = orjson.dumps(fields)
        sig = self._sign(body)
        return base64.urlsafe_b64encode(body + sig).decode().rstrip("=")

    def decode(self, cursor: str, fingerprint: str, *, now: float | None = None) -> int:
        """The offset a cursor points to; :class:`InvalidCursor` if forged, expired or for another query."""
        return self.position(cursor, fingerprint, now=now)[0]

    def position(
        self, cursor: str, fingerprint: str, *, now: float | None = None
    ) -> tuple[int, tuple[int | str, ...] | None]:
        """The offset a cursor points to and its keyset key (``None`` when it has none); as :meth:`decode`."""
        try:
            raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        except (ValueError, TypeError) as exc:
            raise InvalidCursor() from exc
        body, sig = raw[:-16], raw[-16:]
        expected = self._sign(body)
        if len(raw) <= 16 or not hmac.compare_digest(sig, expected):
            raise InvalidCursor()
        try:
            data = orjson.loads(body)
        except orjson.JSONDecodeError as exc:
            raise InvalidCursor() from exc
        if not isinstance(data, dict):
            raise InvalidCursor()
        if data.get("f") != fingerprint:
            raise InvalidCursor("The cursor belongs to a different query.")
        if int(data.get("e", 0)) < (now if now is not None else time.time()):
            raise InvalidCursor("The cursor has expired.")
        offset = data.get("o")
        if not isinstance(offset, int) or offset < 0:
            raise InvalidCursor()
        return offset, _key(data.get("k"))


def _key(raw: Any) -> tuple[int | str, ...] | None:
    if raw is None:
        return None
    if not isinstance(raw, list) or not 1 <= len(raw) <= 4 or not all(type(v) in (int, str) for v in raw):
        raise InvalidCursor()
    return tuple(raw)
