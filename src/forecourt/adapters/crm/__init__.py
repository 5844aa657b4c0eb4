"""Delivery of leads to dealers' CRMs: ADF over HTTP (:mod:`.http`) and ADF by e-mail to lead inboxes (:mod:`.smtp`)."""

from __future__ import annotations

from forecourt.adapters.crm.http import OutboundPoster, PostResult, crm_headers

__all__ = ["OutboundPoster", "PostResult", "crm_headers"]
