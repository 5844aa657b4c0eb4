"""Errors the pure domain types raise for an invalid value: VINs, named-query and upstream server definitions.

Every one derives from :class:`forecourt.errors.ForecourtError`; that module draws the whole tree.
"""

from __future__ import annotations

from forecourt.errors import Conflict, InvalidParams, NotFound

# raised in forecourt.domain.vin ---


class VinError(InvalidParams, ValueError):
    """A VIN failed validation; ``reason`` is one of ``length``, ``characters``, ``check_digit``."""

    code = "inventory.vin_rejected"

    def __init__(self, reason: str, message: str) -> None:
        self.reason = reason
        super().__init__(message)


# raised in forecourt.domain.named_queries and the store's query compiler ---


class InvalidQuery(InvalidParams):
    """A named query definition uses something the language does not allow."""

    code = "reports.invalid_query"
    default_message = "The named query definition is invalid."


class InvalidQueryParams(InvalidParams):
    """The parameters given to a named query do not match its declaration."""

    code = "reports.invalid_params"
    default_message = "The named query parameters are invalid."


class QueryNotFound(NotFound):
    """No named query with that id in the caller's company."""

    code = "reports.query_not_found"
    default_message = "Named query not found."


# raised in forecourt.domain.upstreams and the upstream admin actions ---


class UpstreamNotFound(NotFound):
    """No upstream MCP server with that id is registered for the company."""

    code = "upstream.not_found"
    default_message = "No such upstream MCP server."


class NamespaceTaken(Conflict):
    """Another server (or Forecourt itself) already offers tools under that namespace."""

    code = "upstream.namespace_taken"
    default_message = "That namespace is already in use; choose another."


class InvalidUpstream(InvalidParams):
    """The upstream server definition is invalid."""

    code = "upstream.invalid_definition"
    default_message = "The upstream server definition is invalid."


# raised in forecourt.domain.yaml_documents ---


class YamlRefused(InvalidParams):
    """A YAML document people wrote (a tenants or adapter configuration file) is refused before it is used.

    ``details.reason`` says why (``syntax``, ``not_allowed``, ``alias``, ``duplicate_key``, ``too_deep``,
    ``too_large``, ``string_too_long``, ``not_utf8``, ``control_character``, ``surrogate``, ``bad_value``);
    ``line`` and ``column`` say where, when known.
    """

    code = "yaml.refused"
    default_message = "The YAML document cannot be read."
