"""The admin API's audit ``since``: a value that is not an RFC 3339 timestamp is a field error, never a 500."""

from __future__ import annotations

import pytest

from .support import MOTOR, Rig

_NOT_TIMESTAMPS = ("", "garbage", "2026-11-28T10:00:00", "2026-13-40T99:00:00+00:00", "1")


@pytest.mark.parametrize("value", _NOT_TIMESTAMPS)
async def test_an_audit_list_since_that_is_not_a_timestamp_is_a_field_error(rig: Rig, value: str) -> None:
    response = await rig.client.get(
        f"/admin/v1/companies/{MOTOR}/audit",
        params={"since": value},
        headers={"Authorization": f"Bearer {rig.keys['admin']}"},
    )
    assert response.status_code == 422, response.text
    error = response.json()["error"]
    assert error["code"] == "invalid_params"
    assert error["details"]["errors"] == [{"path": "/since", "rule": "format", "expected": "date-time"}]


async def test_an_audit_list_since_with_an_offset_is_accepted(rig: Rig) -> None:
    response = await rig.client.get(
        f"/admin/v1/companies/{MOTOR}/audit",
        params={"since": "2026-11-28T10:00:00+01:00"},
        headers={"Authorization": f"Bearer {rig.keys['admin']}"},
    )
    assert response.status_code == 200, response.text
