"""Cursors for list and search actions: opaque, signed, bound to action, dealership and query."""

from __future__ import annotations

from datetime import timedelta

import pytest

from forecourt.contract import paging
from forecourt.domain.frozen import frozen
from forecourt.errors import InvalidCursor, InvalidParams
from forecourt.settings import Settings

from .builders import NOW

SETTINGS = Settings(cursor_secret="test-cursor-secret", default_page_size=20, max_page_size=100)


def first_cursor(params: dict[str, object], *, action: str = "leads.list", dealer: str = "d1") -> str:
    page = paging.open_page(SETTINGS, action, dealer, params, now=NOW)
    cursor = paging.next_cursor(SETTINGS, page, 20, 100)
    assert cursor is not None
    return cursor


def test_the_first_page_starts_at_zero_with_the_default_size() -> None:
    page = paging.open_page(SETTINGS, "leads.list", "d1", {}, now=NOW)
    assert (page.offset, page.limit) == (0, 20)


def test_a_next_cursor_resumes_after_the_items_returned() -> None:
    cursor = first_cursor({"status": "new"})
    page = paging.open_page(SETTINGS, "leads.list", "d1", {"status": "new", "cursor": cursor, "limit": 5}, now=NOW)
    assert (page.offset, page.limit) == (20, 5)


def test_the_last_page_has_no_next_cursor() -> None:
    page = paging.open_page(SETTINGS, "leads.list", "d1", {}, now=NOW)
    assert paging.next_cursor(SETTINGS, page, 7, 7) is None
    assert paging.next_cursor(SETTINGS, page, 0, 50) is None
    assert "next_cursor" not in paging.page_output([], None, 0)


def test_filter_order_does_not_change_the_query_a_cursor_belongs_to() -> None:
    cursor = first_cursor({"make": ["Toyota", "Honda"]}, action="inventory.search")
    payload = {"make": ["Honda", "Toyota"], "cursor": cursor}
    assert paging.open_page(SETTINGS, "inventory.search", "d1", payload, now=NOW).offset == 20


@pytest.mark.parametrize(
    ("action", "dealer", "params"),
    [
        ("customers.list", "d1", {"status": "new"}),
        ("leads.list", "d2", {"status": "new"}),
        ("leads.list", "d1", {"status": "sold"}),
    ],
)
def test_a_cursor_replayed_against_another_action_dealership_or_query_is_invalid(
    action: str, dealer: str, params: dict[str, object]
) -> None:
    cursor = first_cursor({"status": "new"})
    with pytest.raises(InvalidCursor) as info:
        paging.open_page(SETTINGS, action, dealer, {**params, "cursor": cursor}, now=NOW)
    assert info.value.code == "invalid_cursor"


def test_a_forged_or_tampered_cursor_is_invalid() -> None:
    cursor = first_cursor({})
    tampered = cursor[:-2] + ("AA" if cursor[-2:] != "AA" else "BB")
    for bad in (tampered, "not-a-cursor", "eyJvIjoyNX0"):
        with pytest.raises(InvalidCursor):
            paging.open_page(SETTINGS, "leads.list", "d1", {"cursor": bad}, now=NOW)


def test_a_cursor_signed_with_another_secret_is_invalid() -> None:
    other = Settings(cursor_secret="another-secret")
    page = paging.open_page(other, "leads.list", "d1", {}, now=NOW)
    cursor = paging.next_cursor(other, page, 20, 100)
    with pytest.raises(InvalidCursor):
        paging.open_page(SETTINGS, "leads.list", "d1", {"cursor": cursor}, now=NOW)


def test_an_expired_cursor_is_invalid() -> None:
    cursor = first_cursor({})
    with pytest.raises(InvalidCursor):
        paging.open_page(SETTINGS, "leads.list", "d1", {"cursor": cursor}, now=NOW + timedelta(days=2))


def test_a_cursor_carries_no_filter_values() -> None:
    import base64

    cursor = first_cursor({"query": "ana@example.com"})
    raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
    assert b"ana" not in raw


