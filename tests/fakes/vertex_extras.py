"""The fake Vertex AI's other endpoints: Google's Security Token Service, deployed-endpoint prediction and batch
prediction jobs (mounted by ``fakes.vertex``; they share its tokens).

- ``POST /v1/token`` (STS, RFC 8693 token exchange): a valid source token plus ``options`` holding an
  ``accessBoundary`` → a fresh downscoped token (``ya29.ds-N``), which the fake Vertex then accepts;
- ``POST /v1/projects/{p}/locations/{l}/endpoints/{e}:predict``: ``{instances, parameters}`` →
  ``{predictions, deployedModelId, model, modelDisplayName, modelVersionId}`` (each prediction echoes its instance
  with a score);
- ``POST /v1/projects/{p}/locations/{l}/batchPredictionJobs``, ``GET .../batchPredictionJobs/{id}``,
  ``POST .../batchPredictionJobs/{id}:cancel``: jobs move ``JOB_STATE_PENDING → JOB_STATE_RUNNING →
  JOB_STATE_SUCCEEDED`` one step per GET (or ``JOB_STATE_CANCELLING → JOB_STATE_CANCELLED`` once cancelled).
"""

from __future__ import annotations

import json
import urllib.parse
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

if TYPE_CHECKING:
    from .vertex import FakeVertex

BATCH_STEPS = ("JOB_STATE_PENDING", "JOB_STATE_RUNNING", "JOB_STATE_SUCCEEDED")


@dataclass
class Exchange:
    """One token exchange the STS fake answered."""

    source: str
    token: str
    boundary: dict[str, Any]


@dataclass
class Extras:
    """What the extra endpoints saw and hold."""

    exchanges: list[Exchange] = field(default_factory=list)
    predictions: list[dict[str, Any]] = field(default_factory=list)
    jobs: dict[str, dict[str, Any]] = field(default_factory=dict)
    fail_next_batch: bool = False


def _error(code: int, status: str) -> JSONResponse:
    return JSONResponse({"error": {"code": code, "message": "internal detail", "status": status}}, status_code=code)


class ExtraRoutes:
    """The extra endpoints, bound to one fake."""

    def __init__(self, fake: FakeVertex) -> None:
        self.fake = fake

    async def sts(self, request: Request) -> Response:
        fields = {k: v[0] for k, v in urllib.parse.parse_qs((await request.body()).decode()).items()}
        if fields.get("grant_type") != "urn:ietf:params:oauth:grant-type:token-exchange":
            return JSONResponse({"error": "unsupported_grant_type"}, status_code=400)
        source = fields.get("subject_token", "")
        if not self.fake.tokens.valid(source) or source.startswith("ya29.ds-"):
            return JSONResponse({"error": "invalid_grant"}, status_code=400)
        try:
            boundary = json.loads(fields.get("options", ""))["accessBoundary"]
        except (ValueError, KeyError):
            return JSONResponse({"error": "invalid_request"}, status_code=400)
        with self.fake.tokens.lock:
            token = f"ya29.ds-{len(self.fake.extras.exchanges) + 1}"
            self.fake.tokens.issued.append(token)
        self.fake.extras.exchanges.append(Exchange(source=source, token=token, boundary=boundary))
        return JSONResponse(
            {
                "access_token": token,
                "issued_token_type": "urn:ietf:params:oauth:token-type:access_token",
                "token_type": "Bearer",
                "expires_in": 600,
            }
        )

    def authorized(self, request: Request) -> str | None:
        token = request.headers.get("authorization", "").removeprefix("Bearer ").strip()
        return token if self.fake.tokens.valid(token) else None

    async def predict(self, request: Request) -> Response:
        endpoint, _, method = request.path_params["target"].partition(":")
        if method != "predict":
            return _error(404, "NOT_FOUND")
        if self.authorized(request) is None:
            return _error(401, "UNAUTHENTICATED")
        scripted = self.fake.faults.take()
        if scripted is not None:
            return JSONResponse(scripted.body, status_code=scripted.status)
        if endpoint.startswith("missing"):
            return _error(404, "NOT_FOUND")
        body = json.loads(await request.body())
        self.fake.extras.predictions.append({"endpoint": endpoint, **body})
        predictions = [{"instance": i, "score": round(0.5 + 0.1 * n, 2)} for n, i in enumerate(body["instances"])]
        return JSONResponse(
            {
                "predictions": predictions,
                "deployedModelId": "7001",
                "model": f"projects/{request.path_params['project']}/locations/us-central1/models/42",
                "modelDisplayName": "trade-in-pricer",
                "modelVersionId": "3",
            }
        )

    def job_name(self, request: Request, job_id: str) -> str:
        p = request.path_params
        return f"projects/{p['project']}/locations/{p['location']}/batchPredictionJobs/{job_id}"

    async def batch_create(self, request: Request) -> Response:
        if self.authorized(request) is None:
            return _error(401, "UNAUTHENTICATED")
        if self.fake.extras.fail_next_batch:
            self.fake.extras.fail_next_batch = False
            return _error(400, "INVALID_ARGUMENT")
        body = json.loads(await request.body())
        job_id = str(9000 + len(self.fake.extras.jobs))
        job = {
            **body,
            "name": self.job_name(request, job_id),
            "state": BATCH_STEPS[0],
            "createTime": "2026-11-24T10:00:00Z",
            "_step": 0,
        }
        self.fake.extras.jobs[job_id] = job
        return JSONResponse({k: v for k, v in job.items() if not k.startswith("_")})

    async def batch_job(self, request: Request) -> Response:
        if self.authorized(request) is None:
            return _error(401, "UNAUTHENTICATED")
        job_id, _, method = request.path_params["target"].partition(":")
        job = self.fake.extras.jobs.get(job_id)
        if job is None:
            return _error(404, "NOT_FOUND")
        if request.method == "POST" and method == "cancel":
            if job["state"] not in ("JOB_STATE_SUCCEEDED", "JOB_STATE_FAILED", "JOB_STATE_CANCELLED"):
                job["state"] = "JOB_STATE_CANCELLING"
            return JSONResponse({})
        if request.method == "GET" and not method:
            if job["state"] == "JOB_STATE_CANCELLING":
                job["state"] = "JOB_STATE_CANCELLED"
            elif job["state"] in BATCH_STEPS[:-1]:
                job["_step"] += 1
                job["state"] = BATCH_STEPS[job["_step"]]
                if job["state"] == "JOB_STATE_SUCCEEDED":
                    job["outputInfo"] = {"gcsOutputDirectory": "gs://demo-bucket/out/prediction-1"}
                    job["completionStats"] = {"successfulCount": "3", "failedCount": "0"}
            return JSONResponse({k: v for k, v in job.items() if not k.startswith("_")})
        return _error(404, "NOT_FOUND")

    def routes(self) -> list[Route]:
        base = "/v1/projects/{project}/locations/{location}"
        return [
            Route("/v1/token", self.sts, methods=["POST"]),
            Route(f"{base}/endpoints/{{target}}", self.predict, methods=["POST"]),
            Route(f"{base}/batchPredictionJobs", self.batch_create, methods=["POST"]),
            Route(f"{base}/batchPredictionJobs/{{target}}", self.batch_job, methods=["GET", "POST"]),
        ]


def routes(fake: FakeVertex) -> list[Route]:
    """The extra routes, bound to ``fake``."""
    return ExtraRoutes(fake).routes()
