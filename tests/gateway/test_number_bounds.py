"""Numbers outside the signed 64-bit range are refused wherever they sit in a payload, with the path of the first."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from forecourt.errors import InvalidParams
from forecourt.gateway.number_bounds import INT64_MAX, check_number_bounds, first_out_of_range

JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False)
    | st.text(max_size=5),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=3), children, max_size=4),
    max_leaves=20,
)


@given(payload=JSON)
def test_a_payload_is_refused_exactly_when_a_number_in_it_is_out_of_range(payload: Any) -> None:
    path = first_out_of_range(payload)
    if path is None:
        check_number_bounds(payload)
        return
    with pytest.raises(InvalidParams) as refused:
        check_number_bounds(payload)
    assert refused.value.details["errors"] == [{"path": path, "rule": "range", "limit": INT64_MAX}]


def test_the_refusal_names_where_the_number_is_and_not_the_number() -> None:
    with pytest.raises(InvalidParams) as refused:
        check_number_bounds({"filters": [{"price_max": 1}, {"price_max": 2**64}]})
    assert refused.value.details["errors"][0]["path"] == "/filters/1/price_max"
    assert str(2**64) not in str(refused.value.details)
