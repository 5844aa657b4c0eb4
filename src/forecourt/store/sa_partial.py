"""A package of SQLAlchemy's loaded in part: some of its modules now, the package's ``__init__`` when first needed.

Two of SQLAlchemy's packages import far more than the store needs of them on a command's path:
``sqlalchemy.ext.asyncio`` imports the ORM for its ``AsyncSession`` (:mod:`.sa_asyncio`), and
``sqlalchemy.dialects.postgresql`` imports the whole PostgreSQL dialect and its five drivers' modules for the two
column types the tables name when they run on SQLite (:mod:`.sa_postgresql`). :func:`load_in_part` puts the
package in ``sys.modules`` without running its ``__init__``, imports the modules asked for (they find their
siblings themselves), and lets the package finish loading the first time anything asks it for a name it has not
got: ``from sqlalchemy.ext.asyncio import AsyncSession``, a PostgreSQL engine's dialect lookup, all still work and
get the same classes. Where the package was already imported nothing is done.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from collections.abc import Mapping, Sequence
from types import ModuleType
from typing import Any


def load_in_part(name: str, modules: Sequence[str], names: Mapping[str, str] | None = None) -> None:
    """Load package ``name``'s ``modules`` without its ``__init__``; ``names`` (name → module) are set on the
    package at once, as its ``__init__`` would, so reading them does not finish loading it."""
    if name in sys.modules:
        return
    spec = importlib.util.find_spec(name)
    if spec is None or spec.loader is None or spec.submodule_search_locations is None:
        return  # not the package expected: the caller's plain import loads all of it
    package = importlib.util.module_from_spec(spec)
    sys.modules[name] = package
    try:
        loaded = {module: importlib.import_module(f"{name}.{module}") for module in modules}
    except BaseException:
        del sys.modules[name]
        raise
    for attribute, module in (names or {}).items():
        setattr(package, attribute, getattr(loaded[module], attribute))
    parent, _, child = name.rpartition(".")
    setattr(sys.modules[parent], child, package)
    loader = spec.loader

    def finish(attribute: str) -> Any:
        """Run the package's ``__init__`` (once), then answer as the package does."""
        package.__dict__.pop("__getattr__", None)
        loader.exec_module(package)
        return getattr(package, attribute)

    package.__dict__["__getattr__"] = finish


def finished(package: ModuleType) -> bool:
    """Whether a package loaded by :func:`load_in_part` has run its ``__init__`` since (for tests)."""
    return "__getattr__" not in package.__dict__
