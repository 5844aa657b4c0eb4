"""The contract between actions and adapters, named from ``actions/`` for the actions' convenience.

Everything here lives in :mod:`forecourt.contract`, one module below both actions and adapters; code outside
``actions/`` imports it from there (the import-linter contracts in pyproject.toml keep adapters out of ``actions/``).
"""

from forecourt.contract import (
    Action,
    ActionType,
    Adapter,
    AdapterResult,
    Catalogue,
    ExecutionContext,
    Handler,
    Invoker,
)

__all__ = ["Action", "ActionType", "Adapter", "AdapterResult", "Catalogue", "ExecutionContext", "Handler", "Invoker"]
