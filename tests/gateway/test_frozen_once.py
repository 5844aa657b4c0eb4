"""A call's payload is frozen once (``domain/frozen.py``) and that form keys every memo of the call."""

from __future__ import annotations

import sys
from typing import Any

import pytest

from forecourt.domain import frozen as frozen_module
from forecourt.domain.frozen import frozen, with_entry

from .support import TOYOTA, Rig


@pytest.mark.parametrize(
    "payload",
    [{}, {"a": 1}, {"z": [1, "x"]}, {"dealership_id": "other", "limit": 5}, {"dealership_id": "d1"}, {"e": {"f": 1}}],
)
def test_a_form_with_an_entry_set_is_the_form_of_the_object_with_it_set(payload: dict[str, Any]) -> None:
    assert with_entry(frozen(payload), "dealership_id", "d1") == frozen({**payload, "dealership_id": "d1"})


def test_a_form_that_is_not_an_objects_has_no_entry_to_set() -> None:
    assert with_entry(frozen([1]), "k", "v") is None
    assert with_entry(None, "k", "v") is None
    assert with_entry(frozen({}), "k", object()) is None


@pytest.mark.parametrize(
    ("action", "payload", "key"),
    [
        ("dealer.information", {"dealership_id": TOYOTA}, "crm"),
        ("inventory.search", {"dealership_id": TOYOTA, "make": ["Toyota"], "sort": {"field": "year"}}, "crm"),
        ("inventory.search", {"make": ["Toyota"], "view": "compact"}, "crm_toyota"),  # the dealership from the key
    ],
)
async def test_one_call_freezes_its_payload_once(
    rig: Rig, monkeypatch: pytest.MonkeyPatch, action: str, payload: dict[str, Any], key: str
) -> None:
    calls: list[Any] = []

    def counting(value: Any, freeze: Any = frozen) -> Any:
        calls.append(value)
        return freeze(value)

    for module in list(sys.modules.values()):
        if module is not frozen_module and getattr(module, "frozen", None) is frozen:
            monkeypatch.setattr(module, "frozen", counting)
    for _ in range(2):  # a first call and one that every memo has seen
        calls.clear()
        response = await rig.call(action, payload, key=key)
        assert response.status_code == 200
        assert len(calls) == 1
