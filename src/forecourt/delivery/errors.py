"""Errors of outbound delivery configuration (where a dealership's leads go).

``MailRouteNotFound`` is raised by the operator's CRM actions (``actions/admin_operator.py``), so it lives in
:mod:`forecourt.errors`; it is named here too for the code that imported it from here.
"""

from __future__ import annotations

from forecourt.errors import MailRouteNotFound

__all__ = ["MailRouteNotFound"]
