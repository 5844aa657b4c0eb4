"""The admin API's 405 names every method the path takes, as HTTP requires (RFC 9110 §15.5.6)."""

from __future__ import annotations

from forecourt.surfaces.admin_api import _ROUTES
from gateway.support import Rig

COMPANY = "demo-motor-group"


async def test_a_method_an_admin_path_does_not_take_answers_405_with_every_method_it_does_take_in_allow(
    rig: Rig,
) -> None:
    taken: dict[str, set[str]] = {}
    for method, sub, *_ in _ROUTES:
        taken.setdefault(sub, set()).add(method)
    assert any(len(methods) > 1 for methods in taken.values())  # paths with several methods exist
    for sub, methods in taken.items():
        path = f"/admin/v1/companies/{COMPANY}{sub}".replace("{item_id}", "x").replace("{dealership_id}", "y")
        response = await rig.client.request("PATCH", path)
        assert response.status_code == 405, path
        allowed = {m.strip() for m in response.headers["allow"].split(",")}
        expected = methods | ({"HEAD"} if "GET" in methods else set())
        assert allowed == expected, path
