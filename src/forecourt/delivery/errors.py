"""Errors of outbound delivery configuration (where a dealership's leads go).

Every one derives from :class:`forecourt.errors.ForecourtError`; that module draws the whole tree.
"""

from __future__ import annotations

from forecourt.errors import NotFound

# raised in forecourt.delivery.crm_routes (where a dealership's leads go) ---


class MailRouteNotFound(NotFound):
    code = "crm.mail_route_not_found"
    default_message = "The dealership has no CRM e-mail route."
