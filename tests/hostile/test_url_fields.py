"""Probe: every field that holds a URL the server fetches refuses unsafe targets when saved (issue 11, item 5),
and every connection is checked again when made.

Each URL field of each admin schema (company OIDC issuer and JWKS URL, dealership CRM endpoint, model
``base_url`` overrides and other adapter URL settings, upstream MCP servers) is saved through the admin REST
API with each hostile target; each is refused with a clear error naming the field, and nothing is saved.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest

from forecourt.adapters.upstream.pool import UpstreamSession
from forecourt.domain.upstreams import Registered, UpstreamSpec
from forecourt.errors import UnsafeTarget
from forecourt.outbound_urls import guarded_transport, guarded_transport2
from forecourt.settings import Settings
from gateway.support import MOTOR, TOYOTA, Rig, Template, start_rig, stop_rig

from .conftest import HIGH_LIMITS
from .support import error_code_of

ADMIN = f"/admin/v1/companies/{MOTOR}"
HOSTILE_URLS = [
    "file:///etc/passwd",
    "gopher://example.com/x",
    "ftp://example.com/x",
    "javascript:alert(1)",
    "http://169.254.169.254/latest/meta-data/",
    "http://[fe80::1]/x",
    "http://10.0.0.8/x",
    "http://192.168.1.1/x",
    "http://172.16.0.1/x",
    "http://100.64.0.1/x",
    "http://127.0.0.1:8080/x",
    "http://2130706433/x",
    "http://0x7f.1/x",
    "http://0177.0.0.1/x",
    "http://[::1]/x",
    "http://[::ffff:127.0.0.1]/x",
    "http://0.0.0.0/x",
    "http://localhost/x",
    "http://metadata.google.internal/computeMetadata/v1/",
    "http://printer.local/x",
    "http://user:secret@example.com/x",
    "http://",
    "http://[bad/x",
]


def _company(url: str) -> list[tuple[str, str, dict[str, Any]]]:
    base = {"profile_id": "demo", "name": "Demo Motor Group"}
    return [
        ("PUT", ADMIN, {**base, "oidc_issuer": url}),
        ("PUT", ADMIN, {**base, "oidc_jwks_url": url}),
    ]


def _dealership(url: str) -> list[tuple[str, str, dict[str, Any]]]:
    return [("PUT", f"{ADMIN}/dealerships/{TOYOTA}", {"name": "Demo Toyota SF", "crm_endpoint": url})]


def _adapters(url: str) -> list[tuple[str, str, dict[str, Any]]]:
    return [
        ("PUT", f"{ADMIN}/adapters/openai", {"base_url": url}),
        ("PUT", f"{ADMIN}/adapters/vertex", {"base_url": url}),
        ("PUT", f"{ADMIN}/adapters/nvidia", {"nim": {"base_url": url}, "triton_url": url}),
        ("PUT", f"{ADMIN}/adapters/crm", {"endpoint": url}),
        ("PUT", f"{ADMIN}/adapters/embeddings", {"providers": [{"url": url}]}),
    ]


def _upstream(url: str) -> list[tuple[str, str, dict[str, Any]]]:
    return [("PUT", f"{ADMIN}/upstreams/probe", {"transport": "http", "url": url, "namespace": "probe"})]


FIELDS = {"company": _company, "dealership": _dealership, "adapters": _adapters, "upstream": _upstream}


async def _snapshot(rig: Rig) -> list[Any]:
    headers = {"Authorization": f"Bearer {rig.keys['admin']}"}
    out = []
    for sub in ("", "/dealerships", "/adapters", "/upstreams"):
        response = await rig.client.get(f"{ADMIN}{sub}", headers=headers)
        out.append(response.json())
    return out


@pytest.mark.parametrize("field", sorted(FIELDS))
async def test_every_url_field_refuses_every_unsafe_target_when_saved(rig: Rig, field: str) -> None:
    headers = {"Authorization": f"Bearer {rig.keys['admin']}"}
    before = await _snapshot(rig)
    for url in HOSTILE_URLS:
        for method, path, body in FIELDS[field](url):
            response = await rig.client.request(method, path, json=body, headers=headers)
            assert 400 <= response.status_code < 500, (url, path, response.status_code, response.text[:300])
            code = error_code_of(response.json())
            assert code in ("invalid_params", "net.unsafe_target"), (url, path, response.text[:300])
            if code == "invalid_params":
                errors = response.json()["error"]["details"]["errors"]
                assert errors[0]["rule"] == "unsafe_url", errors
    assert await _snapshot(rig) == before


async def test_a_public_url_is_accepted_in_every_field(rig: Rig) -> None:
    headers = {"Authorization": f"Bearer {rig.keys['admin']}"}
    for field in ("company", "dealership"):
        for method, path, body in FIELDS[field]("https://93.184.215.14/ok"):
            response = await rig.client.request(method, path, json=body, headers=headers)
            assert response.status_code == 200, (path, response.text[:300])


@pytest.fixture
async def private_rig(hostile_template: Template, tmp_path: Path) -> AsyncIterator[Rig]:
    made = await start_rig(hostile_template, tmp_path, allow_private_targets=True, **HIGH_LIMITS)
    try:
        yield made
    finally:
        await stop_rig(made)


async def test_allowing_private_targets_admits_private_addresses_but_never_other_schemes(private_rig: Rig) -> None:
    headers = {"Authorization": f"Bearer {private_rig.keys['admin']}"}
    ok = await private_rig.client.put(
        f"{ADMIN}/adapters/openai", json={"base_url": "http://10.0.0.8/v1"}, headers=headers
    )
    assert ok.status_code == 200, ok.text
    for url in ("file:///etc/passwd", "gopher://10.0.0.8/", "http://user:pw@10.0.0.8/"):
        refused = await private_rig.client.put(f"{ADMIN}/adapters/openai", json={"base_url": url}, headers=headers)
        assert refused.status_code == 422, (url, refused.text)


# ------------------------------------------------------------------ connect time


@pytest.fixture
async def listener() -> AsyncIterator[tuple[int, list[bytes]]]:
    hits: list[bytes] = []

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        hits.append(await reader.read(1024))
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok")
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    try:
        yield server.sockets[0].getsockname()[1], hits
    finally:
        server.close()
        await server.wait_closed()


async def test_a_connection_is_checked_when_made_even_for_a_name_that_passed_an_earlier_check(
    listener: tuple[int, list[bytes]],
) -> None:
    port, hits = listener
    async with httpx.AsyncClient(transport=guarded_transport(allow_private=False)) as client:
        for url in (f"http://localhost:{port}/", f"http://127.0.0.1:{port}/", f"http://[::ffff:127.0.0.1]:{port}/"):
            with pytest.raises(UnsafeTarget):
                await client.get(url)
    assert hits == []


async def test_the_guarded_transport_connects_when_private_targets_are_allowed(
    listener: tuple[int, list[bytes]],
) -> None:
    port, hits = listener
    async with httpx.AsyncClient(transport=guarded_transport(allow_private=True)) as client:
        response = await client.get(f"http://localhost:{port}/")
    assert response.status_code == 200
    assert len(hits) == 1


async def test_the_mcp_sdks_http_client_is_checked_at_each_connection_too(listener: tuple[int, list[bytes]]) -> None:
    port, hits = listener
    async with httpx2.AsyncClient(transport=guarded_transport2(allow_private=False)) as client:
        for url in (f"http://localhost:{port}/", f"http://127.0.0.1:{port}/"):
            with pytest.raises(UnsafeTarget):
                await client.get(url)
    async with httpx2.AsyncClient(transport=guarded_transport2(allow_private=True)) as client:
        assert (await client.get(f"http://127.0.0.1:{port}/")).status_code == 200
    assert len(hits) == 1


async def test_an_upstream_mcp_servers_connections_are_checked_when_made(
    listener: tuple[int, list[bytes]], tmp_path: Path
) -> None:
    """Saved and checked once, an upstream's name may later resolve to a private address: the connection says no."""
    port, hits = listener
    spec = UpstreamSpec(id="crm", url=f"http://localhost:{port}/mcp", namespace="crm")
    registered = Registered(company_id=MOTOR, spec=spec, operator_managed=False, updated_at=datetime.now(UTC))
    settings = Settings(database_url=f"sqlite+aiosqlite:///{tmp_path}/x.db", allow_private_targets=False)
    async with UpstreamSession(registered, settings=settings).http_client() as client:
        with pytest.raises(UnsafeTarget):
            await client.post(spec.url, content=b"{}")
    assert hits == []


