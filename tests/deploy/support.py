"""Shared helpers of the deployment tests: the repository's deploy/ folder, real programs, settings names."""

from __future__ import annotations

import os
import re
import shutil
import socket
from pathlib import Path

import pytest

from forecourt.settings import Settings

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")


def require_program(name: str, *candidates: str) -> str:
    """The path of a real program the test drives; skips with a reason outside CI, fails in CI."""
    for candidate in (name, *candidates):
        found = shutil.which(candidate) or (candidate if Path(candidate).is_file() else None)
        if found and os.access(found, os.X_OK):
            return found
    message = f"{name} is not installed (scripts/system-packages.txt or the Makefile installs it)"
    if IN_CI:
        pytest.fail(f"{message}; it is required in CI")
    pytest.skip(message)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def settings_env_names() -> set[str]:
    """Every environment variable Settings reads: FORECOURT_<FIELD> and the standard names it aliases."""
    names: set[str] = set()
    for name, field in Settings.model_fields.items():
        alias = field.validation_alias
        choices = getattr(alias, "choices", None)
        if choices:
            names.update(str(c) for c in choices if str(c).isupper())
        else:
            names.add(f"FORECOURT_{name.upper()}")
    return names


METRIC_NAME = re.compile(r"\b((?:forecourt|process|python)_[a-z0-9_]+)")


def exported_metric_names() -> set[str]:
    """The sample names Forecourt exports (counters with ``_total``, histograms with ``_bucket``...)."""
    from forecourt.gateway.freshness import ChangeGenerations
    from forecourt.gateway.telemetry import build_metrics

    metrics = build_metrics()
    ChangeGenerations(registry=metrics.registry)
    names: set[str] = set()
    for family in metrics.registry.collect():
        if family.type == "counter":
            names.update({f"{family.name}_total", f"{family.name}_created"})
        elif family.type == "histogram":
            names.update(f"{family.name}{suffix}" for suffix in ("_bucket", "_sum", "_count", "_created"))
        else:
            names.add(family.name)
    return names
