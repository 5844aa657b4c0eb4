"""Default adapter configuration files (seed 001 §12: ``/config/mcp/adapters/<adapter>.yaml``).

The defaults ship inside the package (``forecourt/adapters/defaults/*.yaml``; the repository's
``config/mcp/adapters/`` holds the same files for operators to copy). An operator points
``FORECOURT_ADAPTER_CONFIG_DIR`` (``Settings.adapter_config_dir``) at a folder of their own: a file there replaces
the packaged file of the same name as a whole, and a new name adds an adapter. Companies override single keys
per adapter on top of the result (``settings/adapters/{adapterId}``, merged by the gateway's
:class:`~forecourt.gateway.pipeline.AdapterConfigSource`).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from forecourt.adapters.errors import AdapterConfigError
from forecourt.domain.errors import YamlRefused
from forecourt.domain.yaml_documents import MAX_BYTES, load_yaml
from forecourt.settings import Settings

logger = logging.getLogger(__name__)

PACKAGED_DIR = Path(__file__).resolve().parent / "defaults"
"""Where the packaged default files live."""

CREDENTIAL_TYPES = frozenset({"google", "jwt", "secret", "none"})
_ADAPTER_ID = re.compile(r"^[a-z][a-z0-9_-]{0,63}$")


def _check(adapter_id: str, config: Mapping[str, Any], source: Path) -> None:
    timeout = config.get("timeout_s")
    if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0):
        raise AdapterConfigError(f"{source}: timeout_s must be a positive number")
    concurrency = config.get("concurrency")
    if concurrency is not None and (
        isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1
    ):
        raise AdapterConfigError(f"{source}: concurrency must be a positive integer")
    credentials = config.get("credentials")
    if credentials is not None:
        if not isinstance(credentials, Mapping):
            raise AdapterConfigError(f"{source}: credentials must be a mapping")
        kind = credentials.get("type", "none")
        if kind not in CREDENTIAL_TYPES:
            raise AdapterConfigError(f"{source}: credentials.type must be one of {sorted(CREDENTIAL_TYPES)}")
    models = config.get("models")
    if models is not None and (not isinstance(models, list) or not all(isinstance(m, str) for m in models)):
        raise AdapterConfigError(f"{source}: models must be a list of names")
    del adapter_id


def read_adapter_file(path: Path) -> dict[str, Any]:
    """Read and check one adapter file.

    Args:
        path: A ``<adapter>.yaml`` file.

    Returns:
        Its configuration (an empty file is an empty configuration).

    Raises:
        AdapterConfigError: The file cannot be read, is not a YAML mapping (or YAML that
            :func:`~forecourt.domain.yaml_documents.load_yaml` refuses), or has an invalid known key.
    """
    try:
        with path.open("rb") as file:
            data = load_yaml(file.read(MAX_BYTES + 1))  # one byte over is enough to refuse it
    except OSError as exc:
        raise AdapterConfigError(f"{path}: cannot be read ({type(exc).__name__})") from exc
    except YamlRefused as exc:
        raise AdapterConfigError(f"{path}: {exc.message}", details=exc.details) from exc
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise AdapterConfigError(f"{path}: must hold a mapping")
    _check(path.stem, data, path)
    return data


def _read_dir(directory: Path) -> dict[str, dict[str, Any]]:
    configs: dict[str, dict[str, Any]] = {}
    for path in sorted([*directory.glob("*.yaml"), *directory.glob("*.yml")]):
        if not _ADAPTER_ID.match(path.stem):
            raise AdapterConfigError(f"{path}: the file name must be an adapter id")
        configs[path.stem] = read_adapter_file(path)
    return configs


def load_adapter_defaults(override_dir: Path | None = None) -> dict[str, dict[str, Any]]:
    """The operator's adapter configurations: the packaged files, replaced file by file from ``override_dir``.

    Args:
        override_dir: A folder of ``<adapter>.yaml`` files (``Settings.adapter_config_dir``).

    Returns:
        Configuration per adapter id.

    Raises:
        AdapterConfigError: ``override_dir`` is not a folder, or a file is invalid.
    """
    configs = _read_dir(PACKAGED_DIR)
    if override_dir is not None:
        if not override_dir.is_dir():
            raise AdapterConfigError(f"{override_dir}: adapter_config_dir is not a folder")
        overrides = _read_dir(override_dir)
        configs.update(overrides)
        logger.info("adapter configuration from %s replaces %s", override_dir, sorted(overrides))
    return configs


def adapter_defaults_for(settings: Settings) -> dict[str, dict[str, Any]]:
    """:func:`load_adapter_defaults` for ``settings.adapter_config_dir``."""
    return load_adapter_defaults(settings.adapter_config_dir)