async def test_a2a_push_webhooks_are_checked_again_at_each_connection(
    listener: tuple[int, list[bytes]], tmp_path: Path
) -> None:
    """A webhook that passed the registration check cannot be made to reach a private address afterwards."""
    from forecourt.bootstrap import create_app
    from forecourt.surfaces.a2a.tasks_agent import GatewayAgentSurface

    port, hits = listener
    settings = Settings(database_url=f"sqlite+aiosqlite:///{tmp_path}/x.db", allow_private_targets=False)
    services = create_app(settings).state.services
    surface = GatewayAgentSurface(services.gateway, settings)
    try:
        with pytest.raises(UnsafeTarget):
            await surface.http.post(f"http://localhost:{port}/hook", content=b"{}")
    finally:
        await surface.close()
        await services.store.close()
    assert hits == []


async def test_a_company_model_endpoint_is_connected_only_at_a_checked_address(
    listener: tuple[int, list[bytes]],
) -> None:
    """A company's OpenAI-compatible endpoint is pinned; the operator's own endpoint (trusted) is not."""
    from forecourt.adapters.models.openai_compat import OpenAICompatRuntime

    port, hits = listener
    company, operator = f"http://localhost:{port}/v1", f"http://127.0.0.1:{port}/v1"
    runtime = OpenAICompatRuntime("openai")
    runtime.pin(company, allow_private=False)
    try:
        with pytest.raises(UnsafeTarget):
            await runtime.client(company, 5.0).models.list()
        assert hits == []
        with contextlib.suppress(Exception):  # the listener's "ok" is no model list: only its arrival counts
            await runtime.client(operator, 5.0).models.list()
        assert len(hits) == 1
    finally:
        await runtime.aclose()


