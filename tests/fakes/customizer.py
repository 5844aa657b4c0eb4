"""A small NeMo Customizer-compatible jobs API on loopback: the contract in docs/models.md and its state machine.

``POST /v1/customization/jobs`` creates a job (``created``); every ``GET .../jobs/{id}/status`` moves it one step
along ``created → pending → running → completed`` (a job whose ``config`` starts with ``fail`` goes from
``running`` to ``failed``); ``POST .../jobs/{id}/cancel`` makes an unfinished job ``cancelled``; :meth:`end`
ends a job at once (the next status read reports it), as the Customizer does on its own schedule. Errors are
``{"detail": ...}`` with 404 (unknown job), 409 (cancelling a finished job is answered as it is) or 422.
Scripted faults answer the next create or cancel; :attr:`FakeCustomizer.cancels` keeps the jobs asked to cancel.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from .faults import Faults
from .server import LoopbackServer, serve

STEPS = ("created", "pending", "running", "completed")
TERMINAL = ("completed", "failed", "cancelled")


class FakeCustomizer:
    """The fake's jobs and what it saw."""

    def __init__(self) -> None:
        self.server: LoopbackServer | None = None
        self.faults = Faults()
        self.reset()

    def reset(self) -> None:
        """Forget every job (the server keeps running)."""
        self.faults.release()
        self.faults = Faults()
        self.jobs: dict[str, dict[str, Any]] = {}
        self.created: list[dict[str, Any]] = []
        self.cancels: list[str] = []
        self.auth_seen: list[str | None] = []
        self.status_polls = 0

    @property
    def url(self) -> str:
        assert self.server is not None
        return self.server.base_url

    def end(self, job_id: str, status: str = "completed") -> None:
        """End the job: the next status read answers ``status`` (``completed``, ``failed`` or ``cancelled``)."""
        assert status in TERMINAL, status
        self.jobs[job_id]["status"] = status

    def _view(self, job: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in job.items() if not k.startswith("_")}

    async def create(self, request: Request) -> Response:
        self.auth_seen.append(request.headers.get("authorization"))
        scripted = self.faults.take()
        if scripted is not None:
            return JSONResponse(scripted.body, status_code=scripted.status, headers=scripted.headers)
        body = await request.json()
        if not isinstance(body.get("config"), str) or not isinstance(body.get("dataset"), dict):
            return JSONResponse({"detail": "config and dataset are required"}, status_code=422)
        job_id = f"cust-{len(self.jobs) + 1:04d}"
        job = {
            "id": job_id,
            "status": "created",
            "config": body["config"],
            "dataset": body["dataset"],
            "hyperparameters": body.get("hyperparameters", {}),
            "output_model": body.get("output_model") or f"default/{body['config'].split('@')[0]}-ft@{job_id}",
            "created_at": "2026-11-24T10:00:00Z",
            "_step": 0,
        }
        self.jobs[job_id] = job
        self.created.append(body)
        return JSONResponse(self._view(job))

    async def status(self, request: Request) -> Response:
        self.auth_seen.append(request.headers.get("authorization"))
        self.status_polls += 1
        job = self.jobs.get(request.path_params["job_id"])
        if job is None:
            return JSONResponse({"detail": "job not found"}, status_code=404)
        if job["status"] not in TERMINAL:
            job["_step"] += 1
            step = STEPS[min(job["_step"], len(STEPS) - 1)]
            job["status"] = "failed" if step == "completed" and job["config"].startswith("fail") else step
        done = {"running": 50.0, "completed": 100.0}.get(job["status"], 0.0)
        details = {"percentage_done": done, "epochs_completed": 1 if done == 100.0 else 0}
        out = {"id": job["id"], "status": job["status"], "status_details": details}
        if job["status"] == "completed":
            out["output_model"] = job["output_model"]
        return JSONResponse(out)

    async def cancel(self, request: Request) -> Response:
        self.auth_seen.append(request.headers.get("authorization"))
        self.cancels.append(request.path_params["job_id"])
        scripted = self.faults.take()
        if scripted is not None:
            return JSONResponse(scripted.body, status_code=scripted.status, headers=scripted.headers)
        job = self.jobs.get(request.path_params["job_id"])
        if job is None:
            return JSONResponse({"detail": "job not found"}, status_code=404)
        if job["status"] not in TERMINAL:
            job["status"] = "cancelled"
        return JSONResponse({"id": job["id"], "status": job["status"]})

    def app(self) -> Starlette:
        return Starlette(
            routes=[
                Route("/v1/customization/jobs", self.create, methods=["POST"]),
                Route("/v1/customization/jobs/{job_id}/status", self.status),
                Route("/v1/customization/jobs/{job_id}/cancel", self.cancel, methods=["POST"]),
            ]
        )


@contextmanager
def fake_customizer() -> Iterator[FakeCustomizer]:
    """A running fake Customizer."""
    fake = FakeCustomizer()
    with serve(fake.app()) as server:
        fake.server = server
        try:
            yield fake
        finally:
            fake.faults.release()
