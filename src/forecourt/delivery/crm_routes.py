"""Setting where a dealership's leads go: its CRM's HTTP endpoint and its CRM lead inboxes by e-mail.

The rules live once, with the operator's actions that run them through the gateway
(:mod:`forecourt.actions.admin_operator`); they are named here too for the code that imported them from here.
"""

from __future__ import annotations

from forecourt.actions.admin_operator import get_mail_route, remove_mail_route, set_http_endpoint, set_mail_route

__all__ = ["get_mail_route", "remove_mail_route", "set_http_endpoint", "set_mail_route"]
