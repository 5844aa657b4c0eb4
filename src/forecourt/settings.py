"""The one Settings object: built once (from ``FORECOURT_*`` variables or a TOML file) and passed down."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

FailMode = Literal["open", "closed"]


class Settings(BaseSettings):
    """Every tunable of a Forecourt process. Nothing else in the code reads the environment."""

    model_config = SettingsConfigDict(env_prefix="FORECOURT_", extra="ignore", frozen=True)

    database_url: str = "sqlite+aiosqlite:///var/forecourt.db"
    redis_url: str | None = None
    redis_prefix: str = "forecourt:"
    host: str = "127.0.0.1"
    port: int = 8000
    public_base_url: str = "http://127.0.0.1:8000"
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
    cache_enabled: bool = True
    cache_local_ttl_s: float = 2.0
    """With Redis: how long a replica keeps its own copy of a shared cache entry (0 = always ask Redis)."""
    cache_local_max_entries: int = 10_000
    audit_batch_size: int = 200
    audit_flush_interval_s: float = 0.5
    otlp_endpoint: str | None = None
    drain_timeout_s: float = 10.0
    allow_private_targets: bool = False
    trusted_proxies: list[str] = Field(default_factory=list)
    mcp_token: SecretStr | None = None
    """``FORECOURT_MCP_TOKEN``: the API key or JWT ``forecourt mcp --stdio`` authenticates with."""
    mcp_max_result_bytes: int = 100_000
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
    adapter_config_dir: Path | None = None
    """A folder of ``<adapter>.yaml`` files replacing the packaged defaults file by file (adapters/config.py)."""

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
