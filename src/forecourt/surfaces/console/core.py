"""The console's plumbing: templates, security headers, the session around each page, and gateway calls.

Every read and every change a page makes is one ``Gateway.invoke`` with ``surface="console"``: the signed-in
person's API key or OIDC token is the credential (same policy, limits and audit as any other front door), and
the operator's session calls as the internal operator principal, exactly like the CLI.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, select_autoescape
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response

from forecourt.domain.tenancy import Member
from forecourt.errors import CsrfRejected, ForecourtError, Unauthorized
from forecourt.gateway.auth.operator import is_operator, looks_like_operator_key
from forecourt.gateway.backends.console_sessions import MemorySessionRegistry, SessionRegistry
from forecourt.gateway.base import Credentials, Invocation, Principal
from forecourt.gateway.pipeline import Gateway
from forecourt.settings import Settings
from forecourt.surfaces.console.session import COOKIE, Session, Sessions, csrf_ok, operator_key_ok
from forecourt.surfaces.http_util import credentials_from_request

logger = logging.getLogger(__name__)
HERE = Path(__file__).parent
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
    "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)
SECURITY_HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",
}
NAV = (
    ("overview", "Overview", ""),
    ("tenants", "Tenants", "tenants"),
    ("policies", "Policies", "policies"),
    ("audit", "Audit", "audit"),
    ("leads", "Leads", "leads"),
    ("inventory", "Inventory", "inventory"),
    ("deliveries", "Deliveries", "deliveries"),
    ("approvals", "Approvals", "approvals"),
    ("tools", "Tools", "tools"),
    ("upstreams", "Upstream MCP", "upstreams"),
    ("tool_changes", "Tool changes", "tool-changes"),
    ("budgets", "Budgets", "budgets"),
)


def same_origin(request: Request) -> bool:
    """Whether a POST's ``Origin`` (when the browser sends one) is this console's own origin."""
    origin = request.headers.get("origin")
    if origin is None or origin == "null":
        return origin is None
    host = request.headers.get("host", "")
    return origin.split("://", 1)[-1].rstrip("/") == host


@dataclass
class Page:
    """One console request with its session: what a view works with."""

    request: Request
    session: Session
    core: ConsoleCore
    form: dict[str, Any] | None = None
    error: ForecourtError | None = None
    """Why the form just posted was refused: shown at the top of the page the form is on, its input kept."""
    kept: dict[str, Any] | None = None
    """The refused form's fields (``form`` names which form it was), to fill that form again."""

    @property
    def company(self) -> str:
        """The company the page is about (the admin's own; the operator's current choice)."""
        if self.session.company_id is None:
            raise Unauthorized("Choose a company first.")
        return self.session.company_id

    async def call(self, action: str, payload: dict[str, Any] | None = None) -> Any:
        """Run ``action`` through the gateway as the signed-in person; returns the output."""
        return await self.core.invoke(self.request, self.session, action, payload or {})

    def field(self, name: str, default: str = "") -> str:
        """A posted form field, or a query parameter on GET."""
        source = self.form if self.form is not None else self.request.query_params
        value = source.get(name, default)
        return value if isinstance(value, str) else default

    def value(self, form: str, name: str, default: str = "") -> str:
        """What the refused form ``form`` held in ``name`` (else ``default``): a form keeps its input on error."""
        if self.kept is None or self.kept.get("form") != form:
            return default
        value = self.kept.get(name, default)
        return value if isinstance(value, str) else default

    def checked(self, form: str, name: str, default: bool) -> bool:
        """A checkbox of the refused form ``form`` as it was posted (else ``default``)."""
        if self.kept is None or self.kept.get("form") != form:
            return default
        return self.kept.get(name) == "on"

    def opened(self, form: str) -> bool:
        """Whether ``form`` is the one that was refused (its ``<details>`` opens)."""
        return self.kept is not None and self.kept.get("form") == form

    def url(self, path: str = "") -> str:
        """A console URL."""
        return f"{self.core.prefix}/{path}"

    def render(self, template: str, status: int = 200, **context: Any) -> Response:
        """The page ``template`` with the common context."""
        return self.core.render(template, status=status, page=self, **context)

    def redirect(self, path: str, flash: str | None = None) -> Response:
        """303 to another console page (after a change), with an optional one-time message."""
        self.session.flash = flash
        return RedirectResponse(self.url(path), status_code=303)


View = Callable[[Page], Awaitable[Response]]
ToolsFor = Callable[[Member], Awaitable[list[Any]]]
"""What ``tools/list`` shows a member (``McpSurface.member_tools``)."""


