"""OIDC JWT bearer tokens (RS256/ES256) verified against each company's issuer, audience and JWKS.

The token's ``iss`` picks the company (``Company.oidc_issuer``); the signature is checked with a key from
the company's JWKS (``Company.oidc_jwks_url``, or the issuer's OpenID discovery document when unset), and
``aud`` must equal ``Company.oidc_audience``. ``sub`` names the member (``Member.oidc_subject``); a company
whose ``oidc`` adapter setting has ``{"allow_member_claim": true}`` may instead name the member in a
``forecourt_member`` claim (its member id).

JWKS documents are cached for ``ttl_s``; a token signed with a ``kid`` the cache does not know triggers a
refetch, at most once every ``min_refetch_s`` per URL, so key rotation is picked up at once while a flood of
made-up ``kid`` values cannot turn Forecourt into a traffic amplifier. Fetches pass the SSRF guard.

Firebase ID tokens are one such issuer: see :func:`firebase_issuer`.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from forecourt import caching
from forecourt.domain.tenancy import Company, Member
from forecourt.errors import Expired, Unauthorized, UnsafeTarget, UpstreamUnavailable
from forecourt.gateway.auth.apikeys import looks_like_api_key
from forecourt.gateway.auth.common import Clock, MemberDirectory, TenancySource, require_usable_member
from forecourt.gateway.base import Credentials, Principal
from forecourt.netguard import check_url_async
from forecourt.outbound_urls import guarded_transport

if TYPE_CHECKING:  # PyJWT, cryptography and httpx are imported when a JWT is verified, not by every process
    import httpx
    import jwt

logger = logging.getLogger(__name__)

ALGORITHMS: tuple[str, ...] = ("RS256", "ES256")
FIREBASE_JWKS_URL = "https://www.googleapis.com/service_accounts/v1/jwk/securetoken@system.gserviceaccount.com"
MEMBER_CLAIM = "forecourt_member"
OIDC_SETTING_ID = "oidc"
MAX_TOKEN_BYTES = 16_384


@dataclass(frozen=True)
class OidcIssuer:
    """An issuer preset: the three ``Company`` fields that configure OIDC for a company."""

    issuer: str
    audience: str
    jwks_url: str

    def company_fields(self) -> dict[str, str]:
        """``{"oidc_issuer", "oidc_audience", "oidc_jwks_url"}`` for ``Company(...)`` or ``model_copy(update=...)``."""
        return {"oidc_issuer": self.issuer, "oidc_audience": self.audience, "oidc_jwks_url": self.jwks_url}


def firebase_issuer(project_id: str) -> OidcIssuer:
    """The Firebase Authentication ID-token issuer of a Firebase/GCP project.

    Args:
        project_id: The Firebase project id.

    Returns:
        Issuer ``https://securetoken.google.com/<project>``, audience ``<project>``, and Google's
        ``securetoken`` JWKS.
    """
    if not project_id or "/" in project_id:
        raise ValueError("a Firebase project id is required")
    return OidcIssuer(
        issuer=f"https://securetoken.google.com/{project_id}", audience=project_id, jwks_url=FIREBASE_JWKS_URL
    )


def looks_like_jwt(token: str) -> bool:
    """Whether a bearer token has the three-segment compact JWS shape."""
    return token.count(".") == 2 and not looks_like_api_key(token)


@dataclass
class _KeySet:
    fetched_at: float
    keys: dict[str, jwt.PyJWK] = field(default_factory=dict)
    unnamed: list[jwt.PyJWK] = field(default_factory=list)


def _parse_jwks(document: Any) -> _KeySet:
    import jwt

    keys: dict[str, jwt.PyJWK] = {}
    unnamed: list[jwt.PyJWK] = []
    raw_keys = document.get("keys") if isinstance(document, dict) else None
    if not isinstance(raw_keys, list):
        raise ValueError("not a JWKS document")
    for raw in raw_keys:
        if not isinstance(raw, dict) or raw.get("use", "sig") != "sig":
            continue
        try:
            key = jwt.PyJWK(raw)
        except (jwt.PyJWKError, jwt.InvalidKeyError):
            continue  # a key type we do not use (e.g. "oct", "OKP"); the others still count
        kid = raw.get("kid")
        if isinstance(kid, str) and kid:
            keys[kid] = key
        else:
            unnamed.append(key)
    return _KeySet(fetched_at=0.0, keys=keys, unnamed=unnamed)


_JWKS_KEPT = 256  # key sets and discovery documents (one per configured issuer)


class JwksCache:
    """Fetches and caches JWKS documents (and OpenID discovery documents) over httpx."""

    def __init__(
        self,
        *,
        client: httpx.AsyncClient | None = None,
        ttl_s: float = 300.0,
        min_refetch_s: float = 30.0,
        timeout_s: float = 5.0,
        allow_private: bool = False,
        allowed_hosts: Iterable[str] = (),
        clock: Clock = time.monotonic,
    ) -> None:
        """Create a cache.

        Args:
            client: The HTTP client to use (one is created, and closed by :meth:`aclose`, when omitted).
            ttl_s: How long a fetched key set is used before it is fetched again.
            min_refetch_s: The least time between fetches of one URL caused by an unknown ``kid``.
            timeout_s: Timeout of each fetch.
            allow_private: ``settings.allow_private_targets``: allow JWKS hosts on private/loopback addresses.
            allowed_hosts: Host names allowed even on private addresses.
            clock: Monotonic seconds.
        """
        self._client = client
        self._owns_client = client is None
        self._ttl_s = ttl_s
        self._min_refetch_s = min_refetch_s
        self._timeout_s = timeout_s
        self._allow_private = allow_private
        self._allowed_hosts = tuple(allowed_hosts)
        self._clock = clock
        self._sets: caching.Cache[str, _KeySet] = caching.lru("gateway.auth.jwks", _JWKS_KEPT)
        self._discovered: caching.Cache[str, tuple[float, str]] = caching.lru("gateway.auth.oidc_discovery", _JWKS_KEPT)
        self._locks: dict[str, asyncio.Lock] = {}
        self.fetches = 0
        """How many JWKS documents were fetched (for metrics and tests)."""

    async def aclose(self) -> None:
        """Close the HTTP client if this cache created it."""
        if self._client is not None and self._owns_client:
            await self._client.aclose()
            self._client = None

    async def _get_json(self, url: str) -> Any:
        await check_url_async(url, allow_private=self._allow_private, allowed_hosts=self._allowed_hosts)
        import httpx

        if self._client is None:
            transport = guarded_transport(allow_private=self._allow_private, allowed_hosts=self._allowed_hosts)
            self._client = httpx.AsyncClient(timeout=self._timeout_s, follow_redirects=False, transport=transport)
        try:
            response = await self._client.get(url, timeout=self._timeout_s, headers={"Accept": "application/json"})
            response.raise_for_status()
            return response.json()
        except (httpx.HTTPError, ValueError) as exc:
            logger.warning("fetching %s failed: %s", url, type(exc).__name__)
            raise UpstreamUnavailable("The identity provider's signing keys could not be fetched.") from exc

    async def jwks_url_for(self, issuer: str) -> str:
        """The ``jwks_uri`` of an issuer's OpenID discovery document (cached for ``ttl_s``)."""
        now = self._clock()
        hit = self._discovered.get(issuer)
        if hit is not None and now - hit[0] < self._ttl_s:
            return hit[1]
        document = await self._get_json(issuer.rstrip("/") + "/.well-known/openid-configuration")
        uri = document.get("jwks_uri") if isinstance(document, dict) else None
        if not isinstance(uri, str):
            raise UpstreamUnavailable("The identity provider's discovery document has no jwks_uri.")
        self._discovered.put(issuer, (now, uri))
        return uri

    async def _fetch(self, url: str) -> _KeySet:
        document = await self._get_json(url)
        try:
            keyset = _parse_jwks(document)
        except ValueError as exc:
            raise UpstreamUnavailable("The identity provider's signing keys are malformed.") from exc
        keyset.fetched_at = self._clock()
        self.fetches += 1
        self._sets.put(url, keyset)
        logger.info("fetched JWKS %s: %d keys", url, len(keyset.keys) + len(keyset.unnamed))
        return keyset

    @staticmethod
    def _pick(keyset: _KeySet, kid: str | None) -> jwt.PyJWK | None:
        if kid is not None:
            return keyset.keys.get(kid)
        candidates = list(keyset.keys.values()) + keyset.unnamed
        return candidates[0] if len(candidates) == 1 else None

    async def get_key(self, url: str, kid: str | None) -> jwt.PyJWK:
        """The signing key ``kid`` from the JWKS at ``url``, refetching for an unknown ``kid`` (rate limited).

        Args:
            url: The JWKS URL.
            kid: The token header's ``kid`` (``None`` works only for a JWKS holding exactly one key).

        Returns:
            The key.

        Raises:
            Unauthorized: No such key, even after a refetch (or a refetch was too recent).
            UnsafeTarget: The URL is refused by the SSRF guard.
            UpstreamUnavailable: The JWKS could not be fetched and none is cached.
        """
        lock = self._locks.setdefault(url, asyncio.Lock())
        async with lock:
            keyset = self._sets.get(url)
            now = self._clock()
            if keyset is None or now - keyset.fetched_at >= self._ttl_s:
                keyset = await self._fetch_or_stale(url, keyset)
            key = self._pick(keyset, kid)
            if key is None and now - keyset.fetched_at >= self._min_refetch_s:
                keyset = await self._fetch(url)
                key = self._pick(keyset, kid)
        if key is None:
            raise Unauthorized("The token was signed with an unknown key.")
        return key

    async def _fetch_or_stale(self, url: str, stale: _KeySet | None) -> _KeySet:
        try:
            return await self._fetch(url)
        except UpstreamUnavailable:
            if stale is None:
                raise
            logger.warning("using stale JWKS for %s after a failed refresh", url)
            return stale


