"""Short-lived Google OAuth access tokens (Vertex AI and other Google APIs) minted with google-auth.

Where the identity comes from, by configuration:

- ``service_account_file``: a service-account JSON key file;
- ``service_account_env``: an environment variable holding the JSON (a mounted secret);
- neither: application-default credentials (``google.auth.default``): workload identity on GKE / Cloud
  Run, the metadata server on GCE, or ``GOOGLE_APPLICATION_CREDENTIALS``.

A service account signs a JWT and exchanges it at its ``token_uri`` (the RFC 7523 JWT bearer grant). The
token is reused until it is within ``refresh_margin_s`` of expiry (``reuse: false`` refreshes on every
call); google-auth's blocking refresh runs in a worker thread over an httpx client.

With ``downscope: {rules: [...], sts_url?}`` the cached token is only the source: every call exchanges it at the
Security Token Service for a token limited by a credential access boundary made for that call
(:mod:`forecourt.gateway.credentials.per_call`), and that token is used once.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
from google.auth import exceptions as google_exceptions
from google.auth import transport as google_transport
from google.auth.credentials import Credentials as GoogleCredentials

from forecourt import caching
from forecourt.contract.errors import CredentialUnavailable
from forecourt.contract.secrets import read_secret
from forecourt.domain.timeutil import utcnow
from forecourt.gateway.auth.common import Now
from forecourt.gateway.base import IssuedCredential
from forecourt.gateway.credentials.per_call import DownscopedExchange, current_call_scope

logger = logging.getLogger(__name__)

CLOUD_PLATFORM_SCOPE = "https://www.googleapis.com/auth/cloud-platform"
DEFAULT_REFRESH_MARGIN_S = 300.0


class _Response(google_transport.Response):
    def __init__(self, response: httpx.Response) -> None:
        self._response = response

    @property
    def status(self) -> int:
        return self._response.status_code

    @property
    def headers(self) -> Mapping[str, str]:
        return self._response.headers

    @property
    def data(self) -> bytes:
        return self._response.content


class HttpxRequest(google_transport.Request):
    """google-auth's transport interface over a synchronous httpx client (no ``requests`` needed)."""

    def __init__(self, client: httpx.Client) -> None:
        """Wrap ``client``."""
        self._client = client

    def __call__(
        self,
        url: str,
        method: str = "GET",
        body: bytes | None = None,
        headers: Mapping[str, str] | None = None,
        timeout: float | None = None,
        **kwargs: Any,
    ) -> _Response:
        """Send one request for google-auth."""
        del kwargs
        try:
            response = self._client.request(method, url, content=body, headers=headers, timeout=timeout or 10.0)
        except httpx.HTTPError as exc:
            raise google_exceptions.TransportError(type(exc).__name__) from exc  # type: ignore[no-untyped-call]
        return _Response(response)


@dataclass
class _Slot:
    credentials: GoogleCredentials
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    refused: str | None = None
    """A token a runtime refused before its expiry: refreshed instead of reused."""


def _aware(expiry: datetime | None) -> datetime | None:
    if expiry is None:
        return None
    return expiry if expiry.tzinfo is not None else expiry.replace(tzinfo=UTC)


