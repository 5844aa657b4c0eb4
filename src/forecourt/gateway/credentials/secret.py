"""Static adapter secrets (API keys, bearer tokens) read from an environment variable or a file.

The adapter configuration names where the secret is (``{type: secret, env: VENDOR_API_KEY}`` or
``{type: secret, file: /run/secrets/vendor}``); the value is read per call, so a rotated file or secret
mount takes effect without a restart. Forecourt's own settings (``FORECOURT_*``) are never readable this
way: they reach code only through the ``Settings`` object.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from forecourt.gateway.base import IssuedCredential
from forecourt.gateway.errors import CredentialUnavailable

logger = logging.getLogger(__name__)

RESERVED_ENV_PREFIX = "FORECOURT_"
MAX_SECRET_BYTES = 65_536


def read_secret(
    config: Mapping[str, Any],
    *,
    environ: Mapping[str, str],
    env_key: str = "env",
    file_key: str = "file",
) -> str:
    """Read a secret named by configuration: ``config[env_key]`` (a variable name) or ``config[file_key]`` (a path).

    Args:
        config: The credential configuration.
        environ: The process environment (``os.environ``), injectable for tests.
        env_key: The key holding an environment variable name.
        file_key: The key holding a file path.

    Returns:
        The secret, stripped of surrounding whitespace.

    Raises:
        CredentialUnavailable: Neither key is set, the variable is reserved (``FORECOURT_*``) or unset, or
            the file cannot be read.
    """
    env_name = config.get(env_key)
    path = config.get(file_key)
    if isinstance(env_name, str) and env_name:
        if env_name.upper().startswith(RESERVED_ENV_PREFIX):
            logger.warning("refused to read reserved variable %s as an adapter secret", env_name)
            raise CredentialUnavailable()
        value = environ.get(env_name)
        if not value:
            logger.warning("adapter secret variable %s is not set", env_name)
            raise CredentialUnavailable()
        return value.strip()
    if isinstance(path, str) and path:
        try:
            with Path(path).open("rb") as fh:
                raw = fh.read(MAX_SECRET_BYTES + 1)
        except OSError as exc:
            logger.warning("adapter secret file %s cannot be read: %s", path, type(exc).__name__)
            raise CredentialUnavailable() from exc
        if len(raw) > MAX_SECRET_BYTES:
            raise CredentialUnavailable()
        return raw.decode("utf-8", errors="strict").strip()
    logger.warning("adapter credential config names neither %r nor %r", env_key, file_key)
    raise CredentialUnavailable()


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
