"""Whether an IP address is a public one: the pure half of the SSRF guard (:mod:`forecourt.netguard` resolves names).

Saved URLs are judged here without any DNS query (:mod:`forecourt.domain.urls`); the guard judges every address a
name resolves to with the same function before a connection is made.
"""

from __future__ import annotations

import ipaddress

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

# Ranges the ipaddress flags do not all cover: carrier-grade NAT, benchmarking, 6to4/Teredo/NAT64 wrappers.
_EXTRA_BLOCKED: tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...] = (
    ipaddress.ip_network("0.0.0.0/8"),
    ipaddress.ip_network("100.64.0.0/10"),
    ipaddress.ip_network("192.0.0.0/24"),
    ipaddress.ip_network("198.18.0.0/15"),
    ipaddress.ip_network("64:ff9b::/96"),
    ipaddress.ip_network("64:ff9b:1::/48"),
    ipaddress.ip_network("100::/64"),
    ipaddress.ip_network("fc00::/7"),
    ipaddress.ip_network("fe80::/10"),
)


def is_public_address(address: IPAddress) -> bool:
    """Whether an address is a globally routable unicast address.

    IPv4-mapped, 6to4 and Teredo IPv6 addresses are judged by the IPv4 address they carry.

    Args:
        address: The address to judge.

    Returns:
        ``True`` only for public unicast addresses.
    """
    if isinstance(address, ipaddress.IPv6Address):
        embedded = address.ipv4_mapped or address.sixtofour
        if embedded is None and address.teredo is not None:
            embedded = address.teredo[1]
        if embedded is not None:
            return is_public_address(embedded)
    if (
        address.is_private
        or address.is_loopback
        or address.is_link_local
        or address.is_multicast
        or address.is_reserved
        or address.is_unspecified
        or not address.is_global
    ):
        return False
    return not any(address in net for net in _EXTRA_BLOCKED if net.version == address.version)
