"""Short-lived credentials injected into adapter calls (seed 001 §4 "Credential Injection", §6)."""

from typing import TYPE_CHECKING, Any

from forecourt.contract.errors import CredentialUnavailable
from forecourt.contract.secrets import read_secret
from forecourt.gateway.credentials.broker import (
    CredentialBroker,
    NoCredentialProvider,
    build_credential_broker,
    merge_credentials_config,
)
from forecourt.gateway.credentials.secret import SecretProvider
from forecourt.gateway.credentials.signed_jwt import SignedJwtProvider

if TYPE_CHECKING:
    from forecourt.gateway.credentials.google import GoogleCredentialProvider

__all__ = [
    "CredentialBroker",
    "CredentialUnavailable",
    "GoogleCredentialProvider",
    "NoCredentialProvider",
    "SecretProvider",
    "SignedJwtProvider",
    "build_credential_broker",
    "merge_credentials_config",
    "read_secret",
]


def __getattr__(name: str) -> Any:
    """``GoogleCredentialProvider`` on first use: it imports google-auth, which only Google credentials need."""
    if name == "GoogleCredentialProvider":
        from forecourt.gateway.credentials.google import GoogleCredentialProvider

        return GoogleCredentialProvider
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
