"""Named queries (``db.query``): read-only, parameterised reports that an admin defines per company.

:class:`NamedQueryAdapter` runs ``db.query`` and ``admin.queries.*`` (described in
:mod:`forecourt.actions.queries`). The definition language is in :mod:`forecourt.domain.named_queries`,
its SQL compiler in the store (``forecourt.store.sql.query_compiler``), and the shipped examples in
:mod:`.examples`.
"""

from __future__ import annotations

from forecourt.adapters.named_queries.adapter import ADAPTER_ID, NamedQueryAdapter
from forecourt.adapters.named_queries.examples import EXAMPLES, install_examples
from forecourt.domain.errors import InvalidQuery, InvalidQueryParams, QueryNotFound
from forecourt.domain.named_queries import NamedQuery, parse_definition

__all__ = [
    "ADAPTER_ID",
    "EXAMPLES",
    "InvalidQuery",
    "InvalidQueryParams",
    "NamedQuery",
    "NamedQueryAdapter",
    "QueryNotFound",
    "install_examples",
    "parse_definition",
]
