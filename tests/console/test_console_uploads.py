"""Console feed uploads are held to the configured feed limit (``feed_max_bytes``) whether or not the browser
says how large they are: a chunked upload (no Content-Length) past 1 MiB is imported, and one past the limit is
refused with the same structured error as a declared one, before any of it is imported."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
import sqlalchemy as sa

from console.conftest import OPERATOR_KEY, sign_in
from forecourt.domain.vin import with_check_digit
from gateway.support import TOYOTA, Rig, Template, start_rig, stop_rig

BOUNDARY = "forecourt-chunked-upload"
FEED_LIMIT = 1_500_000


def _feed(rows: int) -> bytes:
    lines = ["vin,stock,year,make,model,trim,condition,price,mileage,status,description"]
    for n in range(rows):
        vin = with_check_digit(f"5YFB4MDE0PP{n:06d}")
        lines.append(f"{vin},CHUNK{n},2025,Toyota,Corolla,LE,used,21995,{500 + n},available,{'y' * 400}")
    return ("\n".join(lines) + "\n").encode()


def _multipart(csrf: str, feed: bytes) -> bytes:
    def field(name: str, value: str) -> bytes:
        return f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n{value}\r\n'.encode()

    head = f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="feed"; filename="chunked.csv"\r\n'
    head += "Content-Type: text/csv\r\n\r\n"
    return field("csrf", csrf) + field("form", "upload") + head.encode() + feed + f"\r\n--{BOUNDARY}--\r\n".encode()


async def _chunks(body: bytes) -> AsyncIterator[bytes]:
    for start in range(0, len(body), 64 * 1024):
        yield body[start : start + 64 * 1024]


async def _post_chunked(client: httpx.AsyncClient, csrf: str, feed: bytes) -> httpx.Response:
    request = client.build_request(
        "POST",
        f"/console/inventory/{TOYOTA}/upload",
        content=_chunks(_multipart(csrf, feed)),
        headers={"content-type": f"multipart/form-data; boundary={BOUNDARY}"},
    )
    assert "content-length" not in request.headers
    return await client.send(request)


async def _imported(rig: Rig) -> int:
    async with rig.services.store.read() as uow:
        stmt = sa.text("SELECT count(*) FROM vehicles WHERE stock LIKE 'CHUNK%'")
        return int((await uow.connection.execute(stmt)).scalar_one())  # type: ignore[attr-defined]


@pytest.fixture
async def small_limit_rig(console_template: Template, tmp_path: Path) -> AsyncIterator[Rig]:
    """The console rig with a feed limit of 1.5 MB."""
    made = await start_rig(console_template, tmp_path, console_operator_key=OPERATOR_KEY, feed_max_bytes=FEED_LIMIT)
    try:
        yield made
    finally:
        await stop_rig(made)


def _client(rig: Rig) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=rig.client._transport, base_url="http://forecourt.test", timeout=120)


async def test_a_chunked_feed_over_one_mebibyte_is_streamed_to_the_importer(rig: Rig) -> None:
    feed = _feed(3_000)
    assert len(feed) > 1_048_576
    async with _client(rig) as client:
        csrf = await sign_in(client, rig.keys["admin"])
        response = await _post_chunked(client, csrf, feed)
    assert response.status_code == 200, response.text[:500]
    assert "3000 rows: 3000 created" in response.text
    assert await _imported(rig) == 3_000


async def test_a_feed_past_the_limit_is_refused_alike_with_or_without_a_length_and_nothing_is_imported(
    small_limit_rig: Rig,
) -> None:
    rig = small_limit_rig
    feed = _feed(4_000)
    assert len(feed) > FEED_LIMIT
    async with _client(rig) as client:
        csrf = await sign_in(client, rig.keys["admin"])
        chunked = await _post_chunked(client, csrf, feed)
        declared = await client.post(
            f"/console/inventory/{TOYOTA}/upload",
            data={"csrf": csrf, "form": "upload"},
            files={"feed": ("declared.csv", feed, "text/csv")},
        )
        page = await client.get(f"/console/inventory/{TOYOTA}/upload")  # the session still works
    for refused in (chunked, declared):
        assert refused.status_code == 413, refused.text[:300]
        error = refused.json()["error"]
        assert error["code"] == "payload_too_large"
        assert error["details"] == {"max_bytes": FEED_LIMIT}
    assert chunked.json() == declared.json()
    assert page.status_code == 200
    assert await _imported(rig) == 0
