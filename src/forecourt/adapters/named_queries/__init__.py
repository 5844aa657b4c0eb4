"""Named queries (``db.query``): read-only, parameterised reports that an admin defines per company.

``register_named_queries(catalogue)`` adds ``db.query`` and ``admin.queries.*`` with the adapter that
runs them. The definition language is in :mod:`.definition`, its compiler in :mod:`.compiler`, and the
shipped examples in :mod:`.examples`.
"""

from __future__ import annotations

from forecourt.actions.base import Catalogue
from forecourt.adapters.named_queries.adapter import ADAPTER_ID, NAMED_QUERY_ACTIONS, NamedQueryAdapter
from forecourt.adapters.named_queries.definition import (
    InvalidQuery,
    InvalidQueryParams,
    NamedQuery,
    QueryNotFound,
    parse_definition,
)
from forecourt.adapters.named_queries.examples import EXAMPLES, install_examples

__all__ = [
    "ADAPTER_ID",
    "EXAMPLES",
    "NAMED_QUERY_ACTIONS",
    "InvalidQuery",
    "InvalidQueryParams",
    "NamedQuery",
    "NamedQueryAdapter",
    "QueryNotFound",
    "install_examples",
    "parse_definition",
    "register_named_queries",
]


def register_named_queries(catalogue: Catalogue) -> NamedQueryAdapter:
    """Add ``db.query`` and ``admin.queries.*`` and their adapter to ``catalogue``."""
    for action in NAMED_QUERY_ACTIONS:
        catalogue.add(action)
    adapter = NamedQueryAdapter()
    catalogue.add_adapter(adapter)
    return adapter
