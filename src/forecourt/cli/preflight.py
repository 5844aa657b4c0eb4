"""Start-up checks of ``forecourt serve``: settings that must never reach a network other than loopback.

A server bound to an address other hosts can reach refuses to start while it still holds the published
development secrets (anyone can read them in the source: they would let a caller forge cursors and
recompute API-key hashes), or when it is declared to run behind a proxy (``FORECOURT_BEHIND_PROXY``) with no
``FORECOURT_TRUSTED_PROXIES``. One line names the variables to set. Without the declaration it only warns
(at start, and again at the first forwarded request it has to ignore): a server reached directly needs no
trusted proxies, and it cannot tell at start whether a proxy is in front of it.
"""

from __future__ import annotations

import ipaddress
import sys

from forecourt.settings import Settings

_DEV_MARKER = "change-me"
_LOOPBACK_NAMES = frozenset({"localhost", "localhost.localdomain", "ip6-localhost"})


class StartupRefused(SystemExit):
    """``forecourt serve`` will not start with these settings (exit status 2)."""

    def __init__(self, line: str) -> None:
        super().__init__(2)
        self.line = line


def is_loopback(host: str) -> bool:
    """Whether binding ``host`` keeps the server reachable from this machine only."""
    name = host.strip().strip("[]").lower()
    if name in _LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def published_secrets(settings: Settings) -> list[str]:
    """The environment variables whose values are still the published development defaults."""
    pairs = (
        ("FORECOURT_CURSOR_SECRET", settings.cursor_secret.get_secret_value()),
        ("FORECOURT_API_KEY_PEPPER", settings.api_key_pepper.get_secret_value()),
    )
    return [name for name, secret in pairs if _DEV_MARKER in secret]


def startup_problems(settings: Settings) -> list[str]:
    """One line per reason ``settings`` must not be served (empty when it may start)."""
    problems: list[str] = []
    weak = published_secrets(settings)
    if weak and not is_loopback(settings.host):
        problems.append(
            f"refusing to serve on {settings.host} with the published development secrets: "
            f"set {' and '.join(weak)} (at least 32 random characters each)"
        )
    if settings.behind_proxy and not settings.trusted_proxies and not is_loopback(settings.host):
        problems.append(
            f"refusing to serve on {settings.host} behind a proxy (FORECOURT_BEHIND_PROXY) without "
            "FORECOURT_TRUSTED_PROXIES: set it to the proxies' addresses"
        )
    return problems


def startup_warnings(settings: Settings) -> list[str]:
    """Lines worth a WARNING at start-up that do not stop it."""
    if not is_loopback(settings.host) and not settings.trusted_proxies:
        return [
            f"serving on {settings.host} without FORECOURT_TRUSTED_PROXIES: X-Forwarded-For is ignored, so behind a "
            "load balancer every anonymous caller shares one rate-limit bucket"
        ]
    return []


def refuse_unsafe_start(settings: Settings) -> None:
    """Exit (status 2) with one line on stderr per problem, before anything listens."""
    for line in startup_warnings(settings):
        print(f"forecourt: warning: {line}", file=sys.stderr)
    problems = startup_problems(settings)
    if problems:
        for line in problems:
            print(f"forecourt: {line}", file=sys.stderr)
        raise StartupRefused(problems[0])
