"""CRM delivery tests: a real SMTP server (aiosmtpd) on loopback with STARTTLS or TLS and a login; both databases."""

from __future__ import annotations

import asyncio
import datetime as dt
import email
import email.policy
import ipaddress
import ssl
import warnings
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from email.message import EmailMessage
from pathlib import Path
from typing import Any

import pytest
from aiosmtpd.smtp import SMTP, AuthResult, Envelope, LoginPassword, Session
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from forecourt.domain.tenancy import Company, Dealership, Profile
from forecourt.store import SqlStore, create_engine, upgrade_async

DEALER = "crm-dealer"
LOGIN = "crm-user"
PASSWORD = "s3cret-passw0rd"


def self_signed(directory: Path) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 and localhost, made in the test (no files shipped)."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = dt.datetime.now(dt.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = directory / "smtp-cert.pem", directory / "smtp-key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return cert_path, key_path


@dataclass
class MailServer:
    """What the loopback mail server saw."""

    port: int
    cafile: str
    messages: list[EmailMessage] = field(default_factory=list)
    recipients: list[list[str]] = field(default_factory=list)
    logins: list[str] = field(default_factory=list)
    tls_sessions: list[bool] = field(default_factory=list)
    temporary_failures: int = 0


class _Handler:
    def __init__(self, server: MailServer) -> None:
        self.server = server

    async def handle_DATA(self, smtp: SMTP, session: Session, envelope: Envelope) -> str:
        if self.server.temporary_failures > 0:
            self.server.temporary_failures -= 1
            return "451 4.3.0 try again later"
        raw = envelope.original_content or envelope.content or b""
        message = email.message_from_bytes(raw if isinstance(raw, bytes) else raw.encode(), policy=email.policy.default)
        assert isinstance(message, EmailMessage)
        self.server.messages.append(message)
        self.server.recipients.append(list(envelope.rcpt_tos))
        transport = smtp.transport
        self.server.tls_sessions.append(transport is not None and transport.get_extra_info("ssl_object") is not None)
        return "250 OK"


def _authenticator(server: MailServer) -> Any:
    def check(smtp: SMTP, session: Session, envelope: Envelope, mechanism: str, data: Any) -> AuthResult:
        ok = isinstance(data, LoginPassword) and data.login == LOGIN.encode() and data.password == PASSWORD.encode()
        server.logins.append(data.login.decode() if isinstance(data, LoginPassword) else "?")
        return AuthResult(success=ok, handled=False)

    return check


async def start_mail_server(directory: Path, *, implicit_tls: bool = False) -> tuple[MailServer, asyncio.Server]:
    """A mail server that requires STARTTLS (or speaks TLS from the first byte) and a login."""
    cert, key = self_signed(directory)
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    state = MailServer(port=0, cafile=str(cert))
    handler = _Handler(state)
    loop = asyncio.get_running_loop()

    def protocol() -> SMTP:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # AUTH without STARTTLS: the whole session is TLS here
            return _smtp()

    def _smtp() -> SMTP:
        return SMTP(
            handler,
            hostname="crm-mail.test",
            tls_context=None if implicit_tls else context,
            require_starttls=not implicit_tls,
            auth_required=True,
            auth_require_tls=not implicit_tls,  # aiosmtpd knows TLS only when it did the STARTTLS itself
            authenticator=_authenticator(state),
        )

    server = await loop.create_server(protocol, "127.0.0.1", 0, ssl=context if implicit_tls else None)
    state.port = server.sockets[0].getsockname()[1]
    return state, server


@pytest.fixture
async def mail_server(tmp_path: Path) -> AsyncIterator[MailServer]:
    """A STARTTLS mail server with a login, on loopback."""
    state, server = await start_mail_server(tmp_path)
    try:
        yield state
    finally:
        server.close()
        await server.wait_closed()


@pytest.fixture(params=["sqlite", "postgres"])
def database_url(request: pytest.FixtureRequest) -> str:
    """A fresh, empty database of each kind."""
    url: str = request.getfixturevalue(f"{request.param}_url")
    return url


@pytest.fixture
async def store(database_url: str) -> AsyncIterator[SqlStore]:
    """A migrated store with one dealership."""
    await upgrade_async(database_url)
    sql_store = SqlStore(create_engine(database_url, pool_size=2))
    async with sql_store.transaction() as uow:
        await uow.tenancy.upsert_profile(Profile(id="p", name="Profile"))
        await uow.tenancy.upsert_company(Company(id="c", profile_id="p", name="Company"))
        await uow.tenancy.upsert_dealership(Dealership(id=DEALER, company_id="c", name="CRM Dealer"))
    try:
        yield sql_store
    finally:
        await sql_store.close()
