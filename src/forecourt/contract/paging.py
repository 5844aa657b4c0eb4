"""Opaque, signed, dealership-bound cursors for every list and search action.

A cursor is bound to the action name, the dealership and the normalised query parameters (filters,
sort); paging keys (``cursor``, ``limit``) and ``dealership_id`` are not part of the query, so a client
may change the page size between pages. The cursor itself carries only an offset, a digest and an
expiry (see :class:`~forecourt.domain.cursor.CursorCodec`): no filter values, so no PII. A search's cursor
may add the keyset key of its page's last unit (``PageRequest.after``), where the next page starts.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from forecourt import caching
from forecourt.domain.cursor import CursorCodec, query_fingerprint
from forecourt.domain.frozen import frozen
from forecourt.errors import InvalidCursor, InvalidParams
from forecourt.settings import Settings

_PAGING_KEYS = frozenset({"cursor", "limit", "offset", "dealership_id", "view"})  # view: how items are shown


@caching.memo("contract.paging.cursor_codecs", 4)
def _codec(secret: bytes) -> CursorCodec:
    return CursorCodec(secret)  # its HMAC key is set up once, then copied per cursor


def cursor_codec(settings: Settings) -> CursorCodec:
    """The codec every replica shares, keyed by ``settings.cursor_secret``."""
    return _codec(settings.cursor_secret.get_secret_value().encode())


def _normalise(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _normalise(v) for k, v in sorted(value.items()) if v is not None}
    if isinstance(value, list | tuple | set | frozenset):
        items = [_normalise(v) for v in value]
        if all(isinstance(v, str | int | float | bool) for v in items):
            return sorted(items, key=lambda v: (type(v).__name__, v))
        return items
    return value


def normalise_params(params: Mapping[str, Any]) -> dict[str, Any]:
    """The query part of a payload: paging keys and ``None`` values dropped, scalar lists sorted."""
    return {k: _normalise(v) for k, v in sorted(params.items()) if k not in _PAGING_KEYS and v is not None}


_KEYS: caching.Cache[tuple[str, str | None, Hashable], str] = caching.lru("contract.paging.query_keys", 4096)


def query_key(
    action: str, dealership_id: str | None, params: Mapping[str, Any], *, form: Hashable | None = None
) -> str:
    """The digest a cursor is bound to: action, dealership and normalised query parameters.

    Remembered by ``form``, the whole payload frozen (``ExecutionContext.payload_form``), when the caller has it;
    else by the query part of ``params`` frozen here.
    """
    memo = form if form is not None else frozen({k: v for k, v in params.items() if k not in _PAGING_KEYS})
    if memo is not None and (found := _KEYS.get((action, dealership_id, memo))) is not None:
        return found
    key = query_fingerprint(f"{action}|{dealership_id or '-'}", normalise_params(params))
    if memo is not None:
        _KEYS.put((action, dealership_id, memo), key)
    return key


def page_limit(settings: Settings, requested: Any) -> int:
    """The page size: ``settings.default_page_size`` when absent; must be within 1..``max_page_size``."""
    if requested is None:
        return min(settings.default_page_size, settings.max_page_size)
    if isinstance(requested, bool) or not isinstance(requested, int):
        raise InvalidParams("limit must be an integer.", details={"field": "limit"})
    if requested < 1 or requested > settings.max_page_size:
        raise InvalidParams(
            f"limit must be between 1 and {settings.max_page_size}.",
            details={"field": "limit", "maximum": settings.max_page_size},
        )
    return requested


@dataclass(frozen=True)
class PageRequest:
    """Where a page starts and how long it is, plus what the next cursor must be bound to."""

    offset: int
    limit: int
    key: str
    now: datetime | None = None
    after: tuple[int | str, ...] | None = None
    """The keyset key the page starts after, when its cursor carries one (an inventory search's)."""


def decode_cursor(settings: Settings, cursor: Any, key: str, *, now: datetime | None = None) -> int:
    """The position a cursor points to; ``invalid_cursor`` when forged, expired, or for another query."""
    if cursor is None:
        return 0
    if not isinstance(cursor, str) or not cursor:
        raise InvalidCursor()
    return cursor_codec(settings).decode(cursor, key, now=now.timestamp() if now else None)


def encode_cursor(settings: Settings, position: int, key: str, *, now: datetime | None = None) -> str:
    """A signed cursor for ``position`` in the query identified by ``key``."""
    return cursor_codec(settings).encode(position, key, now=now.timestamp() if now else None)


def open_page(
    settings: Settings,
    action: str,
    dealership_id: str | None,
    payload: Mapping[str, Any],
    *,
    now: datetime | None = None,
    form: Hashable | None = None,
) -> PageRequest:
    """Read ``cursor`` and ``limit`` from a list/search payload.

    Args:
        settings: Provides the cursor secret and the page-size bounds.
        action: The action name the cursor is bound to.
        dealership_id: The resolved dealership the cursor is bound to.
        payload: The action input; every key but the paging keys is part of the query.
        now: The clock used for cursor expiry (defaults to the system clock).
        form: ``payload`` frozen, when the caller has it (``ExecutionContext.payload_form``).

    Returns:
        The offset and limit of the page asked for, and the keyset key it starts after when the cursor has one.

    Raises:
        InvalidCursor: The cursor is forged, expired, or belongs to another action, dealership or query.
        InvalidParams: ``limit`` is out of range.
    """
    key = query_key(action, dealership_id, payload, form=form)
    limit = page_limit(settings, payload.get("limit"))
    cursor = payload.get("cursor")
    if cursor is None:
        return PageRequest(offset=0, limit=limit, key=key, now=now)
    if not isinstance(cursor, str) or not cursor:
        raise InvalidCursor()
    offset, after = cursor_codec(settings).position(cursor, key, now=now.timestamp() if now else None)
    return PageRequest(offset=offset, limit=limit, key=key, now=now, after=after)


def next_cursor(
    settings: Settings, page: PageRequest, returned: int, total: int, *, after: tuple[int | str, ...] | None = None
) -> str | None:
    """The cursor for the page after ``page``, starting after the keyset key ``after`` when one is given; ``None``
    when the list is exhausted (``total``: exact, or a lower bound larger than the pages so far returned)."""
    following = page.offset + returned
    if returned == 0 or following >= total:
        return None
    return cursor_codec(settings).encode(following, page.key, now=page.now.timestamp() if page.now else None, key=after)


def page_output(items: list[Any], cursor: str | None, total: int | None = None) -> dict[str, Any]:
    """``{items, next_cursor?, total?}``: ``next_cursor`` is absent on the last page."""
    out: dict[str, Any] = {"items": items}
    if cursor is not None:
        out["next_cursor"] = cursor
    if total is not None:
        out["total"] = total
    return out
