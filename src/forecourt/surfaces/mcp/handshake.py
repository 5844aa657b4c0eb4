"""What this MCP server says about itself: its name, title, description, version and instructions.

:class:`~.server.McpSurface` gives them to the SDK's server. This module imports nothing of the SDK.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

NAME = "forecourt"
TITLE = "Forecourt AutomotiveMCP"
DESCRIPTION = "A car dealership's inventory, leads, service lane and deals over AutomotiveMCP."
INSTRUCTIONS = (
    "Forecourt puts a car dealership's systems behind AutomotiveMCP. Every call is scoped to one dealership "
    "(`dealership_id`, optional when your credential covers exactly one). Lists return {items, next_cursor, "
    "total}: pass next_cursor back for more. Money is integer minor units with an ISO 4217 currency, mileage "
    "has a unit, times are RFC 3339 with an offset. Errors are {error: {code, message, details, retryable}}. "
    "Resources use automotive://dealers/{dealership_id}/{vehicles|leads|customers|repair_orders|appointments|"
    "consents}[/{id}]; subscribe to a collection to hear about changes, or replay them with events.list."
)


def server_version() -> str:
    """The installed Forecourt version (the ``version`` of ``serverInfo``)."""
    try:
        return version("forecourt")
    except PackageNotFoundError:
        return "0"