async def test_a_company_vertex_endpoint_is_connected_only_at_a_checked_address(
    listener: tuple[int, list[bytes]],
) -> None:
    from forecourt.adapters.models.vertex import _new_client

    port, hits = listener
    _, pinned = _new_client("p", "us-central1", f"http://localhost:{port}/", "v1", 5.0, pin=False)
    _, trusted = _new_client("p", "us-central1", f"http://localhost:{port}/", "v1", 5.0)
    try:
        with pytest.raises(UnsafeTarget):
            await pinned.get(f"http://localhost:{port}/")
        assert hits == []
        assert (await trusted.get(f"http://localhost:{port}/")).status_code == 200
    finally:
        await pinned.aclose()
        await trusted.aclose()


async def test_a_company_triton_url_is_connected_only_at_a_checked_address(
    listener: tuple[int, list[bytes]],
) -> None:
    """tritonclient runs on aiohttp: a company's Triton client checks names and address literals when connecting."""
    from forecourt.adapters.models.nvidia import TritonBackend

    port, hits = listener
    backend = TritonBackend()
    try:
        for url in (f"http://localhost:{port}", f"http://127.0.0.1:{port}", f"http://[::ffff:127.0.0.1]:{port}"):
            with pytest.raises(UnsafeTarget):
                await backend.client(url, 5.0, pin=False).is_server_live()
        assert hits == []
        assert await backend.client(f"http://localhost:{port}", 5.0).is_server_live()  # the operator's: trusted
        assert len(hits) == 1
    finally:
        await backend.aclose()


@pytest.fixture
async def redirector(listener: tuple[int, list[bytes]]) -> AsyncIterator[int]:
    """A loopback server that redirects every request to the listener's address literal."""
    target = f"http://127.0.0.1:{listener[0]}/"

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read(1024)
        writer.write(f"HTTP/1.1 307 Temporary Redirect\r\nlocation: {target}\r\ncontent-length: 0\r\n\r\n".encode())
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    try:
        yield server.sockets[0].getsockname()[1]
    finally:
        server.close()
        await server.wait_closed()


