"""Sign-in and sign-out: an operator or company-admin API key, or OIDC (authorization code + PKCE).

OIDC runs against the company's own issuer (``Company.oidc_issuer``; the client id is the company's
``oidc_audience``, which the gateway checks as the ID token's audience). The ID token becomes the session's
credential: the gateway verifies it on every call against the company's JWKS, exactly as for an agent.
"""

from __future__ import annotations

import base64
import hashlib
import secrets
import time
from typing import Any
from urllib.parse import urlencode

import httpx
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from forecourt.errors import ForecourtError, RateLimited, UnsafeTarget
from forecourt.gateway.base import Credentials, Invocation
from forecourt.netguard import check_url_async
from forecourt.surfaces.console.core import SECURITY_HEADERS, ConsoleCore, same_origin
from forecourt.surfaces.console.session import OIDC_COOKIE, Session, csrf_ok
from forecourt.surfaces.http_util import credentials_from_request

OIDC_TTL_S = 600


def _pkce() -> tuple[str, str]:
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).decode().rstrip("=")
    return verifier, challenge


class AuthViews:
    """``/signin``, ``/signout``, ``/oidc/start``, ``/oidc/callback``."""

    def __init__(self, core: ConsoleCore) -> None:
        self.core = core
        self.settings = core.settings

    def _form(self, error: str | None = None, status: int = 200) -> Response:
        return self.core.render("signin.html", status=status, error=error, page=None)

    async def signin_form(self, request: Request) -> Response:
        """The sign-in page."""
        return self._form()

    async def signin(self, request: Request) -> Response:
        """Sign in with a key: the operator key, or a company administrator's API key (checked by the gateway)."""
        if not same_origin(request):
            return self._form("Sign in from this console's own page.", 403)
        form = await request.form()
        key = str(form.get("api_key", "")).strip()
        if not key or len(key) > 4096:
            return self._form("Enter an API key.", 400)
        try:  # a client over its failed sign-ins is refused before any key is compared
            self.core.refuse_guesser(credentials_from_request(request))
        except RateLimited as exc:
            return self._throttled(exc)
        if await self.core.is_operator_credential(key):
            return await self._start(request, Session("operator", key, None, None, "Platform operator"))
        return await self._with_token(request, "key", key)

    def _throttled(self, exc: RateLimited) -> Response:
        response = self._form("Too many failed sign-ins from this address; try again in a minute.", 429)
        response.headers.update(exc.headers)
        return response

    async def _with_token(self, request: Request, kind: str, token: str) -> Response:
        inv = Invocation(
            action="console.companies.list",
            payload={},
            credentials=Credentials(bearer=token, peer_address=credentials_from_request(request).peer_address),
            surface="console",
        )
        try:
            outcome = await self.core.gateway.invoke(inv)
        except RateLimited as exc:
            return self._throttled(exc)
        except ForecourtError as exc:
            message = "That key cannot administer a company." if exc.http_status == 403 else "Sign-in failed."
            return self._form(f"{message} ({exc.code})", 401 if exc.http_status == 401 else 403)
        items = outcome.output["items"]
        company = items[0]["id"] if items else None
        principal = await self.core.gateway.principal_for(inv)
        name = principal.member.name if principal.member else (principal.member_id or "admin")
        return await self._start(request, Session(kind, token, company, principal.member_id, name))  # type: ignore[arg-type]

    async def _start(self, request: Request, session: Session) -> Response:
        if session.operator:
            companies = await self.core.invoke(request, session, "console.companies.list", {})
            session.company_id = companies["items"][0]["id"] if companies["items"] else None
        await self.core.start_session(session)
        response = RedirectResponse(f"{self.core.prefix}/", status_code=303)
        self.core.set_session(request, response, session)
        return response

    async def signout(self, request: Request) -> Response:
        """End the session on every replica (a form of this console's own, with the session's CSRF token)."""
        session = await self.core.load_session(request)
        if session is not None:
            form = await request.form()
            if not same_origin(request) or not csrf_ok(session, str(form.get("csrf", ""))):
                return self._form("Sign out from this console's own page.", 403)
            await self.core.end_session(session)
        response = RedirectResponse(f"{self.core.prefix}/signin", status_code=303)
        self.core.set_session(request, response, None)
        return response

    # ------------------------------------------------------------------ OIDC

    async def _json(self, http: httpx.AsyncClient, url: str, data: dict[str, str] | None = None) -> Any:
        await check_url_async(url, allow_private=self.settings.allow_private_targets)
        response = await (http.post(url, data=data) if data is not None else http.get(url))
        response.raise_for_status()
        return response.json()

    async def _discovery(self, http: httpx.AsyncClient, issuer: str) -> dict[str, Any]:
        doc = await self._json(http, issuer.rstrip("/") + "/.well-known/openid-configuration")
        if not isinstance(doc, dict) or doc.get("issuer") != issuer:
            raise ValueError("discovery document does not name the issuer")
        return doc

    def _redirect_uri(self) -> str:
        return self.settings.advertised_url + self.core.prefix + "/oidc/callback"

    async def oidc_start(self, request: Request) -> Response:
        """Redirect to the company's issuer with a PKCE challenge, state and nonce."""
        company_id = request.query_params.get("company", "")[:128]
        company = await self._company(company_id)
        if company is None or not company.get("oidc_issuer") or not company.get("oidc_audience"):
            return self._form("That company has no OIDC sign-in configured.", 400)
        try:
            async with httpx.AsyncClient(timeout=10.0) as http:
                doc = await self._discovery(http, company["oidc_issuer"])
        except (httpx.HTTPError, ValueError, UnsafeTarget):
            return self._form("The company's identity provider could not be reached.", 502)
        verifier, challenge = _pkce()
        state, nonce = secrets.token_urlsafe(24), secrets.token_urlsafe(24)
        params = {
            "response_type": "code",
            "client_id": company["oidc_audience"],
            "redirect_uri": self._redirect_uri(),
            "scope": "openid profile email",
            "state": state,
            "nonce": nonce,
            "code_challenge": challenge,
            "code_challenge_method": "S256",
        }
        pending = {
            "state": state,
            "verifier": verifier,
            "nonce": nonce,
            "company": company_id,
            "exp": time.time() + OIDC_TTL_S,
        }
        response = RedirectResponse(str(doc["authorization_endpoint"]) + "?" + urlencode(params), status_code=303)
        response.set_cookie(
            OIDC_COOKIE,
            self.core.sessions.sealer.seal(pending, b"oidc"),
            path=self.core.prefix + "/",
            httponly=True,
            samesite="lax",
            secure=self.core.secure(request),
            max_age=OIDC_TTL_S,
        )
        return response

    async def _company(self, company_id: str) -> dict[str, Any] | None:
        try:
            out = await self.core.gateway.invoke(
                Invocation(
                    action="console.companies.list",
                    payload={},
                    surface="console",
                    principal=self._operator_principal(),
                )
            )
        except ForecourtError:
            return None
        for item in out.output["items"]:
            if item["id"] == company_id:
                return dict(item)
        return None

    @staticmethod
    def _operator_principal() -> Any:
        from forecourt.gateway.base import Principal

        return Principal(method="internal", company_id=None, member_id=None, subject="console-oidc")

    async def oidc_callback(self, request: Request) -> Response:
        """Check the state, redeem the code with the PKCE verifier, and sign in with the ID token."""
        pending = self.core.sessions.sealer.open(request.cookies.get(OIDC_COOKIE), b"oidc")
        state = request.query_params.get("state", "")
        code = request.query_params.get("code", "")
        if (
            pending is None
            or pending.get("exp", 0) < time.time()
            or not secrets.compare_digest(str(pending.get("state", "")), state)
            or not code
        ):
            return self._form("The sign-in attempt expired or does not match. Start again.", 400)
        company = await self._company(str(pending["company"]))
        if company is None:
            return self._form("Sign-in failed.", 400)
        try:
            async with httpx.AsyncClient(timeout=10.0) as http:
                doc = await self._discovery(http, company["oidc_issuer"])
                tokens = await self._json(
                    http,
                    str(doc["token_endpoint"]),
                    {
                        "grant_type": "authorization_code",
                        "code": code,
                        "redirect_uri": self._redirect_uri(),
                        "client_id": company["oidc_audience"],
                        "code_verifier": str(pending["verifier"]),
                    },
                )
        except (httpx.HTTPError, ValueError, UnsafeTarget):
            return self._form("The identity provider refused the sign-in.", 502)
        id_token = tokens.get("id_token") if isinstance(tokens, dict) else None
        if not isinstance(id_token, str) or not self._nonce_ok(id_token, str(pending["nonce"])):
            return self._form("The identity provider's answer was not valid.", 502)
        response = await self._with_token(request, "oidc", id_token)
        response.delete_cookie(OIDC_COOKIE, path=self.core.prefix + "/")
        return response

    @staticmethod
    def _nonce_ok(id_token: str, nonce: str) -> bool:
        import jwt

        try:
            claims = jwt.decode(id_token, options={"verify_signature": False})  # the gateway verifies it next
        except jwt.PyJWTError:
            return False
        return secrets.compare_digest(str(claims.get("nonce", "")), nonce)


__all__ = ["SECURITY_HEADERS", "AuthViews"]
