"""The relational schema (SQLAlchemy Core), shared by the repositories and checked against the migrations.

Money is stored as integer minor units plus a currency, mileage as value plus unit, and lists or nested
structures as JSON (JSONB on PostgreSQL). Filterable vehicle text is also kept lower-cased (``*_l``
columns) so that case-insensitive exact matches can use plain b-tree indexes on both databases.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Dialect

from forecourt.store.sa_postgresql import postgresql

NAMING = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

metadata = sa.MetaData(naming_convention=NAMING)


class UtcDateTime(sa.TypeDecorator[datetime]):
    """An aware timestamp stored in UTC (``timestamptz`` on PostgreSQL, UTC text on SQLite); read back aware."""

    impl = sa.DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None or value.utcoffset() is None:
            raise ValueError("timestamps must be timezone-aware")
        utc = value.astimezone(UTC)
        return utc if dialect.name == "postgresql" else utc.replace(tzinfo=None)

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


JSONType: sa.types.TypeEngine[Any] = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")
Minor = sa.BigInteger


def _ts(name: str, *, nullable: bool = False) -> sa.Column[datetime]:
    return sa.Column(name, UtcDateTime(), nullable=nullable)


def _dealership_fk() -> sa.Column[str]:
    return sa.Column("dealership_id", sa.String(), sa.ForeignKey("dealerships.id"), nullable=False)


# --- tenancy -------------------------------------------------------------------------------------------

profiles = sa.Table(
    "profiles",
    metadata,
    sa.Column("id", sa.String(), primary_key=True),
    sa.Column("name", sa.String(), nullable=False),
)

companies = sa.Table(
    "companies",
    metadata,
    sa.Column("id", sa.String(), primary_key=True),
    sa.Column("profile_id", sa.String(), sa.ForeignKey("profiles.id"), nullable=False, index=True),
    sa.Column("name", sa.String(), nullable=False),
    sa.Column("oidc_issuer", sa.String()),
    sa.Column("oidc_audience", sa.String()),
    sa.Column("oidc_jwks_url", sa.String()),
)

dealerships = sa.Table(
    "dealerships",
    metadata,
    sa.Column("id", sa.String(), primary_key=True),
    sa.Column("company_id", sa.String(), sa.ForeignKey("companies.id"), nullable=False, index=True),
    sa.Column("name", sa.String(), nullable=False),
    sa.Column("domain", sa.String()),
    sa.Column("domain_l", sa.String(), index=True),
    sa.Column("timezone", sa.String(), nullable=False),
    sa.Column("currency", sa.String(3), nullable=False),
    sa.Column("brands", JSONType, nullable=False),
    sa.Column("address", JSONType, nullable=False),
    sa.Column("phones", JSONType, nullable=False),
    sa.Column("email", sa.String()),
    sa.Column("website", sa.String()),
    sa.Column("sales_hours", JSONType, nullable=False),
    sa.Column("service_hours", JSONType, nullable=False),
    sa.Column("capabilities", JSONType, nullable=False),
    sa.Column("public_agent", sa.Boolean(), nullable=False),
    sa.Column("crm_endpoint", sa.String()),
    sa.Column("tax_rate_bps", sa.Integer(), nullable=False),
    sa.Column("doc_fee_minor", Minor(), nullable=False),
)

members = sa.Table(
    "members",
    metadata,
    sa.Column("company_id", sa.String(), sa.ForeignKey("companies.id"), primary_key=True),
    sa.Column("id", sa.String(), primary_key=True),
    sa.Column("profile_id", sa.String(), nullable=False),
    sa.Column("name", sa.String(), nullable=False),
    sa.Column("kind", sa.String(), nullable=False),
    sa.Column("security_type", sa.String(), nullable=False),
    sa.Column("allowed_tools", JSONType, nullable=False),
    sa.Column("scopes", JSONType, nullable=False),
    sa.Column("dealership_ids", JSONType, nullable=False),
    sa.Column("is_admin", sa.Boolean(), nullable=False),
    sa.Column("oidc_subject", sa.String()),
    sa.Column("cert_fingerprint", sa.String()),
    sa.Column("agent_config", JSONType, nullable=False),
    sa.Column("active", sa.Boolean(), nullable=False),
    sa.Column("toolset", sa.String()),
    sa.Column("tool_names", sa.String()),
)

policies = sa.Table(
    "policies",
    metadata,
    sa.Column("company_id", sa.String(), sa.ForeignKey("companies.id"), primary_key=True),
    sa.Column("id", sa.String(), primary_key=True),
    sa.Column("name", sa.String(), nullable=False),
    sa.Column("allowed_actions", JSONType, nullable=False),
    sa.Column("denied_actions", JSONType, nullable=False),
    sa.Column("allowed_adapters", JSONType, nullable=False),
    sa.Column("denied_adapters", JSONType, nullable=False),
    sa.Column("allowed_models", JSONType, nullable=False),
    sa.Column("allow_side_effects", sa.Boolean(), nullable=False),
    sa.Column("redact_fields", JSONType, nullable=False),
    sa.Column("audit_retention_days", sa.Integer(), nullable=False),
    sa.Column("rate_limits", JSONType, nullable=False),
    sa.Column("require_approval", JSONType, nullable=False, server_default="[]"),
    sa.Column("toolsets", JSONType, nullable=False, server_default="[]"),
    sa.Column("protections", JSONType, nullable=False, server_default="{}"),
)

adapter_settings = sa.Table(
    "adapter_settings",
    metadata,
    sa.Column("company_id", sa.String(), sa.ForeignKey("companies.id"), primary_key=True),
    sa.Column("adapter_id", sa.String(), primary_key=True),
    sa.Column("config", JSONType, nullable=False),
)

api_keys = sa.Table(
    "api_keys",
    metadata,
    sa.Column("prefix", sa.String(), primary_key=True),
    sa.Column("key_hash", sa.String(), nullable=False),
    sa.Column("company_id", sa.String(), sa.ForeignKey("companies.id"), nullable=False, index=True),
    sa.Column("member_id", sa.String(), nullable=False),
    sa.Column("name", sa.String(), nullable=False),
    sa.Column("scopes", JSONType, nullable=False),
    sa.Column("dealership_ids", JSONType, nullable=False),
    _ts("created_at"),
    _ts("expires_at", nullable=True),
    _ts("revoked_at", nullable=True),
    _ts("last_used_at", nullable=True),
    sa.Column("toolset", sa.String()),
)

# --- inventory -----------------------------------------------------------------------------------------

vehicles = sa.Table(
    "vehicles",
    metadata,
    sa.Column("id", sa.String(), primary_key=True),
    _dealership_fk(),
    sa.Column("vin", sa.String(17), nullable=False),
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
    sa.Column("msrp_minor", Minor()),
    sa.Column("msrp_currency", sa.String(3)),
    sa.Column("list_price_minor", Minor()),
    sa.Column("list_price_currency", sa.String(3)),
    sa.Column("price_minor", Minor(), nullable=False),
    sa.Column("price_currency", sa.String(3), nullable=False),
    sa.Column("mileage_value", sa.Integer(), nullable=False),
    sa.Column("mileage_unit", sa.String(2), nullable=False),
    sa.Column("status", sa.String(), nullable=False),
    sa.Column("photos", JSONType, nullable=False),
    sa.Column("vdp_url", sa.String()),
    sa.Column("description", sa.Text(), nullable=False),
    sa.Column("search_text", sa.Text(), nullable=False),
    _ts("last_verified_at"),
    _ts("created_at", nullable=True),
    _ts("updated_at", nullable=True),
    _ts("sold_at", nullable=True),
    sa.UniqueConstraint("dealership_id", "vin"),
    sa.Index("ix_vehicles_dealer_status_price", "dealership_id", "status", "price_minor"),
    sa.Index("ix_vehicles_dealer_id_status", "dealership_id", "id", "status"),  # the default search's page
    # The common sorts' pages, tie-breaker and status included (migration inventory_0002).
    sa.Index("ix_vehicles_dealer_price_id", "dealership_id", "price_minor", "id", "status"),
    sa.Index("ix_vehicles_dealer_year_id", "dealership_id", "year", "id", "status"),
    sa.Index("ix_vehicles_dealer_mileage_id", "dealership_id", "mileage_value", "id", "status"),
    sa.Index("ix_vehicles_dealer_make_price_id", "dealership_id", "make_l", "price_minor", "id", "status"),
    sa.Index("ix_vehicles_dealer_make_model", "dealership_id", "make_l", "model_l"),
    sa.Index("ix_vehicles_dealer_stock", "dealership_id", "stock_l"),
    sa.Index("ix_vehicles_make_model_year", "make_l", "model_l", "year"),
)

# --- people --------------------------------------------------------------------------------------------

customers = sa.Table(
    "customers",
    metadata,
    sa.Column("id", sa.String(), primary_key=True),
    _dealership_fk(),
    sa.Column("first_name", sa.String(), nullable=False),
    sa.Column("last_name", sa.String(), nullable=False),
    sa.Column("email", sa.String()),
    sa.Column("email_l", sa.String()),
    sa.Column("phone", sa.String()),
    sa.Column("postal_code", sa.String()),
    sa.Column("preferred_channel", sa.String()),
    _ts("created_at"),
    _ts("updated_at"),
    sa.Column("possible_duplicate_of", sa.String()),
    sa.Index("ix_customers_dealer_created", "dealership_id", "created_at"),
    sa.Index("ix_customers_dealer_email", "dealership_id", "email_l"),
    sa.Index("ix_customers_dealer_phone", "dealership_id", "phone"),
)

consent_grants = sa.Table(
    "consent_grants",
    metadata,
    sa.Column("id", sa.String(), primary_key=True),
    _dealership_fk(),
    sa.Column("customer_id", sa.String()),
    sa.Column("lead_id", sa.String()),
    sa.Column("scope", JSONType, nullable=False),
    sa.Column("allowed_channels", JSONType, nullable=False),
    _ts("granted_at"),
    _ts("expires_at", nullable=True),
    sa.Column("status", sa.String(), nullable=False),
    sa.Column("source_agent", sa.String()),
    sa.Column("evidence", JSONType, nullable=False),
    _ts("created_at"),
    sa.Index("ix_consent_grants_dealer_created", "dealership_id", "created_at"),
    sa.Index("ix_consent_grants_dealer_customer", "dealership_id", "customer_id"),
)

leads = sa.Table(
    "leads",
    metadata,
    sa.Column("id", sa.String(), primary_key=True),
    _dealership_fk(),
    sa.Column("customer_id", sa.String()),
    sa.Column("status", sa.String(), nullable=False),
    sa.Column("source", sa.String(), nullable=False),
    sa.Column("source_agent", sa.String()),
    sa.Column("vehicle_id", sa.String()),
    sa.Column("vehicle_of_interest", JSONType, nullable=False),
    sa.Column("trade_in", JSONType),
    sa.Column("message", sa.Text()),
    sa.Column("consent_id", sa.String()),
    sa.Column("appointment_id", sa.String()),
    sa.Column("duplicate_of", sa.String()),
    sa.Column("idempotency_key", sa.String()),
    sa.Column("assigned_to", sa.String()),
    sa.Column("fingerprint", sa.String()),
    _ts("submitted_at"),
    _ts("created_at"),
    _ts("updated_at"),
    sa.Index("ix_leads_dealer_created", "dealership_id", "created_at"),
    sa.Index("ix_leads_dealer_status_created", "dealership_id", "status", "created_at"),
    sa.Index("ix_leads_dealer_fingerprint", "dealership_id", "fingerprint"),
    sa.Index("ix_leads_dealer_idempotency", "dealership_id", "idempotency_key"),
    sa.Index("ix_leads_customer", "customer_id", "id"),  # a customer's leads (console search; console_0002)
)

# --- service and deals ---------------------------------------------------------------------------------

repair_orders = sa.Table(
    "repair_orders",
    metadata,
    sa.Column("id", sa.String(), primary_key=True),
    _dealership_fk(),
    sa.Column("ro_number", sa.String(), nullable=False),
    sa.Column("status", sa.String(), nullable=False),
    sa.Column("customer_id", sa.String()),
    sa.Column("vin", sa.String(17)),
    sa.Column("vehicle_description", sa.String(), nullable=False),
    sa.Column("mileage_in_value", sa.Integer()),
    sa.Column("mileage_in_unit", sa.String(2)),
    sa.Column("advisor_id", sa.String()),
    sa.Column("lines", JSONType, nullable=False),
    sa.Column("total_minor", Minor(), nullable=False),
    sa.Column("total_currency", sa.String(3), nullable=False),
    _ts("opened_at"),
    _ts("promised_at", nullable=True),
    _ts("closed_at", nullable=True),
    _ts("updated_at"),
    sa.UniqueConstraint("dealership_id", "ro_number"),
    sa.Index("ix_repair_orders_dealer_status_opened", "dealership_id", "status", "opened_at"),
    sa.Index("ix_repair_orders_dealer_opened", "dealership_id", "opened_at"),
)

appointments = sa.Table(
    "appointments",
    metadata,
    sa.Column("id", sa.String(), primary_key=True),
    _dealership_fk(),
    sa.Column("kind", sa.String(), nullable=False),
    sa.Column("status", sa.String(), nullable=False),
    _ts("starts_at"),
    _ts("ends_at"),
    sa.Column("customer_id", sa.String()),
    sa.Column("lead_id", sa.String()),
    sa.Column("vehicle_id", sa.String()),
    sa.Column("advisor_id", sa.String()),
    sa.Column("service_codes", JSONType, nullable=False),
    _ts("created_at"),
    _ts("updated_at"),
    sa.Index("ix_appointments_dealer_starts", "dealership_id", "starts_at"),
)

service_slots = sa.Table(
    "service_slots",
    metadata,
    sa.Column("id", sa.String(), primary_key=True),
    _dealership_fk(),
    _ts("starts_at"),
    _ts("ends_at"),
    sa.Column("capacity", sa.Integer(), nullable=False),
    sa.Column("booked", sa.Integer(), nullable=False),
    sa.Column("advisor_id", sa.String()),
    sa.CheckConstraint("booked >= 0 AND booked <= capacity", name="booked_within_capacity"),
    sa.Index("ix_service_slots_dealer_starts", "dealership_id", "starts_at"),
)

trade_valuations = sa.Table(
    "trade_valuations",
    metadata,
    sa.Column("id", sa.String(), primary_key=True),
    _dealership_fk(),
    sa.Column("year", sa.Integer(), nullable=False),
    sa.Column("make", sa.String(), nullable=False),
    sa.Column("model", sa.String(), nullable=False),
    sa.Column("trim", sa.String()),
    sa.Column("mileage", sa.Integer(), nullable=False),
    sa.Column("condition", sa.String(), nullable=False),
    sa.Column("low_minor", Minor(), nullable=False),
    sa.Column("estimate_minor", Minor(), nullable=False),
    sa.Column("high_minor", Minor(), nullable=False),
    sa.Column("currency", sa.String(3), nullable=False),
    sa.Column("comparable_count", sa.Integer(), nullable=False),
    sa.Column("method", sa.String(), nullable=False),
    _ts("valid_until"),
    _ts("created_at"),
    sa.Index("ix_trade_valuations_dealer_created", "dealership_id", "created_at"),
)

# --- events, audit, deliveries -------------------------------------------------------------------------

outbox = sa.Table(
    "outbox",
    metadata,
    sa.Column("seq", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), primary_key=True, autoincrement=True),
    sa.Column("id", sa.String(), nullable=False, unique=True),
    sa.Column("dealership_id", sa.String(), nullable=False),
    sa.Column("resource_type", sa.String(), nullable=False),
    sa.Column("resource_id", sa.String(), nullable=False),
    sa.Column("change_type", sa.String(), nullable=False),
    sa.Column("status", sa.String()),
    _ts("occurred_at"),
    sa.Column("payload", JSONType, nullable=False),
    sa.Index("ix_outbox_dealer_seq", "dealership_id", "seq"),
    sqlite_autoincrement=True,
)

audit_records = sa.Table(
    "audit_records",
    metadata,
    sa.Column("id", sa.String(), primary_key=True),
    sa.Column("company_id", sa.String()),
    sa.Column("dealership_id", sa.String()),
    sa.Column("member_id", sa.String()),
    sa.Column("action", sa.String(), nullable=False),
    sa.Column("action_type", sa.String(), nullable=False),
    sa.Column("args_digest", sa.String(), nullable=False),
    sa.Column("args_redacted", JSONType, nullable=False),
    sa.Column("result_class", sa.String(), nullable=False),
    sa.Column("status_code", sa.Integer(), nullable=False),
    sa.Column("error_code", sa.String()),
    sa.Column("duration_ms", sa.Float(), nullable=False),
    sa.Column("trace_id", sa.String(), nullable=False),
    sa.Column("surface", sa.String(), nullable=False),
    sa.Column("processed_by", sa.String(), nullable=False),
    _ts("occurred_at"),
    sa.Index("ix_audit_records_company_occurred", "company_id", "occurred_at", "id"),
)

deliveries = sa.Table(
    "deliveries",
    metadata,
    sa.Column("id", sa.String(), primary_key=True),
    sa.Column("kind", sa.String(), nullable=False),
    sa.Column("dealership_id", sa.String(), nullable=False),
    sa.Column("target", sa.String(), nullable=False),
    sa.Column("subject_id", sa.String(), nullable=False, index=True),
    sa.Column("body", sa.Text(), nullable=False),
    sa.Column("content_type", sa.String(), nullable=False),
    sa.Column("status", sa.String(), nullable=False),
    sa.Column("attempts", sa.Integer(), nullable=False),
    _ts("next_attempt_at"),
    sa.Column("last_error", sa.Text()),
    _ts("delivered_at", nullable=True),
    _ts("created_at"),
    sa.Index("ix_deliveries_status_next", "status", "next_attempt_at"),
)
