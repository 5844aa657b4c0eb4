"""Adapter secrets (API keys, bearer tokens, mail passwords) read from where configuration says they are.

Configuration names where a secret is (``{env: VENDOR_API_KEY}`` or ``{file: /run/secrets/vendor}``); the value
is read at each use, so a rotated file or secret mount takes effect without a restart. Forecourt's own settings
(``FORECOURT_*``) are never readable this way: they reach code only through the ``Settings`` object. The
gateway's secret provider issues such secrets as per-call credentials (``gateway/credentials/secret.py``); an
adapter that runs outside a gateway call (the CRM mail sender) reads its own with the same function.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from forecourt.contract.errors import CredentialUnavailable

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
