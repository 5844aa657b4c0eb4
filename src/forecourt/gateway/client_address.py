"""Which client an anonymous call comes from, for its rate limit.

Behind a load balancer the TCP peer is the balancer: counting anonymous callers by it puts every one of them
in one bucket. ``X-Forwarded-For`` is believed only when the peer is one of ``settings.trusted_proxies``;
the client is then the right-most address not itself a trusted proxy (addresses further left are whatever
the client chose to send). A forwarded header from an untrusted peer is ignored, and the first one a process
sees while no proxy is trusted is logged once at WARNING, so a deployment that forgot
``FORECOURT_TRUSTED_PROXIES`` is told (``forecourt serve`` refuses to start when ``FORECOURT_BEHIND_PROXY`` is
set without it).
"""

from __future__ import annotations

import ipaddress
import logging

from forecourt.gateway.auth.mtls import TrustedProxies
from forecourt.gateway.base import Credentials

logger = logging.getLogger(__name__)


class ClientAddresses:
    """Resolves the client address of a call from its credentials and the trusted proxies."""

    def __init__(self, trusted_proxies: list[str]) -> None:
        self.proxies = TrustedProxies(trusted_proxies)
        self._warned = False

    def of(self, creds: Credentials) -> str | None:
        """The client's address: the peer, or the forwarded client when the peer is a trusted proxy."""
        peer = creds.peer_address
        if not creds.forwarded_for:
            return creds.client_address or peer
        if not self.proxies.contains(peer):
            if not self.proxies and not self._warned:
                self._warned = True
                logger.warning(
                    "a request carries X-Forwarded-For but FORECOURT_TRUSTED_PROXIES is empty: anonymous callers "
                    "behind this proxy share one rate-limit bucket (set FORECOURT_TRUSTED_PROXIES)"
                )
            return peer
        for hop in reversed([h.strip() for h in creds.forwarded_for.split(",")]):
            try:
                address = str(ipaddress.ip_address(hop))
            except ValueError:
                return peer  # a malformed chain: do not guess
            if not self.proxies.contains(address):
                return address
        return peer
