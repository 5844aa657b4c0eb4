"""Short-lived JWTs (HS256 or RS256) that internal services accept as proof of a Forecourt call.

``aud`` is the adapter id, ``exp`` at most five minutes away, ``sub`` the calling company, ``jti`` random:
a token captured in one service's logs is useless against another service and soon useless everywhere. A ``call``
claim names the action, model and trace id of the one call it was minted for (``call_claims: false`` drops it).
"""

from __future__ import annotations

import hashlib
import logging
import os
import secrets
from collections.abc import Mapping
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from forecourt.contract.errors import CredentialUnavailable
from forecourt.contract.secrets import read_secret
from forecourt.domain.timeutil import utcnow
from forecourt.gateway.auth.common import Now
from forecourt.gateway.base import IssuedCredential
from forecourt.gateway.credentials.per_call import call_claims, current_call_scope

if TYPE_CHECKING:  # PyJWT and cryptography are imported when a token is first minted
    from cryptography.hazmat.primitives.asymmetric import rsa

logger = logging.getLogger(__name__)

MAX_TTL_S = 300
DEFAULT_TTL_S = 120
MIN_HMAC_KEY_BYTES = 32
MAX_CACHED_KEYS = 16
_RESERVED_CLAIMS = frozenset({"iss", "sub", "aud", "iat", "nbf", "exp", "jti", "call"})


class SignedJwtProvider:
    """Mints a JWT per call with a key named by the adapter configuration."""

    def __init__(
        self, *, environ: Mapping[str, str] | None = None, issuer: str = "forecourt", now: Now = utcnow
    ) -> None:
        """Create the provider.

        Args:
            environ: Where ``key_env`` names are looked up (``os.environ`` when omitted).
            issuer: The default ``iss``.
            now: The wall clock.
        """
        self._environ = os.environ if environ is None else environ
        self._issuer = issuer
        self._now = now
        self._rsa_keys: dict[str, rsa.RSAPrivateKey] = {}

    def _signing_key(self, algorithm: str, config: Mapping[str, Any]) -> str | rsa.RSAPrivateKey:
        secret = read_secret(config, environ=self._environ, env_key="key_env", file_key="key_file")
        if algorithm == "HS256":
            if len(secret.encode()) < MIN_HMAC_KEY_BYTES:
                logger.warning("HS256 key for signed JWTs is shorter than %d bytes", MIN_HMAC_KEY_BYTES)
                raise CredentialUnavailable()
            return secret
        # The PEM is read per call (a rotated key takes effect at once), but parsing and checking an RSA key costs
        # ~100 ms: parsed keys are kept by the digest of their PEM.
        digest = hashlib.sha256(secret.encode()).hexdigest()
        cached = self._rsa_keys.get(digest)
        if cached is not None:
            return cached
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric import rsa

        try:
            key = serialization.load_pem_private_key(secret.encode(), password=None)
        except (ValueError, TypeError) as exc:
            raise CredentialUnavailable() from exc
        if not isinstance(key, rsa.RSAPrivateKey):
            raise CredentialUnavailable()
        if len(self._rsa_keys) >= MAX_CACHED_KEYS:
            self._rsa_keys.clear()
        self._rsa_keys[digest] = key
        return key

    def rejected(self, adapter_id: str, config: Mapping[str, Any], credential: IssuedCredential) -> None:
        """Nothing to forget: every call reads or mints its credential afresh."""
        del adapter_id, config, credential

    async def issue(self, adapter_id: str, company_id: str | None, config: Mapping[str, Any]) -> IssuedCredential:
        """Mint a token for one call to ``adapter_id``.

        Args:
            adapter_id: Becomes ``aud`` (unless ``config["audience"]`` is set).
            company_id: Becomes ``sub`` and the ``company`` claim (``forecourt`` for calls without one).
            config: ``{algorithm: HS256 | RS256, key_env | key_file, ttl_s (≤ 300), issuer, audience, kid,
                claims: {...extra static claims}}``.

        Returns:
            A bearer credential with its expiry.

        Raises:
            CredentialUnavailable: Unknown algorithm, or the key is missing, short or malformed.
        """
        algorithm = str(config.get("algorithm", "HS256")).upper()
        if algorithm not in ("HS256", "RS256"):
            raise CredentialUnavailable()
        ttl_s = min(max(int(config.get("ttl_s", DEFAULT_TTL_S)), 1), MAX_TTL_S)
        now = self._now().replace(microsecond=0)
        expires_at = now + timedelta(seconds=ttl_s)
        extra = config.get("claims") or {}
        claims: dict[str, Any] = {k: v for k, v in dict(extra).items() if k not in _RESERVED_CLAIMS}
        claims.update(
            iss=str(config.get("issuer") or self._issuer),
            sub=company_id or "forecourt",
            aud=str(config.get("audience") or adapter_id),
            iat=int(now.timestamp()),
            nbf=int(now.timestamp()),
            exp=int(expires_at.timestamp()),
            jti=secrets.token_urlsafe(16),
        )
        if company_id:
            claims["company"] = company_id
        if config.get("call_claims", True) is not False:
            claims.update(call_claims(current_call_scope()))
        headers = {"kid": str(config["kid"])} if config.get("kid") else None
        import jwt

        token = jwt.encode(claims, self._signing_key(algorithm, config), algorithm=algorithm, headers=headers)
        logger.debug("minted %s token for adapter %s (ttl %ds)", algorithm, adapter_id, ttl_s)
        return IssuedCredential(
            kind="bearer", value=token, expires_at=expires_at, headers={"Authorization": f"Bearer {token}"}
        )
