"""Outbox-driven outbound deliveries: ADF leads to dealers' CRMs and A2A push notifications, with retries."""
