"""Remote adapter hosts: the gateway's proxy (:mod:`.client`) and the wire both sides speak (:mod:`.wire`). The host
service itself is :mod:`forecourt.cli.adapter_host` (``forecourt adapters serve``)."""

from __future__ import annotations

from forecourt.adapters.errors import HostUnauthorized
from forecourt.adapters.remote.client import Host, RemoteAdapter, RemoteFamily, install_remote_adapters
from forecourt.adapters.remote.wire import FAMILIES

__all__ = [
    "FAMILIES",
    "Host",
    "HostUnauthorized",
    "RemoteAdapter",
    "RemoteFamily",
    "install_remote_adapters",
]
