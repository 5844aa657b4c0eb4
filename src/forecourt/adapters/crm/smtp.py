"""ADF leads by e-mail to a dealership's CRM lead inboxes (how most dealer CRMs ingest leads).

One message per inbox and delivery: the ADF document is the plain-text body (what CRM e-mail parsers
read), the ``Message-ID`` is derived from the delivery id, so a retried delivery is the same message to
a CRM that de-duplicates on it, and ``Idempotency-Key`` and ``X-Forecourt-Delivery-Id`` carry the id as the
HTTP posts do. Delivery is at least once (a worker killed after the server took a message sends it again
after its lease): these are what a receiver de-duplicates on.
The subject names the lead id only, never the customer. The mail server passes the SSRF guard before
every attempt; STARTTLS (default) or implicit TLS verify the server's certificate (a private CA can be
named per route); the password is read at send time from where the route says it is (an environment
variable or a file, like every adapter secret), never stored.
"""

from __future__ import annotations

import logging
import os
import ssl
from collections.abc import Mapping
from email.message import EmailMessage
from email.utils import formatdate

import aiosmtplib

from forecourt.adapters.crm.http import PostResult
from forecourt.contract.errors import CredentialUnavailable
from forecourt.contract.secrets import read_secret
from forecourt.domain.feeds import CrmMailRoute, SmtpSecurity
from forecourt.errors import UnsafeTarget
from forecourt.netguard import check_url_async

logger = logging.getLogger(__name__)

USER_AGENT = "Forecourt-ADF/1.0"


def adf_message(route: CrmMailRoute, recipient: str, delivery_id: str, lead_id: str, adf: str) -> EmailMessage:
    """The e-mail carrying one ADF lead to one inbox."""
    message = EmailMessage()
    message["From"] = route.sender
    message["To"] = recipient
    message["Subject"] = f"ADF lead {lead_id}"
    message["Date"] = formatdate(localtime=False, usegmt=True)
    domain = route.sender.rsplit("@", 1)[-1] or "forecourt.invalid"
    message["Message-ID"] = f"<{delivery_id}@{domain}>"
    message["Idempotency-Key"] = delivery_id
    message["X-Forecourt-Delivery-Id"] = delivery_id
    message["X-Mailer"] = USER_AGENT
    message.set_content(adf, subtype="plain", charset="utf-8")
    return message


def _tls_context(route: CrmMailRoute) -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=route.ca_file) if route.ca_file else ssl.create_default_context()
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    return context


class SmtpSender:
    """Sends ADF e-mails with a bounded timeout; every outcome becomes a :class:`PostResult`."""

    def __init__(
        self, *, allow_private: bool, timeout_s: float = 30.0, environ: Mapping[str, str] | None = None
    ) -> None:
        """Create the sender.

        Args:
            allow_private: Allow mail servers on private or loopback addresses (development and tests).
            timeout_s: Connect and per-command timeout.
            environ: Where ``password.env`` names are looked up (``os.environ`` when omitted).
        """
        self.allow_private = allow_private
        self.timeout_s = timeout_s
        self._environ = os.environ if environ is None else environ

    def _password(self, route: CrmMailRoute) -> str | None:
        if route.password is None:
            return None
        return read_secret(route.password.model_dump(exclude_none=True), environ=self._environ)

    async def send(self, route: CrmMailRoute, message: EmailMessage) -> PostResult:
        """One attempt to hand ``message`` to the route's server; never raises for remote failures."""
        try:
            # The guard judges URLs; the mail server's host and port are checked the same way.
            await check_url_async(f"https://{route.host}:{route.port}/", allow_private=self.allow_private)
        except UnsafeTarget:
            return PostResult(delivered=False, retryable=False, error="mail server refused by the SSRF guard")
        try:
            password = self._password(route)
        except CredentialUnavailable:
            return PostResult(delivered=False, retryable=True, error="mail server credentials unavailable")
        try:
            await aiosmtplib.send(
                message,
                hostname=route.host,
                port=route.port,
                username=route.username if password is not None else None,
                password=password,
                use_tls=route.security is SmtpSecurity.TLS,
                start_tls=route.security is SmtpSecurity.STARTTLS,
                tls_context=_tls_context(route) if route.security is not SmtpSecurity.NONE else None,
                timeout=self.timeout_s,
            )
        except aiosmtplib.SMTPResponseException as exc:
            # 4xx: the server asks to try later; 5xx (auth refused, inbox unknown): it will not take it.
            code = int(exc.code)
            return PostResult(delivered=False, retryable=400 <= code < 500, error=f"SMTP {code}", status_code=code)
        except (aiosmtplib.SMTPException, OSError, ssl.SSLError) as exc:
            return PostResult(delivered=False, retryable=True, error=type(exc).__name__)
        return PostResult(delivered=True, retryable=False, status_code=250)
