"""Console sessions: a sealed cookie (AES-GCM) holding the sign-in credential, the CSRF token, the idle clock
and the id of the session's server-side record.

Every replica derives the same sealing key with HKDF from ``FORECOURT_CONSOLE_SESSION_SECRET`` (else from the
cursor secret, for this purpose only: :mod:`forecourt.secret_keys`). A cookie opens the console only while its
record lives (:mod:`forecourt.gateway.backends.console_sessions`): a forged cookie names no record, and
sign-out ends the session at once on every replica. The credential inside (an API key, an OIDC ID token, or
the operator key) is checked again on every page, so a revoked key, an expired token or an operator key that
is no longer configured ends the session at once.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
import secrets
import time
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

import orjson
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from forecourt.secret_keys import derived_key
from forecourt.settings import Settings

COOKIE = "fc_console"
OIDC_COOKIE = "fc_console_oidc"
Kind = Literal["key", "oidc", "operator"]


@dataclass
class Session:
    """One signed-in person."""

    kind: Kind
    token: str | None
    company_id: str | None
    member_id: str | None
    name: str
    csrf: str = field(default_factory=lambda: secrets.token_urlsafe(24))
    sid: str = field(default_factory=lambda: secrets.token_urlsafe(32))
    """The id of the session's server-side record (256 random bits)."""
    last: float = field(default_factory=time.time)
    flash: str | None = None

    @property
    def operator(self) -> bool:
        """Whether this is the platform operator (sees every company)."""
        return self.kind == "operator"


class Sealer:
    """Seals and opens small JSON values with a key derived from the settings."""

    def __init__(self, settings: Settings) -> None:
        secret = settings.console_session_secret or settings.cursor_secret
        self._aead = AESGCM(derived_key(secret.get_secret_value(), "console-session/v2"))

    def seal(self, value: dict[str, Any], purpose: bytes) -> str:
        """``value`` encrypted and authenticated, bound to ``purpose``."""
        nonce = os.urandom(12)
        box = self._aead.encrypt(nonce, orjson.dumps(value), purpose)
        return base64.urlsafe_b64encode(nonce + box).decode().rstrip("=")

    def open(self, sealed: str | None, purpose: bytes) -> dict[str, Any] | None:
        """The value, or ``None`` when missing, tampered with or sealed for another purpose."""
        if not sealed or len(sealed) > 8192:
            return None
        try:
            raw = base64.urlsafe_b64decode(sealed + "=" * (-len(sealed) % 4))
            value = orjson.loads(self._aead.decrypt(raw[:12], raw[12:], purpose))
        except (ValueError, InvalidTag, orjson.JSONDecodeError):
            return None
        return value if isinstance(value, dict) else None


class Sessions:
    """Reads and writes the session cookie, enforcing the idle timeout."""

    def __init__(self, settings: Settings) -> None:
        self.sealer = Sealer(settings)
        self.idle_s = settings.console_idle_timeout_s

    def open(self, cookie: str | None) -> Session | None:
        """The session sealed in ``cookie``, or ``None`` (absent, tampered with or idle too long).

        Only the caller's check of the session's record (``SessionRegistry.renew``) makes it live.
        """
        data = self.sealer.open(cookie, b"session")
        if data is None:
            return None
        try:
            session = Session(**data)
        except TypeError:
            return None
        if time.time() - session.last > self.idle_s:
            return None
        session.last = time.time()
        return session

    def dump(self, session: Session) -> str:
        """The cookie value for ``session``."""
        return self.sealer.seal(asdict(session), b"session")


def csrf_ok(session: Session, presented: str | None) -> bool:
    """Whether the form's CSRF token is the session's."""
    return bool(presented) and hmac.compare_digest(session.csrf.encode(), str(presented).encode())


def operator_key_ok(settings: Settings, presented: str) -> bool:
    """Whether ``presented`` is the configured operator key (constant time; never true when unset)."""
    key = settings.console_operator_key
    if key is None or not key.get_secret_value():
        return False
    return hmac.compare_digest(
        hashlib.sha256(key.get_secret_value().encode()).digest(), hashlib.sha256(presented.encode()).digest()
    )
