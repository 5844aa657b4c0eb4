"""``admin.nvidia.models.*``: Triton's model repository API as admin actions (list, load, unload, pin a version).

Who may: the company's administrators (``is_admin`` members of the company named in the payload) or the operator.
Loading and unloading change a server every company using it shares, so a company administrator needs the
operator's ``triton.allow_company_model_control: true`` as well; a model outside the ``triton.models`` allowlist
(when one is configured) is refused. Pins are the company's ``nvidia`` adapter setting
(``triton.pinned_versions``), written through ``admin.adapters.upsert`` so its audit record and cache invalidation
are the usual ones.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from forecourt.adapters.models.triton_versions import group_index, pinned_versions, triton_errors, version_config
from forecourt.contract import AdapterResult, ExecutionContext
from forecourt.errors import Forbidden, InternalError, InvalidParams

if TYPE_CHECKING:
    from forecourt.adapters.models.nvidia import NvidiaAdapter

logger = logging.getLogger(__name__)

ADMIN_ACTIONS = frozenset(
    {"admin.nvidia.models.list", "admin.nvidia.models.load", "admin.nvidia.models.unload", "admin.nvidia.models.pin"}
)


def _check_admin(payload: Mapping[str, Any], context: ExecutionContext) -> str:
    company_id = str(payload["company_id"])
    principal = context.principal
    if principal.method != "internal":
        member = principal.member
        if member is None or not member.is_admin or principal.company_id != company_id:
            raise Forbidden("Only the company's administrators may do this.")
    return company_id


def _section(config: Mapping[str, Any]) -> Mapping[str, Any]:
    raw = config.get("triton") or {}
    return raw if isinstance(raw, Mapping) else {}


def _check_model(model: str, section: Mapping[str, Any]) -> None:
    allowed = section.get("models") or []
    if allowed and model not in allowed:
        raise InvalidParams("This Triton model is not offered here.", details={"model": model[:200]})


class NvidiaAdmin:
    """Runs the admin actions with the NVIDIA adapter's Triton client and endpoint."""

    def __init__(self, adapter: NvidiaAdapter) -> None:
        self.adapter = adapter

    async def execute(self, payload: Mapping[str, Any], context: ExecutionContext) -> AdapterResult:
        """Check who calls, then run the action."""
        company_id = _check_admin(payload, context)
        name = context.action.name
        section = _section(context.adapter_config)
        url, client, headers = await self.adapter.triton_client(context)
        if name == "admin.nvidia.models.list":
            with triton_errors():
                entries = await client.get_model_repository_index(headers=dict(headers))
            self.adapter.versions.remember(url, entries)
            output: Any = {"items": group_index(entries, pinned_versions(section))}
        elif name == "admin.nvidia.models.pin":
            output = await self._pin(payload, context, company_id, section)
        else:
            output = await self._control(payload, context, url, client, headers, section)
        return AdapterResult(output=output, result_type="admin.result")

    async def _control(
        self,
        payload: Mapping[str, Any],
        context: ExecutionContext,
        url: str,
        client: Any,
        headers: Mapping[str, str],
        section: Mapping[str, Any],
    ) -> dict[str, Any]:
        model = str(payload["model"])
        _check_model(model, section)
        operator = _section(self.adapter.defaults)
        if context.principal.method != "internal" and operator.get("allow_company_model_control") is not True:
            raise Forbidden("Only the operator may load or unload models on this Triton server.")
        versions = [str(v) for v in payload.get("versions") or []]
        with triton_errors():
            if context.action.name == "admin.nvidia.models.load":
                await self._load(client, model, versions, headers)
            else:
                await client.unload_model(model, headers=dict(headers))
            entries = await client.get_model_repository_index(headers=dict(headers))
        self.adapter.versions.remember(url, entries)
        logger.info("%s %s on Triton", context.action.name.rsplit(".", 1)[-1], model)
        views = [v for v in group_index(entries, pinned_versions(section)) if v["model"] == model]
        return views[0] if views else {"model": model, "versions": [], "ready_versions": [], "pinned": None}

    @staticmethod
    async def _load(client: Any, model: str, versions: list[str], headers: Mapping[str, str]) -> None:
        from tritonclient.utils import InferenceServerException  # type: ignore[import-untyped]

        if not versions:
            await client.load_model(model, headers=dict(headers))
            return
        # Triton takes an override as the whole configuration: send the served one back with its versions changed
        # (a model not loaded yet is loaded first, so the server can report its configuration).
        try:
            current = await client.get_model_config(model, headers=dict(headers))
        except InferenceServerException:
            await client.load_model(model, headers=dict(headers))
            current = await client.get_model_config(model, headers=dict(headers))
        await client.load_model(model, headers=dict(headers), config=version_config(current, versions))

    async def _pin(
        self, payload: Mapping[str, Any], context: ExecutionContext, company_id: str, section: Mapping[str, Any]
    ) -> dict[str, Any]:
        model = str(payload["model"])
        _check_model(model, section)
        version = payload.get("version")
        async with context.store.transaction() as uow:
            setting = await uow.tenancy.get_adapter_setting(company_id, "nvidia")
        config = dict(setting.config) if setting is not None else {}
        triton = dict(config.get("triton") or {})
        pins = {str(k): str(v) for k, v in dict(triton.get("pinned_versions") or {}).items()}
        if version is None:
            pins.pop(model, None)
        else:
            pins[model] = str(version)
        triton["pinned_versions"] = pins
        config["triton"] = triton
        if context.invoke is None:
            raise InternalError()
        await context.invoke(
            "admin.adapters.upsert", {"company_id": company_id, "adapter_id": "nvidia", "config": config}
        )
        return {"model": model, "pinned": pins.get(model)}