class GoogleCredentialProvider:
    """Issues Google OAuth access tokens (``Authorization: Bearer ya29...``) per call."""

    def __init__(
        self,
        *,
        environ: Mapping[str, str] | None = None,
        http: httpx.Client | None = None,
        refresh_margin_s: float = DEFAULT_REFRESH_MARGIN_S,
        now: Now = utcnow,
    ) -> None:
        """Create the provider.

        Args:
            environ: Where ``service_account_env`` names are looked up (``os.environ`` when omitted).
            http: The synchronous HTTP client google-auth's refresh uses (one is created when omitted).
            refresh_margin_s: A token closer than this to expiry is refreshed before use.
            now: The wall clock.
        """
        self._environ = os.environ if environ is None else environ
        self._http = http or httpx.Client(timeout=10.0, follow_redirects=False)
        self._request = HttpxRequest(self._http)
        self._margin = timedelta(seconds=refresh_margin_s)
        self._now = now
        self._slots: caching.Cache[str, _Slot] = caching.lru("gateway.credentials.google_slots", 256)
        self.exchange = DownscopedExchange()

    def close(self) -> None:
        """Close the HTTP client."""
        self._http.close()

    def _build(self, config: Mapping[str, Any], scopes: list[str]) -> GoogleCredentials:
        from google.oauth2 import service_account

        try:
            if config.get("service_account_file") or config.get("service_account_env"):
                raw = read_secret(
                    config, environ=self._environ, env_key="service_account_env", file_key="service_account_file"
                )
                info = json.loads(raw)
                creds: GoogleCredentials = service_account.Credentials.from_service_account_info(  # type: ignore[no-untyped-call]
                    info, scopes=scopes
                )
                return creds
            import google.auth

            default_creds, _project = google.auth.default(scopes=scopes)
            return default_creds
        except (ValueError, KeyError, google_exceptions.GoogleAuthError) as exc:
            logger.warning("Google credentials cannot be loaded: %s", type(exc).__name__)
            raise CredentialUnavailable() from exc

    def _slot(self, config: Mapping[str, Any], scopes: list[str]) -> _Slot:
        source = {k: config.get(k) for k in ("service_account_file", "service_account_env")}
        key = hashlib.sha256(json.dumps([source, sorted(scopes)], sort_keys=True).encode()).hexdigest()
        slot = self._slots.get(key)
        if slot is None:
            slot = _Slot(credentials=self._build(config, scopes))
            self._slots.put(key, slot)
        return slot

    def _fresh_enough(self, creds: GoogleCredentials) -> bool:
        expiry = _aware(creds.expiry)
        return bool(creds.token) and expiry is not None and expiry - self._now() > self._margin

    def rejected(self, adapter_id: str, config: Mapping[str, Any], credential: IssuedCredential) -> None:
        """A runtime refused this token before its expiry (revoked, or the clock was off): refresh it next time."""
        del config
        for slot in filter(None, map(self._slots.peek, self._slots)):
            if credential.value and slot.credentials.token == credential.value:
                slot.refused = credential.value
                logger.info("a runtime refused the Google access token of adapter %s; it will be refreshed", adapter_id)

    async def issue(self, adapter_id: str, company_id: str | None, config: Mapping[str, Any]) -> IssuedCredential:
        """An access token for ``adapter_id``'s call.

        Args:
            adapter_id: The adapter the token is for (logged, never the token).
            company_id: The calling company (unused: the identity is the adapter's).
            config: ``{service_account_file | service_account_env, scopes: [...] (default cloud-platform),
                reuse: bool (default true)}``.

        Returns:
            A bearer credential with its expiry.

        Raises:
            CredentialUnavailable: The identity cannot be loaded or the token exchange failed.
        """
        del company_id
        scopes = [str(s) for s in config.get("scopes") or [CLOUD_PLATFORM_SCOPE]]
        slot = self._slot(config, scopes)
        async with slot.lock:
            creds = slot.credentials
            refused = slot.refused is not None and creds.token == slot.refused
            if config.get("reuse", True) is False or refused or not self._fresh_enough(creds):
                try:
                    await asyncio.to_thread(creds.refresh, self._request)
                except google_exceptions.GoogleAuthError as exc:
                    logger.warning("Google token refresh for adapter %s failed: %s", adapter_id, type(exc).__name__)
                    raise CredentialUnavailable() from exc
                logger.debug("refreshed Google access token for adapter %s", adapter_id)
            slot.refused = None
            token = str(creds.token)
            expires_at = _aware(creds.expiry)
        downscope = config.get("downscope")
        if isinstance(downscope, Mapping):
            token, per_call_expiry = await self.exchange.exchange(token, downscope, current_call_scope(), self._now())
            if per_call_expiry is not None and (expires_at is None or per_call_expiry < expires_at):
                expires_at = per_call_expiry
            logger.debug("exchanged a downscoped token for adapter %s", adapter_id)
        return IssuedCredential(
            kind="bearer", value=token, expires_at=expires_at, headers={"Authorization": f"Bearer {token}"}
        )
