"""Start-up checks of ``forecourt serve``: settings that must never be served.

A server refuses to start — on every bind address: a loopback bind behind a proxy is production too — while
any of its secrets is weak (:func:`forecourt.secret_keys.weakness`: short, low-entropy, or a value published
in the repository, the built-in development defaults included: anyone can read them in the source; they would
let a caller forge cursors and console sessions and recompute API-key hashes). ``forecourt serve --dev`` is
the one way to run with development secrets; it binds loopback only and says so at start. A server that clients
reach at another address (a public bind, ``FORECOURT_BEHIND_PROXY`` or ``FORECOURT_TRUSTED_PROXIES``) refuses to
start without ``FORECOURT_PUBLIC_BASE_URL``: its RFC 9728 resource, MCP manifest and OIDC redirect name that URL,
never the bind address or a client's ``Host``. A server declared
to run behind a proxy (``FORECOURT_BEHIND_PROXY``) with no ``FORECOURT_TRUSTED_PROXIES`` refuses to start too.
One line names each variable to set. Without the declaration it only warns (at start, and again at the first
forwarded request it has to ignore): a server reached directly needs no trusted proxies, and it cannot tell at
start whether a proxy is in front of it.
"""

from __future__ import annotations

import ipaddress
import sys

from forecourt.secret_keys import weakness
from forecourt.settings import Settings

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


def _secrets(settings: Settings) -> list[tuple[str, str]]:
    """Every secret the server would use, by the variable that sets it."""
    found = [
        ("FORECOURT_CURSOR_SECRET", settings.cursor_secret.get_secret_value()),
        ("FORECOURT_API_KEY_PEPPER", settings.api_key_pepper.get_secret_value()),
    ]
    for name, value in (
        ("FORECOURT_CONSOLE_SESSION_SECRET", settings.console_session_secret),
        ("FORECOURT_CONSOLE_OPERATOR_KEY", settings.console_operator_key),
    ):
        if value is not None:
            found.append((name, value.get_secret_value()))
    return found


def weak_secrets(settings: Settings) -> list[str]:
    """``NAME (why)`` for each secret that must not be served."""
    out = []
    for name, value in _secrets(settings):
        why = weakness(value)
        if why is not None:
            out.append(f"{name} ({why})")
    return out


def startup_problems(settings: Settings, *, dev: bool = False) -> list[str]:
    """One line per reason ``settings`` must not be served (empty when it may start).

    ``dev``: ``forecourt serve --dev``: weak secrets are allowed, on a loopback bind only.
    """
    problems: list[str] = []
    weak = weak_secrets(settings)
    if dev and not is_loopback(settings.host):
        problems.append(f"refusing to serve on {settings.host} with --dev: development mode binds loopback only")
    elif weak and not dev:
        problems.append(
            f"refusing to serve with weak secrets: {'; '.join(weak)}. Set each to at least {32} random "
            "characters (python3 -c 'import secrets; print(secrets.token_urlsafe(48))'), or run "
            "`forecourt serve --dev` on loopback for development"
        )
    if not settings.public_base_url and not dev and _reached_elsewhere(settings):
        problems.append(
            f"refusing to serve on {settings.host} without FORECOURT_PUBLIC_BASE_URL: clients reach this server at "
            "another address (a public bind, or a proxy in front), and its OAuth resource metadata, MCP manifest "
            "and OIDC redirect must name that address; set it to the URL clients use"
        )
    if settings.behind_proxy and not settings.trusted_proxies and not is_loopback(settings.host):
        problems.append(
            f"refusing to serve on {settings.host} behind a proxy (FORECOURT_BEHIND_PROXY) without "
            "FORECOURT_TRUSTED_PROXIES: set it to the proxies' addresses"
        )
    return problems


def _reached_elsewhere(settings: Settings) -> bool:
    """Whether clients reach this server at an address other than its bind address (RFC 9728's resource)."""
    return not is_loopback(settings.host) or settings.behind_proxy or bool(settings.trusted_proxies)


def startup_warnings(settings: Settings) -> list[str]:
    """Lines worth a WARNING at start-up that do not stop it."""
    if not is_loopback(settings.host) and not settings.trusted_proxies:
        return [
            f"serving on {settings.host} without FORECOURT_TRUSTED_PROXIES: X-Forwarded-For is ignored, so behind a "
            "load balancer every anonymous caller shares one rate-limit bucket"
        ]
    return []


def refuse_unsafe_start(settings: Settings, *, dev: bool = False) -> None:
    """Exit (status 2) with one line on stderr per problem, before anything listens."""
    for line in startup_warnings(settings):
        print(f"forecourt: warning: {line}", file=sys.stderr)
    problems = startup_problems(settings, dev=dev)
    if problems:
        for line in problems:
            print(f"forecourt: {line}", file=sys.stderr)
        raise StartupRefused(problems[0])
    if dev:
        weak = weak_secrets(settings)
        detail = f" ({', '.join(w.split(' ', 1)[0] for w in weak)})" if weak else ""
        print(
            f"forecourt: DEVELOPMENT MODE (--dev): serving with development secrets{detail} on loopback only; "
            "never expose this server",
            file=sys.stderr,
        )
