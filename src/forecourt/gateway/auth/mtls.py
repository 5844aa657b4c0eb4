"""mTLS client certificates: a certificate's SHA-256 fingerprint names a member (``Member.cert_fingerprint``).

A certificate arrives one of two ways (see :mod:`forecourt.gateway.auth.asgi` for how a surface fills
:class:`~forecourt.gateway.base.Credentials`):

- ``client_cert_pem``: verified by this server's own TLS handshake (uvicorn with ``--ssl-ca-certs`` and
  ``--ssl-cert-reqs 2``, serving with :class:`forecourt.gateway.auth.asgi.TlsHttpToolsProtocol`);
- ``forwarded_cert``: put in ``X-Forwarded-Client-Cert`` by a TLS-terminating proxy (nginx
  ``$ssl_client_escaped_cert``: URL-encoded PEM; Envoy's ``Cert="..."`` element also works). It is used
  only when the connection's peer address is in ``settings.trusted_proxies``; from anywhere else it is
  ignored, so a client cannot claim a certificate by sending the header itself.
"""

from __future__ import annotations

import hashlib
import ipaddress
import logging
import re
from collections.abc import Iterable
from typing import TYPE_CHECKING
from urllib.parse import unquote

from forecourt.domain.tenancy import Member
from forecourt.domain.timeutil import utcnow
from forecourt.errors import Expired, Unauthorized
from forecourt.gateway.auth.common import MemberDirectory, Now, TenancySource, require_usable_member
from forecourt.gateway.base import Credentials, Principal
from forecourt.settings import Settings

if TYPE_CHECKING:  # cryptography is imported when a certificate is first read, not by every gateway
    from cryptography import x509

logger = logging.getLogger(__name__)

_ENVOY_CERT = re.compile(r'(?:^|[;,])\s*Cert="?([^";,]+)"?', re.IGNORECASE)
MAX_CERT_CHARS = 32_768


def load_certificate(pem: str) -> x509.Certificate:
    """Parse the first certificate of a PEM text.

    Raises:
        Unauthorized: The text holds no parsable certificate.
    """
    from cryptography import x509

    try:
        return x509.load_pem_x509_certificate(pem.strip().encode())
    except ValueError as exc:
        raise Unauthorized("The client certificate is not valid.") from exc


def certificate_fingerprint(cert: x509.Certificate | str) -> str:
    """The lower-case hex SHA-256 of a certificate's DER encoding (``openssl x509 -fingerprint -sha256``).

    Args:
        cert: A certificate, or its PEM text.

    Returns:
        64 hex digits, no colons.
    """
    from cryptography.hazmat.primitives import serialization

    parsed = load_certificate(cert) if isinstance(cert, str) else cert
    return hashlib.sha256(parsed.public_bytes(serialization.Encoding.DER)).hexdigest()


def normalize_fingerprint(text: str) -> str:
    """A stored or typed fingerprint in the canonical form: ``sha256:AB:CD:..`` → ``abcd..``."""
    value = text.strip().lower()
    if value.startswith("sha256:") or value.startswith("sha256="):
        value = value[7:]
    return value.replace(":", "").replace(" ", "")


def parse_forwarded_cert(value: str) -> str | None:
    """The PEM text in an ``X-Forwarded-Client-Cert`` header value, or ``None`` when there is none.

    Accepts nginx's ``$ssl_client_escaped_cert`` (URL-encoded PEM), Envoy's ``By=..;Hash=..;Cert="<url-encoded>"``
    and a bare PEM.
    """
    text = value.strip()
    if not text or len(text) > MAX_CERT_CHARS:
        return None
    match = _ENVOY_CERT.search(text)
    if match is not None:
        text = match.group(1)
    pem = (unquote(text) if "%" in text else text).strip()
    if not pem.startswith("-----BEGIN CERTIFICATE-----"):
        return None
    return pem + "\n"


class TrustedProxies:
    """The proxy addresses (IPs or CIDRs, ``settings.trusted_proxies``) whose forwarded certificates count."""

    def __init__(self, entries: Iterable[str]) -> None:
        """Parse the entries.

        Raises:
            ValueError: An entry is neither an IP address nor a network.
        """
        self._networks = tuple(ipaddress.ip_network(e.strip(), strict=False) for e in entries if e.strip())

    def __bool__(self) -> bool:
        return bool(self._networks)

    def contains(self, address: str | None) -> bool:
        """Whether a peer address belongs to a trusted proxy."""
        if not address or not self._networks:
            return False
        try:
            ip = ipaddress.ip_address(address.split("%", 1)[0])
        except ValueError:
            return False
        if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
            ip = ip.ipv4_mapped
        return any(ip.version == net.version and ip in net for net in self._networks)


def _load_anchors(pem: str) -> list[x509.Certificate]:
    from cryptography import x509

    return x509.load_pem_x509_certificates(pem.encode())


def _common_name(cert: x509.Certificate) -> str | None:
    from cryptography.x509.oid import NameOID

    names = cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)
    if not names:
        return None
    value = names[0].value
    return value if isinstance(value, str) else value.decode(errors="replace")


