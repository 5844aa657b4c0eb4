"""Vertex AI beyond generateContent: ``vertex.predict`` on deployed endpoints and batch prediction jobs.

Google's Python client for these (``google-cloud-aiplatform``) is not installed (it brings dozens of packages);
both APIs are small JSON documents over REST, sent with the call's own access token (the broker's per-call
credential, downscoped when configured):

- ``POST {base}/{v}/projects/{p}/locations/{l}/endpoints/{endpoint}:predict`` ``{instances, parameters?}`` →
  ``{predictions, deployedModelId, model, modelVersionId, ...}`` (``projects.locations.endpoints.predict``);
- ``POST {base}/{v}/projects/{p}/locations/{l}/batchPredictionJobs`` (a ``BatchPredictionJob``), ``GET
  {base}/{v}/{name}``, ``POST {base}/{v}/{name}:cancel``.

``{base}`` is the adapter's ``base_url`` or ``https://{location}-aiplatform.googleapis.com/``. Batch states map to
Forecourt's job statuses: ``QUEUED``/``PENDING`` → ``pending``, ``RUNNING``/``UPDATING``/``PAUSED`` →
``running``, ``CANCELLING`` → ``cancelling``, ``SUCCEEDED``/``PARTIALLY_SUCCEEDED`` → ``succeeded``,
``FAILED``/``EXPIRED`` → ``failed``, ``CANCELLED`` → ``cancelled``.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from forecourt.adapters.errors import RuntimeNotConfigured
from forecourt.adapters.models.common import (
    LoopLocal,
    auth_headers,
    endpoint_http_client,
    parse_retry_after,
    upstream_error,
)
from forecourt.adapters.models.jobs import RemoteState
from forecourt.contract import AdapterResult, ExecutionContext
from forecourt.errors import InvalidParams, Timeout
from forecourt.store.model_jobs import ModelJob

if TYPE_CHECKING:  # httpx comes with the runtime's first HTTP client (endpoint_http_client)
    import httpx

    from forecourt.adapters.models.vertex import VertexAdapter

logger = logging.getLogger(__name__)

RUNTIME = "vertex"
PREDICTION_RESULT = "model.prediction"
BATCH_STATES = {
    "JOB_STATE_QUEUED": "pending",
    "JOB_STATE_PENDING": "pending",
    "JOB_STATE_RUNNING": "running",
    "JOB_STATE_UPDATING": "running",
    "JOB_STATE_PAUSED": "running",
    "JOB_STATE_CANCELLING": "cancelling",
    "JOB_STATE_SUCCEEDED": "succeeded",
    "JOB_STATE_PARTIALLY_SUCCEEDED": "succeeded",
    "JOB_STATE_FAILED": "failed",
    "JOB_STATE_EXPIRED": "failed",
    "JOB_STATE_CANCELLED": "cancelled",
}


class VertexRest:
    """JSON-over-REST calls to Vertex AI with the call's token (one HTTP client per event loop)."""

    def __init__(self, adapter: VertexAdapter) -> None:
        self.adapter = adapter
        self._clients: LoopLocal[httpx.AsyncClient] = LoopLocal(lambda c: c.aclose())

    async def base(self, context: ExecutionContext) -> tuple[str, str]:
        """``({base_url}{api_version}/, projects/{p}/locations/{l})`` of this call."""
        config = context.adapter_config
        project, location = config.get("project"), config.get("location")
        if not project or not location:
            raise RuntimeNotConfigured(details={"runtime": RUNTIME})
        base_url = await self.adapter.endpoint(context) or f"https://{location}-aiplatform.googleapis.com/"
        version = str(config.get("api_version") or "v1")
        return f"{base_url.rstrip('/')}/{version}/", f"projects/{project}/locations/{location}"

    async def request(self, context: ExecutionContext, method: str, url: str, body: Any = None) -> dict[str, Any]:
        """One call; Google's errors become gateway errors (never carrying Google's message)."""
        credential = context.credential
        if credential is None or credential.kind != "bearer" or not credential.value:
            raise RuntimeNotConfigured("Vertex AI needs a Google credential.", details={"runtime": RUNTIME})
        pin = self.adapter.pinned_for(url)
        import httpx

        client = self._clients.get(f"vertex|{pin}", lambda: endpoint_http_client(pin))
        timeout = float(context.adapter_config.get("timeout_s", context.action.timeout_s))
        try:
            response = await client.request(method, url, json=body, headers=auth_headers(credential), timeout=timeout)
        except httpx.TimeoutException as exc:
            logger.warning("Vertex AI timed out")
            raise Timeout(details={"runtime": RUNTIME}) from exc
        except httpx.HTTPError as exc:
            logger.warning("Vertex AI unreachable: %s", type(exc).__name__)
            raise upstream_error(RUNTIME, None) from exc
        if response.status_code >= 400:
            logger.warning("Vertex AI answered HTTP %d", response.status_code)
            retry_after = parse_retry_after(response.headers.get("retry-after"))
            raise upstream_error(RUNTIME, response.status_code, retry_after=retry_after)
        try:
            data = response.json()
        except ValueError as exc:
            raise upstream_error(RUNTIME, 502) from exc
        return data if isinstance(data, dict) else {}

    async def predict(self, payload: Mapping[str, Any], context: ExecutionContext) -> AdapterResult:
        """``endpoints.predict``: the endpoint's predictions for ``instances``."""
        endpoint = str(payload["endpoint"])
        allowed = context.adapter_config.get("endpoints") or []
        if allowed and endpoint not in allowed:
            raise InvalidParams("This Vertex AI endpoint is not offered here.", details={"endpoint": endpoint[:200]})
        base, parent = await self.base(context)
        body: dict[str, Any] = {"instances": list(payload["instances"])}
        if payload.get("parameters") is not None:
            body["parameters"] = payload["parameters"]
        data = await self.request(context, "POST", f"{base}{parent}/endpoints/{endpoint}:predict", body)
        output = {
            "predictions": data.get("predictions", []),
            "deployed_model_id": data.get("deployedModelId"),
            "model": data.get("model"),
            "model_version_id": data.get("modelVersionId"),
        }
        metadata = {
            "runtime": RUNTIME,
            "endpoint": endpoint,
            "model": data.get("modelDisplayName") or data.get("model"),
            "tokens": None,
            "count": len(output["predictions"]),
        }
        return AdapterResult(output=output, result_type=PREDICTION_RESULT, metadata=metadata)

    async def aclose(self) -> None:
        """Close the HTTP clients of the running loop."""
        await self._clients.aclose()


