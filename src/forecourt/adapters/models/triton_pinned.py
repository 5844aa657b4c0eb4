"""The ``tritonclient.http.aio`` client for a company's own Triton URL: connections only to checked addresses.

``InferenceServerClient`` builds its own ``aiohttp`` connector and session in ``__init__`` and accepts neither as
an argument, so its connections would resolve the host again, unchecked, whatever was checked before the call.
:class:`PinnedTritonClient` lets tritonclient build them, then puts a
:func:`~forecourt.outbound_aiohttp.guarded_session` (same timeout, same ``auto_decompress``, same connection
limit) in their place. tritonclient keeps them in ``_stub`` (every request goes through it) and ``_conn`` (only
closed); should a release keep them elsewhere, construction fails rather than leave a request unchecked. The
session tritonclient made never opens a connection; it is closed with the client.

The operator's own Triton is trusted and gets the plain client.
"""

from __future__ import annotations

import aiohttp
from tritonclient.http.aio import InferenceServerClient  # type: ignore[import-untyped]

from forecourt.outbound_aiohttp import guarded_session

__all__ = ["PinnedTritonClient"]


class PinnedTritonClient(InferenceServerClient):  # type: ignore[misc]  # tritonclient has no type information
    """A Triton client whose every connection (redirects included) goes only to an address checked when made."""

    def __init__(self, url: str, *, conn_timeout: float, ssl: bool, allow_private: bool) -> None:
        """Create the client.

        Args:
            url: ``host:port[/prefix]``, without the scheme (tritonclient's form).
            conn_timeout: The total time one request may take.
            ssl: Whether to use https.
            allow_private: ``settings.allow_private_targets``: skip the address checks (hosts still resolve once).

        Raises:
            RuntimeError: This tritonclient does not keep its session where this client replaces it.
        """
        super().__init__(url, conn_timeout=conn_timeout, ssl=ssl)
        built, connector = getattr(self, "_stub", None), getattr(self, "_conn", None)
        if not isinstance(built, aiohttp.ClientSession) or not isinstance(connector, aiohttp.TCPConnector):
            raise RuntimeError("tritonclient keeps its HTTP session elsewhere: the Triton client cannot be pinned")
        self._unused = built
        self._stub = guarded_session(
            allow_private=allow_private,
            limit=connector.limit,
            timeout=built.timeout,
            auto_decompress=built.auto_decompress,
        )
        self._conn = self._stub.connector

    async def close(self) -> None:
        """Close the guarded session and the one tritonclient built."""
        await super().close()
        await self._unused.close()
