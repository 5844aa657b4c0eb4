"""A stand-in for a dealer's CRM on this machine: it receives ADF leads over HTTP and SMTP and shows them.

``forecourt crm sink`` runs it so an operator can watch a lead arrive the way a CRM would get it: an HTTP
``POST`` of the ADF document (any path), or an e-mail to any address with the ADF document as its body.
It accepts every message (any SMTP login is fine: it is a sink, bound to loopback by default).
"""

from __future__ import annotations

import asyncio
import email
import email.policy
import logging
from collections.abc import Callable
from dataclasses import dataclass
from email.message import EmailMessage
from typing import Any

import uvicorn
from aiosmtpd.smtp import SMTP, AuthResult, Envelope, Session
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class ReceivedLead:
    """One ADF document the sink received."""

    channel: str
    """``http`` or ``smtp``."""
    adf: str
    delivery_id: str | None
    where: str
    """The HTTP path, or the e-mail's recipients."""


OnLead = Callable[[ReceivedLead], None]


def _http_app(on_lead: OnLead) -> Starlette:
    async def receive(request: Request) -> JSONResponse:
        body = (await request.body()).decode("utf-8", errors="replace")
        delivery_id = request.headers.get("x-forecourt-delivery-id") or request.headers.get("idempotency-key")
        on_lead(ReceivedLead("http", body, delivery_id, request.url.path))
        return JSONResponse({"received": True, "delivery_id": delivery_id})

    return Starlette(routes=[Route("/{path:path}", receive, methods=["POST", "PUT"])])


def _body_text(message: EmailMessage) -> str:
    part = message.get_body(preferencelist=("plain", "xml", "html"))
    if part is None:
        return ""
    content = part.get_content()
    text = content if isinstance(content, str) else bytes(content).decode("utf-8", errors="replace")
    return text.replace("\r\n", "\n")  # mail lines end in CRLF on the wire


class _MailHandler:
    def __init__(self, on_lead: OnLead) -> None:
        self.on_lead = on_lead

    async def handle_DATA(self, server: SMTP, session: Session, envelope: Envelope) -> str:  # noqa: N802
        raw = envelope.original_content or envelope.content or b""
        data = raw if isinstance(raw, bytes) else raw.encode()
        message = email.message_from_bytes(data, policy=email.policy.default)
        assert isinstance(message, EmailMessage)
        header = message.get("X-Forecourt-Delivery-Id")
        delivery_id = str(header).strip() if header else None  # long values are folded onto a second line
        self.on_lead(ReceivedLead("smtp", _body_text(message), delivery_id, ", ".join(envelope.rcpt_tos)))
        return "250 Message accepted for delivery"


def _accept_any_login(server: SMTP, session: Session, envelope: Envelope, mechanism: str, data: Any) -> AuthResult:
    del server, session, envelope, mechanism, data
    return AuthResult(success=True)


class CrmSink:
    """The HTTP and SMTP receivers; ``start`` binds both (port 0 picks a free one), ``stop`` closes them."""

    def __init__(self, on_lead: OnLead, *, host: str = "127.0.0.1", http_port: int = 8025, smtp_port: int = 2525):
        self.on_lead = on_lead
        self.host = host
        self.http_port = http_port
        self.smtp_port = smtp_port
        self._http: uvicorn.Server | None = None
        self._smtp: asyncio.base_events.Server | None = None

    async def start(self) -> None:
        """Start listening on both ports (``http_port`` and ``smtp_port`` then hold the bound ports)."""
        # log_config=None and no log_level: the sink leaves the process's logging as it found it.
        config = uvicorn.Config(
            _http_app(self.on_lead), host=self.host, port=self.http_port, log_config=None, access_log=False,
            lifespan="off",
        )  # fmt: skip
        self._http = uvicorn.Server(config)
        # Server.serve() would also take over SIGINT; the sink only needs the listening part of it.
        config.load()
        self._http.lifespan = config.lifespan_class(config)
        await self._http.startup()
        self.http_port = self._http.servers[0].sockets[0].getsockname()[1]
        handler = _MailHandler(self.on_lead)
        loop = asyncio.get_running_loop()
        self._smtp = await loop.create_server(
            lambda: SMTP(
                handler, hostname="forecourt-crm-sink", authenticator=_accept_any_login, auth_require_tls=False
            ),
            host=self.host,
            port=self.smtp_port,
        )
        self.smtp_port = self._smtp.sockets[0].getsockname()[1]

    async def stop(self) -> None:
        """Stop both receivers."""
        if self._smtp is not None:
            self._smtp.close()
            await self._smtp.wait_closed()
        if self._http is not None:
            await self._http.shutdown()


def format_lead(lead: ReceivedLead) -> str:
    """How ``forecourt crm sink`` prints a lead: a header line, then the ADF document as received."""
    via = f"HTTP POST {lead.where}" if lead.channel == "http" else f"SMTP to {lead.where}"
    delivery = f" (delivery {lead.delivery_id})" if lead.delivery_id else ""
    return f"--- ADF lead via {via}{delivery} ---\n{lead.adf.rstrip()}\n"
