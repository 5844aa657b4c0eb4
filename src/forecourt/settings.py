"""The one Settings object: built once (from ``FORECOURT_*`` variables or a TOML file) and passed down."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any, Literal

from pydantic import AliasChoices, Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

FailMode = Literal["open", "closed"]


class Settings(BaseSettings):
    """Every tunable of a Forecourt process. Nothing else in the code reads the environment."""

    model_config = SettingsConfigDict(env_prefix="FORECOURT_", extra="ignore", frozen=True, populate_by_name=True)

    database_url: str = "sqlite+aiosqlite:///var/forecourt.db"
    redis_url: str | None = None
    redis_prefix: str = "forecourt:"
    host: str = "127.0.0.1"
    port: int = 8000
    public_base_url: str | None = None
    """The URL clients reach this service at, as advertised in the MCP manifest and RFC 9728 metadata. Unset, it
    follows the serving host and port (``http://{host}:{port}``); set it behind a proxy or load balancer."""
    allowed_hosts: list[str] = Field(default_factory=lambda: ["*"])
    instance_name: str = "forecourt-1"
    default_dealership: str = "demo-toyota-sf"
    cursor_secret: SecretStr = SecretStr("forecourt-dev-cursor-secret-change-me")
    api_key_pepper: SecretStr = SecretStr("forecourt-dev-key-pepper-change-me")
    log_level: str = "INFO"
    log_json: bool = True
    db_pool_size: int = 10
    db_echo: bool = False
    max_body_bytes: int = 1_048_576
    max_json_depth: int = 32
    default_page_size: int = 20
    max_page_size: int = 100
    rate_limit_fail_mode: FailMode = "open"
    rate_company_per_minute: int = 60_000
    rate_member_per_minute: int = 6_000
    rate_action_per_minute: int = 3_000
    rate_anonymous_per_minute: int = 600
    auth_failures_per_minute: int = 20
    """Failed authentications (wrong or unknown keys, tokens, console sign-ins) one client address may make per
    minute before its credentials are refused unchecked (0: unlimited)."""
    cache_enabled: bool = True
    cache_local_ttl_s: float = 2.0
    """With Redis: how long a replica keeps its own copy of a shared cache entry (0 = always ask Redis)."""
    cache_local_max_entries: int = 10_000
    cache_max_bytes: int = Field(default=64 * 1024 * 1024, ge=1)
    """Bytes of stored results this process's result cache holds at most (the in-memory cache, or with Redis the
    replica's own copies), the least recently used dropped first."""
    audit_batch_size: int = 200
    audit_flush_interval_s: float = 0.5
    audit_journal_dir: Path | None = None
    """Where each process journals audit records before answering (default: beside an SQLite database file,
    else ``var/audit-journal``); replicas on one host may share it, each host needs its own."""
    audit_journal_fsync: bool = True
    """fsync every journalled record (turn off only where the disk is not the durability boundary)."""
    audit_fsync_helper: bool = True
    """Run the journal's fsync in a small helper process (no thread hand-over on the serving thread); false: a
    worker thread. Either way the event loop never waits on the disk."""
    audit_commit_siblings: int = Field(default=2, ge=1)
    """Group commit: while at least this many other HTTP requests are being answered, a journal fsync waits one
    more turn of the event loop (plus ``audit_commit_delay_ms``) so the calls about to finish share it."""
    audit_commit_delay_ms: float = Field(default=0.0, ge=0, le=50)
    """Extra wait of that group commit (0: one turn of the loop only); more calls per fsync, more latency."""
    otlp_endpoint: str | None = None
    drain_timeout_s: float = 10.0
    allow_private_targets: bool = False
    trusted_proxies: list[str] = Field(default_factory=list)
    behind_proxy: bool = False
    """The server is reached through a load balancer or reverse proxy: ``serve`` then refuses a non-loopback
    bind without ``trusted_proxies`` (every anonymous caller would share the proxy's rate-limit bucket)."""
    mcp_token: SecretStr | None = None
    """``FORECOURT_MCP_TOKEN``: the API key or JWT ``forecourt mcp --stdio`` authenticates with."""
    mcp_token_file: Path | None = None
    """``FORECOURT_MCP_TOKEN_FILE``: a file holding that key (read when ``mcp_token`` is not set)."""
    mcp_max_result_bytes: int = 100_000
    mcp_tool_search_threshold: int = 60
    """Above this many tools in a caller's toolset, ``tools/list`` offers a core set plus ``find_tools``."""
    mcp_sse_ping_s: float = 15.0
    mcp_session_idle_s: float = 1800.0
    mcp_max_sessions: int = 10_000
    mcp_authorization_servers: list[str] = Field(default_factory=list)
    """OAuth authorization servers named in the MCP protected-resource metadata (default: companies' issuers)."""
    mcp_anonymous_member: str | None = None
    """``company/member``: MCP requests without credentials run as this member. For the conformance suite and
    local development only (the suite cannot send a token); off by default, never set it in production."""
    upstream_sync_interval_s: float = 30.0
    """How often each replica re-reads the upstream MCP server registry and retries unreachable upstreams."""
    events_poll_interval_s: float = 0.25
    delivery_poll_interval_s: float = 1.0
    delivery_base_backoff_s: float = 2.0
    delivery_max_backoff_s: float = 3600.0
    delivery_max_attempts: int = 15
    delivery_timeout_s: float = 10.0
    console_enabled: bool = True
    console_prefix: str = "/console"
    """Where the operator console is served (``GET {prefix}/``)."""
    console_operator_key: SecretStr | None = None
    """``FORECOURT_CONSOLE_OPERATOR_KEY``: the platform operator's console sign-in key (sees every company)."""
    console_session_secret: SecretStr | None = None
    """Seals console session cookies; the same on every replica (default: derived from the cursor secret)."""
    console_idle_timeout_s: float = 1800.0
    feed_poll_interval_s: float = 30.0
    """How often each replica looks for a scheduled inventory feed that is due (one replica pulls each)."""
    feed_fetch_timeout_s: float = 120.0
    feed_max_bytes: int = 256 * 1024 * 1024
    adapter_config_dir: Path | None = None
    """A folder of ``<adapter>.yaml`` files replacing the packaged defaults file by file (adapters/config.py)."""
    # --- operations: drain, access logs, metrics, OpenTelemetry (docs/operations.md) ---
    drain_period_s: float = 10.0
    """After SIGTERM: how long the listener keeps serving while ``/readyz`` answers 503 (the load balancer's
    time to stop sending); in-flight calls then get ``drain_timeout_s`` more to finish."""
    worker_healthcheck_timeout_s: int = 60
    """``serve --workers N``: how long a worker may not answer the supervisor's ping (start-up included) before
    it is replaced. Generous: a worker importing everything on a busy host is slow, not hung."""
    tls_certfile: Path | None = None
    """The server certificate ``forecourt serve --ssl-certfile`` serves with (set by serve for its workers):
    its expiry is exported as ``forecourt_certificate_expiry_timestamp_seconds{kind="server"}``."""
    sse_retry_ms: int = 1000
    """The ``retry:`` a draining replica sends on every open SSE stream before closing it."""
    access_log: bool = True
    """One JSON line per HTTP request on the ``forecourt.access`` logger."""
    metrics_sample_interval_s: float = 5.0
    """How often each process samples its process, database pool, Redis and backlog gauges."""
    prometheus_multiproc_dir: Path | None = Field(
        default=None, validation_alias=AliasChoices("PROMETHEUS_MULTIPROC_DIR", "prometheus_multiproc_dir")
    )
    """``PROMETHEUS_MULTIPROC_DIR`` (prometheus-client's own variable): set by ``forecourt serve --workers N``
    so that ``/metrics`` adds up every worker; an operator may point it at a folder of their own."""
    otel_service_name: str = Field(
        default="forecourt", validation_alias=AliasChoices("OTEL_SERVICE_NAME", "otel_service_name")
    )
    """``OTEL_SERVICE_NAME``: the ``service.name`` of traces, metrics and logs."""
    otel_resource_attributes: str = Field(
        default="", validation_alias=AliasChoices("OTEL_RESOURCE_ATTRIBUTES", "otel_resource_attributes")
    )
    """``OTEL_RESOURCE_ATTRIBUTES``: ``key=value,key=value`` added to the OpenTelemetry resource."""
    otel_traces_sampler: str = Field(
        default="parentbased_always_on",
        validation_alias=AliasChoices("OTEL_TRACES_SAMPLER", "otel_traces_sampler"),
    )
    """``OTEL_TRACES_SAMPLER``: ``always_on``, ``always_off``, ``traceidratio`` or their ``parentbased_`` forms."""
    otel_traces_sampler_arg: float = Field(
        default=1.0, validation_alias=AliasChoices("OTEL_TRACES_SAMPLER_ARG", "otel_traces_sampler_arg")
    )
    """``OTEL_TRACES_SAMPLER_ARG``: the sampling ratio of the ``traceidratio`` samplers (0 to 1)."""
    otel_exporter_otlp_endpoint: str | None = Field(
        default=None,
        validation_alias=AliasChoices("OTEL_EXPORTER_OTLP_ENDPOINT", "otel_exporter_otlp_endpoint"),
    )
    """``OTEL_EXPORTER_OTLP_ENDPOINT``: an OTLP/HTTP collector's base URL; traces, metrics and logs go to
    ``/v1/traces``, ``/v1/metrics`` and ``/v1/logs`` under it (``FORECOURT_OTLP_ENDPOINT`` is traces only)."""
    otel_metric_export_interval_ms: int = Field(
        default=60_000,
        validation_alias=AliasChoices("OTEL_METRIC_EXPORT_INTERVAL", "otel_metric_export_interval_ms"),
    )
    """``OTEL_METRIC_EXPORT_INTERVAL``: milliseconds between OTLP metric exports."""
    gcp_project: str | None = None
    """Google Cloud project of Cloud Trace, Cloud Monitoring and the Cloud Logging trace field (default: ADC's)."""
    cloud_trace: bool = False
    """Export spans to Cloud Trace (needs the ``gcp`` extra; gateway/cloud_observability.py)."""
    cloud_monitoring: bool = False
    """Export the gateway's metrics to Cloud Monitoring every ``cloud_monitoring_interval_s`` (``gcp`` extra)."""
    cloud_monitoring_interval_s: float = 60.0
    cloud_logging: bool = False
    """Write logs as Cloud Logging structured JSON (severity, logging.googleapis.com/trace and spanId)."""
    gcp_api_endpoint: str | None = None
    """``host:port`` of a local Cloud Trace / Monitoring receiver (plain gRPC, no credentials): emulators and tests."""

    bootstrap_operator_key: bool = True
    """``forecourt serve`` on a database without operator keys creates one and prints it once."""

    @property
    def advertised_url(self) -> str:
        """``public_base_url``, or the serving address when it is unset (no trailing slash)."""
        if self.public_base_url:
            return self.public_base_url.rstrip("/")
        wildcard = {"", "0.0.0.0", "::"}  # noqa: S104 - recognising a wildcard bind, not binding
        host = self.host if self.host not in wildcard else ("127.0.0.1" if "." in self.host or not self.host else "::1")
        host = f"[{host}]" if ":" in host and not host.startswith("[") else host
        return f"http://{host}:{self.port}"

    @property
    def is_sqlite(self) -> bool:
        """Whether the configured database is SQLite."""
        return self.database_url.startswith("sqlite")

    @classmethod
    def load(cls, config_file: Path | None = None, **overrides: Any) -> Settings:
        """Build settings from an optional TOML file, then ``FORECOURT_*`` variables, then explicit overrides.

        Environment variables win over the file, explicit overrides win over both.
        """
        base: dict[str, Any] = {}
        if config_file is not None:
            with config_file.open("rb") as fh:
                raw = tomllib.load(fh)
            section = raw.get("forecourt", raw)
            base = {str(k): v for k, v in section.items()}
        env_settings = cls()
        explicit_env = env_settings.model_fields_set
        merged = {**base, **{k: getattr(env_settings, k) for k in explicit_env}, **overrides}
        return cls.model_validate(merged) if merged else env_settings