class MtlsAuthenticator:
    """Authenticates members by client certificate fingerprint."""

    def __init__(
        self,
        store: TenancySource,
        *,
        trusted_proxies: Iterable[str] = (),
        directory: MemberDirectory | None = None,
        require_cn_match: bool = False,
        forwarded_trust_anchors_pem: str | None = None,
        now: Now = utcnow,
    ) -> None:
        """Create the authenticator.

        Args:
            store: Where members are read.
            trusted_proxies: IPs/CIDRs whose ``X-Forwarded-Client-Cert`` is believed.
            directory: The company/member index (a fresh one over ``store`` when omitted).
            require_cn_match: Also require the certificate's subject CN to equal the member id.
            forwarded_trust_anchors_pem: CA certificates (PEM) that forwarded certificates must chain to, as a
                second check behind the proxy's own verification; ``None`` trusts the proxy.
            now: The wall clock, for certificate validity.
        """
        self._store = store
        self._proxies = TrustedProxies(trusted_proxies)
        self._directory = directory or MemberDirectory(store)
        self._require_cn = require_cn_match
        self._anchors = _load_anchors(forwarded_trust_anchors_pem) if forwarded_trust_anchors_pem else None
        self._now = now

    @classmethod
    def from_settings(
        cls,
        settings: Settings,
        store: TenancySource,
        *,
        require_cn_match: bool = False,
        forwarded_trust_anchors_pem: str | None = None,
    ) -> MtlsAuthenticator:
        """The authenticator configured from ``settings.trusted_proxies``."""
        return cls(
            store,
            trusted_proxies=settings.trusted_proxies,
            require_cn_match=require_cn_match,
            forwarded_trust_anchors_pem=forwarded_trust_anchors_pem,
        )

    def presented_certificate(self, credentials: Credentials) -> tuple[str, str] | None:
        """The certificate PEM to use and its source (``"tls"`` or ``"proxy"``), or ``None``.

        A forwarded certificate from a peer that is not a trusted proxy is ignored.
        """
        if credentials.client_cert_pem:
            return credentials.client_cert_pem, "tls"
        if not credentials.forwarded_cert:
            return None
        if not self._proxies.contains(credentials.peer_address):
            logger.warning("ignored a forwarded client certificate from untrusted peer %s", credentials.peer_address)
            return None
        pem = parse_forwarded_cert(credentials.forwarded_cert)
        if pem is None:
            raise Unauthorized("The client certificate is not valid.")
        return pem, "proxy"

    async def authenticate(self, credentials: Credentials, company_hint: str | None) -> Principal | None:
        """Verify a client certificate and find its member.

        Args:
            credentials: What the wire presented.
            company_hint: When given, only this company's members are considered.

        Returns:
            The principal, or ``None`` when no usable certificate was presented.

        Raises:
            Unauthorized: The certificate is unparsable, fails the trust-anchor check, matches no single
                member, or its member may not use mTLS.
            Expired: The certificate is outside its validity period.
        """
        presented = self.presented_certificate(credentials)
        if presented is None:
            return None
        pem, source = presented
        cert = load_certificate(pem)
        self._check_validity(cert)
        if source == "proxy" and self._anchors is not None:
            self._check_chain(cert)
        fingerprint = certificate_fingerprint(cert)
        member = await self._member(fingerprint, company_hint)
        if self._require_cn and _common_name(cert) != member.id:
            raise Unauthorized("The client certificate does not name this member.")
        return Principal.of_member(
            member,
            "mtls",
            expires_at=cert.not_valid_after_utc,
            subject=cert.subject.rfc4514_string(),
            client_address=credentials.peer_address,
        )

    def _check_validity(self, cert: x509.Certificate) -> None:
        now = self._now()
        if now < cert.not_valid_before_utc:
            raise Unauthorized("The client certificate is not yet valid.")
        if now > cert.not_valid_after_utc:
            raise Expired("The client certificate has expired.")

    def _check_chain(self, cert: x509.Certificate) -> None:
        from cryptography.x509.verification import PolicyBuilder, Store, VerificationError

        assert self._anchors is not None
        verifier = PolicyBuilder().store(Store(self._anchors)).time(self._now()).build_client_verifier()
        try:
            verifier.verify(cert, [])
        except VerificationError as exc:
            logger.warning("forwarded client certificate does not chain to a trust anchor")
            raise Unauthorized("The client certificate is not trusted.") from exc

    async def _member(self, fingerprint: str, company_hint: str | None) -> Member:
        companies = None if company_hint is None else [company_hint]
        matches = await self._directory.members_where(
            lambda m: m.cert_fingerprint is not None and normalize_fingerprint(m.cert_fingerprint) == fingerprint,
            companies,
        )
        if len(matches) != 1:
            logger.info("client certificate %s… matches %d members", fingerprint[:12], len(matches))
            raise Unauthorized("The client certificate is not registered.")
        async with self._store.read() as uow:
            fresh = await uow.tenancy.get_member(matches[0].company_id, matches[0].id)
        if fresh is None or normalize_fingerprint(fresh.cert_fingerprint or "") != fingerprint:
            fresh = None
        return require_usable_member(fresh, "mtls")
