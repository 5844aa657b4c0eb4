"""Short-lived credentials injected into adapter calls (seed 001 §4 "Credential Injection", §6)."""

from forecourt.contract.errors import CredentialUnavailable
from forecourt.contract.secrets import read_secret
from forecourt.gateway.credentials.broker import (
    CredentialBroker,
    NoCredentialProvider,
    build_credential_broker,
    merge_credentials_config,
)
from forecourt.gateway.credentials.google import GoogleCredentialProvider
from forecourt.gateway.credentials.secret import SecretProvider
from forecourt.gateway.credentials.signed_jwt import SignedJwtProvider

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