def _token_scopes(claims: Mapping[str, Any]) -> frozenset[str] | None:
    for name in ("scope", "scp"):
        value = claims.get(name)
        if isinstance(value, str):
            return frozenset(value.split())
        if isinstance(value, list):
            return frozenset(str(v) for v in value)
    return None


def _check_key_type(key: jwt.PyJWK, alg: str) -> None:
    from cryptography.hazmat.primitives.asymmetric import ec, rsa

    material = key.key
    if alg == "RS256" and isinstance(material, rsa.RSAPublicKey):
        return
    if alg == "ES256" and isinstance(material, ec.EllipticCurvePublicKey) and material.curve.name == "secp256r1":
        return
    raise Unauthorized("The token's algorithm does not match its key.")


class OidcAuthenticator:
    """Authenticates OIDC JWT bearer tokens for companies with an OIDC issuer configured."""

    def __init__(
        self,
        store: TenancySource,
        jwks: JwksCache,
        *,
        directory: MemberDirectory | None = None,
        algorithms: Iterable[str] = ALGORITHMS,
        leeway_s: float = 30.0,
    ) -> None:
        """Create the authenticator.

        Args:
            store: Where companies, members and the ``oidc`` adapter setting are read.
            jwks: The JWKS cache.
            directory: The company/member index (a fresh one over ``store`` when omitted).
            algorithms: Accepted ``alg`` values (a subset of RS256 and ES256).
            leeway_s: Clock skew tolerated for ``exp``, ``nbf`` and ``iat``.
        """
        self._store = store
        self._jwks = jwks
        self._directory = directory or MemberDirectory(store)
        self._algorithms = frozenset(algorithms) & frozenset(ALGORITHMS)
        self._leeway_s = leeway_s

    async def authenticate(self, credentials: Credentials, company_hint: str | None) -> Principal | None:
        """Verify an OIDC JWT bearer token.

        Args:
            credentials: What the wire presented.
            company_hint: When several companies trust the same issuer, only this one is considered.

        Returns:
            The principal, or ``None`` when the bearer token is absent or not a JWT.

        Raises:
            Unauthorized: Unknown issuer, bad signature, wrong audience, unknown key, unknown member, or a
                member that may not use OIDC.
            Expired: The token is past its ``exp``.
            UpstreamUnavailable: The issuer's keys could not be fetched.
        """
        token = (credentials.bearer or "").strip()
        if not token or not looks_like_jwt(token):
            return None
        if len(token) > MAX_TOKEN_BYTES:
            raise Unauthorized("The token is not valid.")
        alg, kid, issuer = self._peek(token)
        companies = await self._directory.companies_for_issuer(issuer)
        if company_hint is not None:
            companies = [c for c in companies if c.id == company_hint]
        if not companies:
            logger.info("refused token from untrusted issuer")
            raise Unauthorized("The token issuer is not trusted.")
        failure: Unauthorized | None = None
        for company in companies:
            try:
                claims = await self._verify(token, alg, kid, company)
                member = await self._member(company, claims)
            except Unauthorized as exc:
                failure = exc if failure is None or isinstance(exc, Expired) else failure
                continue
            return self._principal(company, member, claims, credentials)
        assert failure is not None
        raise failure

    def _peek(self, token: str) -> tuple[str, str | None, str]:
        import jwt

        try:
            header = jwt.get_unverified_header(token)
            unverified = jwt.decode(token, options={"verify_signature": False})
        except jwt.InvalidTokenError as exc:
            raise Unauthorized("The token is not valid.") from exc
        alg = header.get("alg")
        if alg not in self._algorithms:
            raise Unauthorized("The token's signing algorithm is not accepted.")
        kid = header.get("kid")
        issuer = unverified.get("iss")
        if not isinstance(issuer, str) or not issuer:
            raise Unauthorized("The token has no issuer.")
        return str(alg), kid if isinstance(kid, str) else None, issuer

    async def _verify(self, token: str, alg: str, kid: str | None, company: Company) -> dict[str, Any]:
        if not company.oidc_issuer or not company.oidc_audience:
            raise Unauthorized("The token issuer is not trusted.")
        try:
            url = company.oidc_jwks_url or await self._jwks.jwks_url_for(company.oidc_issuer)
            key = await self._jwks.get_key(url, kid)
        except UnsafeTarget as exc:
            logger.warning("company %s: JWKS URL refused by the SSRF guard", company.id)
            raise Unauthorized("The token issuer is not usable.") from exc
        _check_key_type(key, alg)
        import jwt

        try:
            claims: dict[str, Any] = jwt.decode(
                token,
                key.key,
                algorithms=[alg],
                audience=company.oidc_audience,
                issuer=company.oidc_issuer,
                leeway=self._leeway_s,
                options={"require": ["exp", "iss", "sub", "aud"]},
            )
        except jwt.ExpiredSignatureError as exc:
            raise Expired("The token has expired.") from exc
        except jwt.InvalidTokenError as exc:
            logger.info("company %s: token refused: %s", company.id, type(exc).__name__)
            raise Unauthorized("The token is not valid.") from exc
        return claims

    async def _member(self, company: Company, claims: Mapping[str, Any]) -> Member:
        subject = str(claims["sub"])
        named = claims.get(MEMBER_CLAIM)
        if isinstance(named, str) and named and await self._member_claim_allowed(company.id):
            async with self._store.read() as uow:
                member = await uow.tenancy.get_member(company.id, named)
            if member is not None and member.oidc_subject not in (None, subject):
                member = None  # the member is bound to another subject: the claim cannot override that
            return require_usable_member(member, "oidc")
        matches = await self._directory.members_where(lambda m: m.oidc_subject == subject, [company.id])
        if len(matches) != 1:
            raise Unauthorized("The token's subject is not a member.")
        async with self._store.read() as uow:
            fresh = await uow.tenancy.get_member(company.id, matches[0].id)
        if fresh is not None and fresh.oidc_subject != subject:
            fresh = None
        return require_usable_member(fresh, "oidc")

    async def _member_claim_allowed(self, company_id: str) -> bool:
        async with self._store.read() as uow:
            setting = await uow.tenancy.get_adapter_setting(company_id, OIDC_SETTING_ID)
        return setting is not None and setting.config.get("allow_member_claim") is True

    @staticmethod
    def _principal(company: Company, member: Member, claims: Mapping[str, Any], credentials: Credentials) -> Principal:
        requested = _token_scopes(claims)
        granted = frozenset(member.scopes)
        exp = claims.get("exp")
        return Principal(
            method="oidc",
            company_id=company.id,
            member_id=member.id,
            profile_id=member.profile_id,
            member=member,
            scopes=granted if requested is None else requested & granted,
            dealership_ids=frozenset(member.dealership_ids),
            expires_at=datetime.fromtimestamp(exp, UTC) if isinstance(exp, int | float) else None,
            subject=str(claims["sub"]),
            client_address=credentials.peer_address,
        )