class ConsoleCore:
    """Templates, sessions and the gateway, shared by every console view."""

    def __init__(self, gateway: Gateway, settings: Settings, registry: SessionRegistry | None = None) -> None:
        self.gateway = gateway
        self.settings = settings
        self.prefix = settings.console_prefix.rstrip("/")
        self.sessions = Sessions(settings)
        self.registry: SessionRegistry = registry if registry is not None else MemorySessionRegistry()
        """The live sessions' records (shared by the replicas when they are in Redis)."""
        self.env = Environment(
            loader=FileSystemLoader(str(HERE / "templates")),
            autoescape=select_autoescape(("html", "svg")),
            trim_blocks=True,
            lstrip_blocks=True,
        )
        self.env.globals.update(prefix=self.prefix, nav=NAV)
        self.tools_for: ToolsFor | None = None
        """A member's real MCP ``tools/list`` (the MCP surface's), for the Tools page; ``None`` without MCP."""

    def render(self, template: str, *, status: int = 200, **context: Any) -> Response:
        """An HTML response with the console's security headers."""
        html = self.env.get_template(template).render(**context)
        return HTMLResponse(html, status_code=status, headers=SECURITY_HEADERS)

    def secure(self, request: Request) -> bool:
        """Whether the request came over TLS (cookies are then ``Secure``)."""
        return request.url.scheme == "https"

    def set_session(self, request: Request, response: Response, session: Session | None) -> None:
        """Write (or clear) the session cookie: ``HttpOnly``, ``SameSite=Lax``, ``Secure`` over TLS."""
        path = self.prefix + "/"
        if session is None:
            response.delete_cookie(COOKIE, path=path, httponly=True, samesite="lax", secure=self.secure(request))
            return
        response.set_cookie(
            COOKIE,
            self.sessions.dump(session),
            path=path,
            httponly=True,
            samesite="lax",
            secure=self.secure(request),
            max_age=int(self.settings.console_idle_timeout_s),
        )

    async def start_session(self, session: Session) -> None:
        """Record a new session (before its cookie is written)."""
        await self.registry.start(session.sid, self.settings.console_idle_timeout_s)

    async def end_session(self, session: Session) -> None:
        """End ``session`` at once, on every replica."""
        await self.registry.end(session.sid)

    async def load_session(self, request: Request) -> Session | None:
        """The request's live session: its cookie opens, its record lives, and an operator's key still verifies."""
        session = self.sessions.open(request.cookies.get(COOKIE))
        if session is None:
            return None
        if not await self.registry.renew(session.sid, self.settings.console_idle_timeout_s):
            return None
        if session.operator and not await self.is_operator_credential(session.token):
            await self.registry.end(session.sid)
            return None
        return session

    def refuse_guesser(self, credentials: Credentials) -> None:
        """Raise ``RateLimited`` while the client is over its failed sign-ins (``gateway/auth/guesses.py``)."""
        guesses = getattr(self.gateway.authenticator, "guesses", None)
        if guesses is not None:
            guesses.refuse_if_blocked(credentials)

    async def is_operator_credential(self, key: str | None) -> bool:
        """Whether ``key`` is the configured console operator key or a live operator key (``forecourt operator
        create-key``, or the bootstrap one)."""
        if not key:
            return False
        if operator_key_ok(self.settings, key):
            return True
        if not looks_like_operator_key(key):
            return False
        try:
            principal = await self.gateway.principal_for(
                Invocation(action="", payload={}, credentials=Credentials(bearer=key), surface="console")
            )
        except ForecourtError:
            return False
        return is_operator(principal)

    async def invoke(self, request: Request, session: Session, action: str, payload: dict[str, Any]) -> Any:
        """One gateway call as the session's person (the operator: the internal operator principal)."""
        principal = None
        if session.operator:
            principal = Principal(
                method="internal",
                company_id=payload.get("company_id") or session.company_id,
                member_id=None,
                subject="operator",
                client_address=credentials_from_request(request).peer_address,
            )
        inv = Invocation(
            action=action,
            payload=payload,
            credentials=Credentials(bearer=session.token, peer_address=credentials_from_request(request).peer_address),
            surface="console",
            principal=principal,
            traceparent=request.headers.get("traceparent"),
        )
        outcome = await self.gateway.invoke(inv)
        # Outputs are read-only past the gateway (shared by calls: gateway/stored_results.py): pages get a copy.
        return copy.deepcopy(outcome.output)

    def page(self, view: View, *, again: View | None = None) -> Callable[[Request], Awaitable[Response]]:
        """A Starlette endpoint around ``view``: session required, CSRF checked on posts, errors as pages.

        ``again``: the page a posted form is on. When the gateway refuses the form, that page is drawn again with
        the refusal as its own message and the form filled with what was typed (:meth:`Page.value`).
        """

        async def endpoint(request: Request) -> Response:
            session = await self.load_session(request)
            if session is None:
                response: Response = RedirectResponse(f"{self.prefix}/signin", status_code=303)
                self.set_session(request, response, None)
                return response
            page = Page(request, session, self)
            try:
                if request.method == "POST":
                    page.form = dict(await request.form())
                    if not same_origin(request) or not csrf_ok(session, page.form.get("csrf")):
                        raise CsrfRejected()
                response = await view(page)
            except Unauthorized:
                response = RedirectResponse(f"{self.prefix}/signin", status_code=303)
                self.set_session(request, response, None)
                return response
            except ForecourtError as exc:
                response = await self._refused(page, exc, again)
            except Exception:  # top of the surface
                logger.exception("unhandled error on the console")
                response = page.render("error.html", status=500, error=None)
            if page.session.flash and response.status_code < 300:
                page.session.flash = None  # shown on this page
            self.set_session(request, response, page.session)
            return response

        return endpoint

    async def _refused(self, page: Page, exc: ForecourtError, again: View | None) -> Response:
        """A refusal as the page's own message: in place for the console script, else on the form's page."""
        if page.request.headers.get("x-console-fragment") == "1":
            return page.render("_message.html", status=exc.http_status, error=exc)
        if again is not None and page.form is not None and not isinstance(exc, CsrfRejected):
            page.kept, page.form, page.error = page.form, None, exc
            try:
                response = await again(page)
            except ForecourtError:
                return page.render("error.html", status=exc.http_status, error=exc)
            response.status_code = exc.http_status
            return response
        return page.render("error.html", status=exc.http_status, error=exc)
