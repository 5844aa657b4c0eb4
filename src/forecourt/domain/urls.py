"""The type of every configured URL the server will fetch (see :mod:`forecourt.outbound_urls`).

Pure checks only: no DNS query is made here (an address literal is decoded with ``AI_NUMERICHOST``).
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Mapping
from typing import Annotated, Any
from urllib.parse import urlsplit

from pydantic import AfterValidator, ValidationInfo
from pydantic_core import PydanticCustomError

from forecourt.domain.addresses import is_public_address

CONTEXT_KEY = "forecourt.outbound_urls"
_LOCAL_SUFFIXES = (".localhost", ".local", ".internal", ".localdomain", ".home.arpa")
_LOCAL_NAMES = frozenset({"localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback"})


def save_context(*, allow_private: bool) -> dict[str, Any]:
    """The pydantic validation context under which :data:`OutboundUrl` fields are checked (saving a record)."""
    return {CONTEXT_KEY: {"allow_private": allow_private}}


def _literal_address(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    """The address an IP literal in any spelling the C resolver accepts stands for (no DNS query)."""
    try:
        infos = socket.getaddrinfo(host, None, flags=socket.AI_NUMERICHOST)
    except (OSError, UnicodeError):
        return None
    return ipaddress.ip_address(str(infos[0][4][0]).split("%", 1)[0]) if infos else None


def url_problem(url: str, *, allow_private: bool) -> str | None:
    """Why ``url`` may not be saved as a fetch target (``None`` when it may), without any DNS query."""
    try:
        parts = urlsplit(url)
        _ = parts.port
    except ValueError:
        return "malformed"
    if parts.scheme.lower() not in ("http", "https"):
        return "scheme"
    host = (parts.hostname or "").rstrip(".").lower()
    if not host:
        return "no_host"
    if parts.username is not None or parts.password is not None:
        return "credentials"
    if allow_private:
        return None
    if host in _LOCAL_NAMES or host.endswith(_LOCAL_SUFFIXES):
        return "local_name"
    address = _literal_address(host)
    if address is not None and not is_public_address(address):
        return "non_public_address"
    return None


def _validate(value: str, info: ValidationInfo) -> str:
    context = info.context.get(CONTEXT_KEY) if isinstance(info.context, Mapping) else None
    if not isinstance(context, Mapping):
        return value  # read back from the store: checked when it was saved, and again at connect time
    problem = url_problem(value, allow_private=bool(context.get("allow_private")))
    if problem is not None:
        raise PydanticCustomError("unsafe_url", "not an allowed fetch target ({problem})", {"problem": problem})
    return value


OutboundUrl = Annotated[str, AfterValidator(_validate)]
"""A URL the server fetches: checked when the record holding it is saved (see the module docstring)."""


# ---------------------------------------------------------------------------------------------- published links

LINK_MAX = 2000
"""The longest link published to buyers and their agents (the common limit of browsers and search engines)."""


def link_problem(url: str) -> str | None:
    """Why ``url`` may not be published as a link that buyers and their agents follow (``None`` when it may).

    A rooftop's website (the agent card's ``provider.url``), a vehicle's photos and its page are shown to anyone: a
    ``javascript:``, ``data:`` or ``file:`` link there runs or reads something in the viewer's context, and a space
    or control character splits the link (or a header) in two. No DNS query is made: these links are not fetched.
    """
    if len(url) > LINK_MAX:
        return "too_long"
    if any(ch.isspace() or not ch.isprintable() for ch in url):
        return "characters"
    try:
        parts = urlsplit(url)
        _ = parts.port
    except ValueError:
        return "malformed"
    if parts.scheme.lower() not in ("http", "https"):
        return "scheme"
    if not (parts.hostname or "").rstrip("."):
        return "no_host"
    if parts.username is not None or parts.password is not None:
        return "credentials"
    return None


def _invalid_link(problem: str) -> PydanticCustomError:
    return PydanticCustomError("invalid_link", "not a public http(s) link ({problem})", {"problem": problem})


def _check_link(value: str) -> str:
    problem = link_problem(value)
    if problem is not None:
        raise _invalid_link(problem)
    return value


WebLink = Annotated[str, AfterValidator(_check_link)]
"""A link published to buyers (a vehicle's photos and page, a tenants file's website): checked whenever the model
holding it is validated."""


def _stored_link(value: str | None, info: ValidationInfo) -> str | None:
    if value is None:
        return None
    problem = link_problem(value)
    if problem is None:
        return value
    if isinstance(info.context, Mapping) and CONTEXT_KEY in info.context:
        raise _invalid_link(problem)
    return None  # read back from a store that took it before links were checked: never published


StoredLink = Annotated[str | None, AfterValidator(_stored_link)]
"""A published link of a stored record (a rooftop's website): refused when the record is saved (under
:func:`save_context`, as :data:`OutboundUrl` is), and dropped, never published, when an older row holding a bad one
is read back."""
