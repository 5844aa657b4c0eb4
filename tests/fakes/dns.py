"""A fake DNS for named test hosts, answering through the running event loop's ``getaddrinfo``.

Forecourt's SSRF guard and aiohttp's default resolver both resolve with ``loop.getaddrinfo``; installed on the
test's loop (:meth:`FakeDns.install`), this answers the names a test scripted and passes every other name to the
real resolver. Each lookup of a scripted name takes its next answer and the last answer repeats, so a name can
resolve to a public address when it is checked and to a private one when the connection is made (DNS rebinding).
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

AddrInfo = tuple[int, int, int, str, tuple[Any, ...]]


class FakeDns:
    """Scripted answers per host name, and the names looked up, in order."""

    def __init__(self, real: Callable[..., Awaitable[list[AddrInfo]]]) -> None:
        self._real = real
        self._answers: dict[str, list[str]] = {}
        self.lookups: list[str] = []

    @classmethod
    def install(cls, monkeypatch: pytest.MonkeyPatch) -> FakeDns:
        """Answer the running loop's lookups (until the test ends)."""
        loop = asyncio.get_running_loop()
        dns = cls(loop.getaddrinfo)
        monkeypatch.setattr(loop, "getaddrinfo", dns.getaddrinfo)
        return dns

    def script(self, host: str, *addresses: str) -> None:
        """``host`` resolves to each address in turn, one per lookup; the last one for every lookup after."""
        self._answers[host.lower()] = list(addresses)

    async def getaddrinfo(
        self, host: Any, port: Any, *, family: int = 0, type: int = 0, proto: int = 0, flags: int = 0
    ) -> list[AddrInfo]:
        name = host.decode() if isinstance(host, bytes) else str(host)
        answers = self._answers.get(name.lower())
        if not answers:
            return await self._real(host, port, family=family, type=type, proto=proto, flags=flags)
        self.lookups.append(name)
        address = ipaddress.ip_address(answers.pop(0) if len(answers) > 1 else answers[0])
        kind = socket.AF_INET6 if address.version == 6 else socket.AF_INET
        if family not in (socket.AF_UNSPEC, kind):
            raise socket.gaierror(socket.EAI_NONAME, "no address of the requested family")
        sockaddr: tuple[Any, ...] = (str(address), int(port or 0))
        if kind == socket.AF_INET6:
            sockaddr = (*sockaddr, 0, 0)
        return [(kind, socket.SOCK_STREAM, socket.IPPROTO_TCP, "", sockaddr)]
