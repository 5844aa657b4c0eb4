"""A small OpenID provider for the console's sign-in tests: discovery, authorize (auto-consent), token with PKCE
(S256) checks, and a JWKS; ID tokens are real RS256 JWTs signed with a key generated per provider."""

from __future__ import annotations

import base64
import hashlib
import secrets
import time
from typing import Any
from urllib.parse import urlencode

import jwt
from cryptography.hazmat.primitives.asymmetric import rsa
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import Route


class FakeOidcProvider:
    """Signs in ``subject`` for any authorization request; the issuer is set once the server's URL is known."""

    def __init__(self, subject: str) -> None:
        self.subject = subject
        self.issuer = ""
        self.key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.kid = "fake-" + secrets.token_hex(4)
        self.codes: dict[str, dict[str, str]] = {}
        self.token_requests: list[dict[str, str]] = []
        self.app = Starlette(
            routes=[
                Route("/.well-known/openid-configuration", self.discovery),
                Route("/authorize", self.authorize),
                Route("/token", self.token, methods=["POST"]),
                Route("/jwks", self.jwks),
            ]
        )

    async def discovery(self, _: Request) -> Response:
        return JSONResponse(
            {
                "issuer": self.issuer,
                "authorization_endpoint": f"{self.issuer}/authorize",
                "token_endpoint": f"{self.issuer}/token",
                "jwks_uri": f"{self.issuer}/jwks",
                "code_challenge_methods_supported": ["S256"],
            }
        )

    async def authorize(self, request: Request) -> Response:
        q = request.query_params
        if q.get("code_challenge_method") != "S256" or not q.get("code_challenge"):
            return JSONResponse({"error": "invalid_request"}, status_code=400)
        code = secrets.token_urlsafe(16)
        self.codes[code] = {
            "challenge": q["code_challenge"],
            "nonce": q.get("nonce", ""),
            "client_id": q["client_id"],
            "redirect_uri": q["redirect_uri"],
        }
        return RedirectResponse(f"{q['redirect_uri']}?{urlencode({'code': code, 'state': q['state']})}", 302)

    async def token(self, request: Request) -> Response:
        form = {k: str(v) for k, v in (await request.form()).items()}
        self.token_requests.append(form)
        grant = self.codes.pop(form.get("code", ""), None)
        if grant is None or form.get("redirect_uri") != grant["redirect_uri"]:
            return JSONResponse({"error": "invalid_grant"}, status_code=400)
        digest = hashlib.sha256(form.get("code_verifier", "").encode()).digest()
        if base64.urlsafe_b64encode(digest).decode().rstrip("=") != grant["challenge"]:
            return JSONResponse({"error": "invalid_grant", "error_description": "PKCE"}, status_code=400)
        now = int(time.time())
        claims: dict[str, Any] = {
            "iss": self.issuer,
            "sub": self.subject,
            "aud": grant["client_id"],
            "iat": now,
            "exp": now + 300,
            "nonce": grant["nonce"],
        }
        id_token = jwt.encode(claims, self.key, algorithm="RS256", headers={"kid": self.kid})
        return JSONResponse({"id_token": id_token, "token_type": "Bearer", "expires_in": 300})

    async def jwks(self, _: Request) -> Response:
        public = jwt.algorithms.RSAAlgorithm.to_jwk(self.key.public_key(), as_dict=True)
        return JSONResponse({"keys": [{**public, "kid": self.kid, "alg": "RS256", "use": "sig"}]})
