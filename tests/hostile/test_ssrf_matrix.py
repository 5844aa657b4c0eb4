"""SSRF matrix: every place the server fetches a URL that an admin or a caller supplied refuses private,
loopback and link-local targets, unless the operator allows private targets.

Each fetcher is driven through its real entry point against a real listener on loopback, so a refusal is
the guard's doing (a request that got through would reach the listener and count).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest

from forecourt.adapters.crm import OutboundPoster
from forecourt.errors import UnsafeTarget
from forecourt.gateway.auth.jwt import JwksCache
from forecourt.settings import Settings
from forecourt.surfaces.a2a.app import push_url_validator

PRIVATE_TARGETS = [
    "http://127.0.0.1:{port}/x",
    "http://localhost:{port}/x",
    "http://[::1]:{port}/x",
    "http://2130706433:{port}/x",
    "http://0x7f.1:{port}/x",
    "http://[::ffff:127.0.0.1]:{port}/x",
    "http://169.254.169.254/latest/meta-data/",
    "http://10.0.0.1/x",
    "http://192.168.1.1/x",
    "http://[fe80::1]/x",
    "http://100.64.0.1/x",
    "file:///etc/passwd",
    "gopher://127.0.0.1:{port}/x",
]


@pytest.fixture
async def listener() -> AsyncIterator[tuple[int, list[bytes]]]:
    """A loopback HTTP listener that records every request that reaches it."""
    hits: list[bytes] = []

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        hits.append(await reader.read(1024))
        writer.write(b'HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 11\r\n\r\n{"keys":[]}')
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    try:
        yield server.sockets[0].getsockname()[1], hits
    finally:
        server.close()
        await server.wait_closed()


async def _jwks_refuses(url: str, allow: bool) -> bool:
    cache = JwksCache(allow_private=allow)
    try:
        await cache.get_key(url, "kid-1")
    except UnsafeTarget:
        return True
    except Exception:  # any other failure means the guard let the fetch go ahead
        return False
    finally:
        await cache.aclose()
    return False


async def _crm_refuses(url: str, allow: bool) -> bool:
    result = await OutboundPoster(allow_private=allow, timeout_s=2.0).post(url, b"{}", {})
    return not result.delivered and result.error == "target refused by the SSRF guard"


async def _webhook_refuses(url: str, allow: bool) -> bool:
    return not await push_url_validator(Settings(allow_private_targets=allow))(url)


FETCHERS: dict[str, Callable[[str, bool], Awaitable[bool]]] = {
    "jwks (OIDC issuers)": _jwks_refuses,
    "crm delivery endpoints": _crm_refuses,
    "a2a push-notification webhooks": _webhook_refuses,
}


@pytest.mark.parametrize("fetcher", sorted(FETCHERS))
async def test_every_fetcher_refuses_private_loopback_and_link_local_targets(
    fetcher: str, listener: tuple[int, list[bytes]]
) -> None:
    port, hits = listener
    for template in PRIVATE_TARGETS:
        url = template.format(port=port)
        assert await FETCHERS[fetcher](url, False), (fetcher, url)
    assert hits == []


@pytest.mark.parametrize("fetcher", ["crm delivery endpoints", "a2a push-notification webhooks"])
async def test_a_fetcher_reaches_a_loopback_target_when_the_operator_allows_private_targets(
    fetcher: str, listener: tuple[int, list[bytes]]
) -> None:
    port, hits = listener
    assert not await FETCHERS[fetcher](f"http://127.0.0.1:{port}/x", True)
    if fetcher == "crm delivery endpoints":
        assert len(hits) == 1
