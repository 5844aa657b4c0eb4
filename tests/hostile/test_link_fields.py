"""Probe: links published to buyers must be plain http(s) links, on every door (issue 12, item 9).

A ``javascript:`` URL was accepted as a rooftop's website and published as its agent card's ``provider.url``. The
rule now lives in the domain types (``domain/urls.link_problem``: ``Dealership.website``, a tenants file's
``website``, a vehicle's photos and page), so the admin REST API, the console (which saves through the same action),
``forecourt apply`` and inventory feeds all refuse the same links; a row saved before the rule is never published.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from forecourt.cli.main import app as cli
from forecourt.domain.tenancy import Dealership
from forecourt.store import upgrade_async
from gateway.support import MOTOR, TOYOTA, Rig

from .support import error_code_of

ADMIN = f"/admin/v1/companies/{MOTOR}"
CARD = f"/dealers/{TOYOTA}/.well-known/agent-card.json"
HOSTILE_LINKS = [
    "javascript:alert(document.domain)",
    "JaVaScRiPt:alert(1)",
    " javascript:alert(1)",
    "data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==",
    "vbscript:msgbox(1)",
    "file:///etc/passwd",
    "ftp://dealer.example.com/",
    "//dealer.example.com/",
    "http://",
    "https://user:secret@dealer.example.com/",
    "https://dealer.example.com/\r\nSet-Cookie: a=b",
    "https://dealer.example.com/a b",
    "https://dealer.example.com/\u202egpj.exe",
    "https://dealer.example.com/" + "a" * 2_000,  # over LINK_MAX
    "https://[bad/",
]


def test_every_hostile_link_has_a_problem_and_an_ordinary_website_has_none() -> None:
    from forecourt.domain.urls import link_problem

    assert [url for url in HOSTILE_LINKS if link_problem(url) is None] == []
    ordinary = (
        "https://www.dealer.example.com/",
        "http://dealer.example.com/cars?id=1#top",
        "https://düsseldorf.example/",
    )
    assert [url for url in ordinary if link_problem(url) is not None] == []


async def _website(rig: Rig, headers: dict[str, str]) -> Any:
    response = await rig.client.get(f"{ADMIN}/dealerships", headers=headers)
    return {d["id"]: d.get("website") for d in response.json()["items"]}[TOYOTA]


async def test_the_admin_api_refuses_every_hostile_website_and_saves_nothing(rig: Rig) -> None:
    headers = {"Authorization": f"Bearer {rig.keys['admin']}"}
    before = await _website(rig, headers)
    for url in HOSTILE_LINKS:
        body = {"name": "Demo Toyota SF", "website": url}
        response = await rig.client.put(f"{ADMIN}/dealerships/{TOYOTA}", json=body, headers=headers)
        assert response.status_code == 422, (url, response.text[:300])
        assert error_code_of(response.json()) == "invalid_params"
        [problem] = response.json()["error"]["details"]["errors"]
        assert problem == {"path": "/website", "rule": "invalid_link"}, url
        assert "javascript" not in response.text.lower()
    assert await _website(rig, headers) == before
    card = (await rig.client.get(CARD)).json()
    assert card["provider"].get("url") == before


async def test_a_website_saved_before_links_were_checked_is_never_published(rig: Rig) -> None:
    async with rig.services.store.transaction() as uow:
        dealer = await uow.tenancy.get_dealership(TOYOTA)
        assert dealer is not None
        await uow.tenancy.upsert_dealership(dealer.model_copy(update={"website": "javascript:alert(1)"}))
    async with rig.services.store.read() as uow:
        read_back = await uow.tenancy.get_dealership(TOYOTA)
    assert read_back is not None
    assert read_back.website is None
    card = (await rig.client.get(CARD)).json()
    assert "url" not in card["provider"]
    assert "javascript" not in str(card).lower()


def test_the_dealership_type_refuses_a_hostile_website_whenever_it_is_saved() -> None:
    from pydantic import ValidationError

    from forecourt.domain.urls import save_context

    good = Dealership(id="d", company_id="c", name="D", website="https://dealer.example.com/")
    assert good.website == "https://dealer.example.com/"
    with pytest.raises(ValidationError) as caught:
        Dealership.model_validate(
            {"id": "d", "company_id": "c", "name": "D", "website": "javascript:alert(1)"},
            context=save_context(allow_private=False),
        )
    assert [e["type"] for e in caught.value.errors()] == ["invalid_link"]


@pytest.mark.parametrize("url", ["javascript:alert(1)", "data:text/html,x", "https://u:p@dealer.example.com/"])
def test_forecourt_apply_refuses_a_hostile_website_in_a_tenants_file(tmp_path: Path, url: str) -> None:
    database = f"sqlite+aiosqlite:///{tmp_path / 'forecourt.db'}"
    asyncio.run(upgrade_async(database))
    path = tmp_path / "tenants.yaml"
    path.write_text(yaml.safe_dump(_tenants_file(url)), encoding="utf-8")
    result = CliRunner().invoke(cli, ["apply", str(path), "--dry-run"], env={"FORECOURT_DATABASE_URL": database})
    assert result.exit_code == 1, result.output  # refused
    assert "tenants.invalid_file" in result.output
    assert "companies[0].rooftops[0].website: not a public http(s) link" in result.output
    assert "Traceback" not in result.output


def _tenants_file(url: str) -> dict[str, Any]:
    return {
        "profile": {"id": "probe", "name": "Probe"},
        "companies": [
            {
                "id": "probe-motors",
                "name": "Probe Motors",
                "rooftops": [{"id": "probe-rooftop", "name": "Probe", "timezone": "America/Chicago", "website": url}],
            }
        ],
    }
