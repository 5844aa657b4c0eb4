"""Static adapter secrets (API keys, bearer tokens) issued per call from an environment variable or a file.

The adapter configuration names where the secret is (``{type: secret, env: VENDOR_API_KEY}`` or
``{type: secret, file: /run/secrets/vendor}``); :func:`forecourt.contract.secrets.read_secret` reads it on every
call, so a rotated file or secret mount takes effect without a restart.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from typing import Any

from forecourt.contract.secrets import read_secret
from forecourt.gateway.base import IssuedCredential

logger = logging.getLogger(__name__)


class SecretProvider:
    """Issues a static secret as an API key header or a bearer token."""

    def __init__(self, *, environ: Mapping[str, str] | None = None) -> None:
        """Create the provider.

        Args:
            environ: Where ``env`` names are looked up (``os.environ`` when omitted).
        """
        self._environ = os.environ if environ is None else environ

    def rejected(self, adapter_id: str, config: Mapping[str, Any], credential: IssuedCredential) -> None:
        """Nothing to forget: every call reads or mints its credential afresh."""
        del adapter_id, config, credential

    async def issue(self, adapter_id: str, company_id: str | None, config: Mapping[str, Any]) -> IssuedCredential:
        """Read the secret the configuration names.

        Args:
            adapter_id: The adapter the credential is for.
            company_id: The calling company (unused).
            config: ``{env | file, kind: api_key | bearer (default api_key), header: <name>}``; ``header``
                defaults to ``Authorization`` (``Bearer``) for bearer and ``X-API-Key`` for api_key.

        Returns:
            The credential, with the header an adapter should send.

        Raises:
            CredentialUnavailable: The secret cannot be read.
        """
        del company_id
        value = read_secret(config, environ=self._environ)
        bearer = config.get("kind") == "bearer"
        header = str(config.get("header") or ("Authorization" if bearer else "X-API-Key"))
        rendered = f"Bearer {value}" if bearer and header.lower() == "authorization" else value
        logger.debug("issued secret for adapter %s", adapter_id)
        return IssuedCredential(kind="bearer" if bearer else "api_key", value=value, headers={header: rendered})
