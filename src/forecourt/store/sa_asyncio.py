"""SQLAlchemy's asyncio engine, loaded without the asyncio ORM session the same package holds.

Importing ``sqlalchemy.ext.asyncio`` imports its ``AsyncSession`` and with it SQLAlchemy's whole ORM: ~60 ms of
CPU, about 7 % of a one-shot command, for code Forecourt never runs (the store runs Core statements on
``AsyncEngine`` and ``AsyncConnection``). This module loads the package's ``engine`` module (and what it imports:
``base``, ``result``, ``exc``) without the package's ``__init__``, and lets the package finish loading the first
time anything asks it for a name it has not got: ``from sqlalchemy.ext.asyncio import AsyncSession`` elsewhere (the
A2A SDK's task store, Alembic) still works and gets the same classes. Where the package was already imported,
nothing is done. The store imports the engine's names from here, not from the package.
"""

from __future__ import annotations

import importlib.util
import sys
from types import ModuleType
from typing import Any

PACKAGE = "sqlalchemy.ext.asyncio"


def _load_engine_alone() -> None:
    if PACKAGE in sys.modules:
        return
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or spec.loader is None or spec.submodule_search_locations is None:
        return  # not a package as expected: the plain import below loads all of it
    package = importlib.util.module_from_spec(spec)
    sys.modules[PACKAGE] = package
    try:
        importlib.import_module(f"{PACKAGE}.engine")  # its own `from . import ...` find the submodules themselves
    except BaseException:
        del sys.modules[PACKAGE]
        raise
    loader = spec.loader

    def finish(name: str) -> Any:
        """Run the package's ``__init__`` (once), then answer as the package does."""
        package.__dict__.pop("__getattr__", None)
        loader.exec_module(package)
        return getattr(package, name)

    package.__dict__["__getattr__"] = finish


def finished(package: ModuleType) -> bool:
    """Whether ``sqlalchemy.ext.asyncio`` has run its ``__init__`` (for tests)."""
    return "__getattr__" not in package.__dict__


_load_engine_alone()

from sqlalchemy.ext.asyncio.engine import (  # noqa: E402 - after the package is set up without its __init__
    AsyncConnection,
    AsyncEngine,
    AsyncTransaction,
    create_async_engine,
)

__all__ = ["AsyncConnection", "AsyncEngine", "AsyncTransaction", "create_async_engine", "finished"]
