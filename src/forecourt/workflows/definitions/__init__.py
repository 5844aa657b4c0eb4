"""The dealer processes every company gets by default: ``new_lead_follow_up``, ``service_appointment_reminder``."""
