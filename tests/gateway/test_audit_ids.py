"""Audit record ids sort by the time they were made, so new records land at the end of the id index."""

from __future__ import annotations

import re

import pytest

from forecourt.gateway import audit_record
from forecourt.gateway.audit_record import new_audit_id


def test_an_audit_id_is_32_hex_characters_and_ids_do_not_repeat() -> None:
    ids = [new_audit_id() for _ in range(20_000)]
    assert all(re.fullmatch(r"[0-9a-f]{32}", i) for i in ids)
    assert len(set(ids)) == len(ids)


def test_ids_made_in_later_milliseconds_sort_after_earlier_ones(monkeypatch: pytest.MonkeyPatch) -> None:
    now = iter(range(1_790_000_000_000_000_000, 1_790_000_100_000_000_000, 1_000_000))  # one per millisecond
    monkeypatch.setattr(audit_record.time, "time_ns", lambda: next(now))
    made = [new_audit_id() for _ in range(1_000)]
    assert sorted(made) == made
    assert made[0].startswith(f"{1_790_000_000_000:012x}")