@pytest.mark.parametrize("limit", [0, 101, "5", True])
def test_a_limit_outside_one_to_the_maximum_is_invalid_params(limit: object) -> None:
    with pytest.raises(InvalidParams) as info:
        paging.open_page(SETTINGS, "leads.list", "d1", {"limit": limit}, now=NOW)
    assert info.value.code == "invalid_params"


def test_a_cursor_in_the_earlier_encoding_still_resumes_its_query() -> None:
    # Cursors issued before an upgrade (the standard library's JSON, the HMAC object) resume after it.
    import base64
    import hashlib
    import hmac
    import json

    key = paging.query_key("leads.list", "d1", {"status": ["new"]})
    body = json.dumps({"o": 40, "f": key, "e": int(NOW.timestamp()) + 3600}, separators=(",", ":")).encode()
    sig = hmac.new(b"test-cursor-secret", body, hashlib.sha256).digest()[:16]
    cursor = base64.urlsafe_b64encode(body + sig).decode().rstrip("=")
    page = paging.open_page(SETTINGS, "leads.list", "d1", {"status": ["new"], "cursor": cursor}, now=NOW)
    assert page.offset == 40


@pytest.mark.parametrize(
    "params",
    [
        {"status": ["new", "won"]},
        {"status": ["won", "new"]},
        {"year_min": 1},
        {"year_min": 1.0},
        {"year_min": True},
        {"sort": {"field": "price", "order": "asc"}},
        {"sort": [["field", "price"], ["order", "asc"]]},
        {"query": None, "make": ["Toyota"]},
        {"make": "Toyota"},
    ],
)
def test_a_query_key_asked_again_is_the_key_computed_afresh(params: dict[str, object]) -> None:
    from forecourt.domain.cursor import query_fingerprint

    fresh = query_fingerprint("inventory.search|d1", paging.normalise_params(params))
    assert paging.query_key("inventory.search", "d1", params) == fresh
    assert paging.query_key("inventory.search", "d1", params) == fresh  # remembered
    assert paging.query_key("inventory.search", "d2", params) != fresh


def test_frozen_payloads_are_equal_only_for_equal_payloads() -> None:
    shapes = [1, 1.0, True, "1", [1], (1,), {"a": 1}, [["a", 1]], None, [], {}]
    forms = [frozen(shape) for shape in shapes]
    assert forms[4] == forms[5]  # a list and a tuple are the same JSON
    distinct = forms[:4] + forms[5:]
    assert len(set(distinct)) == len(distinct)
    assert frozen({"b": [1, 2], "a": "x"}) == frozen({"a": "x", "b": [1, 2]})
    assert frozen({"a": object()}) is None
    assert frozen({1: "not a JSON key"}) is None


def test_a_search_cursor_carries_the_keyset_key_of_its_pages_last_unit() -> None:
    params = {"sort": {"field": "price"}}
    page = paging.open_page(SETTINGS, "inventory.search", "d1", params, now=NOW)
    assert page.after is None
    cursor = paging.next_cursor(SETTINGS, page, 20, 100, after=(2_500_000, "veh-7"))
    resumed = paging.open_page(SETTINGS, "inventory.search", "d1", {**params, "cursor": cursor}, now=NOW)
    assert (resumed.offset, resumed.after) == (20, (2_500_000, "veh-7"))


@pytest.mark.parametrize("key", [[1.5, "veh-7"], {"price": 1}, [], [True, "veh-7"], "veh-7", [None]])
def test_a_signed_cursor_with_a_malformed_keyset_key_is_invalid(key: object) -> None:
    import base64
    import hashlib
    import hmac
    import json

    fingerprint = paging.query_key("inventory.search", "d1", {})
    body = json.dumps({"o": 20, "f": fingerprint, "e": int(NOW.timestamp()) + 3600, "k": key}).encode()
    cursor = base64.urlsafe_b64encode(body + hmac.new(b"test-cursor-secret", body, hashlib.sha256).digest()[:16])
    with pytest.raises(InvalidCursor):
        paging.open_page(SETTINGS, "inventory.search", "d1", {"cursor": cursor.decode().rstrip("=")}, now=NOW)