async def test_an_aiohttp_redirect_to_a_private_address_literal_is_refused(
    listener: tuple[int, list[bytes]], redirector: int
) -> None:
    """Literals never reach aiohttp's resolver: each request's literal host, redirects included, is checked."""
    from forecourt.outbound_aiohttp import guarded_session

    _, hits = listener
    async with guarded_session(allow_private=False, allowed_hosts=("localhost",)) as session:
        with pytest.raises(UnsafeTarget):
            await session.get(f"http://localhost:{redirector}/")
    assert hits == []


OPERATOR_SAVES = {
    "admin.companies.update": lambda url: {"company_id": MOTOR, "oidc_issuer": url},
    "admin.companies.update/jwks": lambda url: {"company_id": MOTOR, "oidc_jwks_url": url},
    "admin.companies.create": lambda url: {"company_id": "ssrf-probe", "oidc_issuer": url},
    "admin.dealerships.update": lambda url: {
        "company_id": MOTOR,
        "dealership_id": TOYOTA,
        "changes": {"crm_endpoint": url},
    },
    "admin.dealerships.create": lambda url: {
        "company_id": MOTOR,
        "dealership": {"id": "ssrf-probe-rooftop", "name": "Probe", "crm_endpoint": url},
    },
}


async def _as_operator(rig: Rig, action: str, payload: dict[str, Any]) -> Any:
    from forecourt.gateway.base import Invocation, Principal

    operator = Principal(method="internal", company_id=None, member_id=None, subject="operator")
    return await rig.services.gateway.invoke(
        Invocation(action=action.split("/", 1)[0], payload=payload, surface="cli", principal=operator)
    )


@pytest.mark.parametrize("save", sorted(OPERATOR_SAVES))
async def test_the_operators_save_paths_refuse_every_unsafe_target_like_the_company_admins(rig: Rig, save: str) -> None:
    from forecourt.errors import ForecourtError

    before = await _snapshot(rig)
    for url in HOSTILE_URLS:
        with pytest.raises(ForecourtError) as refused:
            await _as_operator(rig, save, OPERATOR_SAVES[save](url))
        assert 400 <= refused.value.http_status < 500, (save, url)
    assert await _snapshot(rig) == before


async def test_forecourt_apply_refuses_unsafe_targets_in_a_tenants_file_even_on_a_dry_run(rig: Rig) -> None:
    import copy

    from forecourt.errors import TenantsFileInvalid

    before = await _snapshot(rig)
    exported = await _as_operator(rig, "admin.tenants.export", {"profile_id": "demo"})
    document = exported.output["document"]
    for url in ("file:///etc/passwd", "http://169.254.169.254/latest/meta-data/"):
        hostile = copy.deepcopy(document)
        hostile["companies"][0]["rooftops"][0]["crm"] = {"endpoint": url}
        for dry_run in (True, False):
            with pytest.raises(TenantsFileInvalid) as refused:
                await _as_operator(rig, "admin.tenants.apply", {"document": hostile, "dry_run": dry_run})
            paths = [e["path"] for e in refused.value.details["errors"]]
            assert "companies[0].rooftops[0].crm.endpoint" in paths, paths
    assert await _snapshot(rig) == before


async def test_the_operator_clears_a_companys_oidc_fields_with_null_or_an_empty_string(rig: Rig) -> None:
    public = {"company_id": MOTOR, "oidc_issuer": "https://93.184.215.14", "oidc_audience": "console"}
    await _as_operator(rig, "admin.companies.update", public)
    cleared = await _as_operator(rig, "admin.companies.update", {"company_id": MOTOR, "oidc_issuer": None})
    assert cleared.output["oidc_issuer"] is None
    emptied = await _as_operator(rig, "admin.companies.update", {"company_id": MOTOR, "oidc_audience": ""})
    assert emptied.output["oidc_audience"] is None
