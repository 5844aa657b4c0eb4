"""Vertex AI actions beside ``vertex.invokeModel`` (seed 001 §5: "Maps ``vertex.invokeModel`` to
``projects.locations.models.predict``. Handles session state, memory, and long-running jobs").

- ``vertex.predict``: online prediction on a deployed endpoint (``endpoints.predict``);
- ``vertex.batchPredict.create|get|cancel|list``: batch prediction jobs, stored and polled like every model job;
- ``vertex.sessions.get|delete``: the conversation memory ``vertex.invokeModel`` keeps for a session
  (``memory: true``); delete erases it at once.

All run on the ``vertex`` adapter (its project, location, endpoint and per-call Google credential).
"""

from __future__ import annotations

from typing import Any

from forecourt.actions.base import Action, Catalogue
from forecourt.actions.gpu import JOB_ID, MODELS_READ, MODELS_WRITE

VERTEX_ADAPTER = "vertex"
SESSION_ID = {"type": "string", "minLength": 1, "maxLength": 128, "pattern": "^[A-Za-z0-9._:-]+$"}
_GCS_URI = {"type": "string", "minLength": 6, "maxLength": 1024, "pattern": "^gs://[a-z0-9][a-z0-9._-]*(/[^\\s]*)?$"}


def _object(props: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"type": "object", "properties": props, "required": required, "additionalProperties": False}


def _action(
    name: str,
    title: str,
    description: str,
    schema: dict[str, Any],
    *,
    write: bool,
    result_type: str,
    pii: bool = False,
    timeout_s: float = 30.0,
    example: dict[str, Any] | None = None,
) -> Action:
    return Action(
        name=name,
        type="model.invoke",
        title=title,
        description=description,
        input_schema=schema,
        output_schema=None,
        adapter=VERTEX_ADAPTER,
        scope=MODELS_WRITE if write else MODELS_READ,
        side_effect=write,
        idempotent=not write,
        pii=pii,
        timeout_s=timeout_s,
        dealer_scoped=False,
        domain="models",
        result_type=result_type,
        tags=("models", "vertex"),
        example=example,
    )


VERTEX_ACTIONS: tuple[Action, ...] = (
    Action(
        name="vertex.predict",
        type="model.invoke",
        title="Predict with a deployed Vertex AI endpoint",
        description=(
            "Online prediction on a Vertex AI endpoint: instances in, predictions out. Use it for a custom model "
            "the company deployed on a Vertex AI endpoint (for text generation use vertex.invokeModel)."
        ),
        input_schema=_object(
            {
                "endpoint": {"type": "string", "minLength": 1, "maxLength": 128, "pattern": "^[A-Za-z0-9_-]+$"},
                "instances": {"type": "array", "minItems": 1, "maxItems": 1000},
                "parameters": {"type": "object"},
            },
            ["endpoint", "instances"],
        ),
        output_schema=None,
        adapter=VERTEX_ADAPTER,
        scope=MODELS_READ,
        side_effect=False,
        cacheable=False,
        pii=True,
        timeout_s=60.0,
        dealer_scoped=False,
        domain="models",
        result_type="model.prediction",
        tags=("models", "vertex"),
        example={"endpoint": "1234567890", "instances": [{"mileage": 42000, "year": 2019}]},
    ),
    _action(
        "vertex.batchPredict.create",
        "Start a Vertex AI batch prediction job",
        (
            "Submit a batch prediction job (model, input_uris gs://..., output_uri_prefix gs://...); Forecourt "
            "polls it until it ends and emits a model.job event. Use it to score many records at once, e.g. a "
            "nightly batch."
        ),
        _object(
            {
                "model": {"type": "string", "minLength": 1, "maxLength": 300},
                "display_name": {"type": "string", "maxLength": 128},
                "input_uris": {"type": "array", "items": _GCS_URI, "minItems": 1, "maxItems": 100},
                "instances_format": {"enum": ["jsonl", "csv", "bigquery", "file-list"]},
                "output_uri_prefix": _GCS_URI,
                "predictions_format": {"enum": ["jsonl", "csv", "bigquery"]},
                "model_parameters": {"type": "object"},
            },
            ["model", "input_uris", "output_uri_prefix"],
        ),
        write=True,
        result_type="model.job",
        example={
            "model": "publishers/google/models/gemini-2.5-flash",
            "input_uris": ["gs://dealer-batch/in/leads.jsonl"],
            "output_uri_prefix": "gs://dealer-batch/out/",
        },
    ),
    _action(
        "vertex.batchPredict.get",
        "Show a batch prediction job",
        (
            "Fetch a batch prediction job as last checked (refresh: true asks Vertex AI first). Use it to follow a "
            "job started with vertex.batchPredict.create."
        ),
        _object({"job_id": JOB_ID, "refresh": {"type": "boolean"}}, ["job_id"]),
        write=False,
        result_type="model.job",
        example={"job_id": "bp_0001"},
    ),
    _action(
        "vertex.batchPredict.cancel",
        "Cancel a batch prediction job",
        (
            "Ask Vertex AI to cancel the job; a job that already ended is answered as it is. Use it to stop a batch "
            "job that is no longer needed."
        ),
        _object({"job_id": JOB_ID}, ["job_id"]),
        write=True,
        result_type="model.job",
        example={"job_id": "bp_0001"},
    ),
    _action(
        "vertex.batchPredict.list",
        "List batch prediction jobs",
        (
            "List the company's batch prediction jobs, newest first ({items, next_cursor}). Use it to find earlier "
            "jobs and their status."
        ),
        _object(
            {
                "status": {"type": "string", "maxLength": 32},
                "cursor": {"type": "string", "maxLength": 200},
                "limit": {"type": "integer", "minimum": 1, "maximum": 100},
            },
            [],
        ),
        write=False,
        result_type="model.job",
        example={"limit": 10},
    ),
    _action(
        "vertex.sessions.get",
        "Show a conversation's memory",
        (
            "Show the conversation turns vertex.invokeModel keeps for a session (session_id, else the calling "
            "session's own). Use it to review what a model remembers of a conversation."
        ),
        _object({"session_id": SESSION_ID}, []),
        write=False,
        result_type="model.session",
        pii=True,
        example={"session_id": "sess-ana-0001"},
    ),
    _action(
        "vertex.sessions.delete",
        "Erase a conversation's memory",
        ("Erase the turns kept for a session at once. Use it when a customer asks for a conversation to be forgotten."),
        _object({"session_id": SESSION_ID}, []),
        write=True,
        result_type="model.session",
        example={"session_id": "sess-ana-0001"},
    ),
)


def register_vertex_actions(catalogue: Catalogue) -> None:
    """Add the Vertex AI prediction, batch and session actions to ``catalogue``."""
    for action in VERTEX_ACTIONS:
        catalogue.add(action)
