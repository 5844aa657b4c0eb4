"""The Vertex AI client's Google credentials: the access token of the call running in this context.

Imported with the Vertex AI SDK, on the first Vertex call: it subclasses google-auth's ``Credentials``, which
the process building the catalogue (every process) should not import.
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import Any

from google.auth import credentials as google_credentials
from google.auth import exceptions as google_exceptions

CALL_TOKEN: ContextVar[str | None] = ContextVar("forecourt_vertex_token", default=None)


class CallToken(google_credentials.Credentials):
    """Google credentials whose access token is the current call's (a context variable, so per task).

    No expiry: the gateway's broker refreshes tokens before they expire; the SDK must never refresh one itself.
    """

    def __init__(self) -> None:
        super().__init__()  # type: ignore[no-untyped-call]

    @property
    def token(self) -> str | None:
        """The token of the call running in this context."""
        return CALL_TOKEN.get()

    @token.setter
    def token(self, value: Any) -> None:
        del value  # the base class assigns None at construction; the context variable is the source

    def refresh(self, request: Any) -> None:
        """Refusing: a missing token means the gateway issued none."""
        del request
        raise google_exceptions.RefreshError("no access token for this call")  # type: ignore[no-untyped-call]