def _batch_state(job: Mapping[str, Any]) -> RemoteState:
    remote = str(job.get("state") or "")
    status = BATCH_STATES.get(remote, "running")
    result: dict[str, Any] = {}
    info = job.get("outputInfo")
    if isinstance(info, Mapping):
        result["output"] = {k: str(v) for k, v in info.items() if k in ("gcsOutputDirectory", "bigqueryOutputTable")}
    stats = job.get("completionStats")
    if isinstance(stats, Mapping):
        result["completion_stats"] = {k: stats[k] for k in ("successfulCount", "failedCount") if k in stats}
    error = {"code": "models.job_failed"} if status == "failed" else None
    return RemoteState(remote_status=remote, status=status, result=result, error=error)


class BatchPredictionJobs:
    """Vertex AI batch prediction as a :class:`~forecourt.adapters.models.jobs.JobRuntime`."""

    runtime = RUNTIME
    kind = "batch_prediction"

    def __init__(self, rest: VertexRest) -> None:
        self.rest = rest

    async def submit(self, payload: Mapping[str, Any], context: ExecutionContext) -> tuple[str, RemoteState]:
        """``batchPredictionJobs.create``."""
        base, parent = await self.rest.base(context)
        body: dict[str, Any] = {
            "displayName": str(payload.get("display_name") or "forecourt-batch"),
            "model": str(payload["model"]),
            "inputConfig": {
                "instancesFormat": str(payload.get("instances_format") or "jsonl"),
                "gcsSource": {"uris": list(payload["input_uris"])},
            },
            "outputConfig": {
                "predictionsFormat": str(payload.get("predictions_format") or "jsonl"),
                "gcsDestination": {"outputUriPrefix": str(payload["output_uri_prefix"])},
            },
        }
        if payload.get("model_parameters") is not None:
            body["modelParameters"] = payload["model_parameters"]
        job = await self.rest.request(context, "POST", f"{base}{parent}/batchPredictionJobs", body)
        name = str(job.get("name") or "")
        if not name.startswith(f"{parent}/batchPredictionJobs/"):
            raise upstream_error(RUNTIME, 502)
        return name, _batch_state(job)

    async def fetch(self, job: ModelJob, context: ExecutionContext) -> RemoteState:
        """``batchPredictionJobs.get``."""
        base, _ = await self.rest.base(context)
        return _batch_state(await self.rest.request(context, "GET", f"{base}{job.remote_id}"))

    async def cancel(self, job: ModelJob, context: ExecutionContext) -> RemoteState:
        """``batchPredictionJobs.cancel``, then the job as it now is."""
        base, _ = await self.rest.base(context)
        await self.rest.request(context, "POST", f"{base}{job.remote_id}:cancel", {})
        return _batch_state(await self.rest.request(context, "GET", f"{base}{job.remote_id}"))
