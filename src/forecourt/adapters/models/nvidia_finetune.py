"""``nvidia.fineTune.*``: fine-tuning jobs on a NeMo Customizer-compatible jobs API (contract: docs/models.md).

- ``POST {base}/v1/customization/jobs`` ``{config, dataset: {name, namespace?}, hyperparameters?, output_model?,
  description?}`` → the job ``{id, status, ...}``;
- ``GET {base}/v1/customization/jobs/{id}/status`` → ``{id, status, status_details?: {percentage_done,
  epochs_completed, ...}, output_model?}``;
- ``POST {base}/v1/customization/jobs/{id}/cancel`` → ``{id, status}``.

Customizer statuses ``created``/``pending`` → ``pending``, ``running`` → ``running``, ``completed`` →
``succeeded``, ``failed`` → ``failed``, ``cancelled`` → ``cancelled``. The base URL is the ``nvidia`` adapter's
``customizer.base_url`` (the operator's, or a company's with ``allow_company_endpoints``); the call's credential
(e.g. a per-call signed token, or a NIM key) is sent as is. Each job holds one of the company's GPU job slots
(:mod:`forecourt.adapters.models.gpu_quota`) from submission until it ends.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from forecourt.adapters.models.common import (
    LoopLocal,
    auth_headers,
    endpoint_http_client,
    parse_retry_after,
    upstream_error,
)
from forecourt.adapters.models.jobs import RemoteState
from forecourt.contract import ExecutionContext
from forecourt.errors import Timeout
from forecourt.store.model_jobs import ModelJob

if TYPE_CHECKING:  # httpx comes with the runtime's first HTTP client (endpoint_http_client)
    import httpx

    from forecourt.adapters.models.nvidia import NvidiaAdapter

logger = logging.getLogger(__name__)

RUNTIME = "nvidia"
STATUS = {
    "created": "pending",
    "pending": "pending",
    "running": "running",
    "completed": "succeeded",
    "failed": "failed",
    "cancelled": "cancelled",
}
_SUBMITTED = ("config", "dataset", "hyperparameters", "output_model", "description")


def _state(body: Mapping[str, Any]) -> RemoteState:
    remote = str(body.get("status") or "")
    status = STATUS.get(remote, "running")
    result: dict[str, Any] = {}
    details = body.get("status_details")
    if isinstance(details, Mapping):
        result["progress"] = {
            k: details[k] for k in ("percentage_done", "epochs_completed", "steps_completed") if k in details
        }
    if body.get("output_model"):
        result["output_model"] = str(body["output_model"])[:200]
    error = {"code": "models.job_failed"} if status == "failed" else None
    return RemoteState(remote_status=remote, status=status, result=result, error=error)


class CustomizerJobs:
    """The Customizer's jobs API, as a :class:`~forecourt.adapters.models.jobs.JobRuntime`."""

    runtime = RUNTIME
    kind = "fine_tune"

    def __init__(self, adapter: NvidiaAdapter) -> None:
        self.adapter = adapter
        self._clients: LoopLocal[httpx.AsyncClient] = LoopLocal(lambda c: c.aclose())

    async def _request(self, context: ExecutionContext, method: str, path: str, body: Any = None) -> dict[str, Any]:
        url = await self.adapter.endpoint(context, "customizer", "base_url")
        base, pin = url.rstrip("/"), self.adapter.pinned.get(url)
        import httpx

        client = self._clients.get(f"{base}|{pin}", lambda: endpoint_http_client(pin))
        timeout = self.adapter.timeout(context)
        try:
            response = await client.request(
                method, f"{base}{path}", json=body, headers=auth_headers(context.credential), timeout=timeout
            )
        except httpx.TimeoutException as exc:
            logger.warning("NeMo Customizer timed out")
            raise Timeout(details={"runtime": RUNTIME}) from exc
        except httpx.HTTPError as exc:
            logger.warning("NeMo Customizer unreachable: %s", type(exc).__name__)
            raise upstream_error(RUNTIME, None) from exc
        if response.status_code >= 400:
            logger.warning("NeMo Customizer answered HTTP %d", response.status_code)
            retry_after = parse_retry_after(response.headers.get("retry-after"))
            raise upstream_error(RUNTIME, response.status_code, retry_after=retry_after)
        try:
            data = response.json()
        except ValueError as exc:
            raise upstream_error(RUNTIME, 502) from exc
        return data if isinstance(data, dict) else {}

    async def submit(self, payload: Mapping[str, Any], context: ExecutionContext) -> tuple[str, RemoteState]:
        """``POST /v1/customization/jobs``."""
        body = {k: payload[k] for k in _SUBMITTED if k in payload}
        job = await self._request(context, "POST", "/v1/customization/jobs", body)
        remote_id = str(job.get("id") or "")
        if not remote_id:
            raise upstream_error(RUNTIME, 502)
        return remote_id, _state(job)

    async def fetch(self, job: ModelJob, context: ExecutionContext) -> RemoteState:
        """``GET /v1/customization/jobs/{id}/status``."""
        return _state(await self._request(context, "GET", f"/v1/customization/jobs/{job.remote_id}/status"))

    async def cancel(self, job: ModelJob, context: ExecutionContext) -> RemoteState:
        """``POST /v1/customization/jobs/{id}/cancel``."""
        return _state(await self._request(context, "POST", f"/v1/customization/jobs/{job.remote_id}/cancel"))

    async def aclose(self) -> None:
        """Close the HTTP clients of the running loop."""
        await self._clients.aclose()


class JobSlots:
    """Fine-tuning jobs hold the company's GPU job slots from submission until they end."""

    def __init__(self, adapter: NvidiaAdapter) -> None:
        self.adapter = adapter

    async def before_submit(self, context: ExecutionContext, job_id: str) -> bool:
        """Take a job slot (``gpu.quota_exceeded`` when none is free)."""
        quota = self.adapter.quota
        return await quota.take(context, "jobs", job_id, quota.job_lease_s())

    async def after_end(self, context: ExecutionContext, job: ModelJob) -> None:
        """Give the job's slot back."""
        await self.adapter.quota.give_back(context, "jobs", job.company_id, job.id)
