"""Authentication: API keys, OIDC JWTs (Firebase ID tokens among them) and mTLS client certificates.

The gateway uses :class:`CompositeAuthenticator`; surfaces build
:class:`~forecourt.gateway.base.Credentials` with :func:`credentials_from_scope`.
"""

from forecourt.gateway.auth.apikeys import (
    ApiKeyAuthenticator,
    ApiKeyHasher,
    ApiKeyService,
    IssuedApiKey,
    looks_like_api_key,
    parse_api_key,
)
from forecourt.gateway.auth.asgi import bearer_token, credentials_from_scope, has_credentials
from forecourt.gateway.auth.common import MemberDirectory, TenancySource
from forecourt.gateway.auth.composite import CompositeAuthenticator, build_authenticator
from forecourt.gateway.auth.jwt import JwksCache, OidcAuthenticator, OidcIssuer, firebase_issuer
from forecourt.gateway.auth.mtls import MtlsAuthenticator, certificate_fingerprint, parse_forwarded_cert

__all__ = [
    "ApiKeyAuthenticator",
    "ApiKeyHasher",
    "ApiKeyService",
    "CompositeAuthenticator",
    "IssuedApiKey",
    "JwksCache",
    "MemberDirectory",
    "MtlsAuthenticator",
    "OidcAuthenticator",
    "OidcIssuer",
    "TenancySource",
    "bearer_token",
    "build_authenticator",
    "certificate_fingerprint",
    "credentials_from_scope",
    "firebase_issuer",
    "has_credentials",
    "looks_like_api_key",
    "parse_api_key",
    "parse_forwarded_cert",
]
