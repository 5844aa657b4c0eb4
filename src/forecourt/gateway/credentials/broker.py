"""Picks the credential provider for an adapter call from its configuration, with company overrides on top.

An adapter's configuration carries ``credentials: {type: google | jwt | secret | none, ...}``. A company's
``settings/adapters/{adapterId}`` row may override any of it under the same ``credentials`` key, except
where a secret is read from (environment variable names and file paths): a company admin could otherwise
point a secret locator at the server's own files or variables and have the value sent to an endpoint they
control. The operator lets a company name its own secret sources with ``allow_company_secret_sources: true``
in the adapter's default configuration.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from forecourt.contract.errors import CredentialUnavailable
from forecourt.gateway.auth.common import TenancySource
from forecourt.gateway.base import CredentialProvider, IssuedCredential
from forecourt.gateway.credentials.secret import SecretProvider
from forecourt.gateway.credentials.signed_jwt import SignedJwtProvider
from forecourt.settings import Settings

if TYPE_CHECKING:  # google-auth (and httpx) are imported when an adapter first asks for a Google credential
    from forecourt.gateway.credentials.google import GoogleCredentialProvider

logger = logging.getLogger(__name__)

LOCATOR_KEYS = frozenset({"env", "file", "key_env", "key_file", "service_account_env", "service_account_file"})
"""Configuration keys that say where a secret is read from."""
OPERATOR_ONLY_KEYS = frozenset({"allow_company_secret_sources"})


class NoCredentialProvider:
    """For adapters that need no credential (``type: none``)."""

    async def issue(self, adapter_id: str, company_id: str | None, config: Mapping[str, Any]) -> IssuedCredential:
        """An empty credential."""
        del adapter_id, company_id, config
        return IssuedCredential(kind="none")

    def rejected(self, adapter_id: str, config: Mapping[str, Any], credential: IssuedCredential) -> None:
        """Nothing to forget."""
        del adapter_id, config, credential


def merge_credentials_config(base: Mapping[str, Any] | None, override: Mapping[str, Any] | None) -> dict[str, Any]:
    """The operator's credential configuration with a company's override merged on top (one level deep).

    Secret locators in the override are dropped unless the base allows company secret sources.

    Args:
        base: ``credentials`` of the adapter's default configuration.
        override: ``credentials`` of the company's adapter setting.

    Returns:
        The merged configuration.
    """
    merged: dict[str, Any] = dict(base or {})
    if not override:
        return merged
    allow_locators = merged.get("allow_company_secret_sources") is True
    for key, value in override.items():
        if key in OPERATOR_ONLY_KEYS or (key in LOCATOR_KEYS and not allow_locators):
            logger.warning("ignored company override of credential setting %r", key)
            continue
        if isinstance(value, Mapping) and isinstance(merged.get(key), Mapping):
            merged[key] = {**merged[key], **value}
        else:
            merged[key] = value
    if merged.get("type") != (base or {}).get("type") and not allow_locators:
        # A changed type would read the new provider's locators from the operator's config of another type.
        for key in LOCATOR_KEYS:
            merged.pop(key, None)
    return merged


class CredentialBroker:
    """The :class:`~forecourt.gateway.base.CredentialProvider` the gateway calls; delegates by ``type``."""

    def __init__(
        self,
        providers: Mapping[str, CredentialProvider] | None = None,
        *,
        store: TenancySource | None = None,
        adapter_defaults: Mapping[str, Mapping[str, Any]] | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        """Create the broker.

        Two ways to learn a company's override, so that its secret locators can be filtered:

        - ``adapter_defaults`` given: :meth:`issue` may receive a configuration the caller already merged
          with the company's override (as the gateway pipeline does); the override is recovered as what
          differs from the operator's default ``credentials`` section of that adapter;
        - else ``store`` given: :meth:`issue` receives the operator's configuration and the broker reads
          the company's ``settings/adapters/{adapterId}`` row itself.

        Args:
            providers: Providers by type, replacing or adding to the defaults (``google``, ``jwt``,
                ``secret``, ``none``).
            store: Where company adapter settings are read.
            adapter_defaults: The operator's default configuration per adapter id.
            environ: The environment the default providers read named secrets from.
        """
        env = os.environ if environ is None else environ
        self._providers: dict[str, CredentialProvider] = {
            "none": NoCredentialProvider(),
            "secret": SecretProvider(environ=env),
            "jwt": SignedJwtProvider(environ=env),
        }
        self._google: GoogleCredentialProvider | None = None
        self._environ = env
        self._providers.update(providers or {})
        self._store = store
        self._defaults = None if adapter_defaults is None else {k: dict(v) for k, v in adapter_defaults.items()}

    def _provider(self, kind: str) -> CredentialProvider:
        provider = self._providers.get(kind)
        if provider is None and kind == "google":
            from forecourt.gateway.credentials.google import GoogleCredentialProvider

            self._google = GoogleCredentialProvider(environ=self._environ)
            provider = self._providers["google"] = self._google
        if provider is None:
            logger.warning("unknown credential type %r", kind)
            raise CredentialUnavailable()
        return provider

    async def _override(self, adapter_id: str, company_id: str | None) -> Mapping[str, Any] | None:
        if self._store is None or company_id is None:
            return None
        async with self._store.read() as uow:
            setting = await uow.tenancy.get_adapter_setting(company_id, adapter_id)
        if setting is None:
            return None
        section = setting.config.get("credentials")
        return section if isinstance(section, Mapping) else None

    async def issue(self, adapter_id: str, company_id: str | None, config: Mapping[str, Any]) -> IssuedCredential:
        """A credential for one adapter call.

        Args:
            adapter_id: The adapter.
            company_id: The calling company, whose override (if any) is merged on top.
            config: The adapter's configuration; its ``credentials`` section picks the provider. Without
                ``adapter_defaults`` it must be the operator's configuration *before* company overrides,
                so that the locator rule above holds.

        Returns:
            The credential (``kind="none"`` when the adapter needs none).

        Raises:
            CredentialUnavailable: Unknown type, or the provider could not produce a credential.
        """
        raw = config.get("credentials")
        section: Mapping[str, Any] | None = raw if isinstance(raw, Mapping) else None
        if self._defaults is not None:
            default = self._defaults.get(adapter_id, {}).get("credentials")
            base: Mapping[str, Any] | None = default if isinstance(default, Mapping) else None
            override = {k: v for k, v in (section or {}).items() if base is None or base.get(k) != v}
            return await self.issue_with_override(adapter_id, company_id, base, override)
        return await self.issue_with_override(
            adapter_id, company_id, section, await self._override(adapter_id, company_id)
        )

    async def issue_with_override(
        self,
        adapter_id: str,
        company_id: str | None,
        base: Mapping[str, Any] | None,
        override: Mapping[str, Any] | None,
    ) -> IssuedCredential:
        """Like :meth:`issue`, for a caller that already holds both credential sections.

        Args:
            adapter_id: The adapter.
            company_id: The calling company.
            base: ``credentials`` of the adapter's default configuration.
            override: ``credentials`` of the company's adapter setting.

        Returns:
            The credential.
        """
        merged = merge_credentials_config(base, override)
        kind = str(merged.get("type") or "none")
        issued = await self._provider(kind).issue(adapter_id, company_id, merged)
        return replace(issued, provider=kind)

    def rejected(self, adapter_id: str, config: Mapping[str, Any], credential: IssuedCredential) -> None:
        """Tell the provider that issued ``credential`` that a runtime refused it (it is not handed out again)."""
        if credential.provider:
            self._provider(credential.provider).rejected(adapter_id, config, credential)

    def close(self) -> None:
        """Release the Google provider's HTTP client, if one was created."""
        if self._google is not None:
            self._google.close()

    async def aclose(self) -> None:
        """Release the Google provider's HTTP clients (its token exchange's too), if one was created."""
        if self._google is not None:
            await self._google.exchange.aclose()
            self._google.close()


def build_credential_broker(
    settings: Settings,
    *,
    store: TenancySource | None = None,
    adapter_defaults: Mapping[str, Mapping[str, Any]] | None = None,
) -> CredentialBroker:
    """The gateway's credential broker.

    Args:
        settings: The process settings (no credential settings today; kept for symmetry and future knobs).
        store: Where company overrides are read when ``adapter_defaults`` is not given.
        adapter_defaults: The operator's adapter configurations, when the caller passes configurations
            already merged with company overrides (see :class:`CredentialBroker`).

    Returns:
        The broker.
    """
    del settings
    return CredentialBroker(store=store, adapter_defaults=adapter_defaults)
