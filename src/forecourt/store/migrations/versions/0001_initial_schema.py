"""Initial schema: tenancy, inventory, people, service, outbox, audit and deliveries.

Revision ID: 0001
Revises:
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

JSON = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")
TIMESTAMP = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "audit_records",
        sa.Column("id", sa.String(), nullable=False),
        sa.Column("company_id", sa.String(), nullable=True),
        sa.Column("dealership_id", sa.String(), nullable=True),
        sa.Column("member_id", sa.String(), nullable=True),
        sa.Column("action", sa.String(), nullable=False),
        sa.Column("action_type", sa.String(), nullable=False),
        sa.Column("args_digest", sa.String(), nullable=False),
        sa.Column("args_redacted", JSON, nullable=False),
        sa.Column("result_class", sa.String(), nullable=False),
        sa.Column("status_code", sa.Integer(), nullable=False),
        sa.Column("error_code", sa.String(), nullable=True),
        sa.Column("duration_ms", sa.Float(), nullable=False),
        sa.Column("trace_id", sa.String(), nullable=False),
        sa.Column("surface", sa.String(), nullable=False),
        sa.Column("processed_by", sa.String(), nullable=False),
        sa.Column("occurred_at", TIMESTAMP, nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_audit_records")),
    )
    op.create_index(
        "ix_audit_records_company_occurred", "audit_records", ["company_id", "occurred_at", "id"], unique=False
    )

    op.create_table(
        "deliveries",
        sa.Column("id", sa.String(), nullable=False),
        sa.Column("kind", sa.String(), nullable=False),
        sa.Column("dealership_id", sa.String(), nullable=False),
        sa.Column("target", sa.String(), nullable=False),
        sa.Column("subject_id", sa.String(), nullable=False),
        sa.Column("body", sa.Text(), nullable=False),
        sa.Column("content_type", sa.String(), nullable=False),
        sa.Column("status", sa.String(), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("next_attempt_at", TIMESTAMP, nullable=False),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.Column("delivered_at", TIMESTAMP, nullable=True),
        sa.Column("created_at", TIMESTAMP, nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_deliveries")),
    )
    op.create_index("ix_deliveries_status_next", "deliveries", ["status", "next_attempt_at"], unique=False)
    op.create_index(op.f("ix_deliveries_subject_id"), "deliveries", ["subject_id"], unique=False)

    op.create_table(
        "outbox",
        sa.Column("seq", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), autoincrement=True, nullable=False),
        sa.Column("id", sa.String(), nullable=False),
        sa.Column("dealership_id", sa.String(), nullable=False),
        sa.Column("resource_type", sa.String(), nullable=False),
        sa.Column("resource_id", sa.String(), nullable=False),
        sa.Column("change_type", sa.String(), nullable=False),
        sa.Column("status", sa.String(), nullable=True),
        sa.Column("occurred_at", TIMESTAMP, nullable=False),
        sa.Column("payload", JSON, nullable=False),
        sa.PrimaryKeyConstraint("seq", name=op.f("pk_outbox")),
        sa.UniqueConstraint("id", name=op.f("uq_outbox_id")),
        sqlite_autoincrement=True,
    )
    op.create_index("ix_outbox_dealer_seq", "outbox", ["dealership_id", "seq"], unique=False)

    op.create_table(
        "profiles",
        sa.Column("id", sa.String(), nullable=False),
        sa.Column("name", sa.String(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_profiles")),
    )
    op.create_table(
        "companies",
        sa.Column("id", sa.String(), nullable=False),
        sa.Column("profile_id", sa.String(), nullable=False),
        sa.Column("name", sa.String(), nullable=False),
        sa.Column("oidc_issuer", sa.String(), nullable=True),
        sa.Column("oidc_audience", sa.String(), nullable=True),
        sa.Column("oidc_jwks_url", sa.String(), nullable=True),
        sa.ForeignKeyConstraint(["profile_id"], ["profiles.id"], name=op.f("fk_companies_profile_id_profiles")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_companies")),
    )
    op.create_index(op.f("ix_companies_profile_id"), "companies", ["profile_id"], unique=False)

    op.create_table(
        "adapter_settings",
        sa.Column("company_id", sa.String(), nullable=False),
        sa.Column("adapter_id", sa.String(), nullable=False),
        sa.Column("config", JSON, nullable=False),
        sa.ForeignKeyConstraint(
            ["company_id"], ["companies.id"], name=op.f("fk_adapter_settings_company_id_companies")
        ),
        sa.PrimaryKeyConstraint("company_id", "adapter_id", name=op.f("pk_adapter_settings")),
    )
    op.create_table(
        "api_keys",
        sa.Column("prefix", sa.String(), nullable=False),
        sa.Column("key_hash", sa.String(), nullable=False),
        sa.Column("company_id", sa.String(), nullable=False),
        sa.Column("member_id", sa.String(), nullable=False),
        sa.Column("name", sa.String(), nullable=False),
        sa.Column("scopes", JSON, nullable=False),
        sa.Column("dealership_ids", JSON, nullable=False),
        sa.Column("created_at", TIMESTAMP, nullable=False),
        sa.Column("expires_at", TIMESTAMP, nullable=True),
        sa.Column("revoked_at", TIMESTAMP, nullable=True),
        sa.Column("last_used_at", TIMESTAMP, nullable=True),
        sa.ForeignKeyConstraint(["company_id"], ["companies.id"], name=op.f("fk_api_keys_company_id_companies")),
        sa.PrimaryKeyConstraint("prefix", name=op.f("pk_api_keys")),
    )
    op.create_index(op.f("ix_api_keys_company_id"), "api_keys", ["company_id"], unique=False)

    op.create_table(
        "dealerships",
        sa.Column("id", sa.String(), nullable=False),
        sa.Column("company_id", sa.String(), nullable=False),
        sa.Column("name", sa.String(), nullable=False),
        sa.Column("domain", sa.String(), nullable=True),
        sa.Column("domain_l", sa.String(), nullable=True),
        sa.Column("timezone", sa.String(), nullable=False),
        sa.Column("currency", sa.String(length=3), nullable=False),
        sa.Column("brands", JSON, nullable=False),
        sa.Column("address", JSON, nullable=False),
        sa.Column("phones", JSON, nullable=False),
        sa.Column("email", sa.String(), nullable=True),
        sa.Column("website", sa.String(), nullable=True),
        sa.Column("sales_hours", JSON, nullable=False),
        sa.Column("service_hours", JSON, nullable=False),
        sa.Column("capabilities", JSON, nullable=False),
        sa.Column("public_agent", sa.Boolean(), nullable=False),
        sa.Column("crm_endpoint", sa.String(), nullable=True),
        sa.Column("tax_rate_bps", sa.Integer(), nullable=False),
        sa.Column("doc_fee_minor", sa.BigInteger(), nullable=False),
        sa.ForeignKeyConstraint(["company_id"], ["companies.id"], name=op.f("fk_dealerships_company_id_companies")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_dealerships")),
    )
    op.create_index(op.f("ix_dealerships_company_id"), "dealerships", ["company_id"], unique=False)
    op.create_index(op.f("ix_dealerships_domain_l"), "dealerships", ["domain_l"], unique=False)

    op.create_table(
        "members",
        sa.Column("company_id", sa.String(), nullable=False),
        sa.Column("id", sa.String(), nullable=False),
        sa.Column("profile_id", sa.String(), nullable=False),
        sa.Column("name", sa.String(), nullable=False),
        sa.Column("kind", sa.String(), nullable=False),
        sa.Column("security_type", sa.String(), nullable=False),
        sa.Column("allowed_tools", JSON, nullable=False),
        sa.Column("scopes", JSON, nullable=False),
        sa.Column("dealership_ids", JSON, nullable=False),
        sa.Column("is_admin", sa.Boolean(), nullable=False),
        sa.Column("oidc_subject", sa.String(), nullable=True),
        sa.Column("cert_fingerprint", sa.String(), nullable=True),
        sa.Column("agent_config", JSON, nullable=False),
        sa.Column("active", sa.Boolean(), nullable=False),
        sa.ForeignKeyConstraint(["company_id"], ["companies.id"], name=op.f("fk_members_company_id_companies")),
        sa.PrimaryKeyConstraint("company_id", "id", name=op.f("pk_members")),
    )
    op.create_table(
        "policies",
        sa.Column("company_id", sa.String(), nullable=False),
        sa.Column("id", sa.String(), nullable=False),
        sa.Column("name", sa.String(), nullable=False),
        sa.Column("allowed_actions", JSON, nullable=False),
        sa.Column("denied_actions", JSON, nullable=False),
        sa.Column("allowed_adapters", JSON, nullable=False),
        sa.Column("denied_adapters", JSON, nullable=False),
        sa.Column("allowed_models", JSON, nullable=False),
        sa.Column("allow_side_effects", sa.Boolean(), nullable=False),
        sa.Column("redact_fields", JSON, nullable=False),
        sa.Column("audit_retention_days", sa.Integer(), nullable=False),
        sa.Column("rate_limits", JSON, nullable=False),
        sa.ForeignKeyConstraint(["company_id"], ["companies.id"], name=op.f("fk_policies_company_id_companies")),
        sa.PrimaryKeyConstraint("company_id", "id", name=op.f("pk_policies")),
    )
    op.create_table(
        "appointments",
        sa.Column("id", sa.String(), nullable=False),
        sa.Column("dealership_id", sa.String(), nullable=False),
        sa.Column("kind", sa.String(), nullable=False),
        sa.Column("status", sa.String(), nullable=False),
        sa.Column("starts_at", TIMESTAMP, nullable=False),
        sa.Column("ends_at", TIMESTAMP, nullable=False),
        sa.Column("customer_id", sa.String(), nullable=True),
        sa.Column("lead_id", sa.String(), nullable=True),
        sa.Column("vehicle_id", sa.String(), nullable=True),
        sa.Column("advisor_id", sa.String(), nullable=True),
        sa.Column("service_codes", JSON, nullable=False),
        sa.Column("created_at", TIMESTAMP, nullable=False),
        sa.Column("updated_at", TIMESTAMP, nullable=False),
        sa.ForeignKeyConstraint(
            ["dealership_id"], ["dealerships.id"], name=op.f("fk_appointments_dealership_id_dealerships")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_appointments")),
    )
    op.create_index("ix_appointments_dealer_starts", "appointments", ["dealership_id", "starts_at"], unique=False)

    op.create_table(
        "consent_grants",
        sa.Column("id", sa.String(), nullable=False),
        sa.Column("dealership_id", sa.String(), nullable=False),
        sa.Column("customer_id", sa.String(), nullable=True),
        sa.Column("lead_id", sa.String(), nullable=True),
        sa.Column("scope", JSON, nullable=False),
        sa.Column("allowed_channels", JSON, nullable=False),
        sa.Column("granted_at", TIMESTAMP, nullable=False),
        sa.Column("expires_at", TIMESTAMP, nullable=True),
        sa.Column("status", sa.String(), nullable=False),
        sa.Column("source_agent", sa.String(), nullable=True),
        sa.Column("evidence", JSON, nullable=False),
        sa.Column("created_at", TIMESTAMP, nullable=False),
        sa.ForeignKeyConstraint(
            ["dealership_id"], ["dealerships.id"], name=op.f("fk_consent_grants_dealership_id_dealerships")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_consent_grants")),
    )
    op.create_index("ix_consent_grants_dealer_created", "consent_grants", ["dealership_id", "created_at"], unique=False)
    op.create_index(
        "ix_consent_grants_dealer_customer", "consent_grants", ["dealership_id", "customer_id"], unique=False
    )

    op.create_table(
        "customers",
        sa.Column("id", sa.String(), nullable=False),
        sa.Column("dealership_id", sa.String(), nullable=False),
        sa.Column("first_name", sa.String(), nullable=False),
        sa.Column("last_name", sa.String(), nullable=False),
        sa.Column("email", sa.String(), nullable=True),
        sa.Column("email_l", sa.String(), nullable=True),
        sa.Column("phone", sa.String(), nullable=True),
        sa.Column("postal_code", sa.String(), nullable=True),
        sa.Column("preferred_channel", sa.String(), nullable=True),
        sa.Column("created_at", TIMESTAMP, nullable=False),
        sa.Column("updated_at", TIMESTAMP, nullable=False),
        sa.ForeignKeyConstraint(
            ["dealership_id"], ["dealerships.id"], name=op.f("fk_customers_dealership_id_dealerships")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_customers")),
    )
    op.create_index("ix_customers_dealer_created", "customers", ["dealership_id", "created_at"], unique=False)
    op.create_index("ix_customers_dealer_email", "customers", ["dealership_id", "email_l"], unique=False)
    op.create_index("ix_customers_dealer_phone", "customers", ["dealership_id", "phone"], unique=False)

    op.create_table(
        "leads",
        sa.Column("id", sa.String(), nullable=False),
        sa.Column("dealership_id", sa.String(), nullable=False),
        sa.Column("customer_id", sa.String(), nullable=True),
        sa.Column("status", sa.String(), nullable=False),
        sa.Column("source", sa.String(), nullable=False),
        sa.Column("source_agent", sa.String(), nullable=True),
        sa.Column("vehicle_id", sa.String(), nullable=True),
        sa.Column("vehicle_of_interest", JSON, nullable=False),
        sa.Column("trade_in", JSON, nullable=True),
        sa.Column("message", sa.Text(), nullable=True),
        sa.Column("consent_id", sa.String(), nullable=True),
        sa.Column("appointment_id", sa.String(), nullable=True),
        sa.Column("duplicate_of", sa.String(), nullable=True),
        sa.Column("idempotency_key", sa.String(), nullable=True),
        sa.Column("assigned_to", sa.String(), nullable=True),
        sa.Column("fingerprint", sa.String(), nullable=True),
        sa.Column("submitted_at", TIMESTAMP, nullable=False),
        sa.Column("created_at", TIMESTAMP, nullable=False),
        sa.Column("updated_at", TIMESTAMP, nullable=False),
        sa.ForeignKeyConstraint(["dealership_id"], ["dealerships.id"], name=op.f("fk_leads_dealership_id_dealerships")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_leads")),
    )
    op.create_index("ix_leads_dealer_created", "leads", ["dealership_id", "created_at"], unique=False)
    op.create_index("ix_leads_dealer_fingerprint", "leads", ["dealership_id", "fingerprint"], unique=False)
    op.create_index("ix_leads_dealer_idempotency", "leads", ["dealership_id", "idempotency_key"], unique=False)
    op.create_index("ix_leads_dealer_status_created", "leads", ["dealership_id", "status", "created_at"], unique=False)

    op.create_table(
        "repair_orders",
        sa.Column("id", sa.String(), nullable=False),
        sa.Column("dealership_id", sa.String(), nullable=False),
        sa.Column("ro_number", sa.String(), nullable=False),
        sa.Column("status", sa.String(), nullable=False),
        sa.Column("customer_id", sa.String(), nullable=True),
        sa.Column("vin", sa.String(length=17), nullable=True),
        sa.Column("vehicle_description", sa.String(), nullable=False),
        sa.Column("mileage_in_value", sa.Integer(), nullable=True),
        sa.Column("mileage_in_unit", sa.String(length=2), nullable=True),
        sa.Column("advisor_id", sa.String(), nullable=True),
        sa.Column("lines", JSON, nullable=False),
        sa.Column("total_minor", sa.BigInteger(), nullable=False),
        sa.Column("total_currency", sa.String(length=3), nullable=False),
        sa.Column("opened_at", TIMESTAMP, nullable=False),
        sa.Column("promised_at", TIMESTAMP, nullable=True),
        sa.Column("closed_at", TIMESTAMP, nullable=True),
        sa.Column("updated_at", TIMESTAMP, nullable=False),
        sa.ForeignKeyConstraint(
            ["dealership_id"], ["dealerships.id"], name=op.f("fk_repair_orders_dealership_id_dealerships")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_repair_orders")),
        sa.UniqueConstraint("dealership_id", "ro_number", name=op.f("uq_repair_orders_dealership_id_ro_number")),
    )
    op.create_index("ix_repair_orders_dealer_opened", "repair_orders", ["dealership_id", "opened_at"], unique=False)
    op.create_index(
        "ix_repair_orders_dealer_status_opened", "repair_orders", ["dealership_id", "status", "opened_at"], unique=False
    )

    op.create_table(
        "service_slots",
        sa.Column("id", sa.String(), nullable=False),
        sa.Column("dealership_id", sa.String(), nullable=False),
        sa.Column("starts_at", TIMESTAMP, nullable=False),
        sa.Column("ends_at", TIMESTAMP, nullable=False),
        sa.Column("capacity", sa.Integer(), nullable=False),
        sa.Column("booked", sa.Integer(), nullable=False),
        sa.Column("advisor_id", sa.String(), nullable=True),
        sa.CheckConstraint("booked >= 0 AND booked <= capacity", name=op.f("ck_service_slots_booked_within_capacity")),
        sa.ForeignKeyConstraint(
            ["dealership_id"], ["dealerships.id"], name=op.f("fk_service_slots_dealership_id_dealerships")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_service_slots")),
    )
    op.create_index("ix_service_slots_dealer_starts", "service_slots", ["dealership_id", "starts_at"], unique=False)

    op.create_table(
        "trade_valuations",
        sa.Column("id", sa.String(), nullable=False),
        sa.Column("dealership_id", sa.String(), nullable=False),
        sa.Column("year", sa.Integer(), nullable=False),
        sa.Column("make", sa.String(), nullable=False),
        sa.Column("model", sa.String(), nullable=False),
        sa.Column("trim", sa.String(), nullable=True),
        sa.Column("mileage", sa.Integer(), nullable=False),
        sa.Column("condition", sa.String(), nullable=False),
        sa.Column("low_minor", sa.BigInteger(), nullable=False),
        sa.Column("estimate_minor", sa.BigInteger(), nullable=False),
        sa.Column("high_minor", sa.BigInteger(), nullable=False),
        sa.Column("currency", sa.String(length=3), nullable=False),
        sa.Column("comparable_count", sa.Integer(), nullable=False),
        sa.Column("method", sa.String(), nullable=False),
        sa.Column("valid_until", TIMESTAMP, nullable=False),
        sa.Column("created_at", TIMESTAMP, nullable=False),
        sa.ForeignKeyConstraint(
            ["dealership_id"], ["dealerships.id"], name=op.f("fk_trade_valuations_dealership_id_dealerships")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_trade_valuations")),
    )
    op.create_index(
        "ix_trade_valuations_dealer_created", "trade_valuations", ["dealership_id", "created_at"], unique=False
    )

    op.create_table(
        "vehicles",
        sa.Column("id", sa.String(), nullable=False),
        sa.Column("dealership_id", sa.String(), nullable=False),
        sa.Column("vin", sa.String(length=17), nullable=False),
        sa.Column("stock", sa.String(), nullable=False),
        sa.Column("stock_l", sa.String(), nullable=False),
        sa.Column("year", sa.Integer(), nullable=False),
        sa.Column("make", sa.String(), nullable=False),
        sa.Column("make_l", sa.String(), nullable=False),
        sa.Column("model", sa.String(), nullable=False),
        sa.Column("model_l", sa.String(), nullable=False),
        sa.Column("trim", sa.String(), nullable=False),
        sa.Column("trim_l", sa.String(), nullable=False),
        sa.Column("condition", sa.String(), nullable=False),
        sa.Column("body", sa.String(), nullable=False),
        sa.Column("body_l", sa.String(), nullable=False),
        sa.Column("transmission", sa.String(), nullable=False),
        sa.Column("transmission_l", sa.String(), nullable=False),
        sa.Column("driveline", sa.String(), nullable=False),
        sa.Column("driveline_l", sa.String(), nullable=False),
        sa.Column("fuel", sa.String(), nullable=False),
        sa.Column("fuel_l", sa.String(), nullable=False),
        sa.Column("engine", sa.String(), nullable=False),
        sa.Column("exterior_color", sa.String(), nullable=False),
        sa.Column("exterior_color_l", sa.String(), nullable=False),
        sa.Column("interior_color", sa.String(), nullable=False),
        sa.Column("interior_color_l", sa.String(), nullable=False),
        sa.Column("msrp_minor", sa.BigInteger(), nullable=True),
        sa.Column("msrp_currency", sa.String(length=3), nullable=True),
        sa.Column("list_price_minor", sa.BigInteger(), nullable=True),
        sa.Column("list_price_currency", sa.String(length=3), nullable=True),
        sa.Column("price_minor", sa.BigInteger(), nullable=False),
        sa.Column("price_currency", sa.String(length=3), nullable=False),
        sa.Column("mileage_value", sa.Integer(), nullable=False),
        sa.Column("mileage_unit", sa.String(length=2), nullable=False),
        sa.Column("status", sa.String(), nullable=False),
        sa.Column("photos", JSON, nullable=False),
        sa.Column("vdp_url", sa.String(), nullable=True),
        sa.Column("description", sa.Text(), nullable=False),
        sa.Column("search_text", sa.Text(), nullable=False),
        sa.Column("last_verified_at", TIMESTAMP, nullable=False),
        sa.Column("created_at", TIMESTAMP, nullable=True),
        sa.Column("updated_at", TIMESTAMP, nullable=True),
        sa.Column("sold_at", TIMESTAMP, nullable=True),
        sa.ForeignKeyConstraint(
            ["dealership_id"], ["dealerships.id"], name=op.f("fk_vehicles_dealership_id_dealerships")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_vehicles")),
        sa.UniqueConstraint("dealership_id", "vin", name=op.f("uq_vehicles_dealership_id_vin")),
    )
    op.create_index("ix_vehicles_dealer_make_model", "vehicles", ["dealership_id", "make_l", "model_l"], unique=False)
    op.create_index(
        "ix_vehicles_dealer_status_price", "vehicles", ["dealership_id", "status", "price_minor"], unique=False
    )
    op.create_index("ix_vehicles_dealer_stock", "vehicles", ["dealership_id", "stock_l"], unique=False)
    op.create_index("ix_vehicles_make_model_year", "vehicles", ["make_l", "model_l", "year"], unique=False)


def downgrade() -> None:
    op.drop_index("ix_vehicles_make_model_year", table_name="vehicles")
    op.drop_index("ix_vehicles_dealer_stock", table_name="vehicles")
    op.drop_index("ix_vehicles_dealer_status_price", table_name="vehicles")
    op.drop_index("ix_vehicles_dealer_make_model", table_name="vehicles")

    op.drop_table("vehicles")
    op.drop_index("ix_trade_valuations_dealer_created", table_name="trade_valuations")

    op.drop_table("trade_valuations")
    op.drop_index("ix_service_slots_dealer_starts", table_name="service_slots")

    op.drop_table("service_slots")
    op.drop_index("ix_repair_orders_dealer_status_opened", table_name="repair_orders")
    op.drop_index("ix_repair_orders_dealer_opened", table_name="repair_orders")

    op.drop_table("repair_orders")
    op.drop_index("ix_leads_dealer_status_created", table_name="leads")
    op.drop_index("ix_leads_dealer_idempotency", table_name="leads")
    op.drop_index("ix_leads_dealer_fingerprint", table_name="leads")
    op.drop_index("ix_leads_dealer_created", table_name="leads")

    op.drop_table("leads")
    op.drop_index("ix_customers_dealer_phone", table_name="customers")
    op.drop_index("ix_customers_dealer_email", table_name="customers")
    op.drop_index("ix_customers_dealer_created", table_name="customers")

    op.drop_table("customers")
    op.drop_index("ix_consent_grants_dealer_customer", table_name="consent_grants")
    op.drop_index("ix_consent_grants_dealer_created", table_name="consent_grants")

    op.drop_table("consent_grants")
    op.drop_index("ix_appointments_dealer_starts", table_name="appointments")

    op.drop_table("appointments")
    op.drop_table("policies")
    op.drop_table("members")
    op.drop_index(op.f("ix_dealerships_domain_l"), table_name="dealerships")
    op.drop_index(op.f("ix_dealerships_company_id"), table_name="dealerships")

    op.drop_table("dealerships")
    op.drop_index(op.f("ix_api_keys_company_id"), table_name="api_keys")

    op.drop_table("api_keys")
    op.drop_table("adapter_settings")
    op.drop_index(op.f("ix_companies_profile_id"), table_name="companies")

    op.drop_table("companies")
    op.drop_table("profiles")
    op.drop_index("ix_outbox_dealer_seq", table_name="outbox")

    op.drop_table("outbox")
    op.drop_index(op.f("ix_deliveries_subject_id"), table_name="deliveries")
    op.drop_index("ix_deliveries_status_next", table_name="deliveries")

    op.drop_table("deliveries")
    op.drop_index("ix_audit_records_company_occurred", table_name="audit_records")

    op.drop_table("audit_records")
