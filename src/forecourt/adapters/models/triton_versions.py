"""Triton model versioning through the model repository API (seed 001 §5: "Manages ... model versioning").

- ``POST /v2/repository/index``: every model and version the server knows, with its state (``READY``,
  ``UNAVAILABLE``, ``LOADING``, ``UNLOADING``) and reason;
- ``POST /v2/repository/models/{m}/load``: (re)load a model; with ``parameters.config`` a configuration override,
  which Forecourt uses to choose the versions served (``version_policy: {specific: {versions: [...]}}``). Triton
  keeps an override until the model is unloaded: a plain load of a model loaded with one changes nothing, so going
  back to the repository's own configuration is an unload, then a load;
- ``POST /v2/repository/models/{m}/unload``.

Routing of ``nvidia.runInference`` (:class:`VersionRouter`): the payload's ``model_version``, else the version the
company pinned (``triton.pinned_versions: {model: version}`` in its ``nvidia`` adapter setting), else the highest
version the repository index reports ``READY`` (cached for :data:`INDEX_TTL_S`, so a steady stream of calls asks
the server about once per interval, and a version loaded or unloaded is seen within it).
"""

from __future__ import annotations

import contextlib
import json
import logging
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from forecourt.adapters.errors import ModelNotFound, NoReadyVersion
from forecourt.adapters.models.common import upstream_error
from forecourt.errors import Timeout

logger = logging.getLogger(__name__)

RUNTIME = "nvidia"
INDEX_TTL_S = 2.0


@contextlib.contextmanager
def triton_errors() -> Iterator[None]:
    """Turn tritonclient's and aiohttp's exceptions into gateway errors (never carrying Triton's message)."""
    import aiohttp
    from tritonclient.utils import InferenceServerException  # type: ignore[import-untyped]

    try:
        yield
    except InferenceServerException as exc:
        raw = exc.status()
        status = int(raw) if isinstance(raw, str) and raw.isdigit() else None
        logger.warning("Triton answered HTTP %s", status if status is not None else "-")
        # Triton's error body has no Retry-After and tritonclient drops the headers: no retry_after here.
        raise upstream_error(RUNTIME, status if status is not None else 502) from exc
    except TimeoutError as exc:
        logger.warning("Triton timed out")
        raise Timeout(details={"runtime": RUNTIME}) from exc
    except aiohttp.ClientError as exc:
        logger.warning("Triton unreachable: %s", type(exc).__name__)
        raise upstream_error(RUNTIME, None) from exc


@dataclass(frozen=True)
class VersionRoute:
    """The version a call runs on, and why (``payload``, ``pinned``, ``latest_ready``)."""

    version: str
    reason: str


def _version_key(version: str) -> tuple[int, str]:
    return (int(version), version) if version.isdigit() else (-1, version)


def group_index(entries: Sequence[Mapping[str, Any]], pins: Mapping[str, str]) -> list[dict[str, Any]]:
    """The repository index as ``[{model, versions: [{version, state, reason?}], ready_versions, pinned}]``."""
    models: dict[str, dict[str, Any]] = {}
    for entry in entries:
        name = str(entry.get("name", ""))
        view = models.setdefault(name, {"model": name, "versions": [], "ready_versions": []})
        version = entry.get("version")
        if version is None:  # known to the repository, never loaded
            continue
        item: dict[str, Any] = {"version": str(version), "state": str(entry.get("state", ""))}
        if entry.get("reason"):
            item["reason"] = str(entry["reason"])[:200]
        view["versions"].append(item)
        if item["state"] == "READY":
            view["ready_versions"].append(item["version"])
    for view in models.values():
        view["versions"].sort(key=lambda v: _version_key(v["version"]))
        view["ready_versions"].sort(key=_version_key)
        view["pinned"] = pins.get(view["model"])
    return [models[k] for k in sorted(models)]


def version_config(current: Mapping[str, Any], versions: Sequence[str]) -> str:
    """The load-time configuration override that serves exactly ``versions`` of a model configured as ``current``.

    Triton replaces the model's configuration with an override (it does not merge it), so the override is the
    configuration the server reports (``GET /v2/models/{m}/config``) with only its ``version_policy`` changed.
    """
    config = dict(current)
    config["version_policy"] = {"specific": {"versions": [int(v) for v in versions]}}
    return json.dumps(config)


def pinned_versions(section: Mapping[str, Any]) -> dict[str, str]:
    """``triton.pinned_versions`` of an adapter configuration, as strings."""
    raw = section.get("pinned_versions")
    if not isinstance(raw, Mapping):
        return {}
    return {str(k): str(v) for k, v in raw.items() if v is not None and str(v)}


class VersionRouter:
    """Resolves the version of each Triton call; keeps each server's ready versions for a short while."""

    def __init__(self, ttl_s: float = INDEX_TTL_S) -> None:
        self._ttl_s = ttl_s
        self._ready: dict[str, tuple[float, dict[str, list[str]]]] = {}

    def forget(self, url: str) -> None:
        """Drop the cached index of ``url`` (after a load or unload through Forecourt)."""
        self._ready.pop(url, None)

    def remember(self, url: str, entries: Sequence[Mapping[str, Any]]) -> dict[str, list[str]]:
        """Cache ``entries`` (a fresh repository index) as ``url``'s ready versions."""
        ready: dict[str, list[str]] = {}
        for entry in entries:
            if entry.get("state") == "READY" and entry.get("version") is not None:
                ready.setdefault(str(entry["name"]), []).append(str(entry["version"]))
        for versions in ready.values():
            versions.sort(key=_version_key)
        self._ready[url] = (time.monotonic() + self._ttl_s, ready)
        return ready

    def cached(self, url: str) -> dict[str, list[str]] | None:
        """``url``'s ready versions if still fresh."""
        hit = self._ready.get(url)
        return hit[1] if hit is not None and hit[0] > time.monotonic() else None

    @staticmethod
    def explicit(payload: Mapping[str, Any], section: Mapping[str, Any], model: str) -> VersionRoute | None:
        """The payload's version or the company's pin, if either names one."""
        if payload.get("model_version"):
            return VersionRoute(str(payload["model_version"]), "payload")
        pin = pinned_versions(section).get(model)
        return VersionRoute(pin, "pinned") if pin else None

    @staticmethod
    def latest(ready: Mapping[str, list[str]], model: str, known: bool) -> VersionRoute:
        """The highest ready version of ``model``.

        Raises:
            ModelNotFound: The server does not know the model.
            NoReadyVersion: It knows it, but no version is ready.
        """
        versions = ready.get(model)
        if versions:
            return VersionRoute(versions[-1], "latest_ready")
        if not known:
            raise ModelNotFound(details={"runtime": "nvidia"})
        raise NoReadyVersion(details={"runtime": "nvidia"})
