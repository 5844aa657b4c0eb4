"""Probe: hostile inventory feed cells on the upload door (issue 12, item 8).

A 120,000-character ``trim`` was stored and served to anonymous shoppers as a 142 KB answer; a cell over the CSV
reader's limit was reported as a "stray quote"; a 40-digit price failed the whole import in the database. A feed
uploaded in the console (the same import the CLI and scheduled pulls run) now rejects each such row with its own
code, imports the rest, and stores nothing of the rejected rows.
"""

from __future__ import annotations

import csv
import re

import httpx

from gateway.support import TOYOTA, Rig

HEADER = "VIN,Year,Make,Model,Trim,Condition,Price,Mileage,Photos,VDP URL,Description"
VINS = ["4T1DAACKXSU100101", "2T3P1RFV6RC100102", "5TDKDRAH1NS100103", "JTDBCMEE6PJ100104", "3TMLB5JN6MM100105"]


def _row(vin: str, *, trim: str = "LE", price: str = "25995", photos: str = "", vdp: str = "", text: str = "") -> str:
    return f"{vin},2024,Toyota,RAV4,{trim},used,{price},30100,{photos},{vdp},{text}"


FEED = (
    "\n".join(
        [
            HEADER,
            _row(VINS[0], trim="x" * 120_000),
            _row(VINS[1], text="y" * (csv.field_size_limit() + 1)),
            _row(VINS[2], price="9" * 40),
            _row(VINS[3], photos="https://user:secret@cdn.example.com/a.jpg"),
            _row(VINS[4], vdp="javascript:alert(1)", trim="d" * 100),
        ]
    )
    + "\n"
)


async def _sign_in(client: httpx.AsyncClient, key: str) -> str:
    assert (await client.post("/console/signin", data={"api_key": key})).status_code == 303
    page = await client.get("/console/")
    found = re.search(r'name="csrf" value="([^"]+)"', page.text)
    assert found is not None
    return found.group(1)


async def test_a_hostile_feed_uploaded_in_the_console_rejects_each_bad_row_with_its_own_code(rig: Rig) -> None:
    async with httpx.AsyncClient(transport=rig.client._transport, base_url="http://forecourt.test") as client:
        csrf = await _sign_in(client, rig.keys["admin"])
        response = await client.post(
            f"/console/inventory/{TOYOTA}/upload",
            data={"csrf": csrf},
            files={"feed": ("feed.csv", FEED.encode(), "text/csv")},
            headers={"X-Console-Fragment": "1"},
        )
    assert response.status_code == 200, response.text[:300]
    for code in ("too_long", "field_too_long", "bad_price", "bad_url"):
        assert code in response.text, code
    assert "stray quote" not in response.text
    assert "x" * 100 not in response.text
    assert "secret" not in response.text
    async with rig.services.store.read() as uow:
        stored = await uow.inventory.get_many_by_vin(TOYOTA, VINS)
    assert sorted(stored) == [VINS[4]]  # the one good row (a trim of 100 characters is allowed), without its page
    assert stored[VINS[4]].vdp_url is None
