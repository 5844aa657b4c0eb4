"""The authenticator the gateway uses: bearer (API key, else JWT), then client certificate.

A credential that is presented and fails raises at once (a bad bearer token is never rescued by a
certificate, so a caller learns its token is wrong); a caller that presents nothing usable gets
``auth.unauthorized``. Each authenticator applies ``Member.security_type`` itself, so a member declared
``mtls`` cannot authenticate with an API key even if that key is valid.
"""

from __future__ import annotations

import logging

from forecourt.errors import Unauthorized
from forecourt.gateway.auth.apikeys import ApiKeyAuthenticator, looks_like_api_key
from forecourt.gateway.auth.common import MemberDirectory, TenancySource
from forecourt.gateway.auth.guesses import GuessThrottle
from forecourt.gateway.auth.jwt import JwksCache, OidcAuthenticator, looks_like_jwt
from forecourt.gateway.auth.mtls import MtlsAuthenticator
from forecourt.gateway.auth.operator import OperatorKeys, looks_like_operator_key
from forecourt.gateway.backends.authority import AuthorityGenerations
from forecourt.gateway.base import Authenticator, Credentials, Principal, RateLimiter, RevocationList
from forecourt.settings import Settings

logger = logging.getLogger(__name__)


class CompositeAuthenticator:
    """Tries the bearer token (API key or OIDC JWT) and then the client certificate."""

    def __init__(
        self,
        *,
        api_keys: ApiKeyAuthenticator | Authenticator | None = None,
        oidc: OidcAuthenticator | Authenticator | None = None,
        mtls: MtlsAuthenticator | Authenticator | None = None,
        jwks: JwksCache | None = None,
        operator_keys: Authenticator | None = None,
        guesses: GuessThrottle | None = None,
    ) -> None:
        """Create the composite; any of the three may be left out (that kind of credential is then refused).

        Args:
            api_keys: Verifies ``fck_...`` bearer tokens.
            oidc: Verifies JWT bearer tokens.
            mtls: Verifies client certificates (server-verified or forwarded by a trusted proxy).
            jwks: A JWKS cache to close with :meth:`aclose`.
            operator_keys: Verifies ``fco_...`` operator keys.
            guesses: Counts failed authentications per client address and refuses a client over its limit.
        """
        self._api_keys = api_keys
        self._oidc = oidc
        self._mtls = mtls
        self._jwks = jwks
        self._operator_keys = operator_keys
        self.guesses = guesses

    async def aclose(self) -> None:
        """Close the JWKS cache's HTTP client (call on shutdown)."""
        if self._jwks is not None:
            await self._jwks.aclose()

    async def authenticate(self, credentials: Credentials, company_hint: str | None) -> Principal:
        """Authenticate a caller or refuse.

        Args:
            credentials: What the wire presented.
            company_hint: The company the caller says it acts for, used to disambiguate issuers and
                certificates shared between companies.

        Returns:
            The principal.

        Raises:
            Unauthorized: Nothing presented authenticates the caller (``auth.unauthorized``).
            Expired: The credential presented has expired (``auth.expired``).
        """
        if self.guesses is None:
            return await self._verify(credentials, company_hint)
        self.guesses.refuse_if_blocked(credentials)
        try:
            return await self._verify(credentials, company_hint)
        except Unauthorized:
            await self.guesses.failed(credentials)
            raise

    async def _verify(self, credentials: Credentials, company_hint: str | None) -> Principal:
        principal = await self._bearer(credentials, company_hint)
        if principal is None and self._mtls is not None:
            principal = await self._mtls.authenticate(credentials, company_hint)
        if principal is None:
            raise Unauthorized("Authentication is required: send a bearer token or a client certificate.")
        return principal

    async def _bearer(self, credentials: Credentials, company_hint: str | None) -> Principal | None:
        token = credentials.bearer
        if not token:
            return None
        if looks_like_api_key(token):
            chosen = self._api_keys
        elif looks_like_operator_key(token):
            chosen = self._operator_keys
        elif looks_like_jwt(token):
            chosen = self._oidc
        else:
            chosen = None
        if chosen is None:
            raise Unauthorized("The bearer token is not valid.")
        principal = await chosen.authenticate(credentials, company_hint)
        if principal is None:
            raise Unauthorized("The bearer token is not valid.")
        return principal


def build_authenticator(
    settings: Settings,
    store: TenancySource,
    revocations: RevocationList,
    authority: AuthorityGenerations | None = None,
    rate_limiter: RateLimiter | None = None,
) -> CompositeAuthenticator:
    """The gateway's authenticator, configured from ``settings``.

    API keys hashed with ``settings.api_key_pepper``; OIDC with JWKS fetches guarded by
    ``settings.allow_private_targets``; mTLS trusting forwarded certificates only from
    ``settings.trusted_proxies``. OIDC and mTLS share one member index.

    Args:
        settings: The process settings.
        store: The store (companies, members, API keys).
        revocations: The shared API key revocation list.
        authority: The companies' authority generations (a change to a member or key is seen by the next call).
        rate_limiter: Where failed authentications are counted per client address (``None``: not throttled).

    Returns:
        The composite authenticator (call :meth:`CompositeAuthenticator.aclose` on shutdown).
    """
    directory = MemberDirectory(store, authority=authority)
    jwks = JwksCache(allow_private=settings.allow_private_targets)
    return CompositeAuthenticator(
        api_keys=ApiKeyAuthenticator.from_settings(settings, store, revocations, authority),
        oidc=OidcAuthenticator(store, jwks, directory=directory),
        mtls=MtlsAuthenticator(store, trusted_proxies=settings.trusted_proxies, directory=directory),
        jwks=jwks,
        operator_keys=OperatorKeys(store, settings.api_key_pepper),
        guesses=GuessThrottle(rate_limiter, settings.auth_failures_per_minute) if rate_limiter is not None else None,
    )
